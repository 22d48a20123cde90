"""The timestamp fallback: find a group's position on the other cluster by its next record's timestamp, then
prove it by content, where no offset sync lies at or below the committed offset.

Why it works (docs/design.md, "Failback and timestamps"). MirrorSourceTask copies each record's timestamp, so a record
and its copy have the same timestamp. ListOffsets by timestamp gives the earliest offset whose timestamp is at or after
``T``; for the record ``R`` at the committed offset, with timestamp ``T``, that offset is at or before ``R``'s copy,
even when producers' CreateTimes are out of order (every record before it is older than ``T``). So reading forward from
it and comparing content (timestamp, key, value, headers) finds the copy, and stopping at the lookup's answer when
nothing matches replays records rather than skipping any.

- ``R`` is the record a consumer at ``c`` reads next, ``P`` the one it read last. On the source, the same
  lookup gives ``s0``, the first record with a timestamp at or after ``T``; everything before it is older,
  on both clusters, so its copy is the first record at the target's answer. The records from ``s0`` up to
  ``R`` are compared one by one with as many records from there on the target: when all agree, the last
  is ``R``'s copy, even among records with equal timestamps and equal content (method
  ``timestamp_verified``).
- Otherwise (a record missing on one side, the source lookup unavailable) the first copy of ``R`` at or after
  the target's answer that is preceded by ``P``'s copy is taken: ``timestamp_verified`` too.
- A consumer that has read its partition to the end (no ``R``), or whose ``R`` is not copied yet, goes right
  after ``P``'s copy, when that copy is the last record there: ``timestamp_verified`` too.
- Anything unproven (no match within ``max_scan`` records, timestamps rewritten by a ``LogAppendTime``
  topic) gives the lookup's answer: method ``timestamp``, which replays rather than skips.

Records of aborted transactions count as ``core.translation.rule`` counts them: ``R`` and ``P`` are committed
records, and an aborted record on either side may have a copy on the other or none (``core.translation.rule.align``).

Pure, like ``core.translation.rule``: records come through ``RecordSource`` and the lookup through
``OffsetForTime``, which the planners implement over Kafka (``core.translation.record_sources``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from mm2ctl.core.translation.methods import TranslationMethod
from mm2ctl.core.translation.rule import (
    DEFAULT_MAX_SCAN,
    DEFAULT_WINDOW,
    Bounds,
    Digested,
    RecordSource,
    Translation,
    align,
    copies_after,
    preceded_by,
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
    source_offset_for_time: OffsetForTime | None = None,
    window: int = DEFAULT_WINDOW,
    max_scan: int = DEFAULT_MAX_SCAN,
) -> tuple[Translation | None, str]:
    """The position of ``committed`` (a source offset) on the target, found by timestamp and proven by
    content where it can be; otherwise None and why. See the module docstring."""
    if committed > source_bounds.end:
        return None, f"committed offset {committed} is beyond the source end {source_bounds.end}"
    c = max(committed, source_bounds.start)
    after = source.read(c, min(source_bounds.end, c + window))
    r = next((x for x in after if not x.aborted), None)
    before = source.read(max(source_bounds.start, c - window), c)
    p = next((x for x in reversed(before) if not x.aborted), None)
    anchor = r if r is not None else p
    if anchor is None:
        return None, f"no committed source record within {window} offsets of {c} to take a timestamp from"
    if anchor.timestamp_ms is None:
        return None, f"the source record at {anchor.offset} has no timestamp"
    # The records of aborted transactions between P and R (or after P, with no R): a consumer reads none.
    skipped = [
        x for x in (*before, *after) if (p is None or x.offset > p.offset) and (r is None or x.offset < r.offset)
    ]
    found = offset_for_time(anchor.timestamp_ms)
    candidate = target_bounds.end if found is None else max(found, target_bounds.start)
    stamp = f"timestamp {anchor.timestamp_ms} of source record {anchor.offset}"
    aligned = _aligned(
        anchor, candidate, source, target, source_bounds, target_bounds, source_offset_for_time, max_scan
    )
    lo = max(target_bounds.start, candidate - window)  # P's copy may precede the candidate
    hi = min(target_bounds.end, candidate + max_scan)
    recs: Sequence[Digested] | None = None
    if aligned is not None:
        at, count = aligned
        if r is not None:
            detail = f"{stamp}: its copy is at target {at} ({count} record(s) from that timestamp on agree)"
            return Translation(at, TranslationMethod.TIMESTAMP_VERIFIED, detail), ""
        recs = target.read(at, hi)
        end = at + 1 if not recs else recs[copies_after(recs, 0, skipped)].offset + 1
        detail = (
            f"the group read its partition to the end: the position after the copy of source {anchor.offset} "
            f"(target {at}; {count} record(s) from its timestamp on agree)"
        )
        return Translation(end, TranslationMethod.TIMESTAMP_VERIFIED, detail), ""
    recs = target.read(lo, hi)

    if r is not None:
        for j, rec in enumerate(recs):
            if rec.offset >= candidate and rec.digest == r.digest and preceded_by(recs, j, p, skipped):
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
        # yet (P's copy, and copies of the aborted records after it, must then end the target).
        for j, rec in enumerate(recs):
            if rec.aborted or rec.digest != p.digest:
                continue
            last = j + copies_after(recs, j, skipped)
            ends = last == len(recs) - 1 and hi >= target_bounds.end
            if rec.offset >= candidate if r is None else ends:
                what = "the group read its partition to the end" if r is None else "its next record is not copied yet"
                return (
                    Translation(
                        recs[last].offset + 1,
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


def _aligned(
    anchor: Digested,
    candidate: int,
    source: RecordSource,
    target: RecordSource,
    source_bounds: Bounds,
    target_bounds: Bounds,
    source_offset_for_time: OffsetForTime | None,
    max_scan: int,
) -> tuple[int, int] | None:
    """The target offset of ``anchor``'s copy by alignment from the timestamp (module docstring), and how many
    records agreed; None when the records from there do not agree one by one."""
    if source_offset_for_time is None or anchor.timestamp_ms is None:
        return None
    stamp = anchor.timestamp_ms
    s0 = source_offset_for_time(stamp)
    if s0 is None or s0 > anchor.offset or anchor.offset - s0 > max_scan:
        return None
    # The lookup answers per batch, and a transaction marker carries its commit time: it can point before the
    # first *record* with the timestamp, on either side. That record is the first one read from there.
    ours = _from_first_at(source.read(max(s0, source_bounds.start), anchor.offset + 1), stamp)
    if not ours or ours[-1].offset != anchor.offset:
        return None
    theirs = _from_first_at(target.read(candidate, min(target_bounds.end, candidate + max_scan)), stamp)
    pairs = align(ours, theirs)
    if not pairs or pairs[-1][0] != len(ours) - 1:
        return None
    return theirs[pairs[-1][1]].offset, len(pairs)


def _from_first_at(records: Sequence[Digested], timestamp_ms: int) -> Sequence[Digested]:
    """``records`` from the first whose timestamp is at or after ``timestamp_ms``."""
    i = next((i for i, r in enumerate(records) if r.timestamp_ms is not None and r.timestamp_ms >= timestamp_ms), None)
    return [] if i is None else records[i:]
