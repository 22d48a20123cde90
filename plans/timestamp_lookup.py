"""The timestamp fallback: find a group's position on the other cluster by its next record's timestamp, then
prove it by content, where no offset sync lies at or below the committed offset.

Why it works (DESIGN §10). MirrorSourceTask copies each record's timestamp, so a record and its copy have the
same timestamp. ListOffsets by timestamp gives the earliest offset whose timestamp is at or after ``T``; for
the record ``R`` at the committed offset, with timestamp ``T``, that offset is at or before ``R``'s copy, even
when producers' CreateTimes are out of order (every record before it is older than ``T``). So reading
forward from it and comparing content (timestamp, key, value, headers) finds the copy, and stopping at the
lookup's answer when nothing matches replays records rather than skipping any.

- ``R`` is the record a consumer at ``c`` reads next, ``P`` the one it read last. The position is the offset
  of ``R``'s copy, preceded by ``P``'s copy (so a run of identical records cannot fool it): method
  ``timestamp_verified``.
- A consumer that has read its partition to the end (no ``R``), or whose ``R`` is not copied yet, goes right
  after ``P``'s copy, when that copy is the last record there: ``timestamp_verified`` too.
- Anything unproven (no match within ``max_scan`` records, timestamps rewritten by a ``LogAppendTime``
  topic) gives the lookup's answer: method ``timestamp``, which replays rather than skips.

Pure, like ``plans.translation``: records come through ``RecordSource`` and the lookup through
``OffsetForTime``, which the planners implement over Kafka (``plans.kafka_records``).
"""

from __future__ import annotations

from typing import Protocol

from mm2ctl.plans.payloads import TranslationMethod
from mm2ctl.plans.translation import (
    DEFAULT_MAX_SCAN,
    DEFAULT_WINDOW,
    Bounds,
    RecordSource,
    Translation,
)


class OffsetForTime(Protocol):
    """ListOffsets by timestamp on one partition: the earliest offset whose record timestamp is at or after
    ``timestamp_ms``; None when no record is that recent."""

    def __call__(self, timestamp_ms: int) -> int | None: ...


def by_timestamp(
    committed: int,
    *,
    source: RecordSource,
    target: RecordSource,
    source_bounds: Bounds,
    target_bounds: Bounds,
    offset_for_time: OffsetForTime,
    window: int = DEFAULT_WINDOW,
    max_scan: int = DEFAULT_MAX_SCAN,
) -> tuple[Translation | None, str]:
    """The position of ``committed`` (a source offset) on the target, found by timestamp and proven by
    content where it can be; otherwise None and why. See the module docstring."""
    if committed > source_bounds.end:
        return None, f"committed offset {committed} is beyond the source end {source_bounds.end}"
    c = max(committed, source_bounds.start)
    after = source.read(c, min(source_bounds.end, c + window))
    r = after[0] if after else None
    before = source.read(max(source_bounds.start, c - window), c)
    p = before[-1] if before else None
    anchor = r if r is not None else p
    if anchor is None:
        return None, f"no source record within {window} offsets of {c} to take a timestamp from"
    if anchor.timestamp_ms is None:
        return None, f"the source record at {anchor.offset} has no timestamp"
    found = offset_for_time(anchor.timestamp_ms)
    candidate = target_bounds.end if found is None else max(found, target_bounds.start)
    stamp = f"timestamp {anchor.timestamp_ms} of source record {anchor.offset}"
    lo = max(target_bounds.start, candidate - window)  # P's copy may precede the candidate
    hi = min(target_bounds.end, candidate + max_scan)
    recs = target.read(lo, hi)

    def precedes(j: int) -> bool:
        return p is None or (j > 0 and recs[j - 1].digest == p.digest)

    if r is not None:
        for j, rec in enumerate(recs):
            if rec.offset >= candidate and rec.digest == r.digest and precedes(j):
                return (
                    Translation(
                        rec.offset,
                        TranslationMethod.TIMESTAMP_VERIFIED,
                        f"{stamp}: its copy is at target {rec.offset} (found from {candidate} by content)",
                    ),
                    "",
                )
    if p is not None:
        # Read to the end (no R, and P is the anchor: its copy lies at or after the candidate), or R not copied
        # yet (P's copy must then be the target's last record).
        for j, rec in enumerate(recs):
            last = j == len(recs) - 1 and hi >= target_bounds.end
            if rec.digest == p.digest and (rec.offset >= candidate if r is None else last):
                what = "the group read its partition to the end" if r is None else "its next record is not copied yet"
                return (
                    Translation(
                        rec.offset + 1,
                        TranslationMethod.TIMESTAMP_VERIFIED,
                        f"{what}: the position after the copy of source {p.offset} (target {rec.offset})",
                    ),
                    "",
                )
    return (
        Translation(
            candidate,
            TranslationMethod.TIMESTAMP,
            f"{stamp}: no copy found by content within {max_scan} records; the earliest target offset with "
            f"that timestamp or later ({candidate}) replays rather than skips",
        ),
        "",
    )
