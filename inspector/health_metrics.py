"""An inspection's result reduced to what monitoring needs: per partition, per group and per status figures.

``inspection_metrics`` runs one small aggregation over the group-partition rows (a row per pair, group and
status comes back) and collects the replicated-partition rows, so what leaves Spark is a few thousand values
however many group partitions were inspected. The result is plain, frozen Python: ``prometheus_output`` turns
it into metric families, and the exporter keeps the last good one while the next inspection runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import functions as F

from mm2ctl.core.config import MM2Config
from mm2ctl.inspector.job import InspectResult
from mm2ctl.inspector.replication_health import GROUP_CHECKPOINT_AGE, PartitionStatus
from mm2ctl.inspector.statuses import Status


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


def inspection_metrics(result: InspectResult, config: MM2Config) -> InspectionMetrics:
    """The monitoring figures of ``result`` (whose pairs are ``config``'s)."""
    per_group_status = (
        result.rows.groupBy("cluster_pair", "group", "status")
        .agg(
            F.count(F.lit(1)).alias("partitions"),
            # The true count where inspect knows it (an exact translation, or --exact), else the bound every
            # translated row has: replay at least, skip at most.
            F.sum(F.coalesce("replay_if_failover_now", "replay_if_failover_now_at_least")).alias("replay"),
            F.sum(F.coalesce("skip_if_failover_now", "skip_if_failover_now_at_most")).alias("skip"),
            F.min(GROUP_CHECKPOINT_AGE).alias("age"),
        )
        .collect()
    )
    group_partitions = {(flow, s.value): 0 for flow in result.pairs for s in Status}
    groups: dict[tuple[str, str], GroupMetrics] = {}
    for r in per_group_status:
        flow, group = r["cluster_pair"], r["group"]
        group_partitions[(flow, r["status"])] = group_partitions.get((flow, r["status"]), 0) + r["partitions"]
        seen = groups.get((flow, group)) or GroupMetrics(flow, group, r["age"], 0, 0)
        groups[(flow, group)] = GroupMetrics(
            flow,
            group,
            seen.checkpoint_age_seconds,  # the same on every row of the group
            seen.failover_replay_messages + int(r["replay"] or 0),
            seen.failover_skip_messages + int(r["skip"] or 0),
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
        )
        for r in result.partitions.select(
            "cluster_pair",
            "topic",
            "partition",
            "status",
            "replication_lag_records",
            "records_lost_to_retention",
            "offset_sync_age_seconds",
        )
        .orderBy("cluster_pair", "topic", "partition")
        .collect()
    )
    replicated = {(flow, s.value): 0 for flow in result.pairs for s in PartitionStatus}
    for p in partitions:
        replicated[(p.flow, p.status)] = replicated.get((p.flow, p.status), 0) + 1
    return InspectionMetrics(
        flows=tuple(result.pairs),
        partitions=partitions,
        groups=tuple(groups[key] for key in sorted(groups)),
        group_partitions=group_partitions,
        replicated_partitions=replicated,
        checkpoint_interval_seconds={
            name: float(config.pair(name).emit_checkpoints_interval_seconds) for name in result.pairs
        },
    )
