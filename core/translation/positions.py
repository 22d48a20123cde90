"""Where a committed position on one cluster lies on the other: every method mm2ctl has, in the order it
trusts them, for one partition's groups at a time.

``plan failover``, ``plan failback`` and ``inspect --exact`` all ask the same question, so they all ask it
here: a group at the log end of a partition MM2 has copied to its end goes to the target's log end
(``at_log_end``); then the offset syncs (``core.translation.rule``: verified by content when both sides can be read,
else the conservative rule), then, where no sync lies at or below the position, the record's timestamp
(``core.translation.timestamp_lookup``), unless the operator chose ``--fallback none``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from mm2ctl.core.translation.methods import TranslationMethod
from mm2ctl.core.translation.rule import Bounds, RecordSource, Sync, Translation, conservative, verified
from mm2ctl.core.translation.timestamp_lookup import OffsetForTime, by_timestamp


class Fallback(StrEnum):
    """What translates a position no offset sync lies at or below (``--fallback``)."""

    #: The next record's timestamp, proven by content where it can be (the default when records can be read).
    TIMESTAMP = "timestamp"
    #: Nothing: the row stays untranslatable.
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Sides:
    """One partition on both clusters, readable: what verification and the timestamp fallback need."""

    source: RecordSource
    target: RecordSource
    source_bounds: Bounds
    target_bounds: Bounds
    #: ListOffsets by timestamp on the target partition (None: the timestamp fallback is off).
    offset_for_time: OffsetForTime | None = None
    #: The same on the source partition: the timestamp fallback aligns the records from there.
    source_offset_for_time: OffsetForTime | None = None
    #: MM2's next source offset to copy (its stored position; None: not known). It trails what MM2 has really
    #: copied by up to one offset flush, so a position it covers has been copied.
    copied_end: int | None = None


def at_log_end(committed: int, sides: Sides) -> Translation | None:
    """A group at the source's log end, on a partition MM2 has copied to its end (an empty one included),
    resumes at the target's log end: every record it could read is there, and nothing after it is. Proven by
    the two ends' offsets and MM2's position, with no record read; None when MM2's position is not known."""
    source = sides.source_bounds
    # A position past the end means the partition was recreated or truncated under MM2: nothing is proven.
    if committed != source.end or sides.copied_end != source.end:
        return None
    empty = source.start == source.end
    why = "the source partition is empty" if empty else f"MM2 has copied it to its end ({source.end})"
    return Translation(
        sides.target_bounds.end,
        TranslationMethod.LOG_END,
        f"at the source's log end {source.end}, and {why}: the target's log end {sides.target_bounds.end}",
    )


NO_SYNC = "no offset sync at or below it"
NO_SYNCS = "no offset sync for this partition"


def locate(
    syncs: Sequence[Sync], committed: int, sides: Sides | None, fallback: Fallback = Fallback.TIMESTAMP
) -> tuple[Translation | None, str]:
    """The position of ``committed`` (a source offset) on the target, or None and why not.

    ``syncs`` is the partition's current mapping (``normalize_syncs``). Without ``sides`` (the source cannot
    be read) only the conservative rule runs.
    """
    why = NO_SYNC if syncs else NO_SYNCS
    if sides is None:
        tr = conservative(syncs, committed)
        return tr, "" if tr is not None else why
    tr = at_log_end(committed, sides)
    if tr is not None:
        return tr, ""
    tr = verified(
        syncs,
        committed,
        source=sides.source,
        target=sides.target,
        source_bounds=sides.source_bounds,
        target_bounds=sides.target_bounds,
    )
    if tr is not None:
        return tr, ""
    if fallback is Fallback.NONE or sides.offset_for_time is None:
        return None, why
    by_time, not_found = by_timestamp(
        committed,
        source=sides.source,
        target=sides.target,
        source_bounds=sides.source_bounds,
        target_bounds=sides.target_bounds,
        offset_for_time=sides.offset_for_time,
        source_offset_for_time=sides.source_offset_for_time,
    )
    if by_time is not None:
        return by_time, ""
    return None, f"{why}, and the timestamp fallback found nothing: {not_found}"
