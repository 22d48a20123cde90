"""Collect one pair's admin state on the driver, concurrently, as Arrow tables in the inspector's schemas.

What is read, per pair (docs/design.md, "Inspect"):
- the source groups MM2 mirrors (MM2's group filter, then the user's regex), their state and committed
  offsets, on topics MM2 replicates (MM2's topic filter and internal-topic rules, then the user's regex);
- earliest/latest of those source partitions, and of their **remote** partitions on the target;
- the same groups' committed offsets and state on the target, under the remote topic names.

Source and target lookups run side by side; each fans out through the admin facade, which keeps many
requests in flight. A failed lookup becomes the ``error`` of the rows it concerns (partial failure is data).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from mm2ctl.core.admin import GroupDescription, ItemError, KafkaAdmin
from mm2ctl.core.authorization import AUTHORIZATION_CODES, denial_text, is_denial, principal_of
from mm2ctl.core.config import MM2Config, PairConfig
from mm2ctl.core.progress import Progress
from mm2ctl.inspector.selection import Selection
from mm2ctl.inspector.statuses import ACTIVE_GROUP_STATES


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
    name: str, described: dict[str, GroupDescription], groups: list[str], side: _Side | None = None
) -> pa.Table:
    rows = [described.get(g) for g in groups]
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


def collect_pair_state(
    config: MM2Config,
    pair: PairConfig,
    selection: Selection,
    *,
    progress: Progress | None = None,
    timeout_s: float = 60.0,
) -> PairState:
    say = progress or (lambda _m: None)
    name = pair.name
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=timeout_s)
    target = KafkaAdmin.connect(pair.target_kafka_config, name=pair.target, timeout_s=timeout_s)
    source_side = _Side(pair.source, principal_of(pair.source_kafka_config))
    target_side = _Side(pair.target, principal_of(pair.target_kafka_config))
    read_at = dt.datetime.now(dt.UTC)

    with ThreadPoolExecutor(max_workers=4, thread_name_prefix=f"admin-{name}") as pool:
        target_topics_f = pool.submit(target.list_topics)
        source_topics = source.list_topics()
        listed = source.list_groups()
        candidates = [g.group for g in listed if pair.group_filter.matches(g.group) and selection.group_ok(g.group)]
        say(f"{name}: {len(candidates)} source group(s) match; reading their state and committed offsets")
        described_f = pool.submit(source.describe_groups, candidates)
        committed = source.committed_offsets(candidates)
        described = described_f.result()

        groups: list[str] = []
        go_rows: dict[str, list[object]] = {k: [] for k in ("group", "topic", "partition", "committed_offset", "error")}
        partitions: set[tuple[str, int]] = set()
        partitions_of: dict[str, list[tuple[str, int]]] = {}
        for group in candidates:
            offsets = committed[group]
            state = described.get(group)
            if selection.active_only and (state is None or state.state not in ACTIVE_GROUP_STATES):
                continue
            kept = [
                (tp, off)
                for tp, off in offsets.offsets.items()
                if pair.replicates_topic(tp[0]) and selection.topic_ok(tp[0])
            ]
            if not kept and offsets.error is None:
                continue  # no committed offset on a mirrored topic: nothing to inspect for this group
            groups.append(group)
            partitions_of[group] = sorted(tp for tp, _ in kept)
            for (topic, partition), off in sorted(kept):
                go_rows["group"].append(group)
                go_rows["topic"].append(topic)
                go_rows["partition"].append(partition)
                go_rows["committed_offset"].append(off)
                go_rows["error"].append(_err(offsets.error, source_side, "group", group))
                partitions.add((topic, partition))

        target_topics = target_topics_f.result()
        remote_of = {t: pair.remote_topic(t) for t in {t for t, _ in partitions}}
        remote_partitions = [(remote_of[t], p) for t, p in partitions if remote_of[t] in target_topics]
        say(
            f"{name}: {len(go_rows['group'])} group partition(s) in {len(groups)} group(s); "
            f"reading {len(partitions)} source and {len(remote_partitions)} target partition bounds"
        )
        source_bounds_f = pool.submit(source.partition_bounds, partitions)
        target_bounds_f = pool.submit(target.partition_bounds, remote_partitions)
        target_described_f = pool.submit(target.describe_groups, groups)
        target_committed = target.committed_offsets(groups)
        source_bounds = source_bounds_f.result()
        target_bounds = target_bounds_f.result()
        target_described = target_described_f.result()

    n = len(go_rows["group"])
    source_group_offsets = pa.table(
        {
            "cluster_pair": pa.array([name] * n, pa.string()),
            "group": pa.array(go_rows["group"], pa.string()),
            "topic": pa.array(go_rows["topic"], pa.string()),
            "partition": pa.array(go_rows["partition"], pa.int32()),
            "committed_offset": pa.array(go_rows["committed_offset"], pa.int64()),
            "error": pa.array(go_rows["error"], pa.string()),
        }
    )
    sp = sorted(partitions)
    source_partitions = pa.table(
        {
            "cluster_pair": pa.array([name] * len(sp), pa.string()),
            "topic": pa.array([t for t, _ in sp], pa.string()),
            "partition": pa.array([p for _, p in sp], pa.int32()),
            "earliest_offset": pa.array([source_bounds[tp].earliest for tp in sp], pa.int64()),
            "latest_offset": pa.array([source_bounds[tp].latest for tp in sp], pa.int64()),
            "remote_topic": pa.array([remote_of[t] for t, _ in sp], pa.string()),
            "error": pa.array([_err(source_bounds[tp].error, source_side, "topic", tp[0]) for tp in sp], pa.string()),
        }
    )
    tp_sorted = sorted(remote_partitions)
    target_partitions = pa.table(
        {
            "cluster_pair": pa.array([name] * len(tp_sorted), pa.string()),
            "topic": pa.array([t for t, _ in tp_sorted], pa.string()),
            "partition": pa.array([p for _, p in tp_sorted], pa.int32()),
            "earliest_offset": pa.array([target_bounds[tp].earliest for tp in tp_sorted], pa.int64()),
            "latest_offset": pa.array([target_bounds[tp].latest for tp in tp_sorted], pa.int64()),
            "error": pa.array(
                [_err(target_bounds[tp].error, target_side, "topic", tp[0]) for tp in tp_sorted], pa.string()
            ),
        }
    )
    remote_names = set(remote_of.values())
    tgo: dict[str, list[object]] = {k: [] for k in ("group", "topic", "partition", "committed_offset", "error")}
    for group in groups:
        res = target_committed[group]
        if res.error is not None and not res.offsets:
            # The whole lookup failed: mark every partition this group has on the source.
            for topic, partition in partitions_of[group]:
                tgo["group"].append(group)
                tgo["topic"].append(remote_of[topic])
                tgo["partition"].append(partition)
                tgo["committed_offset"].append(None)
                tgo["error"].append(_err(res.error, target_side, "group", group))
            continue
        for (topic, partition), off in sorted(res.offsets.items()):
            if topic in remote_names:
                tgo["group"].append(group)
                tgo["topic"].append(topic)
                tgo["partition"].append(partition)
                tgo["committed_offset"].append(off)
                tgo["error"].append(None)
    m = len(tgo["group"])
    target_group_offsets = pa.table(
        {
            "cluster_pair": pa.array([name] * m, pa.string()),
            "group": pa.array(tgo["group"], pa.string()),
            "topic": pa.array(tgo["topic"], pa.string()),
            "partition": pa.array(tgo["partition"], pa.int32()),
            "committed_offset": pa.array(tgo["committed_offset"], pa.int64()),
            "error": pa.array(tgo["error"], pa.string()),
        }
    )
    return PairState(
        pair=pair,
        read_at=read_at,
        source_group_offsets=source_group_offsets,
        source_partitions=source_partitions,
        target_partitions=target_partitions,
        target_group_offsets=target_group_offsets,
        source_groups=_groups_table(name, described, groups, source_side),
        # A group that does not exist on the target yet comes back Dead with no members: not an error.
        target_groups=_groups_table(name, target_described, groups, target_side),
        source_topics=frozenset(source_topics),
        target_topics=frozenset(target_topics),
    )
