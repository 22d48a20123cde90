"""The Prometheus exposition of an inspection: metric families from ``InspectionMetrics``, built with
``prometheus_client`` (which writes the text format; nothing here formats it by hand).

``InspectionCollector`` holds the last complete inspection and the run counters. ``mm2ctl exporter``
registers one and serves it on ``/metrics``; ``mm2ctl inspect --format prometheus`` fills one with its single
run and writes it as a node_exporter textfile, atomically (``prometheus_client.write_to_textfile`` writes a
temporary file beside the target, then renames it over the target).

Metric names follow Prometheus's naming rules: the base unit in the name, ``_total`` on the counter only, and a
last-success timestamp rather than a boolean. Labels: ``flow`` (``A->B``), ``topic`` and ``partition`` of the
source, ``group``, ``status``.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, write_to_textfile
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from mm2ctl.inspector.output.health_metrics import InspectionMetrics

#: Every metric this module exposes (without the ``_total`` of the counter), for docs and tests.
METRIC_NAMES = (
    "mm2ctl_replication_lag_records",
    "mm2ctl_replication_lag_seconds",
    "mm2ctl_replication_retention_margin_seconds",
    "mm2ctl_flow_recovery_point_records",
    "mm2ctl_flow_recovery_point_seconds",
    "mm2ctl_records_lost_to_retention",
    "mm2ctl_offset_sync_age_seconds",
    "mm2ctl_checkpoint_age_seconds",
    "mm2ctl_checkpoint_interval_seconds",
    "mm2ctl_group_partitions",
    "mm2ctl_replicated_partitions",
    "mm2ctl_groups",
    "mm2ctl_failover_replay_messages",
    "mm2ctl_failover_skip_messages",
    "mm2ctl_inspection_duration_seconds",
    "mm2ctl_inspection_last_success_timestamp_seconds",
    "mm2ctl_inspection_errors",
)

PARTITION_LABELS = ["flow", "topic", "partition"]
GROUP_LABELS = ["flow", "group"]
STATUS_LABELS = ["flow", "status"]


@dataclass(frozen=True, slots=True)
class _Runs:
    metrics: InspectionMetrics | None = None
    duration_seconds: float | None = None
    last_success: float | None = None
    errors: int = 0


class InspectionCollector(Collector):
    """The last complete inspection's metrics and the run counters, read by a registry on every scrape.

    ``succeeded`` replaces the metrics; ``failed`` only counts, so a scrape keeps seeing the last good ones.
    Both swap one immutable snapshot, so a scrape never sees half of an update.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs = _Runs()

    def succeeded(self, metrics: InspectionMetrics, *, duration_seconds: float, finished_at: float) -> None:
        """Record a complete inspection that took ``duration_seconds`` and ended at ``finished_at`` (epoch s)."""
        with self._lock:
            self._runs = _Runs(metrics, duration_seconds, finished_at, self._runs.errors)

    def failed(self) -> None:
        with self._lock:
            runs = self._runs
            self._runs = _Runs(runs.metrics, runs.duration_seconds, runs.last_success, runs.errors + 1)

    @property
    def errors(self) -> int:
        return self._runs.errors

    @property
    def has_metrics(self) -> bool:
        return self._runs.metrics is not None

    def collect(self) -> Iterator[Metric]:
        runs = self._runs
        errors = CounterMetricFamily(
            "mm2ctl_inspection_errors", "Inspections that failed since this process started.", value=runs.errors
        )
        yield errors
        if runs.metrics is None or runs.duration_seconds is None or runs.last_success is None:
            return
        yield GaugeMetricFamily(
            "mm2ctl_inspection_duration_seconds",
            "How long the last complete inspection took.",
            value=runs.duration_seconds,
        )
        yield GaugeMetricFamily(
            "mm2ctl_inspection_last_success_timestamp_seconds",
            "When the last complete inspection ended (Unix time).",
            value=runs.last_success,
        )
        yield from metric_families(runs.metrics)


def metric_families(m: InspectionMetrics) -> Iterator[Metric]:
    """The families of one inspection's metrics (every one present, even with no sample)."""
    lag = GaugeMetricFamily(
        "mm2ctl_replication_lag_records",
        "Records on the source partition that MM2 has not copied yet (from its stored position).",
        labels=PARTITION_LABELS,
    )
    lost = GaugeMetricFamily(
        "mm2ctl_records_lost_to_retention",
        "Records retention deleted on the source before MM2 copied them.",
        labels=PARTITION_LABELS,
    )
    sync_age = GaugeMetricFamily(
        "mm2ctl_offset_sync_age_seconds",
        "Age of the source partition's newest offset sync, from its record timestamp.",
        labels=PARTITION_LABELS,
    )
    for p in m.partitions:
        labels = [p.flow, p.topic, str(p.partition)]
        if p.replication_lag_records is not None:
            lag.add_metric(labels, p.replication_lag_records)
        if p.records_lost_to_retention is not None:
            lost.add_metric(labels, p.records_lost_to_retention)
        if p.offset_sync_age_seconds is not None:
            sync_age.add_metric(labels, p.offset_sync_age_seconds)
    yield from (lag, lost, sync_age)
    yield from _lag_in_time(m)

    checkpoint_age = GaugeMetricFamily(
        "mm2ctl_checkpoint_age_seconds",
        "Age of the group's newest checkpoint over its inspected partitions, from its record timestamp.",
        labels=GROUP_LABELS,
    )
    replay = GaugeMetricFamily(
        "mm2ctl_failover_replay_messages",
        "Messages the group's consumers would read twice if they failed over to the target now "
        "(the true count where inspect knows it, else at least this many).",
        labels=GROUP_LABELS,
    )
    skip = GaugeMetricFamily(
        "mm2ctl_failover_skip_messages",
        "Messages the group's consumers would never see if they failed over to the target now "
        "(the true count where inspect knows it, else at most this many).",
        labels=GROUP_LABELS,
    )
    for g in m.groups:
        labels = [g.flow, g.group]
        if g.checkpoint_age_seconds is not None:
            checkpoint_age.add_metric(labels, g.checkpoint_age_seconds)
        replay.add_metric(labels, g.failover_replay_messages)
        skip.add_metric(labels, g.failover_skip_messages)
    yield from (checkpoint_age, replay, skip)

    interval = GaugeMetricFamily(
        "mm2ctl_checkpoint_interval_seconds",
        "MM2's emit.checkpoints.interval.seconds for the flow, what a checkpoint's age compares with.",
        labels=["flow"],
    )
    for flow, seconds in sorted(m.checkpoint_interval_seconds.items()):
        interval.add_metric([flow], seconds)
    yield interval

    group_partitions = GaugeMetricFamily(
        "mm2ctl_group_partitions", "Consumer-group partitions per inspect status.", labels=STATUS_LABELS
    )
    for (flow, status), count in sorted(m.group_partitions.items()):
        group_partitions.add_metric([flow, status], count)
    yield group_partitions
    by_type = GaugeMetricFamily(
        "mm2ctl_groups",
        "Inspected groups per group type (classic, consumer, share, streams); MM2 never checkpoints share or "
        "streams groups.",
        labels=["flow", "type"],
    )
    for (flow, kind), count in sorted(m.groups_by_type.items()):
        by_type.add_metric([flow, kind], count)
    yield by_type
    replicated = GaugeMetricFamily(
        "mm2ctl_replicated_partitions", "Replicated source partitions per replication status.", labels=STATUS_LABELS
    )
    for (flow, status), count in sorted(m.replicated_partitions.items()):
        replicated.add_metric([flow, status], count)
    yield replicated


def _lag_in_time(m: InspectionMetrics) -> Iterator[Metric]:
    """MM2's lag in seconds per partition, the retention margin, and each flow's recovery point."""
    seconds = GaugeMetricFamily(
        "mm2ctl_replication_lag_seconds",
        "Age of the oldest source record MM2 has not copied (its timestamp against the source's bounds read); "
        "0 when MM2 is caught up.",
        labels=PARTITION_LABELS,
    )
    margin = GaugeMetricFamily(
        "mm2ctl_replication_retention_margin_seconds",
        "Time until the source's retention may delete the oldest record MM2 has not copied; no sample when "
        "nothing waits, the topic is compacted or its retention unlimited.",
        labels=PARTITION_LABELS,
    )
    for p in m.partitions:
        labels = [p.flow, p.topic, str(p.partition)]
        if p.replication_lag_seconds is not None:
            seconds.add_metric(labels, p.replication_lag_seconds)
        if p.retention_margin_seconds is not None:
            margin.add_metric(labels, p.retention_margin_seconds)
    point_records = GaugeMetricFamily(
        "mm2ctl_flow_recovery_point_records",
        "Records MM2 has not copied over the flow's partitions: what the source dying now would lose.",
        labels=["flow"],
    )
    point_seconds = GaugeMetricFamily(
        "mm2ctl_flow_recovery_point_seconds",
        "Age of the oldest record MM2 has not copied over the flow's partitions: the time the source dying now "
        "would lose.",
        labels=["flow"],
    )
    for flow, point in sorted(m.recovery_points.items()):
        if point.records is not None:
            point_records.add_metric([flow], point.records)
        if point.seconds is not None:
            point_seconds.add_metric([flow], point.seconds)
    yield from (seconds, margin, point_records, point_seconds)


def registry_of(collector: InspectionCollector) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def write_textfile(path: str, collector: InspectionCollector) -> None:
    """The exposition of ``collector``, written to ``path`` atomically (node_exporter reads ``*.prom`` files)."""
    write_to_textfile(path, registry_of(collector))
