"""What a failover plan checks and says about the groups it moves: the target groups' state (no members,
offsets in range, no rewind unless allowed), the partitions left untranslatable, and the group types MM2
never translates (streams groups and their internal topics, share groups and what they deliver again)."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import Mm2ctlError, PreconditionError
from mm2ctl.core.kafka.admin import TP, GroupDescription
from mm2ctl.core.translation.rule import Bounds
from mm2ctl.plans.document import UntranslatablePartition
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failover.rows import FailoverRow

#: The target groups' descriptions and committed offsets (``read_target_state``).
TargetState = tuple[dict[str, GroupDescription], dict[str, dict[TP, int]]]


def streams_internal_topics(
    b: PlanBuilder, flow: PairConfig, committed: dict[str, dict[TP, int]]
) -> dict[str, dict[TP, int]]:
    """Streams groups (which MM2 never translates): a note per group, and per internal topic what happens to it.

    A Kafka Streams application names its repartition and changelog topics after its application id, so on
    the target it uses those names whatever MM2 called their copies. An internal topic mirrored under its own
    name (the identity policy) is translated like an input topic; otherwise the application starts its own
    empty copy on the target, and its offset there is not written."""
    streams = {g: "streams" for g in committed if b.live.group_type(flow.source, g) == "streams"}
    if not streams:
        return committed
    shapes = b.live.group_admin(flow.source).describe(streams)
    out = dict(committed)
    for g in sorted(streams):
        shape = shapes.get(g)
        roles = shape.topics if shape is not None else {}
        b.notes.append(
            f"streams group {g}: MirrorMaker 2 never translates streams groups; this plan commits its offsets on "
            f"{flow.target} (the group must have no members there)"
        )
        internal = {t: role for role in ("repartition", "changelog") for t in roles.get(role, ())}
        for topic, role in sorted(internal.items()):
            same_name = flow.replicates_topic(topic) and flow.remote_topic(topic) == topic
            if role == "repartition" and same_name:
                what = "mirrored under its own name: its offset is translated like an input topic's"
            elif role == "repartition":
                left = [o for (t, _p), o in committed[g].items() if t == topic]
                out[g] = {tp: o for tp, o in out[g].items() if tp[0] != topic}
                what = (
                    f"not mirrored under its own name, so the application starts its own empty {topic} on "
                    f"{flow.target}; what it wrote there and had not read back on {flow.source} "
                    f"({len(left)} partition(s) with an offset) is not processed on {flow.target}"
                )
            elif same_name:
                what = "mirrored under its own name: the application restores its state from that copy"
            else:
                what = f"not mirrored under its own name: the application's state starts empty on {flow.target}"
            b.notes.append(f"streams group {g}: {role} topic {topic}: {what}")
    return {g: parts for g, parts in out.items() if parts}


def note_share_groups(
    b: PlanBuilder, cluster: str, dst: str, committed: Mapping[str, Mapping[TP, int]], bounds: Mapping[TP, Bounds]
) -> None:
    """Share groups (which MM2 never translates), read on ``cluster`` and written on ``dst``: the plan moves
    their positions, and says how many records past them each group had already acknowledged. ``dst`` starts
    a fresh state at the position written, so it delivers those records again (at least once, never lost).

    The positions come from the share-partition state (``LiveState.share_group_positions``): the records
    acknowledged past a gap are counted exactly. Where that state could not be read, the positions are the
    start offsets, and the count is what Kafka's lag implies (the records past the start offset minus those
    not yet acknowledged); the note says which permission is missing."""
    shares = sorted(g for g in committed if b.live.group_type(cluster, g) == "share")
    if not shares:
        return
    read = b.live.share_reads.get(cluster)
    missing = b.live.share_state_notes.get(cluster)
    if missing is not None:
        b.notes.append(missing)
    lagged = None
    for g in shares:
        if read is not None and g in read.positions:
            again = sum(n for tp, n in read.acknowledged_past.get(g, {}).items() if tp in committed[g])
            starts = read.start_offsets.get(g, {})
            moved = sum(1 for tp, o in committed[g].items() if tp in starts and o > starts[tp])
            b.notes.append(
                f"share group {g}: MirrorMaker 2 never translates share groups; this plan sets its positions on "
                f"{dst}, read from its share-partition state ({moved} partition(s) past the start offset Kafka "
                f"reports). {again} record(s) the group acknowledged past a gap on {cluster} will be delivered again"
            )
            continue
        lagged = lagged if lagged is not None else b.live.group_admin(cluster).positions(dict.fromkeys(shares, "share"))
        p = lagged[g]
        again = 0
        for tp, start in p.offsets.items():
            if tp in committed[g] and tp in p.lag and tp in bounds:
                again += max(0, bounds[tp].end - start - p.lag[tp])
        b.notes.append(
            f"share group {g}: MirrorMaker 2 never translates share groups; this plan sets its start offsets on "
            f"{dst}. {again} record(s) past them were already acknowledged on {cluster} and will be delivered again"
        )


def read_target_state(live: LiveState, dst: str, groups: Sequence[str]) -> TargetState:
    """The descriptions (members, state) and committed offsets of ``groups`` on ``dst``, read side by side."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="target-state") as pool:
        describing = pool.submit(live.describe_groups, dst, groups)  # beside the offsets: independent reads
        current = live.many_group_offsets(dst, groups)
        return describing.result(), current


def _target_state(
    live: LiveState, dst: str, groups: Sequence[str], prefetched: Future[TargetState] | None
) -> TargetState:
    """``read_target_state`` of ``groups``, taking what ``prefetched`` (the same read, started while the plan
    translated) holds. A group it lacks, or one now known as a share or streams group on ``dst`` (read through
    another client), is read now; so is every group when the early read failed (the error comes again, or
    was of a group no longer planned)."""
    described: dict[str, GroupDescription] = {}
    current: dict[str, dict[TP, int]] = {}
    if prefetched is not None:
        with contextlib.suppress(Mm2ctlError):
            described, current = prefetched.result()
    again = [g for g in groups if g not in described or g not in current or live.group_type(dst, g)]
    if not again:
        return described, current
    fresh_described, fresh_current = read_target_state(live, dst, again)
    return {**described, **fresh_described}, {**current, **fresh_current}


def with_target_state(
    b: PlanBuilder,
    dst: str,
    rows: list[FailoverRow],
    t_bounds: Mapping[TP, Bounds],
    allow_rewind: bool,
    prefetched: Future[TargetState] | None = None,
) -> tuple[list[FailoverRow], dict[str, dict[TP, int]]]:
    """Rows with the target group's current offsets filled in, and every offset the groups have on ``dst``
    (the write steps summarise them); refuse what apply must never do. ``prefetched``: the target groups'
    state read while the plan translated (``_target_state``)."""
    groups = sorted({r.group for r in rows})
    described, current = _target_state(b.live, dst, groups, prefetched)
    problems: list[str] = []
    out = []
    for g in groups:
        d = described[g]
        if d.members:
            problems.append(
                f"group {g} on {dst} has {d.members} active member(s) ({d.state}); stop its "
                "consumers on the target first"
            )
    for r in rows:
        before = current[r.group].get((r.target_topic, r.partition))
        r = FailoverRow(  # positional, not ``dataclasses.replace``: a 100,000-row failover does this per row
            r.group, r.source_topic, r.target_topic, r.partition, r.source_offset, r.target_offset, before, r.method,
            r.detail, r.delta_candidate, r.mm2_next_offset,
        )  # fmt: skip
        out.append(r)
        if r.target_offset is None or r.target_offset == before or r.deferred:
            continue  # a deferred row's offset is known after the catch-up: apply checks it then
        tb = t_bounds[(r.target_topic, r.partition)]
        where = f"{r.group}:{r.target_topic}/{r.partition}"
        if not tb.start <= r.target_offset <= tb.end:
            problems.append(
                f"{where}: translated offset {r.target_offset} is outside the target partition's [{tb.start}, {tb.end}]"
            )
        if before is not None and r.target_offset < before and not allow_rewind:
            problems.append(
                f"{where}: would rewind the target offset from {before} to {r.target_offset} "
                "(pass --allow-rewind to accept replaying those records)"
            )
    if problems:
        raise PreconditionError("refusing to plan the failover:\n  " + "\n  ".join(problems))
    return out, current


def note_untranslatable(b: PlanBuilder, rows: Sequence[FailoverRow]) -> None:
    """Record the rows the plan writes no offset for in the plan: ``show`` lists them first, and apply refuses
    the plan unless ``--allow-untranslatable``."""
    if not rows:
        return
    b.untranslatable.extend(
        UntranslatablePartition(
            group=r.group,
            topic=r.target_topic,
            partition=r.partition,
            position=r.source_offset,
            reason=r.detail.removeprefix("untranslatable: "),
        )
        for r in rows
    )
