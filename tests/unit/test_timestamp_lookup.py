"""The timestamp fallback (core.translation.timestamp_lookup) and the order core.translation.positions tries every
method in.

Sides are lists of records; the lookup by timestamp answers as Kafka does, per batch: the earliest offset
whose timestamp is at or after the time, where a transaction marker (not a record) may carry a later
timestamp than the records around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from mm2ctl.core.translation.methods import TranslationMethod
from mm2ctl.core.translation.positions import Fallback, Sides, locate
from mm2ctl.core.translation.rule import Bounds, Digested, Sync, record_digest
from mm2ctl.core.translation.timestamp_lookup import by_timestamp


@dataclass
class Side:
    """One partition: records (offset, name, timestamp) and markers (offset, timestamp) the lookup sees."""

    records: list[tuple[int, str, int]]
    markers: list[tuple[int, int]] = field(default_factory=list)

    def read(self, start: int, end: int) -> Sequence[Digested]:
        return [
            Digested(o, record_digest(ts, name.encode(), b"v", []), ts)
            for o, name, ts in self.records
            if start <= o < end
        ]

    def offset_for_time(self, timestamp_ms: int) -> int | None:
        entries = sorted([(o, ts) for o, _n, ts in self.records] + self.markers)
        return next((o for o, ts in entries if ts >= timestamp_ms), None)

    @property
    def bounds(self) -> Bounds:
        offsets = [o for o, _n, _t in self.records] + [o for o, _t in self.markers]
        return Bounds(min(offsets, default=0), max(offsets, default=-1) + 1)


def lookup(source: Side, target: Side, committed: int, *, aligned: bool = True) -> tuple[int | None, str]:
    got, why = by_timestamp(
        committed,
        source=source,
        target=target,
        source_bounds=source.bounds,
        target_bounds=target.bounds,
        offset_for_time=target.offset_for_time,
        source_offset_for_time=source.offset_for_time if aligned else None,
    )
    return (None, why) if got is None else (got.offset, got.method.value)


def copy(records: list[tuple[int, str, int]], start: int = 0) -> Side:
    """MM2's copy: the same records and timestamps, dense from ``start`` (no markers)."""
    return Side([(start + i, name, ts) for i, (_o, name, ts) in enumerate(records)])


def test_equal_timestamps_and_equal_content_land_on_the_right_record() -> None:
    """Runs of identical records sharing a timestamp: content alone cannot tell them apart, so the records
    from the timestamp on are aligned one by one (with a marker after each record on the source, whose
    commit time is later than the records' CreateTime)."""
    src = Side(
        [(2 * i, "same", 1000 + (i // 25) * 1000) for i in range(150)], [(2 * i + 1, 99_999) for i in range(150)]
    )
    dst = copy(src.records)
    for i in (0, 24, 25, 79, 149):
        assert lookup(src, dst, 2 * i) == (i, TranslationMethod.TIMESTAMP_VERIFIED.value), i
        assert lookup(src, dst, 2 * i - 1 if i else 0)[0] == i  # committed on a marker: the next record
    assert lookup(src, dst, 300) == (150, TranslationMethod.TIMESTAMP_VERIFIED.value)  # read to the end


def test_out_of_order_timestamps_still_find_the_copy() -> None:
    ts = [5000, 1000, 3000, 2000, 4000, 2500, 6000]
    src = Side([(10 + i, f"r{i}", t) for i, t in enumerate(ts)])
    dst = copy(src.records, start=100)
    for i in range(len(ts)):
        assert lookup(src, dst, 10 + i) == (100 + i, "timestamp_verified"), i


def test_without_the_source_lookup_content_still_decides_when_records_differ() -> None:
    src = Side([(i, f"r{i}", 1000 + i // 3) for i in range(30)])
    dst = copy(src.records, start=7)
    assert lookup(src, dst, 17, aligned=False) == (24, "timestamp_verified")


def test_a_record_not_copied_yet_lands_after_the_last_copy() -> None:
    src = Side([(i, f"r{i}", 1000 + i) for i in range(10)])
    dst = copy(src.records[:6])
    assert lookup(src, dst, 6) == (6, "timestamp_verified")
    assert lookup(src, dst, 8)[1] == "timestamp"  # two records behind: no proof, the lookup's answer (the end)


def test_rewritten_timestamps_replay_rather_than_skip() -> None:
    """A target topic with LogAppendTime: no copy matches, so the earliest record at or after the timestamp
    is taken, which is at or before the true copy."""
    src = Side([(i, f"r{i}", 1000 + i) for i in range(20)])
    dst = Side([(i, f"r{i}", 5000 + i) for i in range(20)])
    got, method = lookup(src, dst, 12)
    assert method == "timestamp" and got is not None and got <= 12


def test_locate_tries_the_syncs_then_the_timestamp_unless_told_not_to() -> None:
    src = Side([(i, f"r{i}", 1000 + i) for i in range(40)])
    dst = copy(src.records[10:], start=0)  # the target began at source 10
    src = Side(src.records[10:])
    sides = Sides(src, dst, src.bounds, dst.bounds, dst.offset_for_time, src.offset_for_time)
    syncs = [Sync(30, 20)]
    tr, _ = locate(syncs, 33, sides)
    assert tr is not None and (tr.offset, tr.method) == (23, TranslationMethod.VERIFIED_DELTA)
    tr, _ = locate(syncs, 15, sides)  # below the only sync
    assert tr is not None and (tr.offset, tr.method) == (5, TranslationMethod.TIMESTAMP_VERIFIED)
    tr, why = locate(syncs, 15, sides, Fallback.NONE)
    assert tr is None and why == "no offset sync at or below it"
    tr, why = locate([], 15, None)
    assert tr is None and why == "no offset sync for this partition"
