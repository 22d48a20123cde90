"""The driver JVM's compilers and collector, chosen from the size of the inspection."""

from __future__ import annotations

from pathlib import Path

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.inspector.driver_sizing import SMALL_GROUPS, SMALL_TOPIC_RECORDS, Probe, probe


def test_a_small_inspection_compiles_with_c1_only_on_the_serial_collector() -> None:
    assert Probe(groups=100, topic_records=50_000).java_options == "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
    assert Probe(groups=SMALL_GROUPS, topic_records=SMALL_TOPIC_RECORDS).java_options.endswith("TieredStopAtLevel=1")


def test_many_groups_or_many_topic_records_keep_both_compilers() -> None:
    assert Probe(groups=SMALL_GROUPS + 1, topic_records=10).java_options == "-XX:+UseParallelGC"
    assert Probe(groups=10, topic_records=SMALL_TOPIC_RECORDS + 1).java_options == "-XX:+UseParallelGC"


def test_a_cluster_that_does_not_answer_is_sized_as_large(tmp_path: Path) -> None:
    file = tmp_path / "mm2.properties"
    file.write_text(
        "clusters=a,b\na.bootstrap.servers=127.0.0.1:9\nb.bootstrap.servers=127.0.0.1:9\na->b.enabled=true\n"
    )
    config = load_mm2_config(file)
    assert probe(config, config.pairs(), timeout_s=1.0).java_options == "-XX:+UseParallelGC"


def test_a_live_driver_gets_two_malloc_arenas_unless_the_user_chose() -> None:
    from mm2ctl.inspector.driver_sizing import LIVE_MALLOC_ARENAS, live_driver_environment

    environ = {"PATH": "/bin"}
    live_driver_environment(environ)
    assert environ == {"PATH": "/bin", "MALLOC_ARENA_MAX": LIVE_MALLOC_ARENAS} and LIVE_MALLOC_ARENAS == "2"
    chosen = {"MALLOC_ARENA_MAX": "8"}
    live_driver_environment(chosen)
    assert chosen == {"MALLOC_ARENA_MAX": "8"}
