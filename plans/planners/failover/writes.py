"""A failover's writes: a guarded write step per target group, then a read-back step per group that watches
for MM2's own group-offset sync (``settle_window``); ``plan failback`` writes its groups the same way."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.kafka.admin import TP
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.offsets import GroupOffset
from mm2ctl.plans.payloads import GroupOffsetRow, GroupOffsetsVerify, GroupOffsetsWrite
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failover.rows import FailoverRow
from mm2ctl.plans.preconditions import (
    AllOf,
    GroupEmptyOrAbsent,
    GroupOffsetsInRange,
    GroupOffsetsUnchanged,
    NoPrecondition,
)
from mm2ctl.plans.steps import StepKind
from mm2ctl.plans.targets import GroupTarget

NEW_PARTITIONS_NOTE = (
    "rollback cannot remove an offset this plan adds to a group that already had other offsets: Kafka's "
    "OffsetDelete is not in confluent-kafka. Rollback restores every previous offset and reports those "
    "partitions; remove them with: kafka-consumer-groups --bootstrap-server <target> --delete-offsets "
    "--group <group> --topic <topic>:<partition>"
)


def needs_write(live: LiveState, dst: str, row: FailoverRow) -> bool:
    """Does the plan write ``row`` on ``dst``: a translated offset that differs from the group's there, or is
    known only after MM2's catch-up. A share group's start offset is written even when equal: the write also
    clears the per-record state the group kept past it on ``dst``, so ``dst`` delivers exactly what
    ``note_share_groups`` counts."""
    if row.target_offset is None:
        return False
    return row.target_offset != row.before_offset or row.deferred or live.group_type(dst, row.group) == "share"


#: Added to twice MM2's ``sync.group.offsets.interval.seconds``: the time its sync takes to read and write
#: the groups of one round on a loaded worker.
SETTLE_MARGIN_S = 2.0


def settle_window(flow: PairConfig) -> float:
    """How long a read-back watches a group MM2 may still sync (``GroupOffsetsVerify.settle_seconds``).

    MM2 reads the idle target groups' offsets in one scheduled round and writes what they lack in the next,
    one sync interval later; a round that read a group before our write can still write it after, once.
    0 when the flow does not sync group offsets."""
    if not flow.sync_group_offsets_enabled:
        return 0.0
    return 2 * flow.sync_group_offsets_interval_seconds + SETTLE_MARGIN_S


def write_group_offsets(
    b: PlanBuilder,
    dst: str,
    writes: Mapping[str, Sequence[FailoverRow]],
    *,
    settle_seconds: float = 0.0,
    currents: Mapping[str, Mapping[TP, int]] | None = None,
) -> None:
    """A write step per group on ``dst`` (its rows' translated offsets, guarded), then a read-back step per
    group, watching ``settle_seconds`` for MM2's own sync; ``plan failback`` writes its groups the same way.
    ``currents``: the groups' offsets on ``dst`` as the planner just read them (read here when None)."""
    verifies = []
    if currents is None:
        currents = b.live.many_group_offsets(dst, writes)
    for group, rows in writes.items():
        target = GroupTarget(cluster=dst, group=group, group_type=b.live.group_type(dst, group))
        payload_rows = tuple(
            GroupOffsetRow(
                topic=r.target_topic,
                partition=r.partition,
                offset=r.target_offset,
                before_offset=r.before_offset,
                method=r.method,
                source_offset=r.source_offset,
            )
            for r in rows
            if r.target_offset is not None and r.method is not None
        )
        current = currents.get(group, {})
        # One tuple for the range check and the read-back: the same offsets, built once.
        planned = tuple(GroupOffset(topic=r.topic, partition=r.partition, offset=r.offset) for r in payload_rows)
        pre = AllOf(
            conditions=(
                GroupEmptyOrAbsent(cluster=dst, group=group),
                GroupOffsetsUnchanged(
                    cluster=dst,
                    group=group,
                    expected=tuple(
                        GroupOffset(topic=r.topic, partition=r.partition, offset=r.before_offset) for r in payload_rows
                    ),
                ),
                GroupOffsetsInRange(cluster=dst, offsets=planned),
            )
        )
        new_parts = [r for r in payload_rows if r.before_offset is None]
        if new_parts and current:
            b.notes.append(
                f"group {group}: {len(new_parts)} partition(s) get their first offset; " + NEW_PARTITIONS_NOTE
            )
        methods = _count(r.method.value for r in payload_rows)
        b.add(
            StepKind.GROUP_OFFSETS_WRITE,
            target,
            GroupOffsetsWrite(rows=payload_rows),
            pre,
            # Each row already carries its offset before and after (payload); the before/after here only
            # summarise, so a 100,000-row plan does not hold every offset twice more.
            before={"exists": bool(current), "committed_partitions": len(current)},
            after={"written_partitions": len(payload_rows)},
            description=f"write {len(payload_rows)} offset(s) of group {group} on {dst} in one call ({methods})",
        )
        verifies.append((target, planned))
    for target, planned in verifies:
        b.add(
            StepKind.GROUP_OFFSETS_VERIFY,
            target,
            GroupOffsetsVerify(expected=planned, settle_seconds=settle_seconds),
            NoPrecondition(),
            before=None,
            after=None,
            description=f"read the offsets of group {target.group} back and compare"
            + (f", for {settle_seconds:g}s while MM2 may still sync it" if settle_seconds else ""),
        )


def _count(items: Iterable[str]) -> str:
    seen: dict[str, int] = {}
    for i in items:
        seen[i] = seen.get(i, 0) + 1
    return ", ".join(f"{k}={v}" for k, v in sorted(seen.items()))
