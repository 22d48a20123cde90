"""The Prometheus exposition: exact metric names and labels, parsed back with prometheus_client's own parser;
the textfile replaced atomically under a concurrent reader; the exporter's HTTP routes and its loop keeping the
last good metrics when a run fails."""

from __future__ import annotations

import logging
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from mm2ctl.inspector import exporter as exporter_module
from mm2ctl.inspector.exporter import Exporter, Listen, MetricsServer, metrics_app, one_line
from mm2ctl.inspector.output.health_metrics import GroupMetrics, InspectionMetrics, PartitionMetrics
from mm2ctl.inspector.output.inspection_result import RecoveryPoint
from mm2ctl.inspector.output.prometheus import InspectionCollector, write_textfile

FLOW = "a->b"

#: The names the issue fixes, exactly (the counter's family is exposed with ``_total``).
REQUIRED = {
    "mm2ctl_replication_lag_records": {"flow", "topic", "partition"},
    "mm2ctl_records_lost_to_retention": {"flow", "topic", "partition"},
    "mm2ctl_offset_sync_age_seconds": {"flow", "topic", "partition"},
    "mm2ctl_replication_lag_seconds": {"flow", "topic", "partition"},
    "mm2ctl_replication_retention_margin_seconds": {"flow", "topic", "partition"},
    "mm2ctl_flow_recovery_point_records": {"flow"},
    "mm2ctl_flow_recovery_point_seconds": {"flow"},
    "mm2ctl_checkpoint_age_seconds": {"flow", "group"},
    "mm2ctl_group_partitions": {"flow", "status"},
    "mm2ctl_failover_replay_messages": {"flow", "group"},
    "mm2ctl_failover_skip_messages": {"flow", "group"},
    "mm2ctl_inspection_duration_seconds": set(),
    "mm2ctl_inspection_last_success_timestamp_seconds": set(),
    "mm2ctl_inspection_errors_total": set(),
}


def metrics(lag: int = 500) -> InspectionMetrics:
    return InspectionMetrics(
        flows=(FLOW,),
        partitions=(
            PartitionMetrics(FLOW, "orders", 0, "replicating", lag, 0, 12.5, 43.5, 556.5),
            PartitionMetrics(FLOW, "orders", 1, "lost_records", 0, 50, None),
            PartitionMetrics(FLOW, "audit", 0, "position_unknown", None, None, 3.0),
        ),
        groups=(GroupMetrics(FLOW, "billing", 42.0, 7, 0), GroupMetrics(FLOW, "idle", None, 0, 3)),
        group_partitions={(FLOW, "synced"): 10, (FLOW, "target_ahead"): 1},
        replicated_partitions={(FLOW, "replicating"): 1, (FLOW, "lost_records"): 1, (FLOW, "position_unknown"): 1},
        checkpoint_interval_seconds={FLOW: 60.0},
        recovery_points={FLOW: RecoveryPoint(FLOW, lag + 0, 43.5, 556.5, "retention.ms")},
    )


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _labels(**labels: str) -> frozenset[tuple[str, str]]:
    return frozenset(labels.items())


def test_textfile_parses_back_with_the_required_names_and_values(tmp_path: Path) -> None:
    collector = InspectionCollector()
    collector.succeeded(metrics(), duration_seconds=12.0, finished_at=1_700_000_000.0)
    path = tmp_path / "mm2ctl.prom"
    write_textfile(str(path), collector)
    got = samples(path.read_text())
    names = {name for name, _ in got}
    for name, labels in REQUIRED.items():
        assert name in names, name
        assert all(set(dict(ls)) == labels for n, ls in got if n == name), name
    part0 = _labels(flow=FLOW, topic="orders", partition="0")
    assert got[("mm2ctl_replication_lag_records", part0)] == 500
    assert got[("mm2ctl_offset_sync_age_seconds", part0)] == 12.5
    assert got[("mm2ctl_replication_lag_seconds", part0)] == 43.5
    assert got[("mm2ctl_replication_retention_margin_seconds", part0)] == 556.5
    assert got[("mm2ctl_flow_recovery_point_seconds", _labels(flow=FLOW))] == 43.5
    assert got[("mm2ctl_flow_recovery_point_records", _labels(flow=FLOW))] == 500
    part1 = _labels(flow=FLOW, topic="orders", partition="1")
    assert ("mm2ctl_replication_retention_margin_seconds", part1) not in got  # unknown: no sample
    assert got[("mm2ctl_records_lost_to_retention", _labels(flow=FLOW, topic="orders", partition="1"))] == 50
    unknown = _labels(flow=FLOW, topic="audit", partition="0")
    assert ("mm2ctl_replication_lag_records", unknown) not in got  # not known: no sample, never a made-up 0
    assert got[("mm2ctl_checkpoint_age_seconds", _labels(flow=FLOW, group="billing"))] == 42
    assert ("mm2ctl_checkpoint_age_seconds", _labels(flow=FLOW, group="idle")) not in got
    assert got[("mm2ctl_failover_skip_messages", _labels(flow=FLOW, group="idle"))] == 3
    assert got[("mm2ctl_group_partitions", _labels(flow=FLOW, status="target_ahead"))] == 1
    assert got[("mm2ctl_inspection_last_success_timestamp_seconds", frozenset())] == 1_700_000_000
    assert got[("mm2ctl_inspection_errors_total", frozenset())] == 0


def test_textfile_is_replaced_atomically_under_a_reader(tmp_path: Path) -> None:
    path = tmp_path / "mm2ctl.prom"
    collector = InspectionCollector()
    collector.succeeded(metrics(lag=1), duration_seconds=1.0, finished_at=1.0)
    write_textfile(str(path), collector)
    before = path.stat().st_ino
    with path.open() as held:  # a reader that opened the file before the next write
        seen: list[float] = []
        stop = threading.Event()

        def read() -> None:
            while not stop.is_set():
                got = samples(path.read_text())  # never a partial file: each read parses whole
                seen.append(got[("mm2ctl_replication_lag_records", _labels(flow=FLOW, topic="orders", partition="0"))])

        reader = threading.Thread(target=read)
        reader.start()
        for lag in range(2, 200):
            collector.succeeded(metrics(lag=lag), duration_seconds=1.0, finished_at=float(lag))
            write_textfile(str(path), collector)
        stop.set()
        reader.join()
        assert "mm2ctl_replication_lag_records" in held.read()  # still the old, whole file
    assert seen and all(1 <= v < 200 for v in seen)
    assert path.stat().st_ino != before  # renamed over, not rewritten in place
    assert os.listdir(tmp_path) == ["mm2ctl.prom"]  # no temporary file left behind


def test_a_failed_run_keeps_the_last_good_metrics_and_counts(tmp_path: Path) -> None:
    collector = InspectionCollector()
    assert samples_of(collector) == {("mm2ctl_inspection_errors_total", frozenset()): 0}  # nothing yet
    collector.succeeded(metrics(lag=7), duration_seconds=3.0, finished_at=100.0)
    collector.failed()
    collector.failed()
    got = samples_of(collector)
    assert got[("mm2ctl_inspection_errors_total", frozenset())] == 2
    assert got[("mm2ctl_inspection_last_success_timestamp_seconds", frozenset())] == 100
    assert got[("mm2ctl_replication_lag_records", _labels(flow=FLOW, topic="orders", partition="0"))] == 7


def samples_of(collector: InspectionCollector) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    from prometheus_client import generate_latest

    from mm2ctl.inspector.output.prometheus import registry_of

    return samples(generate_latest(registry_of(collector)).decode())


class _Result:
    """What a run hands back, as far as the exporter reads it: metrics made from it, then closed."""

    def __init__(self, metrics: Any) -> None:
        self.metrics = metrics
        self.closed = False

    def close(self) -> None:
        self.closed = True


class _Inspector:
    """The inspection's outcomes, one per run, without Spark: the exporter's loop logic only."""

    config = None

    def __init__(self, outcomes: list[Any]) -> None:
        self.outcomes = outcomes
        self.results: list[_Result] = []

    def run(self, **_k: Any) -> _Result:
        outcome = self.outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        self.results.append(_Result(outcome))
        return self.results[-1]


def _exporter(monkeypatch: pytest.MonkeyPatch, outcomes: list[Any]) -> tuple[Exporter, InspectionCollector]:
    monkeypatch.setattr(exporter_module, "inspection_metrics", lambda result, _config: result.metrics)
    collector = InspectionCollector()
    runner = Exporter(_Inspector(outcomes), interval_s=60, collector=collector)  # type: ignore[arg-type]
    return runner, collector


def test_the_loop_keeps_the_last_good_metrics_and_logs_one_line(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    boom = RuntimeError("broker gone\n\tat org.apache.kafka.Something(Something.java:1)\npassword=hunter2")
    runner, collector = _exporter(monkeypatch, [metrics(lag=5), boom])
    assert runner.run_once()
    assert runner.inspector.results[0].closed  # the run's rows are released once its metrics are made
    with caplog.at_level(logging.ERROR, logger="mm2ctl.exporter"):
        assert not runner.run_once()
    (record,) = caplog.records
    assert "\n" not in record.getMessage() and "broker gone" in record.getMessage()
    assert collector.errors == 1
    got = samples_of(collector)
    assert got[("mm2ctl_replication_lag_records", _labels(flow=FLOW, topic="orders", partition="0"))] == 5


def test_one_line_masks_secrets() -> None:
    line = one_line(ValueError("url http://u:secret@h:1 failed\nmore"))
    assert line.startswith("ValueError: url http://") and line.endswith("@h:1 failed") and "secret" not in line


def test_listen_parsing() -> None:
    assert Listen.parse("127.0.0.1:9464") == Listen("127.0.0.1", 9464)
    assert Listen.parse("[::1]:0") == Listen("::1", 0)
    for bad in ("9464", ":9464", "host:port", "h:70000"):
        with pytest.raises(Exception, match="HOST:PORT"):
            Listen.parse(bad)


def test_http_routes() -> None:
    collector = InspectionCollector()
    collector.succeeded(metrics(), duration_seconds=1.0, finished_at=1.0)
    alive = [True]
    server = MetricsServer(Listen("127.0.0.1", 0), metrics_app(collector, lambda: alive[0]))
    server.start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        with urllib.request.urlopen(f"{base}/metrics") as r:
            assert r.headers["Content-Type"].startswith("text/plain")
            assert ("mm2ctl_failover_replay_messages", _labels(flow=FLOW, group="billing")) in samples(
                r.read().decode()
            )
        with urllib.request.urlopen(f"{base}/healthz") as r:
            assert r.status == 200
        alive[0] = False
        with pytest.raises(urllib.error.HTTPError) as dead:
            urllib.request.urlopen(f"{base}/healthz")
        assert dead.value.code == 503
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{base}/other")
        assert missing.value.code == 404
    finally:
        server.stop()


def test_every_group_status_is_a_sample_per_flow_zeros_included() -> None:
    """``mm2ctl_group_partitions`` has a sample for every status of every flow, so a dashboard or an alert on
    one (``not_yet_copied`` among them) sees 0 rather than no data."""
    from mm2ctl.core.config.mm2_config import mm2_config_from_text
    from mm2ctl.inspector.output.health_metrics import inspection_metrics
    from mm2ctl.inspector.output.inspection_result import InspectionResult, summarize
    from mm2ctl.inspector.schemas import PARTITION_HEALTH_SCHEMA, arrow_schema
    from mm2ctl.inspector.statuses import Status

    config = mm2_config_from_text(
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
    )
    figure = {
        "cluster_pair": FLOW, "group": "billing", "status": "not_yet_copied", "is_ok": False, "partitions": 3,
        "replay": 0, "skip": 0, "replay_at_least": 0, "skip_at_most": 0, "checkpoint_age": None, "problems": [],
    }  # fmt: skip
    result = InspectionResult(
        pairs=(FLOW,),
        summary=summarize([figure], (FLOW,)),
        partitions=arrow_schema(PARTITION_HEALTH_SCHEMA).empty_table(),
        positions=(),
        notes=(),
        rows=None,  # type: ignore[arg-type]
    )
    counts = inspection_metrics(result, config).group_partitions
    assert counts == {(FLOW, s.value): 3 if s is Status.NOT_YET_COPIED else 0 for s in Status}
    collector = InspectionCollector()
    collector.succeeded(inspection_metrics(result, config), duration_seconds=1.0, finished_at=1.0)
    got = samples_of(collector)
    assert got[("mm2ctl_group_partitions", _labels(flow=FLOW, status="not_yet_copied"))] == 3
    assert got[("mm2ctl_group_partitions", _labels(flow=FLOW, status="synced"))] == 0
