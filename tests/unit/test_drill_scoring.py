"""The drill's scoring: lost and duplicated records per strategy, and the sync-interval goal of (c)."""

from __future__ import annotations

from mm2ctl.core.translation.rule import Sync
from mm2ctl.drill.load import ABORTED, commit_before_aborted
from mm2ctl.drill.result import Strategy
from mm2ctl.drill.truth import score, sync_intervals, upstream_decreases


def test_sync_interval_is_the_gap_between_the_syncs_around_the_commit_point() -> None:
    syncs = {("t", 0): [Sync(0, 0), Sync(100, 90), Sync(250, 230)], ("t", 1): [Sync(40, 0)]}
    got = sync_intervals(syncs, "t", {0: 120, 1: 60, 2: 5}, {0: 300, 1: 80, 2: 10})
    assert got == {0: 150, 1: 40, 2: None}  # p1: past the last sync, up to the source end; p2: no sync
    assert sync_intervals(syncs, "t", {0: 100}, {0: 300}) == {0: 150}  # a sync exactly at the commit point
    # A sync past the commit point at a copied aborted record does not end the interval: the group's next
    # record (at 260) does, so the first sync at or after it (none: the source end).
    assert sync_intervals(syncs, "t", {0: 120}, {0: 300}, resume={0: 260}) == {0: 200}


def test_score_counts_lost_and_duplicated_against_the_commit_point() -> None:
    source_log = {0: [(o, o) for o in range(10)]}  # offset == sequence number
    out = score(
        Strategy.CONSERVATIVE,
        committed={0: 6},
        source_log=source_log,
        produced=[10],
        target_offsets={0: 4},
        seen={0: [4, 5, 6, 7, 8, 9]},
        offset_lag_max=100,
        sync_intervals={0: 5},
    )
    assert (out.lost, out.duplicated, out.met) == (0, 2, True)
    missed = score(
        Strategy.CONSERVATIVE,
        committed={0: 6},
        source_log=source_log,
        produced=[10],
        target_offsets={0: 0},
        seen={0: list(range(10))},
        offset_lag_max=100,
        sync_intervals={0: 5},
    )
    assert (missed.duplicated, missed.met) == (6, False)  # more than the 5-offset interval: the goal is missed
    raw = score(
        Strategy.RAW, committed={0: 6}, source_log=source_log, produced=[10], target_offsets={0: 8},
        seen={0: [8, 9]}, offset_lag_max=100,
    )  # fmt: skip
    assert (raw.lost, raw.duplicated, raw.met) == (2, 0, None)
    exact = score(
        Strategy.VERIFIED, committed={0: 6}, source_log=source_log, produced=[10], target_offsets={0: 6},
        seen={0: [6, 7, 8, 9]}, offset_lag_max=100,
    )  # fmt: skip
    assert (exact.lost, exact.duplicated, exact.met) == (0, 0, True)


def test_upstream_decreases_names_the_first_out_of_order_pair_per_partition() -> None:
    written = {
        ("t", 0): [Sync(60, 0), Sync(254, 159), Sync(252, 158), Sync(258, 162), Sync(257, 161)],
        ("t", 1): [Sync(60, 0), Sync(149, 89)],
        ("other", 2): [Sync(9, 9), Sync(1, 1)],
    }
    assert upstream_decreases(written, "t") == {0: (Sync(254, 159), Sync(252, 158))}


def test_the_round_trip_and_the_timestamp_strategy_must_lose_and_duplicate_nothing() -> None:
    source_log = {0: [(o, o) for o in range(10)]}
    for strategy in (Strategy.FAILBACK, Strategy.TIMESTAMP):
        exact = score(
            strategy, committed={0: 6}, source_log=source_log, produced=[10], target_offsets={0: 6},
            seen={0: [6, 7, 8, 9]}, offset_lag_max=100,
        )  # fmt: skip
        assert (exact.goal, exact.met) == ("lost 0, duplicated 0, aborted 0", True)
        replayed = score(
            strategy, committed={0: 6}, source_log=source_log, produced=[10], target_offsets={0: 5},
            seen={0: [5, 6, 7, 8, 9]}, offset_lag_max=100,
        )  # fmt: skip
        assert (replayed.duplicated, replayed.met) == (1, False)


def test_copies_of_aborted_records_read_before_the_commit_point_are_counted_and_miss_the_goal() -> None:
    source_log = {0: [(0, 0), (1, 1), (5, 2), (6, 3)]}  # offsets 2-4: a marker, two aborted records (a marker follows)
    resumed_on_copies = score(
        Strategy.VERIFIED, committed={0: 2}, source_log=source_log, produced=[4], target_offsets={0: 2},
        seen={0: [ABORTED, ABORTED, 2, 3, ABORTED]}, offset_lag_max=100,
    )  # fmt: skip
    # Two copies of aborted records before the next record; the one after it is MM2's copying, not the position's.
    assert (resumed_on_copies.lost, resumed_on_copies.duplicated, resumed_on_copies.aborted) == (0, 0, 2)
    assert resumed_on_copies.met is False
    exact = score(
        Strategy.VERIFIED, committed={0: 2}, source_log=source_log, produced=[4], target_offsets={0: 4},
        seen={0: [2, 3, ABORTED]}, offset_lag_max=100,
    )  # fmt: skip
    assert (exact.aborted, exact.met) == (0, True)
    conservative = score(
        Strategy.CONSERVATIVE, committed={0: 2}, source_log=source_log, produced=[4], target_offsets={0: 1},
        seen={0: [1, ABORTED, ABORTED, 2, 3]}, offset_lag_max=100, sync_intervals={0: 3},
    )  # fmt: skip
    assert (conservative.duplicated, conservative.aborted, conservative.met) == (1, 2, True)  # 1 + 2 <= 3


def test_the_commit_point_moves_to_just_before_an_aborted_transaction() -> None:
    log = [False, False, True, True, False, False, False, True, False]
    assert commit_before_aborted(log, 1) == 2  # the 2nd committed record is followed by an aborted one
    assert commit_before_aborted(log, 3) == 5
    assert commit_before_aborted(log, 6) == 6  # none after it: unchanged
