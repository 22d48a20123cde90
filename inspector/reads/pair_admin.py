"""Collect one pair's admin state on the driver, concurrently, as Arrow tables in the inspector's schemas.

What is read, per pair (docs/design.md, "Inspect"):
- the source groups MM2 mirrors (MM2's group filter, then the user's regex), their state and committed
  offsets, on topics MM2 replicates (MM2's topic filter and internal-topic rules, then the user's regex);
- earliest/latest of those source partitions, and of their **remote** partitions on the target;
- the same groups' committed offsets and state on the target, under the remote topic names.
- the Structured Streaming queries' positions (``--spark-checkpoint``), as groups of type ``spark_query`` that
  have nothing on the target (``inspector.reads.spark_query_rows``).

Source and target lookups run side by side; each fans out through the admin facade, which keeps many
requests in flight. The committed offsets come as columns from ``inspector.reads.committed_offsets``, read in the driver
JVM when the process has one (``driver_jvm``), and are filtered per group and per topic, never per offset. A
failed lookup becomes the ``error`` of the rows it concerns (partial failure is data).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.kafka.admin import TP, GroupDescription, ItemError, KafkaAdmin, PartitionBounds
from mm2ctl.core.progress import Progress
from mm2ctl.core.security.authorization import AUTHORIZATION_CODES, denial_text, is_denial, principal_of
from mm2ctl.core.spark_checkpoints.query_sources import QuerySource, refuse_named_like_queries
from mm2ctl.inspector.reads.committed_offsets import JvmAdmin, read_columns
from mm2ctl.inspector.reads.group_offset_tables import kept_rows, offsets_table, partitions_of, target_rows
from mm2ctl.inspector.reads.spark_query_rows import no_columns, query_columns, query_groups_table
from mm2ctl.inspector.reads.typed_groups import GroupListings, TypedGroups, appended
from mm2ctl.inspector.selection import Selection
from mm2ctl.inspector.statuses import ACTIVE_GROUP_STATES

log = logging.getLogger("mm2ctl.inspect")


@dataclass(frozen=True, slots=True)
class PairState:
    pair: PairConfig
    read_at: dt.datetime
    source_group_offsets: pa.Table
    source_partitions: pa.Table
    target_partitions: pa.Table
    target_group_offsets: pa.Table
    source_groups: pa.Table
    target_groups: pa.Table
    source_topics: frozenset[str]
    target_topics: frozenset[str]

    @property
    def group_partitions(self) -> int:
        return int(self.source_group_offsets.num_rows)


@dataclass(frozen=True, slots=True)
class _Side:
    """One cluster of the pair, for naming a denied lookup: its alias and the principal it sees."""

    alias: str
    principal: str


def _err(e: ItemError | None, side: _Side | None = None, resource: str = "", name: str | None = None) -> str | None:
    """A row's error: a denied lookup as the one line naming principal, operation and resource."""
    if e is None:
        return None
    if side is not None and is_denial(e.code):
        kind = AUTHORIZATION_CODES[e.code]
        text = denial_text(side.principal, "DESCRIBE", kind, name if kind == resource else None, side.alias)
        return f"{text} [{e.code}]"
    return f"{e.code}: {e.message}"


def _groups_table(
    name: str,
    described: dict[str, GroupDescription],
    groups: list[str],
    side: _Side | None = None,
    types: dict[str, str] | None = None,
) -> pa.Table:
    rows = [described.get(g) for g in groups]
    kinds = types or {}
    return pa.table(
        {
            "cluster_pair": pa.array([name] * len(groups), pa.string()),
            "group": pa.array(groups, pa.string()),
            "state": pa.array([d.state if d and d.error is None else None for d in rows], pa.string()),
            "member_count": pa.array([d.members if d and d.error is None else None for d in rows], pa.int32()),
            "error": pa.array(
                [_err(d.error, side, "group", g) if d else "not described" for g, d in zip(groups, rows, strict=True)],
                pa.string(),
            ),
            "group_type": pa.array([kinds.get(g) for g in groups], pa.string()),
        }
    )


def reach_clusters(pairs: Sequence[PairConfig], *, timeout_s: float = 15.0) -> None:
    """Fail fast when a cluster of ``pairs`` cannot be reached: one describe-cluster call per cluster, side by
    side. ``mm2ctl inspect`` calls it before it starts Spark, so a dead broker or a mistyped address costs
    seconds, not Spark's start-up plus the admin calls' longer timeout. Raises the first cluster's
    ``KafkaClusterError``."""
    clusters: dict[str, dict[str, str]] = {}
    for pair in pairs:
        clusters.setdefault(pair.source, dict(pair.source_kafka_config))
        clusters.setdefault(pair.target, dict(pair.target_kafka_config))

    def reach(alias: str) -> None:
        KafkaAdmin.connect(clusters[alias], name=alias, timeout_s=timeout_s).cluster_id()

    with ThreadPoolExecutor(max_workers=len(clusters) or 1, thread_name_prefix="reach") as pool:
        for future in [pool.submit(reach, alias) for alias in clusters]:
            future.result()


#: The py4j gateway of the JVM to read committed offsets in, or None to read them through librdkafka; it may wait
#: for a JVM that is starting (``session.SessionStart.gateway``).
DriverJvm = Callable[[], Any]


def this_process_jvm() -> Any:
    """The py4j gateway of this process's Spark driver JVM when it has one (classic PySpark, embedded or under
    spark-submit), else None (no session yet, or Spark Connect, whose Python process has no JVM)."""
    from mm2ctl.inspector.spark.session import driver_gateway

    return driver_gateway()


def _jvm(config: MM2Config, pair: PairConfig, alias: str, gateway: Any) -> JvmAdmin | None:
    if gateway is None:
        return None
    return JvmAdmin(gateway, config.client_settings(alias, pair.name), name=alias)


def collect_pair_state(
    config: MM2Config,
    pair: PairConfig,
    selection: Selection,
    *,
    progress: Progress | None = None,
    timeout_s: float = 60.0,
    driver_jvm: DriverJvm = this_process_jvm,
    queries: Sequence[QuerySource] = (),
    listings: GroupListings | None = None,
) -> PairState:
    """The pair's admin state (module docstring). ``queries``: Structured Streaming queries' Kafka sources that
    join the groups, after them (``inspector.reads.spark_query_rows``). ``listings``: a live session's kept group
    listings (``inspector.reads.typed_groups.GroupListings``)."""
    say = progress or (lambda _m: None)
    name = pair.name
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=timeout_s)
    target = KafkaAdmin.connect(pair.target_kafka_config, name=pair.target, timeout_s=timeout_s)
    source_side = _Side(pair.source, principal_of(pair.source_kafka_config))
    target_side = _Side(pair.target, principal_of(pair.target_kafka_config))
    read_at = dt.datetime.now(dt.UTC)

    with ThreadPoolExecutor(max_workers=6, thread_name_prefix=f"admin-{name}") as pool:
        typed = TypedGroups(config, pair, pool, timeout_s=timeout_s, listings=listings)  # every type, in the background
        target_topics_f = pool.submit(target.list_topics)
        source_topics = source.list_topics()
        listed = source.list_groups()
        candidates = [g.group for g in listed if pair.group_filter.matches(g.group) and selection.group_ok(g.group)]
        say(f"{name}: {len(candidates)} source group(s) match; reading their state and committed offsets")
        described_f = pool.submit(source.describe_groups, candidates)
        gateway = driver_jvm()  # waits for a JVM that is starting; None without one
        # Share and streams groups, read through the Java client after the others (``appended``).
        unmirrored = typed.unmirrored(pair.source, lambda g: pair.group_filter.matches(g) and selection.group_ok(g))
        candidates = [g for g in candidates if g not in unmirrored]
        query_names = frozenset(qs.name for qs in queries)
        refuse_named_like_queries(queries, [*candidates, *unmirrored], pair.source)
        committed = read_columns(source, candidates, jvm=_jvm(config, pair, pair.source, gateway))
        described = described_f.result()
        say(f"{name}: committed offsets read through {committed.read_through}")
        if unmirrored:
            say(f"{name}: {len(unmirrored)} share or streams group(s) match; reading their positions")
            committed = appended(committed, typed.positions(pair.source, unmirrored, source))
            described.update(typed.describe(pair.source, list(unmirrored)))
        # Structured Streaming queries come last: their checkpoints' positions, asked for by name.
        committed = appended(committed, query_columns(queries))

        # Per group and per topic, not per offset: which rows MM2 mirrors and the user asked for.
        wanted = [
            g in query_names or not selection.active_only or (d is not None and d.state in ACTIVE_GROUP_STATES)
            for g, d in ((g, described.get(g)) for g in committed.groups)
        ]
        kept = kept_rows(committed.table, wanted, lambda t: pair.replicates_topic(t) and selection.topic_ok(t))
        with_rows = set(np.unique(kept.column("group_index").to_numpy()).tolist())
        # A group with no committed offset on a mirrored topic has nothing to inspect, unless its lookup failed.
        numbers = [i for i, ok in enumerate(wanted) if ok and (i in with_rows or committed.errors[i] is not None)]
        groups = [committed.groups[i] for i in numbers]
        partitions = set(partitions_of(kept))
        target_topics = target_topics_f.result()
        remote_of = {t: pair.remote_topic(t) for t in {t for t, _ in partitions}}
        remote_partitions = [(remote_of[t], p) for t, p in partitions if remote_of[t] in target_topics]
        say(
            f"{name}: {kept.num_rows} group partition(s) in {len(groups)} group(s); "
            f"reading {len(partitions)} source and {len(remote_partitions)} target partition bounds"
        )
        source_bounds_f = pool.submit(source.partition_bounds, partitions)
        target_bounds_f = pool.submit(target.partition_bounds, remote_partitions)
        # The unmirrored groups, then the queries, come last (``appended``).
        mirrored = [g for g in groups if g not in unmirrored and g not in query_names]
        target_described_f = pool.submit(target.describe_groups, mirrored)
        target_committed = read_columns(target, mirrored, jvm=_jvm(config, pair, pair.target, gateway))
        target_committed = appended(
            target_committed,
            typed.positions(pair.target, {g: unmirrored[g] for g in groups if g in unmirrored}, target),
        )
        target_committed = appended(target_committed, no_columns([g for g in groups if g in query_names]))
        source_bounds = source_bounds_f.result()
        target_bounds = target_bounds_f.result()
        target_described = target_described_f.result()
        target_described.update(typed.describe(pair.target, [g for g in groups if g in unmirrored]))
        # librdkafka names the classic and consumer groups' type itself, read this run, so a Java client that
        # cannot run (an OAuth library only MM2's JVM has) or a kept listing changes no row of theirs.
        source_types = {g: t.type for g, t in typed.listed(pair.source).items()}
        source_types.update({g.group: g.type for g in listed if g.type})
        # The target's listing costs a JVM's start: only for the share and streams groups' state there.
        target_types = {g: t.type for g, t in typed.listed(pair.target).items()} if unmirrored else {}
    for note in typed.notes:  # the other groups are still right: say what is missing
        log.warning("%s", note)
        say(f"{name}: {note}")

    group_errors = [_err(e, source_side, "group", g) for g, e in zip(committed.groups, committed.errors, strict=True)]
    share = typed.share_details(pair.source)
    source_group_offsets = offsets_table(name, kept, committed.groups, group_errors, share=share)
    source_partitions = _bounds_table(name, partitions, source_bounds, source_side, remote_of=remote_of)
    target_partitions = _bounds_table(name, remote_partitions, target_bounds, target_side)
    target_found, failed = target_rows(target_committed, kept, numbers, remote_of)
    target_errors: list[str | None] = [None] * len(groups)
    for i in failed:
        target_errors[i] = _err(target_committed.errors[i], target_side, "group", groups[i])
    target_group_offsets = offsets_table(name, target_found, groups, target_errors, written_by=True)
    kafka_groups = [g for g in groups if g not in query_names]
    inspected_queries = [g for g in groups if g in query_names]
    return PairState(
        pair=pair,
        read_at=read_at,
        source_group_offsets=source_group_offsets,
        source_partitions=source_partitions,
        target_partitions=target_partitions,
        target_group_offsets=target_group_offsets,
        source_groups=_with_queries(
            _groups_table(name, described, kafka_groups, source_side, source_types), name, inspected_queries
        ),
        # A group that does not exist on the target yet comes back Dead with no members: not an error.
        target_groups=_with_queries(
            _groups_table(name, target_described, kafka_groups, target_side, target_types), name, inspected_queries
        ),
        source_topics=frozenset(source_topics),
        target_topics=frozenset(target_topics),
    )


def _with_queries(table: pa.Table, pair: str, queries: Sequence[str]) -> pa.Table:
    """A group-states table with the queries' rows after the groups'."""
    return pa.concat_tables([table, query_groups_table(pair, queries)]) if queries else table


def _bounds_table(
    pair: str,
    partitions: Iterable[TP],
    bounds: Mapping[TP, PartitionBounds],
    side: _Side,
    *,
    remote_of: Mapping[str, str] | None = None,
) -> pa.Table:
    """The partitions' ``[earliest, latest)`` on one side, sorted (``schemas``' partition tables); with
    ``remote_of``, each source topic's remote topic too."""
    ordered = sorted(partitions)
    columns = {
        "cluster_pair": pa.array([pair] * len(ordered), pa.string()),
        "topic": pa.array([t for t, _ in ordered], pa.string()),
        "partition": pa.array([p for _, p in ordered], pa.int32()),
        "earliest_offset": pa.array([bounds[tp].earliest for tp in ordered], pa.int64()),
        "latest_offset": pa.array([bounds[tp].latest for tp in ordered], pa.int64()),
    }
    if remote_of is not None:
        columns["remote_topic"] = pa.array([remote_of[t] for t, _ in ordered], pa.string())
    columns["error"] = pa.array([_err(bounds[tp].error, side, "topic", tp[0]) for tp in ordered], pa.string())
    return pa.table(columns)
