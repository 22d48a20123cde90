"""`mm2ctl inspect` against a real MM2 flow, where each status is *caused* for real, under both policies.

One isolated flow per replication policy carries every scenario; the inspection runs once per flow through
the CLI, exactly as an operator runs it, and every scenario's rows are checked. The order of the set-up is
the point: some states only arise when data is prepared before MM2 starts (a source log start above 0),
when the checkpoint connector is stopped while a group appears, or when the source connector is stopped
while a topic appears. The same two runs show where Spark's JVM prints: to a log file (default policy), or
with ``-v`` to stderr (identity policy). Each flow is then inspected once more with no Spark setting, on the
driver engine, which must give the same rows.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.codecs import OffsetSync, encode_offset_sync
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from tests.integration.support import eventually

pytestmark = pytest.mark.integration


@dataclass
class Scenario:
    flow: LabFlow
    name: str
    rows: list[dict[str, Any]]
    exit_code: int
    stderr: str
    stdout: str
    verbose: bool
    logs: Path  # the logs folder of the run's state dir
    #: The same inspection with no Spark setting (the driver engine at this size): its rows, exit code, stderr.
    driver: tuple[list[dict[str, Any]], int, str]

    def group(self, suffix: str) -> str:
        return f"iso-{self.name}-{suffix}"

    def topic(self, suffix: str) -> str:
        return f"iso-{self.name}-{suffix}"

    def rows_of(self, group_suffix: str) -> list[dict[str, Any]]:
        g = self.group(group_suffix)
        found = [r for r in self.rows if r["group"] == g]
        assert found, f"no rows for {g}; groups seen: {sorted({r['group'] for r in self.rows})}"
        return found

    def status_of(self, group_suffix: str, topic_suffix: str) -> set[str]:
        t = self.topic(topic_suffix)
        return {r["status"] for r in self.rows_of(group_suffix) if r["topic"] == t}


class ActiveConsumer:
    """A consumer that stays a live member of its group until closed (librdkafka heartbeats in background)."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        self.consumer.subscribe([topic])
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.consumer.poll(0.2)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self.consumer.close()


#: Lines only Spark's JVM prints: the JVM launcher, Spark's package resolution (Ivy), log4j (Spark's pattern
#: and ours), SLF4J, Spark's shell banner and its stage progress bar.
JVM_LINE = re.compile(
    r"WARNING: Using incubator|Ivy Default Cache|:: loading settings|\bWARN |\bINFO |\bERROR |log4j|SLF4J"
    r"|Setting default log level|\[Stage "
)


def jvm_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if JVM_LINE.search(line)]


def _build(lab: LabInfo, policy: str, tmp: Path) -> Iterator[Scenario]:
    name = f"insp{policy[:3]}{uuid.uuid4().hex[:6]}"
    src = {"bootstrap.servers": lab.source.bootstrap}
    dst = {"bootstrap.servers": lab.target.bootstrap}
    source, target = KafkaAdmin.connect(src), KafkaAdmin.connect(dst)
    t = lambda s: f"iso-{name}-{s}"  # noqa: E731
    g = t

    # Phase 0, before MM2 sees anything: topics whose source log starts above 0.
    source.create_topics({t("old"): 1, t("ahead"): 1})
    records.produce(src, t("old"), [(None, f"o{i}".encode(), 0) for i in range(100)])
    records.produce(src, t("ahead"), [(None, f"a{i}".encode(), 0) for i in range(300)])
    source.delete_records({(t("old"), 0): 50, (t("ahead"), 0): 200})
    # A group whose offset is below the log start: MM2 has no sync at or below it.
    source.alter_group_offsets({g("g-old"): {(t("old"), 0): 20}})

    flow = lab_core.add_flow(lab, name, replication_policy=policy)
    pair = load_mm2_config(flow.mm2_config).pair(f"{flow.source_alias}->{flow.target_alias}")
    remote = pair.remote_topic

    # Phase 1, MM2 running: healthy groups, an empty partition, a group MM2 will sync and we then move ahead.
    source.create_topics({t("sync"): 2, t("empty"): 2, t("stale"): 1})
    records.produce(src, t("sync"), [(None, f"s{i}".encode(), i % 2) for i in range(200)])
    records.produce(src, t("stale"), [(None, f"st{i}".encode(), 0) for i in range(1000)])
    source.alter_group_offsets(
        {
            g("g-sync"): {(t("sync"), 0): 100, (t("sync"), 1): 60},
            g("g-empty"): {(t("empty"), 0): 0, (t("empty"), 1): 0, (t("sync"), 0): 100},
            g("g-emptyonly"): {(t("empty"), 0): 0},
            g("g-ahead"): {(t("ahead"), 0): 250},
            g("g-stale"): {(t("stale"), 0): 10},
            g("g-active"): {(t("sync"), 1): 100},
        }
    )

    def target_offset(group: str, topic: str, partition: int) -> int | None:
        return target.committed_offsets([group])[group].offsets.get((remote(topic), partition))

    for group, topic, partition in [
        (g("g-sync"), t("sync"), 0),
        (g("g-sync"), t("sync"), 1),
        (g("g-empty"), t("sync"), 0),
        (g("g-ahead"), t("ahead"), 0),
        (g("g-stale"), t("stale"), 0),
    ]:
        eventually(
            lambda group=group, topic=topic, partition=partition: target_offset(group, topic, partition) is not None,
            timeout_s=120,
            what=f"MM2 to sync {group} {topic}/{partition}",
        )
    # Replication without translation: the raw source offset number, written over MM2's translated one.
    assert target.alter_group_offsets({g("g-ahead"): {(remote(t("ahead")), 0): 250}})[g("g-ahead")][0].error is None
    # An active member on the target keeps MM2 from writing g-active's offsets there.
    active = ActiveConsumer(lab.target.bootstrap, g("g-active"), remote(t("sync")))
    eventually(
        lambda: target.describe_groups([g("g-active")])[g("g-active")].members == 1,
        timeout_s=60,
        what="an active member in g-active on the target",
    )

    connect = build_connect_client([lab.connect_url])
    try:
        # Phase 2, checkpoint connector stopped: g-stale moves far ahead, g-late appears.
        connect.stop(flow.connectors["checkpoint"])
        connect.wait_for_state(flow.connectors["checkpoint"], {"STOPPED"}, timeout=60)
        source.alter_group_offsets({g("g-stale"): {(t("stale"), 0): 900}, g("g-late"): {(t("sync"), 0): 50}})

        # Phase 3, source connector stopped: a topic MM2 never replicates, and one that exists on the target
        # (created there by hand) but has no offset sync.
        connect.stop(flow.connectors["source"])
        connect.wait_for_state(flow.connectors["source"], {"STOPPED"}, timeout=60)
        source.create_topics({t("missing"): 1, t("nosync"): 1})
        records.produce(src, t("missing"), [(None, b"m", 0)] * 10)
        records.produce(src, t("nosync"), [(None, b"n", 0)] * 10)
        target.create_topics({remote(t("nosync")): 1})
        records.produce(dst, remote(t("nosync")), [(None, b"n", 0)] * 10)
        source.alter_group_offsets({g("g-missing"): {(t("missing"), 0): 5}, g("g-nosync"): {(t("nosync"), 0): 5}})

        # A malformed record in the offset-syncs topic must be counted and skipped, never crash the job.
        syncs_cluster = src if pair.offset_syncs_cluster == pair.source else dst
        key, _ = encode_offset_sync(OffsetSync(t("sync"), 0, 0, 0))
        records.produce(syncs_cluster, pair.offset_syncs_topic, [(key, b"\x00\x01", 0)])

        out = tmp / f"{name}.jsonl"
        verbose = policy == "identity"
        state = tmp / f"{name}-state"
        proc = subprocess.run(
            [
                sys.executable, "-m", "mm2ctl", *(["-v"] if verbose else []), "inspect",
                "--mm2-config", flow.mm2_config,
                "--format", "json", "--output", str(out),
                "--spark-conf", "spark.sql.shuffle.partitions=4",
            ],
            capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "MM2CTL_STATE_DIR": str(state)},
        )  # fmt: skip
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
        driver_out = tmp / f"{name}-driver.jsonl"
        on_driver = subprocess.run(
            [
                sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_config,
                "--format", "json", "--output", str(driver_out), "--no-cache",
            ],
            capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "MM2CTL_STATE_DIR": str(tmp / f"{name}-driver-state")},
        )  # fmt: skip
        driver_rows = [json.loads(line) for line in driver_out.read_text().splitlines()] if driver_out.exists() else []
        driver = (driver_rows, on_driver.returncode, on_driver.stderr)
        yield Scenario(flow, name, rows, proc.returncode, proc.stderr, proc.stdout, verbose, state / "logs", driver)
    finally:
        active.close()
        for connector in flow.connectors.values():
            connect.delete(connector)
        connect.close()


@pytest.fixture(scope="module", params=["default", "identity"])
def scenario(
    request: pytest.FixtureRequest, lab_pool: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Scenario]:
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    yield from _build(lab, request.param, tmp_path_factory.mktemp("inspect"))


def test_inspect_ran_and_reports_problems_with_its_exit_code(scenario: Scenario) -> None:
    assert scenario.rows, scenario.stderr
    assert scenario.exit_code == ExitCode.PROBLEMS_FOUND, scenario.stderr
    assert "1 malformed record(s) skipped: value truncated" in scenario.stderr


def _comparable(rows: list[dict[str, Any]]) -> list[str]:
    """Rows as sorted JSON, less the column that tells the time of the run."""
    return sorted(json.dumps({k: v for k, v in r.items() if k != "group_checkpoint_age_seconds"}, sort_keys=True)
                  for r in rows)  # fmt: skip


def test_with_no_spark_setting_the_driver_engine_gives_spark_s_rows(scenario: Scenario) -> None:
    """The same inspection without ``--spark-conf`` runs on the driver engine (the setup is small): no Spark
    session starts, and every scenario's row, the exit code and the malformed record's note are the Spark run's."""
    rows, exit_code, stderr = scenario.driver
    assert "small enough to inspect on the driver" in stderr, stderr
    assert "starting Spark" not in stderr, stderr
    assert exit_code == scenario.exit_code, stderr
    assert "1 malformed record(s) skipped: value truncated" in stderr
    assert rows and _comparable(rows) == _comparable(scenario.rows)


def test_the_jvm_prints_to_a_log_file_and_to_stderr_only_with_verbose(scenario: Scenario) -> None:
    assert scenario.stdout == ""  # the rows went to --output
    assert "mm2ctl: starting Spark" in scenario.stderr  # progress lines (stderr is a pipe here: no bar)
    if scenario.verbose:
        assert "Ivy Default Cache set to" in scenario.stderr, scenario.stderr  # Spark's resolution of the package
        assert not scenario.logs.exists()  # -v: the terminal, no log file
        return
    assert jvm_lines(scenario.stderr) == [], scenario.stderr
    assert "\r" not in scenario.stderr
    logs = list(scenario.logs.glob("inspect-*.log"))
    assert len(logs) == 1, logs
    log = logs[0].read_text(errors="replace")
    assert "Ivy Default Cache set to" in log  # Spark's own line, outside log4j: its resolution of the package
    assert re.search(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} (WARN|ERROR) ", log, re.M), log[-3000:]  # log4j2, ours
    assert "Setting default log level" not in log  # Spark saw a log4j2 configuration of its own
    assert str(logs[0]) not in scenario.stderr  # the command did not fail: the path is not printed


def test_a_spark_that_fails_to_start_names_its_log_and_prints_none_of_it(lab: LabInfo, tmp_path: Path) -> None:
    """A driver JVM that dies at start (a heap size Java rejects): one error line, one line naming the log,
    the JVM's complaint in the log only. It dies in a second, not Spark's usual ten."""
    state = tmp_path / "state"
    out = tmp_path / "rows.jsonl"
    proc = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect",
            "--mm2-config", lab.mm2_config, "--format", "json", "--output", str(out),
            "--spark-conf", "spark.driver.memory=lots",
        ],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(state)},
    )  # fmt: skip
    assert proc.returncode == ExitCode.ERROR, proc.stderr
    assert proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert errors == ["mm2ctl: error: Spark's driver JVM exited while starting (its own output says why)"], proc.stderr
    (log,) = list((state / "logs").glob("inspect-*.log"))
    assert f"mm2ctl: Spark's JVM wrote its output to {log}" in proc.stderr.splitlines()
    assert "Invalid maximum heap size" in log.read_text()
    assert jvm_lines(proc.stderr) == [] and "heap" not in proc.stderr
    assert not out.exists()


def test_inspect_with_no_group_to_inspect_finishes_with_no_rows(lab: LabInfo, tmp_path: Path) -> None:
    """No group matches: Spark prunes the reads of the internal topics, and the run still ends (it once
    waited forever for the malformed-record counts of a read that never ran)."""
    out = tmp_path / "rows.jsonl"
    proc = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect",
            "--mm2-config", lab.mm2_config, "--groups", f"^no-such-group-{uuid.uuid4().hex}$",
            "--format", "json", "--output", str(out),
        ],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert proc.returncode == ExitCode.OK, proc.stderr
    assert out.read_text() == ""
    assert "0 group partition(s) inspected, 0 problem(s)" in proc.stderr


def test_synced_group(scenario: Scenario) -> None:
    rows = scenario.rows_of("g-sync")
    assert [r["status"] for r in rows] == ["synced", "synced"]
    for r in rows:
        assert r["message"] == "Successfully synced, operating normally."
        assert r["is_ok"] is True
        assert r["target_offset"] is not None and r["translated_offset"] is not None
        assert r["skip_if_failover_now"] in (0, None)
        expected_remote = (
            r["topic"]
            if scenario.flow.setup.replication_policy == "identity"
            else (f"{scenario.flow.source_alias}.{r['topic']}")
        )
        assert r["remote_topic"] == expected_remote


def test_empty_source_partition_both_variants(scenario: Scenario) -> None:
    with_synced = [r for r in scenario.rows_of("g-empty") if r["topic"] == scenario.topic("empty")]
    assert {r["status"] for r in with_synced} == {"source_partition_empty"}
    assert {r["message"] for r in with_synced} == {
        "Intentionally not synced because the source partition is empty. Other partitions in this group are synced."
    }
    alone = scenario.rows_of("g-emptyonly")
    assert [r["message"] for r in alone] == [
        "Intentionally not synced because the source partition is empty. Other partitions in this group are not synced."
    ]


def test_group_below_the_source_log_start_is_too_old(scenario: Scenario) -> None:
    (row,) = scenario.rows_of("g-old")
    assert row["status"] == "source_group_too_old"
    assert row["source_earliest"] == 50 and row["source_offset"] == 20
    assert row["message"].startswith("Intentionally not synced because the source group is too old.")


def test_raw_offset_on_shifted_target_is_target_ahead(scenario: Scenario) -> None:
    (row,) = scenario.rows_of("g-ahead")
    assert row["status"] == "target_ahead"
    assert row["target_offset"] == 250
    # MM2 replicated from the source log start 200: source 250 is target 50, and the conservative rule gives
    # at most that (a sync at 250 itself), at least downstream + 1 of the first sync (200 -> 0).
    assert 1 <= row["translated_offset"] <= 50
    assert row["skip_if_failover_now_at_most"] == 250 - row["translated_offset"]
    assert row["is_ok"] is False


def test_checkpoint_connector_stopped_while_group_moved_is_stale(scenario: Scenario) -> None:
    (row,) = scenario.rows_of("g-stale")
    assert row["status"] == "stale_sync"
    assert row["source_offset"] == 900
    assert row["target_offset"] is not None and row["target_offset"] < 100
    assert row["replay_if_failover_now_at_least"] == row["translated_offset"] - row["target_offset"]
    assert row["replay_if_failover_now_at_least"] > 100


def test_group_created_while_checkpoint_connector_stopped_is_erroneously_not_synced(scenario: Scenario) -> None:
    (row,) = scenario.rows_of("g-late")
    assert row["status"] == "not_synced"
    assert row["message"] == (
        "Erroneously not synced. Source partition has data, and other partitions for this group are not synced."
    )
    assert row["blocking_component"] == "checkpoint-connector"


def test_active_target_group(scenario: Scenario) -> None:
    (row,) = scenario.rows_of("g-active")
    assert row["status"] == "target_group_active"
    assert row["target_group_state"] == "Stable"


def test_remote_topic_missing_and_no_offset_syncs(scenario: Scenario) -> None:
    assert scenario.status_of("g-missing", "missing") == {"remote_topic_missing"}
    assert scenario.status_of("g-nosync", "nosync") == {"no_offset_syncs"}


def test_the_same_job_runs_under_spark_submit(scenario: Scenario, tmp_path: Path) -> None:
    """The job module is a Spark application as it is: spark-submit with the Kafka source as --packages."""
    import os

    import pyarrow.parquet as pq
    import pyspark

    from mm2ctl.inspector.spark.packages import submit_arguments

    submit = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    job = Path(__file__).resolve().parents[2] / "inspector" / "job.py"
    out = tmp_path / "rows.parquet"
    proc = subprocess.run(
        [
            str(submit),
            "--master", "local[2]",
            "--conf", "spark.ui.enabled=false",
            *submit_arguments(),
            str(job),
            "--mm2-config", scenario.flow.mm2_config,
            "--format", "parquet",
            "--output", str(out),
        ],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable},
    )  # fmt: skip
    assert proc.returncode == ExitCode.PROBLEMS_FOUND, proc.stderr[-3000:]
    table = pq.read_table(out)
    assert table.num_rows == len(scenario.rows)
    assert sorted(table.column("status").to_pylist()) == sorted(r["status"] for r in scenario.rows)


def test_a_dead_broker_fails_inspect_with_one_line_and_the_kafka_exit_code(tmp_path: Path) -> None:
    from mm2ctl.lab.process import free_port

    config = tmp_path / "dead.properties"
    config.write_text(
        "clusters = gone, away\n"
        f"gone.bootstrap.servers = 127.0.0.1:{free_port()}\n"
        f"away.bootstrap.servers = 127.0.0.1:{free_port()}\n"
        "gone->away.enabled = true\n"
    )
    out = tmp_path / "rows.jsonl"
    proc = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect",
            "--mm2-config", str(config), "--format", "json", "--output", str(out),
        ],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == ExitCode.KAFKA, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert len(errors) == 1, proc.stderr
    assert "gone" in errors[0], errors[0]
    assert "Traceback" not in proc.stderr
    assert "starting Spark" not in proc.stderr  # it failed before paying for Spark
    assert not out.exists()  # no half-written report


def test_a_group_past_what_mm2_copied_is_not_yet_copied(lab: LabInfo, tmp_path: Path) -> None:
    """MM2's source connector stopped after copying 100 records, 500 more on the source, and a group committed
    at 600: an old sync would call it synced, but MM2 has not copied up to it. A group exactly at MM2's
    position (100) is synced. MM2's position is read through --connect-url."""
    name = f"nyc{uuid.uuid4().hex[:8]}"
    src = {"bootstrap.servers": lab.source.bootstrap}
    source, target = KafkaAdmin.connect(src), KafkaAdmin.connect({"bootstrap.servers": lab.target.bootstrap})
    topic, past, at = f"iso-{name}-t", f"iso-{name}-past", f"iso-{name}-at"
    source.create_topics({topic: 1})
    records.produce(src, topic, [(None, f"r{i}".encode(), 0) for i in range(100)])
    source.alter_group_offsets({past: {(topic, 0): 100}, at: {(topic, 0): 100}})
    flow = lab_core.add_flow(lab, name)
    remote = load_mm2_config(flow.mm2_config).pair(f"{flow.source_alias}->{flow.target_alias}").remote_topic(topic)
    connect = build_connect_client([lab.connect_url])
    out = tmp_path / "rows.jsonl"
    try:
        eventually(
            lambda: target.partition_bounds([(remote, 0)])[(remote, 0)].latest == 100,
            timeout_s=120,
            what="MM2 to copy the first 100 records",
        )
        for group in (past, at):
            eventually(
                lambda group=group: target.committed_offsets([group])[group].offsets.get((remote, 0)) is not None,
                timeout_s=120,
                what=f"MM2 to sync {group}",
            )
        connect.stop(flow.connectors["source"])
        connect.wait_for_state(flow.connectors["source"], {"STOPPED"}, timeout=60)
        records.produce(src, topic, [(None, f"r{i}".encode(), 0) for i in range(100, 600)])
        source.alter_group_offsets({past: {(topic, 0): 600}})
        proc = subprocess.run(
            [
                sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_config,
                "--connect-url", lab.connect_url, "--format", "json", "--output", str(out),
                "--spark-conf", "spark.sql.shuffle.partitions=4",
            ],
            capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
        )  # fmt: skip
    finally:
        for connector in flow.connectors.values():
            connect.delete(connector)
        connect.close()
    assert proc.returncode == ExitCode.PROBLEMS_FOUND, proc.stderr
    rows = {r["group"]: r for r in map(json.loads, out.read_text().splitlines())}
    row = rows[past]
    assert (row["status"], row["is_ok"], row["mm2_records_behind"]) == ("not_yet_copied", False, 500), row
    assert row["blocking_component"] == "mirror-source-connector"
    assert row["message"].startswith("MM2 has not copied up to this group's position")
    assert row["explanation"].startswith(
        "MM2 is 500 record(s) behind this group: the group committed offset 600, MM2 has copied this partition "
        "only below 100."
    ), row["explanation"]
    assert row["translated_offset"] is not None and row["translated_offset"] <= 100  # an old sync translates it
    assert (rows[at]["status"], rows[at]["mm2_records_behind"]) == ("synced", 0), rows[at]
