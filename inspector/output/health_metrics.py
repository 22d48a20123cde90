"""An inspection's result reduced to what monitoring needs: per partition, per group and per status figures.

``inspection_metrics`` reads the values an inspection hands back (its per-group figures and its
replicated-partition rows, ``inspector.output.inspection_result``), so it needs no Spark. The result is plain, frozen
Python: ``inspector.output.prometheus`` turns it into metric families, and the exporter keeps the last good one while
the next inspection runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mm2ctl.core.config.mm2_config import MM2Config
from mm2ctl.core.kafka.group_admin import GROUP_TYPES
from mm2ctl.inspector.output.inspection_result import InspectionResult, RecoveryPoint, recovery_points
from mm2ctl.inspector.statuses import PartitionStatus, Status


@dataclass(frozen=True, slots=True)
class PartitionMetrics:
    """A replicated source partition. ``None``: not known (MM2's position or a sync is missing)."""

    flow: str
    topic: str
    partition: int
    status: str
    replication_lag_records: int | None
    records_lost_to_retention: int | None
    offset_sync_age_seconds: float | None
    replication_lag_seconds: float | None = None
    retention_margin_seconds: float | None = None


@dataclass(frozen=True, slots=True)
class GroupMetrics:
    """A consumer group of a flow: its newest checkpoint's age, and what a failover now replays and skips."""

    flow: str
    group: str
    checkpoint_age_seconds: float | None
    failover_replay_messages: int
    failover_skip_messages: int


@dataclass(frozen=True, slots=True)
class InspectionMetrics:
    flows: tuple[str, ...]
    partitions: tuple[PartitionMetrics, ...]
    groups: tuple[GroupMetrics, ...]
    #: (flow, status) -> group partitions; every status of every flow, zeros included.
    group_partitions: Mapping[tuple[str, str], int] = field(default_factory=dict)
    #: (flow, status) -> replicated source partitions; every status of every flow, zeros included.
    replicated_partitions: Mapping[tuple[str, str], int] = field(default_factory=dict)
    #: flow -> MM2's ``emit.checkpoints.interval.seconds``, what a checkpoint's age compares with.
    checkpoint_interval_seconds: Mapping[str, float] = field(default_factory=dict)
    #: (flow, group type) -> inspected groups; every type of every flow, zeros included.
    groups_by_type: Mapping[tuple[str, str], int] = field(default_factory=dict)
    #: flow -> what its source dying now would lose (``inspection_result.recovery_points``).
    recovery_points: Mapping[str, RecoveryPoint] = field(default_factory=dict)


def inspection_metrics(result: InspectionResult, config: MM2Config) -> InspectionMetrics:
    """The monitoring figures of ``result`` (whose pairs are ``config``'s)."""
    group_partitions = {(flow, s.value): 0 for flow in result.pairs for s in Status}
    for count in result.summary.statuses:
        group_partitions[(count.pair, count.status)] = count.partitions
    groups = tuple(
        GroupMetrics(g.pair, g.group, g.checkpoint_age_seconds, g.failover_replay_messages, g.failover_skip_messages)
        for g in result.summary.groups
    )
    partitions = tuple(
        PartitionMetrics(
            flow=r["cluster_pair"],
            topic=r["topic"],
            partition=r["partition"],
            status=r["status"],
            replication_lag_records=r["replication_lag_records"],
            records_lost_to_retention=r["records_lost_to_retention"],
            offset_sync_age_seconds=r["offset_sync_age_seconds"],
            replication_lag_seconds=r["replication_lag_seconds"],
            retention_margin_seconds=r["retention_margin_seconds"],
        )
        for r in result.partitions.select(_PARTITION_FIELDS).to_pylist()
    )
    replicated = {(flow, s.value): 0 for flow in result.pairs for s in PartitionStatus}
    for p in partitions:
        replicated[(p.flow, p.status)] = replicated.get((p.flow, p.status), 0) + 1
    return InspectionMetrics(
        flows=tuple(result.pairs),
        partitions=partitions,
        groups=groups,
        group_partitions=group_partitions,
        replicated_partitions=replicated,
        checkpoint_interval_seconds={
            name: float(config.pair(name).emit_checkpoints_interval_seconds) for name in result.pairs
        },
        groups_by_type=_groups_by_type(result),
        recovery_points=recovery_points(result.partitions),
    )


def _groups_by_type(result: InspectionResult) -> dict[tuple[str, str], int]:
    counts = {(flow, kind): 0 for flow in result.pairs for kind in GROUP_TYPES}
    for flow, totals in result.summary.totals.items():
        for kind, n in totals.groups_by_type.items():
            counts[(flow, kind)] = n
    return counts


_PARTITION_FIELDS = [
    "cluster_pair",
    "topic",
    "partition",
    "status",
    "replication_lag_records",
    "records_lost_to_retention",
    "offset_sync_age_seconds",
    "replication_lag_seconds",
    "retention_margin_seconds",
]
