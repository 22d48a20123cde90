"""What a failover plan reads once from the clusters: MM2's checkpoints, partition bounds, MM2's position
(its next offset to copy), and the selected groups' committed positions on the source (or, with the
source unavailable, in MM2's checkpoints)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import PlanError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.kafka.records import read_partitions
from mm2ctl.core.patterns import NameRegex
from mm2ctl.core.translation.rule import Bounds
from mm2ctl.inspector.reads.mm2_position import Mm2Position, read_position
from mm2ctl.plans.live_state import LiveState, part_group_offsets, part_positions
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failover.request import FailoverOptions


def read_checkpoints(live: LiveState, flow: PairConfig) -> dict[str, dict[TP, tuple[int, int]]]:
    """group -> {(target topic, partition): (upstream, downstream)}: MM2's live checkpoints, the newest record
    of each key unless it is a tombstone (``inspector.rules.checkpoint_fold``). Malformed records are skipped."""
    topic = flow.checkpoints_topic
    if topic not in live.admin(flow.target).list_topics():
        why = (
            "is the MirrorCheckpointConnector running for this flow?"
            if flow.emit_offset_syncs_enabled
            else "offset syncs are disabled on this flow, and MM2's checkpoint connector cannot run without them; "
            "translate by timestamp (--from syncs, the default) instead"
        )
        raise PlanError(f"the checkpoints topic {topic} does not exist on {flow.target}: {why}")
    # Arrow is imported here, not at the module's top: a failover that reads no checkpoints starts without it.
    from mm2ctl.inspector.rules import checkpoint_fold, decoding

    raw = decoding.kafka_records(read_partitions(live.kafka_config(flow.target), topic, [0]), cluster_pair="")
    live_checkpoints = checkpoint_fold.live_of(decoding.decode_checkpoints_table(raw))
    columns = ("group", "topic", "partition", "upstream_offset", "downstream_offset")
    out: dict[str, dict[TP, tuple[int, int]]] = {}
    for group, remote, partition, upstream, downstream in zip(
        *(live_checkpoints.column(c).to_pylist() for c in columns), strict=True
    ):
        out.setdefault(group, {})[(remote, partition)] = (upstream, downstream)
    return out


def bounds_of(live: LiveState, alias: str, tps: Sequence[TP]) -> dict[TP, Bounds]:
    if not tps:
        return {}
    got = live.admin(alias).partition_bounds(tps)
    out = {}
    for tp, pb in got.items():
        if pb.error is None and pb.earliest is not None and pb.latest is not None:
            out[tp] = Bounds(pb.earliest, pb.latest)
    return out


def mm2_copy_positions(
    live: LiveState, flow: PairConfig, s_bounds: Mapping[TP, Bounds], target_topics: frozenset[str], notes: list[str]
) -> dict[TP, int] | None:
    """MM2's next source offset to copy per source partition in ``s_bounds`` (``inspector.reads.mm2_position``); a
    partition MM2 holds no position for has had nothing copied, so its next offset is the log start. None,
    with a note, when the position cannot be read."""
    return copy_positions(
        read_position(live.mm2, flow, live.connect, target_topics=target_topics), flow, s_bounds, notes
    )


def copy_positions(
    position: Mm2Position, flow: PairConfig, s_bounds: Mapping[TP, Bounds], notes: list[str]
) -> dict[TP, int] | None:
    """``mm2_copy_positions`` from a position already read (``inspector.reads.mm2_position.read_position``)."""
    if position.next_offsets is None:
        notes.append(
            f"MM2's position on {flow.name} is not known ({position.reason}): a group MM2 has not copied up to "
            "cannot be told from one it has, except by the records"
        )
        return None
    return {tp: position.next_offsets.get(tp, bounds.start) for tp, bounds in s_bounds.items()}


def source_positions(
    b: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    selected_groups: NameRegex,
    selected_topics: NameRegex,
    checkpoints: Mapping[str, Mapping[TP, tuple[int, int]]],
    *,
    required: bool = True,
    prefetched: frozenset[str] = frozenset(),
) -> dict[str, dict[TP, int]]:
    """group -> {(source topic, partition): committed source offset} for the selected groups and topics. With the
    source unavailable and ``required`` (no Spark query moves with them), finding none is an error.
    ``prefetched``: see ``committed_positions``."""

    def wanted_topic(topic: str) -> bool:
        return flow.replicates_topic(topic) and selected_topics.matches(topic)

    def wanted_group(group: str) -> bool:
        return flow.group_filter.matches(group) and selected_groups.matches(group)

    out: dict[str, dict[TP, int]] = {}
    if opts.source_unavailable:
        for group, parts in checkpoints.items():
            if not wanted_group(group):
                continue
            for (remote, p), (upstream, _down) in parts.items():
                topic = flow.upstream_topic(remote) or remote
                if flow.remote_topic(topic) == remote and wanted_topic(topic):
                    out.setdefault(group, {})[(topic, p)] = upstream
        if not out and required:
            raise PlanError(
                f"no checkpoint of a group matching {opts.groups!r} in {flow.checkpoints_topic}: "
                "without the source, checkpoints are the only record of where groups were"
            )
        return out
    return committed_positions(b, flow.source, flow.target, wanted_group, wanted_topic, prefetched=prefetched)


def committed_positions(
    b: PlanBuilder,
    cluster: str,
    destination: str,
    wanted_group: Callable[[str], bool],
    wanted_topic: Callable[[str], bool],
    *,
    prefetched: frozenset[str] = frozenset(),
) -> dict[str, dict[TP, int]]:
    """group -> {(topic, partition): committed offset} on ``cluster`` of the wanted groups (every type) on the
    wanted topics, for a plan that moves them to ``destination``: each group keeps its type there, and a type
    ``destination`` cannot host is refused (``LiveState.require_hosted``). The positions are in the plan's
    fingerprint: if the groups consume after planning, the plan is stale. ``prefetched``: parts
    ``listed_positions`` read before the listing of every type; those of groups not listed now are dropped."""
    listed, not_looked = b.live.all_groups(cluster)
    if not_looked is not None:
        b.notes.append(not_looked)
    groups = [g for g in listed if wanted_group(g.group)]
    part_of = {g.group: part_positions(cluster, g.group, g.type) for g in groups}
    for part in prefetched - set(part_of.values()):
        b.parts.pop(part, None)  # read early for a group no longer listed: not part of this plan's fingerprint
    read = b.read_many(list(part_of.values()))
    out: dict[str, dict[TP, int]] = {}
    for g in groups:
        picked = {(t, p): o for t, p, o in read[part_of[g.group]] if wanted_topic(t)}
        if picked:
            out[g.group] = picked
            b.live.note_group_type(destination, g.group, g.type)
    b.live.require_hosted(destination, out)
    return out


def listed_positions(
    b: PlanBuilder, flow: PairConfig, selected_groups: NameRegex, selected_topics: NameRegex
) -> tuple[dict[str, dict[TP, int]], frozenset[str]]:
    """The selected groups' committed offsets on the source as ``source_positions`` reads them, for the groups
    librdkafka lists (classic and consumer groups), without waiting for the listing of every type
    (``LiveState.start_listing``, a JVM). Returns them and the parts read, which stay in the builder:
    ``source_positions`` reads the same parts again from there once the types are known."""
    listed = b.live.admin(flow.source).list_groups()
    part_of = {
        g.group: part_group_offsets(flow.source, g.group)
        for g in listed
        if flow.group_filter.matches(g.group) and selected_groups.matches(g.group)
    }
    read = b.read_many(list(part_of.values()))
    out: dict[str, dict[TP, int]] = {}
    for group, part in part_of.items():
        picked = {(t, p): o for t, p, o in read[part] if flow.replicates_topic(t) and selected_topics.matches(t)}
        if picked:
            out[group] = picked
    return out, frozenset(part_of.values())
