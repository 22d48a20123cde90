"""Positions proven by content when the source holds aborted transactions (core.translation.rule and
core.translation.timestamp_lookup): a consumer reads ``read_committed``, MM2 copies aborted records as ordinary ones
unless its source consumer reads committed records only, and the answer is the copy of the next committed record.

The reference knows the truth because every record is unique: for a committed source offset ``c`` the right
target position is the offset of the copy of the first *committed* source record at or after ``c``; with none,
the position after the target's last record.
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
    align,
    conservative,
    copies_after,
    preceded_by,
    record_digest,
    verified,
)
from mm2ctl.core.translation.timestamp_lookup import by_timestamp

EXACT = (TranslationMethod.VERIFIED_DELTA, TranslationMethod.VERIFIED_SEARCH)


@dataclass
class Log:
    """One partition: records (offset, name, aborted); its timestamps grow with the name's number."""

    records: list[tuple[int, str, bool]]
    end: int
    start: int = 0

    def read(self, start: int, end: int) -> Sequence[Digested]:
        return [rec(o, n, a) for o, n, a in self.records if start <= o < end]

    @property
    def bounds(self) -> Bounds:
        return Bounds(self.start, self.end)

    def offset_for_time(self, timestamp_ms: int) -> int | None:
        return next((o for o, n, _a in self.records if stamp(n) >= timestamp_ms), None)


def stamp(name: str) -> int:
    return 1_000 + int(name.lstrip("rax"))


def rec(offset: int, name: str, aborted: bool = False) -> Digested:
    return Digested(offset, record_digest(stamp(name), name.encode(), b"v", []), stamp(name), aborted)


def copy_of(source: Log, *, with_aborted: bool, start: int = 0) -> Log:
    """MM2's copy: dense from ``start``; aborted records copied as ordinary ones only ``with_aborted``."""
    names = [n for _o, n, a in source.records if with_aborted or not a]
    return Log([(start + i, n, False) for i, n in enumerate(names)], start + len(names), start)


#: The issue's flow: P at 10 commits (marker at 11), a transaction of two records aborts (12, 13; its marker
#: at 14), and R follows at 15 (marker at 16). A consumer that read P committed 11.
ISSUE = Log([(10, "r10", False), (12, "a12", True), (13, "a13", True), (15, "r15", False)], 17, 10)


def test_align_pairs_committed_records_and_lets_aborted_ones_go_uncopied() -> None:
    ours = [rec(0, "r0"), rec(1, "a1", True), rec(2, "r2")]
    assert align(ours, [rec(5, "r0"), rec(6, "a1"), rec(7, "r2")]) == [(0, 0), (1, 1), (2, 2)]
    assert align(ours, [rec(5, "r0"), rec(6, "r2")]) == [(0, 0), (2, 1)]
    assert align(ours, [rec(5, "r0"), rec(6, "x9"), rec(7, "r2")]) is None  # a record that is no copy
    assert align(ours, [rec(5, "r0")]) is None  # the target does not hold R yet
    # An aborted record on the other side (its own reader marked it) may have no counterpart either.
    assert align([rec(0, "r0"), rec(1, "r2")], [rec(5, "r0"), rec(6, "a1", True), rec(7, "r2")]) == [(0, 0), (1, 2)]


def test_preceded_by_and_copies_after_walk_past_copies_of_aborted_records() -> None:
    target = [rec(5, "r10"), rec(6, "a12"), rec(7, "a13"), rec(8, "r15")]
    skipped = [rec(12, "a12", True), rec(13, "a13", True)]
    assert preceded_by(target, 3, rec(10, "r10"), skipped)
    assert not preceded_by(target, 3, rec(10, "r10"), [])  # the copies must be explained
    assert not preceded_by(target, 3, rec(10, "r10"), skipped[:1])
    assert preceded_by(target, 2, rec(10, "r10"), skipped[:1])
    assert copies_after(target, 0, skipped) == 2
    assert copies_after([rec(5, "r10"), rec(6, "a13"), rec(7, "r15")], 0, skipped) == 1  # a12 was not copied


@pytest.mark.parametrize("with_aborted", [True, False], ids=["mm2-copies-aborted", "mm2-read-committed"])
def test_the_issue_case_resumes_at_the_copy_of_the_next_committed_record(with_aborted: bool) -> None:
    target = copy_of(ISSUE, with_aborted=with_aborted, start=5)
    r_copy = 8 if with_aborted else 6
    # A sync at P: the conservative rule says P' + 1, the first aborted copy when MM2 copies them.
    syncs = [Sync(10, 5)]
    assert conservative(syncs, 11) is not None and conservative(syncs, 11).offset == 6  # type: ignore[union-attr]
    got = verified(syncs, 11, source=ISSUE, target=target, source_bounds=ISSUE.bounds, target_bounds=target.bounds)
    assert got is not None and got.method in EXACT and got.offset == r_copy, got
    # Committed on an aborted record, or on a marker: the same next committed record.
    for c in (12, 13, 14, 15):
        got = verified(syncs, c, source=ISSUE, target=target, source_bounds=ISSUE.bounds, target_bounds=target.bounds)
        assert got is not None and got.offset == r_copy, (c, got)
    # A sync at R (MM2 wrote one there): exact, and the search from a sync below proves it too.
    got = verified(
        [Sync(10, 5), Sync(15, r_copy)],
        11,
        source=ISSUE,
        target=target,
        source_bounds=ISSUE.bounds,
        target_bounds=target.bounds,
    )
    assert got is not None and got.offset == r_copy


@pytest.mark.parametrize("with_aborted", [True, False], ids=["mm2-copies-aborted", "mm2-read-committed"])
def test_a_consumer_at_the_end_goes_past_copies_of_trailing_aborted_records(with_aborted: bool) -> None:
    source = Log([(0, "r0", False), (2, "r2", False), (4, "a4", True), (5, "a5", True)], 7)
    target = copy_of(source, with_aborted=with_aborted)
    got = verified(
        [Sync(0, 0)], 7, source=source, target=target, source_bounds=source.bounds, target_bounds=target.bounds
    )
    assert got is not None and got.method in EXACT and got.offset == target.end, got


@pytest.mark.parametrize("with_aborted", [True, False], ids=["mm2-copies-aborted", "mm2-read-committed"])
def test_the_timestamp_fallback_lands_on_the_copy_of_the_next_committed_record(with_aborted: bool) -> None:
    target = copy_of(ISSUE, with_aborted=with_aborted, start=5)
    for aligned in (True, False):
        got, why = by_timestamp(
            11,
            source=ISSUE,
            target=target,
            source_bounds=ISSUE.bounds,
            target_bounds=target.bounds,
            offset_for_time=target.offset_for_time,
            source_offset_for_time=ISSUE.offset_for_time if aligned else None,
        )
        assert got is not None, why
        assert (got.offset, got.method) == (8 if with_aborted else 6, TranslationMethod.TIMESTAMP_VERIFIED), got
    # Read to the end, with an aborted transaction after the last committed record.
    source = Log([(0, "r0", False), (2, "r2", False), (4, "a4", True), (5, "a5", True)], 7)
    target = copy_of(source, with_aborted=with_aborted)
    got, why = by_timestamp(
        7,
        source=source,
        target=target,
        source_bounds=source.bounds,
        target_bounds=target.bounds,
        offset_for_time=target.offset_for_time,
        source_offset_for_time=source.offset_for_time,
    )
    assert got is not None and got.offset == target.end, (got, why)


def random_log(rng: random.Random) -> Log:
    """Committed records, aborted transactions of 1-3 records, a marker after each transaction."""
    records: list[tuple[int, str, bool]] = []
    off = rng.randint(0, 5)
    start = off
    for i in range(rng.randint(1, 80)):
        aborted = rng.random() < 0.3
        for k in range(rng.randint(1, 3) if aborted else 1):
            records.append((off, f"{'a' if aborted else 'r'}{1000 * i + k}", aborted))
            off += 1
        if aborted or rng.random() < 0.5:
            off += 1  # the transaction's marker
    return Log(records, off + rng.randint(0, 2), start)


@pytest.mark.parametrize("seed", range(60))
def test_verified_matches_the_reference_with_aborted_transactions(seed: int) -> None:
    rng = random.Random(seed)
    source = random_log(rng)
    with_aborted = rng.random() < 0.5
    target = copy_of(source, with_aborted=with_aborted)
    copied = [o for o, _n, a in source.records if with_aborted or not a]  # source offset of each target record
    # MM2's syncs: the first copied record, then a random subset.
    syncs = [Sync(copied[0], 0)] + [Sync(copied[i], i) for i in range(1, len(copied)) if rng.random() < 0.15]
    for _ in range(15):
        c = rng.randint(source.start, source.end)
        nxt = next((o for o, _n, a in source.records if o >= c and not a), None)
        truth = target.end if nxt is None else copied.index(nxt)
        got = verified(syncs, c, source=source, target=target, source_bounds=source.bounds, target_bounds=target.bounds)
        cons = conservative(syncs, c)
        if cons is None:
            assert got is None
            continue
        assert got is not None
        assert got.method in EXACT, (c, got, truth)
        assert got.offset == truth, (c, got, truth)
        assert cons.offset <= truth  # the conservative rule never skips a record


@pytest.mark.parametrize("seed", range(30))
def test_the_timestamp_fallback_matches_the_reference_with_aborted_transactions(seed: int) -> None:
    rng = random.Random(1000 + seed)
    source = random_log(rng)
    with_aborted = rng.random() < 0.5
    target = copy_of(source, with_aborted=with_aborted)
    copied = [o for o, _n, a in source.records if with_aborted or not a]
    for _ in range(10):
        c = rng.randint(source.start, source.end)
        nxt = next((o for o, _n, a in source.records if o >= c and not a), None)
        truth = target.end if nxt is None else copied.index(nxt)
        got, why = by_timestamp(
            c,
            source=source,
            target=target,
            source_bounds=source.bounds,
            target_bounds=target.bounds,
            offset_for_time=target.offset_for_time,
            source_offset_for_time=source.offset_for_time,
        )
        if not any(not a for o, _n, a in source.records if abs(o - c) <= 64):
            continue  # no committed record near c to take a timestamp from
        assert got is not None, why
        assert (got.offset, got.method) == (truth, TranslationMethod.TIMESTAMP_VERIFIED), (c, got, truth)
