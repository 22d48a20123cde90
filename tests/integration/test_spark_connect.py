"""A real Spark Connect server from the installed pyspark (``mm2ctl.lab.spark_connect``), read through.

The server runs on loopback with Spark's Kafka source as a package; a client process that has no driver JVM
of its own reads a lab topic through it with the inspector's reader (``inspector.reads.kafka_read.read_topic``), and
gets exactly the records a Kafka consumer sees. ``inspector.spark.compat``'s Arrow helpers work on the remote session.
``mm2ctl inspect --remote`` (and ``SPARK_REMOTE``, whose run the server's own log shows as a new session that
ran Spark jobs) gives the rows an embedded run gives on the same state, and
``mm2ctl exporter --remote`` keeps inspecting through a restart of the server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab import spark_connect
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.lab.process import free_port, is_alive
from tests.integration.support import eventually, source_conf, target_conf, uniq

# Extended in the main run; the Spark release matrix runs this module on the newest release in every CI run.
pytestmark = [pytest.mark.integration, pytest.mark.extended]

CLIENT = Path(__file__).with_name("connect_client_read.py")


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_connect.SparkConnectServer]:
    """One server for the module, beside the labs; stopped at the end, its port closed."""
    base = os.environ.get("MM2CTL_TEST_LAB_DIR")
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="spark-connect-", dir=base))
    else:
        folder = tmp_path_factory.mktemp("spark-connect")
    server = spark_connect.start(folder)
    try:
        yield server
    finally:
        spark_connect.stop(server)
        assert not is_alive(server.pid) and not spark_connect.listening(server.port)


def test_a_client_reads_a_lab_topic_through_the_connect_server(
    lab: LabInfo, connect_server: spark_connect.SparkConnectServer
) -> None:
    topic = uniq("connect")
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 3})
    records.produce(source_conf(lab), topic, [(f"k{i}".encode(), f"v{i}".encode(), i % 3) for i in range(300)])
    expected = sorted(
        (r.partition, r.offset, (r.key or b"").hex(), (r.value or b"").hex())
        for r in records.read_partitions(source_conf(lab), topic)
    )
    assert len(expected) == 300

    proc = subprocess.run(
        [sys.executable, str(CLIENT), connect_server.url, lab.source.bootstrap, topic],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stderr[-3000:]}\n--- server log:\n{connect_server.log.read_text()[-3000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["session"].startswith("pyspark.sql.connect")
    assert result["driver_jvm_here"] is False  # the query ran on the server
    got = sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in result["records"])
    assert got == expected
    on_client = sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in result["driver_records"])
    assert on_client == expected  # a small read made on the client, sent to the server as a local relation
    assert result["arrow"] == [{"name": None, "offset": None}, {"name": "a", "offset": 2**63 - 1}]


# --- the inspection on the Connect server --------------------------------------------------------------------

#: Columns that tell the time of the run, not the state it read.
CLOCK_COLUMNS = ("group_checkpoint_age_seconds",)


@pytest.fixture(scope="module")
def frozen_flow(lab_pool: Any) -> Iterator[LabFlow]:
    """A flow with three groups that MM2 has checkpointed, then stopped, so every run reads the same state."""
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    name = f"rem{uuid.uuid4().hex[:8]}"
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 2})
    flow = lab_core.add_flow(lab, name)
    records.produce(source_conf(lab), topic, [(None, f"r{i}".encode(), i % 2) for i in range(300)])
    KafkaAdmin.connect(source_conf(lab)).alter_group_offsets(
        {f"iso-{name}-g{g}": {(topic, p): 40 * (g + 1) for p in range(2)} for g in range(3)}
    )
    pair = load_mm2_config(flow.mm2_config).pair(f"{flow.source_alias}->{flow.target_alias}")
    target = KafkaAdmin.connect(target_conf(lab))

    def checkpointed() -> bool:
        bounds = target.partition_bounds([(pair.checkpoints_topic, 0)])[(pair.checkpoints_topic, 0)]
        return (bounds.latest or 0) >= 6

    eventually(checkpointed, timeout_s=180, what="MM2's checkpoints of the three groups")
    connect = build_connect_client([lab.connect_url])
    for connector in flow.connectors.values():
        connect.stop(connector)
        connect.wait_for_state(connector, {"STOPPED"}, timeout=60)
    try:
        yield flow
    finally:
        for connector in flow.connectors.values():
            connect.delete(connector)
        connect.close()


def _inspect_rows(flow: LabFlow, tmp: Path, *extra: str) -> tuple[list[dict[str, Any]], str]:
    out = tmp / f"rows-{uuid.uuid4().hex[:6]}.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_config, "--format", "json",
         "--output", str(out), *extra],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp / "state")},
    )  # fmt: skip
    assert proc.returncode in (0, 10), proc.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    return [{k: v for k, v in r.items() if k not in CLOCK_COLUMNS} for r in rows], proc.stderr


def test_inspect_on_the_connect_server_gives_the_embedded_rows(
    frozen_flow: LabFlow, connect_server: spark_connect.SparkConnectServer, tmp_path: Path
) -> None:
    embedded, _ = _inspect_rows(frozen_flow, tmp_path)
    remote, stderr = _inspect_rows(frozen_flow, tmp_path, "--remote", connect_server.url)
    assert len(embedded) == 6 and remote == embedded
    assert f"on the Spark Connect server at {connect_server.url}" in stderr
    # SPARK_REMOTE, as Spark defines it, does the same, and the server says so: its log names a session it had
    # not seen before, which ran operations and Spark jobs. An inspection that ignored the variable would run
    # in an embedded JVM and leave the server's log without a new session.
    before = _server_sessions(connect_server)
    os.environ["SPARK_REMOTE"] = connect_server.url
    try:
        by_env, _ = _inspect_rows(frozen_flow, tmp_path)
    finally:
        del os.environ["SPARK_REMOTE"]
    assert by_env == embedded
    after = _server_sessions(connect_server)
    new = {session: ran for session, ran in after.items() if session not in before}
    assert len(new) == 1, (before, after)
    ((operations, jobs),) = new.values()
    assert operations > 0 and jobs > 0, new


def test_report_on_the_connect_server_runs_its_inspection_there(
    frozen_flow: LabFlow, connect_server: spark_connect.SparkConnectServer, tmp_path: Path
) -> None:
    """``report --remote``: the page holds every group, and the server's log shows the one new session that ran
    the inspection's Spark jobs (a report that inspected in an embedded JVM would leave no new session)."""
    before = _server_sessions(connect_server)
    page = tmp_path / "report.html"
    proc = subprocess.run(
        [sys.executable, "-m", "mm2ctl", "report", "--mm2-config", frozen_flow.mm2_config,
         "--remote", connect_server.url, "-o", str(page)],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert proc.returncode in (0, 10), proc.stderr[-3000:]
    assert f"on the Spark Connect server at {connect_server.url}" in proc.stderr
    html = page.read_text()
    groups = [f"iso-{frozen_flow.source_alias.removesuffix('src')}-g{g}" for g in range(3)]
    assert all(g in html for g in groups), groups
    new = {s: ran for s, ran in _server_sessions(connect_server).items() if s not in before}
    assert len(new) == 1 and all(ops > 0 and jobs > 0 for ops, jobs in new.values()), (before, new)


#: The server's log lines (Spark 3.5 to 4.1) for an operation a session sent, and a Spark job it started.
_OPERATION = re.compile(r"ExecuteHolder ExecuteKey\([^,]*,([0-9a-f-]{36}),[0-9a-f-]{36}\) is created")
_JOB = re.compile(r"DAGScheduler: Got job \d+ \(Spark Connect - session_id: \"([0-9a-f-]{36})\"")


def _server_sessions(server: spark_connect.SparkConnectServer) -> dict[str, tuple[int, int]]:
    """Session id -> (operations, Spark jobs) the server's own log records for it."""
    text = server.log.read_text(errors="replace")
    operations = Counter(m[1] for m in _OPERATION.finditer(text))
    jobs = Counter(m[1] for m in _JOB.finditer(text))
    return {session: (operations[session], jobs[session]) for session in operations.keys() | jobs.keys()}


def _metric(port: int, name: str) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def test_the_exporter_keeps_one_session_and_reconnects_after_a_server_restart(
    frozen_flow: LabFlow, tmp_path: Path
) -> None:
    server = spark_connect.start(tmp_path / "server")
    port = free_port()
    log = tmp_path / "exporter.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "mm2ctl", "exporter", "--mm2-config", frozen_flow.mm2_config,
         "--listen", f"127.0.0.1:{port}", "--interval", "3", "--remote", server.url],
        stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    success = "mm2ctl_inspection_last_success_timestamp_seconds"
    try:
        eventually(lambda: _metric(port, success), timeout_s=240, what="a first inspection on the server")
        # The client retries a server it cannot reach for minutes (Spark's retry policy), so the server comes
        # back at once: the session the exporter held is gone with the old server either way.
        spark_connect.stop(server)
        server = spark_connect.start(tmp_path / "server", port=server.port)
        restarted = time.time()
        eventually(
            lambda: (_metric(port, success) or 0) > restarted, timeout_s=300, what="an inspection after the restart"
        )
        assert (_metric(port, "mm2ctl_inspection_errors_total") or 0) >= 1
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
        assert "a new Spark Connect session" in log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
        spark_connect.stop(server)
