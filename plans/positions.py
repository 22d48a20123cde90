"""Where a committed position on one cluster lies on the other: every method mm2ctl has, in the order it
trusts them, for one partition's groups at a time.

``plan failover``, ``plan failback`` and ``inspect --exact`` all ask the same question, so they all ask it
here: the offset syncs first (``plans.translation``: verified by content when both sides can be read, else
the conservative rule), then, where no sync lies at or below the position, the record's timestamp
(``plans.timestamp_lookup``), unless the operator chose ``--fallback none``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from mm2ctl.plans.timestamp_lookup import OffsetForTime, by_timestamp
from mm2ctl.plans.translation import Bounds, RecordSource, Sync, Translation, conservative, verified


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
