"""The failover translation rules (core.translation.rule) against hand-made cases and a brute-force reference.

The reference knows the truth because every record is unique: the right target position for a committed
source offset ``c`` is the target offset of the copy of the first source record at or after ``c`` (or the
target end when the consumer has read everything).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from mm2ctl.core.translation.methods import TranslationMethod
from mm2ctl.core.translation.rule import (
    Bounds,
    Digested,
    Sync,
    conservative,
    current_mapping_start,
    inverted,
    normalize_syncs,
    record_digest,
    verified,
)


@dataclass
class FakeSide:
    """One partition: record offsets and contents; counts reads so the bounds can be asserted."""

    records: list[Digested]
    start: int
    end: int
    reads: int = 0

    def read(self, start: int, end: int) -> Sequence[Digested]:
        self.reads += 1
        return [r for r in self.records if start <= r.offset < end]

    @property
    def bounds(self) -> Bounds:
        return Bounds(self.start, self.end)


def d(name: str, ts: int = 1000) -> str:
    return record_digest(ts, name.encode(), b"value-" + name.encode(), [("h", b"1")])


def side(offsets: Sequence[int], names: Sequence[str], end: int | None = None, start: int = 0) -> FakeSide:
    recs = [Digested(o, d(n)) for o, n in zip(offsets, names, strict=True)]
    return FakeSide(recs, start, end if end is not None else (offsets[-1] + 1 if offsets else start))


def gapped(n: int) -> tuple[FakeSide, FakeSide]:
    """Source: a transaction marker after every record (records at even offsets); target: dense copy."""
    names = [f"r{i}" for i in range(n)]
    return side([2 * i for i in range(n)], names, end=2 * n), side(list(range(n)), names)


def test_digest_covers_timestamp_key_value_headers() -> None:
    base = record_digest(1, b"k", b"v", [("h", b"x")])
    assert base == record_digest(1, b"k", b"v", [("h", b"x")])
    assert (
        len(
            {
                base,
                record_digest(2, b"k", b"v", [("h", b"x")]),
                record_digest(1, b"K", b"v", [("h", b"x")]),
                record_digest(1, b"k", b"V", [("h", b"x")]),
                record_digest(1, b"k", b"v", [("h", b"y")]),
                record_digest(1, b"k", b"v", []),
                record_digest(1, None, b"v", [("h", b"x")]),
                record_digest(1, b"", b"v", [("h", b"x")]),
            }
        )
        == 8
    )


def test_conservative_rule_is_design_section_5() -> None:
    syncs = [Sync(0, 0), Sync(10, 7), Sync(20, 15)]
    assert conservative(syncs, 10) is not None and conservative(syncs, 10).offset == 7  # type: ignore[union-attr]
    t = conservative(syncs, 14)
    assert t is not None and (t.offset, t.method) == (8, TranslationMethod.OFFSET_SYNC_NEXT)
    t = conservative(syncs, 20)
    assert t is not None and (t.offset, t.method) == (15, TranslationMethod.OFFSET_SYNC_EXACT)
    assert conservative([Sync(5, 5)], 4) is None
    assert conservative([], 4) is None


def test_lock_step_delta_is_verified() -> None:
    names = [f"r{i}" for i in range(10)]
    src, dst = side(range(10), names), side(range(10), names)  # type: ignore[arg-type]
    t = verified([Sync(0, 0)], 5, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and (t.offset, t.method) == (5, TranslationMethod.VERIFIED_DELTA)


def test_gaps_on_the_source_make_the_delta_wrong_and_search_finds_the_record() -> None:
    src, dst = gapped(10)
    t = verified([Sync(0, 0)], 6, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None
    assert t.delta_candidate == 6  # would point at r6: three records skipped
    assert (t.offset, t.method) == (3, TranslationMethod.VERIFIED_SEARCH)


def test_committed_offset_on_a_marker_resumes_at_the_next_record() -> None:
    src, dst = gapped(10)
    t = verified([Sync(0, 0)], 7, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and t.offset == 4  # r4 lives at source 8


def test_caught_up_consumer_goes_after_the_last_record() -> None:
    src, dst = gapped(10)
    t = verified([Sync(0, 0)], 20, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and t.offset == 10 and t.method is TranslationMethod.VERIFIED_SEARCH


def test_not_yet_replicated_record_resumes_after_the_last_copied_one() -> None:
    names = [f"r{i}" for i in range(10)]
    src = side([2 * i for i in range(10)], names, end=20)
    dst = side(list(range(5)), names[:5])
    t = verified([Sync(0, 0)], 12, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is None or t.method.value.startswith("offset_sync")  # P=r5 is not on the target: unproven
    t = verified([Sync(0, 0)], 10, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and (t.offset, t.method) == (5, TranslationMethod.VERIFIED_SEARCH)


def test_unmatched_target_falls_back_to_the_conservative_rule() -> None:
    src = side(range(10), [f"a{i}" for i in range(10)])  # type: ignore[arg-type]
    dst = side(range(10), [f"b{i}" for i in range(10)])  # type: ignore[arg-type]
    t = verified([Sync(0, 0)], 5, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and (t.offset, t.method) == (1, TranslationMethod.OFFSET_SYNC_NEXT)
    assert "not verified" in t.detail


def test_no_sync_at_or_below_is_untranslatable() -> None:
    src, dst = gapped(5)
    assert verified([Sync(4, 2)], 3, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds) is None


def test_duplicated_copy_needs_the_previous_record_too() -> None:
    # MM2 re-sent r2, r3 after a task restart: target r0 r1 r2 r3 r2 r3 r4. The consumer read r0..r2 (c=3):
    # R=r3, P=r2. Both copies of r3 are preceded by r2, so the first (offset 3) is right; candidate 3 is it.
    names_t = ["r0", "r1", "r2", "r3", "r2", "r3", "r4"]
    src = side(range(5), [f"r{i}" for i in range(5)])  # type: ignore[arg-type]
    dst = side(range(7), names_t)  # type: ignore[arg-type]
    t = verified([Sync(0, 0)], 3, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and t.offset == 3
    # c=4: R=r4, P=r3. Candidate 4 holds r2 (wrong); search finds r4 at 6 preceded by r3.
    t = verified([Sync(0, 0)], 4, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
    assert t is not None and (t.offset, t.method) == (6, TranslationMethod.VERIFIED_SEARCH)


def test_search_is_bounded() -> None:
    src, dst = gapped(200)
    t = verified(
        [Sync(0, 0)], 300, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds, max_scan=50
    )
    assert t is not None and t.method is TranslationMethod.OFFSET_SYNC_NEXT


def test_normalize_keeps_syncs_after_the_last_contradiction() -> None:
    # (0,0) again agrees; (5,5) agrees; (5,6) gives upstream 5 a second downstream: a new mapping starts there.
    got = normalize_syncs([Sync(0, 0), Sync(10, 10), Sync(0, 0), Sync(5, 5), Sync(5, 6), Sync(9, 8)])
    assert got == [Sync(5, 6), Sync(9, 8)]


def test_normalize_keeps_syncs_mm2_wrote_out_of_order() -> None:
    """The CI run that failed the drill: MM2 wrote 254->159 before 252->158. Both describe one mapping, so
    60->0, the only sync below the group's commit point 126, must survive (MM2's own store dropped it)."""
    written = [Sync(60, 0), Sync(149, 89), Sync(251, 157), Sync(254, 159), Sync(252, 158), Sync(258, 162)]
    got = normalize_syncs(written)
    assert got == sorted(written)
    assert conservative(got, 126) == conservative([Sync(60, 0)], 126)


@pytest.mark.parametrize(
    ("written", "kept"),
    [
        # The target topic was recreated and MM2 went on from upstream 11 at downstream 0.
        ([Sync(0, 0), Sync(10, 10), Sync(11, 0), Sync(15, 4)], [Sync(11, 0), Sync(15, 4)]),
        # MM2 restarted and copied upstream 5.. again, after the copies it had already written (at-least-once).
        ([Sync(0, 0), Sync(10, 10), Sync(5, 11), Sync(20, 26)], [Sync(5, 11), Sync(20, 26)]),
        # The source was recreated: upstream starts again at 0, appended to the same target.
        ([Sync(0, 0), Sync(10, 10), Sync(0, 11)], [Sync(0, 11)]),
        # The same sync written twice is one sync.
        ([Sync(0, 0), Sync(10, 10), Sync(10, 10)], [Sync(0, 0), Sync(10, 10)]),
        ([], []),
    ],
)
def test_normalize_starts_a_new_mapping_at_a_contradiction(written: list[Sync], kept: list[Sync]) -> None:
    assert normalize_syncs(written) == kept


@pytest.mark.parametrize("seed", range(20))
def test_normalize_keeps_every_sync_of_one_mapping_in_any_write_order(seed: int) -> None:
    rng = random.Random(seed)
    up = down = 0
    mapping = []
    for _ in range(rng.randint(1, 60)):
        up += rng.randint(1, 5)
        down += rng.randint(1, 5)
        mapping.append(Sync(up, down))
    written = mapping[:]
    rng.shuffle(written)
    assert normalize_syncs(written) == mapping


@pytest.mark.parametrize("seed", range(40))
def test_verified_matches_the_reference_on_random_gapped_topics(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(1, 120)
    src_offsets, off = [], 0
    for _ in range(n):
        off += 1 + (rng.random() < 0.4) * rng.randint(1, 4)  # markers, aborted records, compaction holes
        src_offsets.append(off)
    src_end = src_offsets[-1] + 1 + rng.randint(0, 2)
    names = [f"r{i}" for i in range(n)]
    lag = rng.randint(0, min(5, n - 1))  # the target may be behind
    copied = n - lag
    src = side(src_offsets, names, end=src_end)
    dst = side(list(range(copied)), names[:copied])
    # MM2 syncs: always the first record, then a random subset (coalesced under load).
    syncs = [Sync(src_offsets[0], 0)] + [Sync(src_offsets[i], i) for i in range(1, copied) if rng.random() < 0.1]
    for _ in range(15):
        c = rng.randint(0, src_end)
        nxt = next((i for i, o in enumerate(src_offsets) if o >= c), None)
        truth = copied if nxt is None or nxt >= copied else nxt
        t = verified(syncs, c, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
        cons = conservative(syncs, c)
        if cons is None:
            assert t is None
            continue
        assert t is not None
        if (n if nxt is None else nxt) > copied:
            # neither R nor P is on the target yet: nothing proves a position
            assert t.method in (TranslationMethod.OFFSET_SYNC_EXACT, TranslationMethod.OFFSET_SYNC_NEXT)
            continue
        assert t.method in (TranslationMethod.VERIFIED_DELTA, TranslationMethod.VERIFIED_SEARCH), (c, t)
        assert t.offset == truth, (c, t, truth)
        assert cons.offset <= truth  # the conservative rule never skips a record


# --- the planner's read-ahead record source ---


def test_read_ahead_serves_increasing_windows_from_few_reads_and_never_reads_past_the_limit() -> None:
    from mm2ctl.core.kafka.records import RawRecord
    from mm2ctl.core.translation import record_sources

    present = [o for o in range(0, 30_000) if o % 7 != 3]  # gaps, as compaction and markers leave
    calls: list[tuple[int, int]] = []

    class FakeReader:
        def read(self, topic: str, partition: int, lo: int, hi: int) -> list[RawRecord]:
            calls.append((lo, hi))
            return [RawRecord(topic, partition, o, o, b"k", b"v%d" % o) for o in present if lo <= o < hi]

    limit = 25_000
    source = record_sources.KafkaRecords(FakeReader(), "t", 0, limit, chunk=5_000)  # type: ignore[arg-type]
    rng = random.Random(7)
    starts = sorted(rng.randrange(0, limit) for _ in range(300))
    for s in starts:
        for lo, hi in ((s - 64, s), (s, s + 64), (s - 10, s + 3_000)):
            got = [r.offset for r in source.read(lo, hi)]
            assert got == [o for o in present if lo <= o < min(hi, limit)], (lo, hi)
    assert all(hi <= limit for _, hi in calls)
    assert len(calls) <= 2 * limit // 5_000 + 2  # a read per chunk (plus restarts), not per request
    # a window below what is held starts over and is still exact
    assert [r.offset for r in source.read(10, 30)] == [o for o in present if 10 <= o < 30]


@pytest.mark.parametrize(
    ("history", "start"),
    [
        ([Sync(0, 0), None, Sync(5, 9)], 2),  # a tombstone deletes its key's earlier records
        ([Sync(0, 0), Sync(5, 5), None], 3),  # ... all of them: nothing counts
        ([None, Sync(0, 0), Sync(5, 5)], 1),
        # A, B, C: C contradicts A; B agrees with both, and was written after A: it stays.
        ([Sync(10, 10), Sync(40, 60), Sync(30, 5)], 1),
        ([Sync(0, 0), Sync(10, 10), Sync(10, 10), Sync(5, 5)], 0),  # duplicates and out of order: one mapping
    ],
)
def test_current_mapping_starts_after_the_last_tombstone_or_contradiction(
    history: list[Sync | None], start: int
) -> None:
    assert current_mapping_start(history) == start


def test_the_issue_example_translates_the_same_everywhere() -> None:
    """100->50, 254->159, 252->158 written in that order, a group committed at 120: MM2's own store forgets
    100->50 at the out-of-order pair and leaves the group untranslatable; the one rule keeps all three."""
    syncs = normalize_syncs([Sync(100, 50), Sync(254, 159), Sync(252, 158)])
    assert syncs == [Sync(100, 50), Sync(252, 158), Sync(254, 159)]
    tr = conservative(syncs, 120)
    assert tr is not None and tr.offset == 51


def test_inverted_syncs_translate_back_conservatively() -> None:
    back = inverted([Sync(100, 50), Sync(200, 140)])
    assert back == [Sync(50, 100), Sync(140, 200)]
    assert [conservative(back, t).offset for t in (50, 51, 139, 140, 999)] == [100, 101, 101, 200, 201]  # type: ignore[union-attr]
    assert conservative(back, 49) is None


def test_verified_counts_records_from_the_sync_through_runs_of_identical_records() -> None:
    """Identical records (same timestamp, key, value) after transaction markers: a search by content would
    stop at the first pair that looks right; counting records from the sync's exact pair does not."""
    names = ["same"] * 40
    src = side([2 * i for i in range(40)], names, end=80)
    dst = side(list(range(40)), names)
    for c in (0, 31, 47, 79, 80):
        t = verified([Sync(0, 0)], c, source=src, target=dst, source_bounds=src.bounds, target_bounds=dst.bounds)
        assert (t is not None and t.method is TranslationMethod.VERIFIED_SEARCH) or c == 0, (c, t)
        assert t is not None and t.offset == (c + 1) // 2, (c, t)
