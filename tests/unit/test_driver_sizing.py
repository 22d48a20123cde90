"""The driver JVM's compilers, collector and heap, and the live Python driver's allocator, chosen from the size
of the inspection."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pyarrow as pa
import pytest

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.inspector.driver_sizing import (
    SMALL_GROUP_PARTITIONS,
    SMALL_GROUPS,
    SMALL_TOPIC_RECORDS,
    Probe,
    driver_java_options_for,
    driver_memory_for,
    live_python_memory,
    probe,
)
from mm2ctl.inspector.reads.internal_topics import TopicSnapshot
from mm2ctl.inspector.reads.run_reads import ClusterState


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


def _state(group_partitions: int, sync_records: int) -> ClusterState:
    """A cluster state with only what sizing reads: each pair's group partitions and its topics' spans."""
    syncs = TopicSnapshot("a", "mm2-offset-syncs.b.internal", None, {0: (0, sync_records)})
    checkpoints = TopicSnapshot("b", "a.checkpoints.internal", None, {0: (0, 10)})
    state = SimpleNamespace(group_partitions=group_partitions)
    pair = SimpleNamespace(state=state, syncs=syncs, checkpoints=checkpoints)
    return cast(ClusterState, SimpleNamespace(pairs=[pair]))


def test_a_small_live_session_s_heap_starts_small_and_gives_back_what_it_frees() -> None:
    options = driver_java_options_for(_state(5_000, 50_000)).split()
    assert options[:2] == ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
    assert {"-Xms64m", "-XX:MaxHeapFreeRatio=40"} <= set(options)
    assert driver_memory_for(_state(5_000, 50_000)) == f"{512 + (5_000 * 1_500 + 50_010 * 120) // 2**20}m"


def test_a_large_live_session_keeps_the_throughput_collector_and_its_heap() -> None:
    assert driver_java_options_for(_state(SMALL_GROUP_PARTITIONS + 1, 10)) == "-XX:+UseParallelGC"
    assert driver_java_options_for(_state(10, SMALL_TOPIC_RECORDS + 1)) == "-XX:+UseParallelGC"


def test_a_live_python_driver_takes_arrow_memory_from_the_system_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    before = pa.default_memory_pool()
    try:
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
        live_python_memory()
        assert pa.default_memory_pool().backend_name == before.backend_name  # the environment's choice stands
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL")
        live_python_memory()
        assert pa.default_memory_pool().backend_name == "system"
    finally:
        pa.set_memory_pool(before)


def test_an_inspection_runs_on_the_driver_while_its_rows_and_topics_are_small() -> None:
    from mm2ctl.inspector.driver_sizing import fits_on_driver
    from mm2ctl.inspector.kept.driver_rows import DRIVER_MAX_ROWS
    from mm2ctl.inspector.reads.kafka_read import DRIVER_ENGINE_MAX_OFFSETS

    assert fits_on_driver(_state(DRIVER_MAX_ROWS, DRIVER_ENGINE_MAX_OFFSETS - 10))  # the checkpoints span 10
    assert not fits_on_driver(_state(DRIVER_MAX_ROWS + 1, 10))
    assert not fits_on_driver(_state(10, DRIVER_ENGINE_MAX_OFFSETS))
    assert fits_on_driver(Probe(groups=SMALL_GROUPS, topic_records=DRIVER_ENGINE_MAX_OFFSETS))
    assert not fits_on_driver(Probe(groups=SMALL_GROUPS + 1, topic_records=10))
    assert not fits_on_driver(Probe(groups=10, topic_records=DRIVER_ENGINE_MAX_OFFSETS + 1))


@pytest.mark.parametrize(
    ("master", "remote", "engine", "allowed"),
    [
        (None, None, "auto", True),
        (None, None, "spark", False),
        ("local[2]", None, "auto", False),  # a master named is used
        (None, "sc://127.0.0.1:15002", "auto", False),
    ],
)
def test_only_the_auto_engine_on_embedded_spark_may_skip_spark(
    master: str | None, remote: str | None, engine: str, allowed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mm2ctl.inspector.opening import SparkPlace

    monkeypatch.delenv("SPARK_REMOTE", raising=False)
    assert SparkPlace.of(master, {}, remote, engine).driver_allowed is allowed
    # a Spark setting of the user's asks for Spark
    assert not SparkPlace.of(master, {"spark.sql.shuffle.partitions": "4"}, remote, engine).driver_allowed


def test_the_engine_comes_from_the_environment_and_a_bad_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from mm2ctl.core.errors import ConfigError
    from mm2ctl.inspector.opening import SparkPlace

    monkeypatch.setenv("MM2CTL_ENGINE", "spark")
    assert SparkPlace().engine == "spark" and SparkPlace.of(None, {}, None).engine == "spark"
    assert SparkPlace.of(None, {}, None, "auto").engine == "auto"  # the command line wins
    with pytest.raises(ConfigError, match="--engine 'fast': expected one of auto, spark"):
        SparkPlace.of(None, {}, None, "fast")
