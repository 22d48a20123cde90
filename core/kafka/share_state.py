"""A share-partition's state folded from its records, and the share group's position in it.

Kafka's share coordinator persists a share-partition as a snapshot plus updates (``core.kafka.share_state_codec``)
and folds them the same way on load: an update's start offset replaces the state's unless it is -1; its
batches are merged into the state's, and where two batches overlap the one delivered more often wins, then the
one with the higher delivery state (acknowledged over available, archived over acknowledged); batches, or their
parts, below the start offset are dropped. ``ShareStates.apply`` folds the same way.

Why the start offset is not the position: the share-partition leader writes its state on each acknowledgement
that changes it, carrying the start offset from *before* that acknowledgement; the advanced start offset is
written only with the next write, so once the consumers leave the persisted start offset stays behind the
records they acknowledged. The position is therefore the first offset at or past the start offset that no
contiguous run of acknowledged or archived batches covers (``share_position``). Records acknowledged (or
archived) past it, beyond a gap, are delivered again by any cluster that resumes the group from that position
(``acknowledged_past``): ``alterShareGroupOffsets`` starts a fresh state with no batches.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass

from mm2ctl.core.kafka.share_state_codec import ACKNOWLEDGED, ARCHIVED, ShareStateKey, ShareStateRecord, StateBatch

_DONE = frozenset({ACKNOWLEDGED, ARCHIVED})


@dataclass(frozen=True, slots=True)
class SharePartitionState:
    """A share-partition's persisted state: ``start_offset`` -1 while the partition was never initialized."""

    start_offset: int
    leader_epoch: int
    state_epoch: int
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]


def combine_batches(old: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int) -> tuple[StateBatch, ...]:
    """``old`` and ``new`` merged into non-overlapping batches as Kafka merges them (more deliveries win, then the
    higher state), cut at ``start_offset`` and with adjacent equal batches joined."""
    batches = [b for b in (*old, *new) if b.last_offset >= start_offset and b.last_offset >= b.first_offset]
    points = sorted({max(b.first_offset, start_offset) for b in batches} | {b.last_offset + 1 for b in batches})
    out: list[StateBatch] = []
    for lo, hi in itertools.pairwise(points):
        covering = [b for b in batches if b.first_offset <= lo and b.last_offset >= hi - 1]
        if not covering:
            continue
        best = max(covering, key=lambda b: (b.delivery_count, b.delivery_state))
        last = out[-1] if out else None
        if (
            last is not None
            and last.last_offset == lo - 1
            and (last.delivery_state, last.delivery_count) == (best.delivery_state, best.delivery_count)
        ):
            out[-1] = StateBatch(last.first_offset, hi - 1, last.delivery_state, last.delivery_count)
        else:
            out.append(StateBatch(lo, hi - 1, best.delivery_state, best.delivery_count))
    return tuple(out)


def share_position(state: SharePartitionState) -> int | None:
    """The first offset at or past the start offset that no contiguous run of acknowledged or archived batches
    covers; ``None`` for a partition never initialized (start offset -1)."""
    if state.start_offset < 0:
        return None
    position = state.start_offset
    for b in sorted(state.batches):
        if b.last_offset < position:
            continue
        if b.first_offset > position or b.delivery_state not in _DONE:
            break
        position = b.last_offset + 1
    return position


def acknowledged_past(state: SharePartitionState, position: int) -> int:
    """How many records at or past ``position`` the group acknowledged or archived: those a cluster resuming it
    from ``position`` delivers again."""
    return sum(
        b.last_offset - max(b.first_offset, position) + 1
        for b in state.batches
        if b.delivery_state in _DONE and b.last_offset >= position
    )


class ShareStates:
    """The share-partition states of one cluster, folded record by record (in offset order per partition of
    ``__share_group_state``: a share-partition's records all go to one partition)."""

    def __init__(self) -> None:
        self.states: dict[ShareStateKey, SharePartitionState] = {}

    def apply(self, key: ShareStateKey, record: ShareStateRecord | None) -> None:
        """Fold one record (``None``: a tombstone, which ends ``key``'s state)."""
        if record is None:
            self.states.pop(key, None)
            return
        was = self.states.get(key)
        if record.snapshot or was is None:
            start = record.start_offset
            self.states[key] = SharePartitionState(
                start,
                record.leader_epoch,
                record.state_epoch if record.state_epoch is not None else 0,
                record.delivery_complete_count,
                combine_batches((), record.batches, start),
            )
            return
        start = was.start_offset if record.start_offset == -1 else record.start_offset
        self.states[key] = SharePartitionState(
            start,
            was.leader_epoch if record.leader_epoch == -1 else record.leader_epoch,
            was.state_epoch,
            was.delivery_complete_count if record.delivery_complete_count == -1 else record.delivery_complete_count,
            combine_batches(was.batches, record.batches, start),
        )


def resume_position(start_offset: int, state: SharePartitionState | None) -> tuple[int, int | None]:
    """Where a share group resumes a partition whose start offset Kafka reports as ``start_offset``, and how many
    records past it it acknowledged (``None`` without a state: only the start offset is known). Records below
    the reported start offset are complete whatever the state read says, so the position is never below it."""
    found = None if state is None else share_position(state)
    if state is None or found is None:
        return start_offset, None
    position = max(start_offset, found)
    return position, acknowledged_past(state, position)
