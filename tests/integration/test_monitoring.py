"""Replication health against a real MM2 flow, watched through a real Prometheus scraping `mm2ctl exporter`.

One isolated flow carries every scenario, in order: with MirrorSourceConnector stopped, 500 records wait on one
partition (Prometheus shows a lag of exactly 500), records are produced and deleted before MM2 copied them
(lost to retention), and a topic is recreated smaller than MM2's position (a source reset); `inspect` reports the
three partitions. MM2 resumes and the lag goes back to 0 while the loss stays; the textfile output parses with
prometheus_client. With MirrorCheckpointConnector paused while a group moves on, the group's checkpoint age
passes the shipped alert's threshold, and Prometheus evaluates that alert. Every panel of the Grafana dashboard
(examples/grafana/mm2ctl.json) returns data, but those of a metric only records waiting have (the retention
margin: tests/integration/test_lag_in_time.py runs them). SIGTERM then stops the exporter and its JVM.

Prometheus runs as tests/integration/prometheus_server.py starts it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from mm2ctl.connect_client import ConnectClient, build_connect_client
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.lab.process import free_port
from tests.integration.prometheus_server import WAITING_ONLY, Prometheus, panel_queries
from tests.integration.support import eventually

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "examples" / "grafana" / "mm2ctl.json"
EXPORTER_INTERVAL_S = 5


@dataclass
class Env:
    lab: LabInfo
    flow: LabFlow
    name: str
    connect: ConnectClient
    source: KafkaAdmin
    prometheus: Prometheus
    exporter: subprocess.Popen[str]
    exporter_log: Path
    tmp: Path

    @property
    def pair(self) -> str:
        return f"{self.flow.source_alias}->{self.flow.target_alias}"

    def topic(self, suffix: str) -> str:
        return f"iso-{self.name}-{suffix}"

    def selector(self, topic: str, **more: str) -> str:
        labels = {"flow": self.pair, "topic": self.topic(topic), **more}
        return "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"

    def src(self) -> dict[str, str]:
        return {"bootstrap.servers": self.lab.source.bootstrap}

    def inspect(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", self.flow.mm2_config,
                "--connect-url", self.lab.connect_url, "--spark-conf", "spark.sql.shuffle.partitions=4", *args,
            ],
            capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "MM2CTL_STATE_DIR": str(self.tmp / "inspect-state")},
        )  # fmt: skip


@pytest.fixture(scope="module")
def env(lab_pool: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    """The flow, the exporter and Prometheus; whatever of them started is stopped, whether a later start failed
    or skipped the module (no prometheus binary) or the tests ran."""
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    tmp = tmp_path_factory.mktemp("monitoring")
    name = f"mon{uuid.uuid4().hex[:8]}"
    source = KafkaAdmin.connect({"bootstrap.servers": lab.source.bootstrap})
    t = lambda s: f"iso-{name}-{s}"  # noqa: E731
    source.create_topics({t("lag"): 1, t("lost"): 1, t("reset"): 1, t("cp"): 1})
    src = {"bootstrap.servers": lab.source.bootstrap}
    records.produce(src, t("lag"), [(None, f"l{i}".encode(), 0) for i in range(100)])
    records.produce(src, t("lost"), [(None, f"x{i}".encode(), 0) for i in range(100)])
    records.produce(src, t("reset"), [(None, f"r{i}".encode(), 0) for i in range(200)])
    records.produce(src, t("cp"), [(None, f"c{i}".encode(), 0) for i in range(200)])
    source.alter_group_offsets({t("g"): {(t("cp"), 0): 100}})
    with contextlib.ExitStack() as started:
        connect = started.enter_context(build_connect_client([lab.connect_url]))
        flow = lab_core.add_flow(lab, name)
        started.callback(_delete_connectors, connect, flow)
        port = free_port()
        exporter_log = tmp / "exporter.log"
        exporter = _start_exporter(flow, lab, port, exporter_log, tmp / "exporter-state")
        started.callback(_stop_process, exporter)
        prometheus = Prometheus(tmp / "prometheus", f"127.0.0.1:{port}")
        started.callback(prometheus.stop)
        yield Env(lab, flow, name, connect, source, prometheus, exporter, exporter_log, tmp)


def _start_exporter(flow: LabFlow, lab: LabInfo, port: int, log: Path, state: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable, "-m", "mm2ctl", "exporter", "--mm2-config", flow.mm2_config,
            "--connect-url", lab.connect_url, "--listen", f"127.0.0.1:{port}",
            "--interval", str(EXPORTER_INTERVAL_S), "--spark-conf", "spark.sql.shuffle.partitions=4",
        ],
        stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True,
        env={**os.environ, "MM2CTL_STATE_DIR": str(state)},
    )  # fmt: skip


def _stop_process(process: subprocess.Popen[str]) -> None:
    """SIGTERM (the exporter stops its JVM), SIGKILL past a deadline."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


def _delete_connectors(connect: ConnectClient, flow: LabFlow) -> None:
    for connector in flow.connectors.values():
        connect.delete(connector)


def _stored_next(env: Env) -> dict[tuple[str, int], int]:
    got = env.connect.get_offsets(env.flow.connectors["source"])
    return {
        (o.partition["topic"], o.partition["partition"]): o.offset["offset"] + 1
        for o in got.offsets
        if o.offset is not None
    }


def _recreate(env: Env, topic: str) -> None:
    env.source.client.delete_topics([topic])[topic].result()

    def created() -> bool:
        try:
            env.source.create_topics({topic: 1})
        except Exception:
            return False  # still being deleted
        return True

    eventually(created, timeout_s=60, what=f"{topic} recreated")


def test_lag_loss_and_reset_while_mirroring_is_stopped(env: Env) -> None:
    lag, lost, reset = env.topic("lag"), env.topic("lost"), env.topic("reset")
    wanted = {(lag, 0): 100, (lost, 0): 100, (reset, 0): 200}
    eventually(
        lambda: all(_stored_next(env).get(tp) == n for tp, n in wanted.items()),
        timeout_s=120,
        what="MM2 to copy the three topics and store its position",
    )
    source_connector = env.flow.connectors["source"]
    env.connect.stop(source_connector)
    env.connect.wait_for_state(source_connector, {"STOPPED"}, timeout=60)

    records.produce(env.src(), lag, [(None, f"w{i}".encode(), 0) for i in range(500)])
    records.produce(env.src(), lost, [(None, f"d{i}".encode(), 0) for i in range(50)])
    assert env.source.delete_records({(lost, 0): 150})[0].error is None  # 100..149, never copied
    _recreate(env, reset)
    records.produce(env.src(), reset, [(None, f"n{i}".encode(), 0) for i in range(20)])  # 20 < MM2's 200

    prom = env.prometheus
    eventually(
        lambda: prom.value(f"mm2ctl_replication_lag_records{env.selector('lag', partition='0')}") == 500,
        timeout_s=240,
        what="Prometheus to show a lag of exactly 500",
    )
    eventually(
        lambda: prom.value(f"mm2ctl_records_lost_to_retention{env.selector('lost', partition='0')}") == 50,
        timeout_s=60,
        what="Prometheus to show 50 records lost",
    )

    # A day's threshold in time: this test is about records (tests/integration/test_lag_in_time.py: seconds).
    proc = env.inspect("--rows", "partitions", "--format", "json", "--lag-seconds-threshold", "86400")
    assert proc.returncode == ExitCode.PROBLEMS_FOUND, proc.stderr
    rows = {r["topic"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(rows) >= {lag, lost, reset}, proc.stdout
    assert (rows[lag]["mm2_next_offset"], rows[lag]["source_latest"]) == (100, 600)
    assert (rows[lag]["replication_lag_records"], rows[lag]["status"]) == (500, "replicating")
    assert rows[lag]["replication_lag_seconds"] > 0 and rows[lag]["lag_timestamp_type"] == "CreateTime"
    assert rows[lost]["replication_lag_seconds"] == 0 and rows[lost]["retention_margin_seconds"] is None
    assert rows[lag]["newest_sync_upstream"] is not None and rows[lag]["offset_sync_age_seconds"] >= 0
    assert (rows[lost]["records_lost_to_retention"], rows[lost]["status"]) == (50, "lost_records")
    assert (rows[reset]["source_reset"], rows[reset]["status"]) == (True, "source_reset")
    assert (rows[reset]["mm2_next_offset"], rows[reset]["source_latest"]) == (200, 20)
    assert "replicated partition(s), 2 problem(s)" in proc.stderr


def test_after_mm2_resumes_the_lag_is_zero_and_the_loss_stays(env: Env) -> None:
    source_connector = env.flow.connectors["source"]
    env.connect.resume(source_connector)
    env.connect.wait_for_state(source_connector, {"RUNNING"}, timeout=60)
    prom = env.prometheus
    eventually(
        lambda: prom.value(f"mm2ctl_replication_lag_records{env.selector('lag', partition='0')}") == 0,
        timeout_s=240,
        what="Prometheus to show the lag back at 0",
    )
    assert prom.value(f"mm2ctl_records_lost_to_retention{env.selector('lost', partition='0')}") == 50

    textfile = env.tmp / "mm2ctl.prom"
    proc = env.inspect("--format", "prometheus", "--output", str(textfile), "--topics", ".*-(lag|lost)")
    assert proc.returncode == ExitCode.PROBLEMS_FOUND, proc.stderr  # lost_records is a problem
    samples = {
        (s.name, s.labels.get("topic"), s.labels.get("status")): s.value
        for family in text_string_to_metric_families(textfile.read_text())
        for s in family.samples
    }
    assert samples[("mm2ctl_replication_lag_records", env.topic("lag"), None)] == 0
    assert samples[("mm2ctl_records_lost_to_retention", env.topic("lost"), None)] == 50
    assert samples[("mm2ctl_replicated_partitions", None, "lost_records")] == 1
    assert ("mm2ctl_inspection_last_success_timestamp_seconds", None, None) in samples
    assert [p.name for p in env.tmp.iterdir() if p.name.startswith("mm2ctl.prom")] == ["mm2ctl.prom"]


def test_a_paused_checkpoint_connector_ages_the_group_past_the_alert(env: Env) -> None:
    group, topic = env.topic("g"), env.topic("cp")
    prom = env.prometheus
    age = f'mm2ctl_checkpoint_age_seconds{{flow="{env.pair}",group="{group}"}}'
    alert = f'ALERTS{{alertname="MM2CheckpointsStale",flow="{env.pair}",group="{group}"}}'
    # MM2 checkpointed the idle group once; its checkpoint ages past the threshold, but nothing waits to be
    # replayed, so the alert stays quiet.
    eventually(lambda: (prom.value(age) or 0) > 10, timeout_s=120, what="an aged checkpoint of the idle group")
    assert prom.value(f'mm2ctl_failover_replay_messages{{flow="{env.pair}",group="{group}"}}') == 0
    assert prom.query(alert) == []

    checkpoint_connector = env.flow.connectors["checkpoint"]
    env.connect.pause(checkpoint_connector)
    env.connect.wait_for_state(checkpoint_connector, {"PAUSED"}, timeout=60)
    try:
        # The group moves on: MM2 copies the new records and their syncs, but checkpoints nothing.
        records.produce(env.src(), topic, [(None, f"m{i}".encode(), 0) for i in range(300)])
        pair = load_mm2_config(env.flow.mm2_config).pair(env.pair)
        target = KafkaAdmin.connect({"bootstrap.servers": env.lab.target.bootstrap})
        remote = pair.remote_topic(topic)
        eventually(
            lambda: target.partition_bounds([(remote, 0)])[(remote, 0)].latest == 500,
            timeout_s=120,
            what="MM2 to copy the new records",
        )
        env.source.alter_group_offsets({group: {(topic, 0): 450}})

        threshold = f'10 * mm2ctl_checkpoint_interval_seconds{{flow="{env.pair}"}}'
        assert prom.value(threshold) == 10  # the lab's MM2 checkpoints every second
        found = eventually(lambda: prom.query(alert), timeout_s=180, what="the stale-checkpoints alert")
        assert found[0]["metric"]["alertstate"] in ("pending", "firing")  # `for: 10m` holds it pending here
        assert (prom.value(age) or 0) > 10
    finally:
        env.connect.resume(checkpoint_connector)


def _label_values(prom: Prometheus, query: str) -> set[str]:
    """A Grafana ``label_values(SELECTOR, LABEL)`` variable query, as its Prometheus data source runs it."""
    found = re.fullmatch(r"label_values\((.+), (\w+)\)", query)
    assert found, query
    answer = requests.get(f"{prom.url}/api/v1/series", params={"match[]": found.group(1)}, timeout=10).json()
    assert answer["status"] == "success", answer
    return {series[found.group(2)] for series in answer["data"] if found.group(2) in series}


def test_every_grafana_panel_returns_data(env: Env) -> None:
    """The dashboard's variables find this flow and its group, and every panel's query, variables substituted,
    returns data from the Prometheus that scrapes the exporter."""
    dashboard = json.loads(DASHBOARD.read_text())
    prom, group = env.prometheus, env.topic("g")
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert env.pair in _label_values(prom, variables["flow"]["query"]["query"])
    chosen = {"flow": env.pair, "group": group}
    assert not any(re.search(r"[.*+?()|\[\]{}^$\\]", v) for v in chosen.values())  # no regex escaping needed
    group_query = variables["group"]["query"]["query"].replace("$flow", env.pair)
    assert group in _label_values(prom, group_query)
    queries = panel_queries(dashboard)
    assert len(queries) >= 15
    for title, expr in queries:
        if WAITING_ONLY & set(re.findall(r"mm2ctl_\w+", expr)):
            continue  # only while records wait: tests/integration/test_lag_in_time.py runs these
        substituted = expr.replace("$flow", chosen["flow"]).replace("$group", chosen["group"])
        assert "$" not in substituted, (title, substituted)
        result = eventually(lambda q=substituted: prom.query(q), timeout_s=60, what=f"data for panel {title!r}")
        assert all(r["value"][1] not in ("NaN", "") for r in result), (title, result)


def test_sigterm_stops_the_exporter_and_its_jvm(env: Env) -> None:
    assert env.exporter.poll() is None, env.exporter_log.read_text()
    children = Path(f"/proc/{env.exporter.pid}/task/{env.exporter.pid}/children").read_text().split()
    jvms = [int(pid) for pid in children if "java" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")]
    assert jvms, children
    env.exporter.send_signal(signal.SIGTERM)
    assert env.exporter.wait(timeout=120) == 0, env.exporter_log.read_text()
    for pid in jvms:
        assert not _alive(pid), f"the exporter's JVM {pid} outlived it"
    log = env.exporter_log.read_text()
    assert "mm2ctl exporter: serving http://127.0.0.1:" in log and "mm2ctl exporter: stopped" in log


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


def test_the_exporter_counted_no_failure(env: Env) -> None:
    """Every inspection of the run above completed (run last: the exporter has stopped, Prometheus kept it)."""
    errors = env.prometheus.query("max_over_time(mm2ctl_inspection_errors_total[30m])")
    assert [float(r["value"][1]) for r in errors] == [0.0], env.exporter_log.read_text()
