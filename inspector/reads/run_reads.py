"""What each run reads on the driver before Spark works: per pair, the clusters' admin state, MM2's position,
and one snapshot of each internal topic's offsets.

None of it needs Spark, so ``mm2ctl inspect`` reads it while Spark's driver JVM starts. Every run of a live
session reads it again: the groups' offsets and the topics' ends are what moved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config.flow_conditions import FlowCondition
from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.core.security.authorization import principal_of
from mm2ctl.core.spark_checkpoints.query_sources import QuerySource
from mm2ctl.inspector.reads import flow_notes
from mm2ctl.inspector.reads.internal_topics import TopicSnapshot, Unreadable, snapshot
from mm2ctl.inspector.reads.pair_admin import DriverJvm, PairState, collect_pair_state, this_process_jvm
from mm2ctl.inspector.reads.replicated_partitions import ReplicationState, collect_replication_state
from mm2ctl.inspector.reads.spark_query_rows import assign_queries
from mm2ctl.inspector.reads.typed_groups import GroupListings
from mm2ctl.inspector.selection import Selection


def select_pairs(config: MM2Config, names: Sequence[str]) -> list[PairConfig]:
    """``--pair`` values, or every enabled pair of the file."""
    if names:
        return [config.pair(n) for n in names]
    pairs = config.pairs()
    if not pairs:
        raise ConfigError("no enabled replication flow (set A->B.enabled = true)", path=config.path)
    return pairs


@dataclass(frozen=True, slots=True)
class PairRead:
    """One pair as a run read it on the driver."""

    pair: PairConfig
    state: PairState
    replication: ReplicationState
    syncs: TopicSnapshot | Unreadable
    checkpoints: TopicSnapshot | Unreadable
    #: What the flow's configuration makes of it (``inspector.reads.flow_notes.observe``).
    conditions: tuple[FlowCondition, ...] = ()

    def source_partitions(self) -> set[TP]:
        """The source partitions the run translates or reports on: every replicated one, and every one a
        group has an offset on."""
        replicated = self.replication.partitions
        group_offsets = self.state.source_group_offsets
        out = set(zip(replicated.column("topic").to_pylist(), replicated.column("partition").to_pylist(), strict=True))
        out |= set(
            zip(group_offsets.column("topic").to_pylist(), group_offsets.column("partition").to_pylist(), strict=True)
        )
        return out

    @property
    def denied(self) -> list[str]:
        """Why this principal may not read the pair's offset syncs or checkpoints (every row says so)."""
        return [t.message for t in (self.syncs, self.checkpoints) if isinstance(t, Unreadable) and t.denied]


def _snapshot(config: MM2Config, pair: PairConfig, alias: str, topic: str) -> TopicSnapshot | Unreadable:
    kafka = config.kafka_config(alias, pair.name)
    return snapshot(KafkaAdmin.connect(kafka, name=alias), cluster=alias, topic=topic, principal=principal_of(kafka))


def read_pair(
    config: MM2Config,
    pair: PairConfig,
    selection: Selection,
    *,
    connect: ConnectClient | None = None,
    progress: Progress = no_progress,
    conditions: Sequence[FlowCondition] | None = None,
    driver_jvm: DriverJvm = this_process_jvm,
    queries: Sequence[QuerySource] = (),
    listings: GroupListings | None = None,
) -> PairRead:
    """The pair's admin state, MM2's position (read first: it only moves forward) and its internal topics'
    snapshots, taken after the group offsets so that no sync a group offset needs is missed; and the flow's
    conditions, unless the caller has them (``conditions``: they sample the source topics). The committed
    offsets are read in the JVM ``driver_jvm`` gives, when it gives one. ``queries``: the Structured Streaming
    queries' Kafka sources inspected as groups of this pair. ``listings``: a live session's kept group listings
    (``inspector.reads.typed_groups.GroupListings``)."""
    progress(f"{pair.name}: reading admin state")
    replication = collect_replication_state(config, pair, selection, connect, progress=progress)
    state = collect_pair_state(
        config, pair, selection, progress=progress, driver_jvm=driver_jvm, queries=queries, listings=listings
    )
    with ThreadPoolExecutor(max_workers=3, thread_name_prefix=f"snapshot-{pair.name}") as pool:
        syncs = pool.submit(_snapshot, config, pair, pair.offset_syncs_cluster, pair.offset_syncs_topic)
        observed = None
        if conditions is None:
            observed = pool.submit(flow_notes.observe, config, pair, state.source_partitions, progress=progress)
        checkpoints = _snapshot(config, pair, pair.target, pair.checkpoints_topic)
        found = tuple(observed.result() if observed is not None else conditions or ())
        return PairRead(pair, state, replication, syncs.result(), checkpoints, found)


@dataclass(frozen=True, slots=True)
class ClusterState:
    """Everything a run reads on the driver, pair by pair."""

    pairs: tuple[PairRead, ...]


def read_cluster_state(
    config: MM2Config,
    pairs: Sequence[PairConfig],
    selection: Selection,
    *,
    connect: ConnectClient | None = None,
    progress: Progress = no_progress,
    conditions: Mapping[str, Sequence[FlowCondition]] | None = None,
    driver_jvm: DriverJvm = this_process_jvm,
    queries: Sequence[QuerySource] = (),
    listings: GroupListings | None = None,
) -> ClusterState:
    """Every pair as ``read_pair`` reads it; ``conditions`` per pair name when the caller has them. Each of
    ``queries`` goes to every pair whose flow mirrors all its topics
    (``inspector.reads.spark_query_rows.assign_queries``)."""
    known = conditions or {}
    assigned = assign_queries(queries, pairs)
    return ClusterState(
        tuple(
            read_pair(
                config,
                pair,
                selection,
                connect=connect,
                progress=progress,
                conditions=known.get(pair.name),
                driver_jvm=driver_jvm,
                queries=assigned[pair.name],
                listings=listings,
            )
            for pair in pairs
        )
    )
