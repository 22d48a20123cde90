"""What a failover or failback plan says of the share groups it moves (``failover.checks.note_share_groups``):
the records acknowledged past a gap, counted from the share-partition state, or, where that state could not be
read, the count Kafka's lag implies and the permission that is missing."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

from mm2ctl.core.kafka.group_admin import TypedPositions
from mm2ctl.core.kafka.share_state_topic import SharePositions
from mm2ctl.core.translation.rule import Bounds
from mm2ctl.plans.planners.failover.checks import note_share_groups

A0, A1 = ("orders", 0), ("orders", 1)


@dataclass
class FakeGroupAdmin:
    lag: dict[tuple[str, int], int]
    calls: int = 0

    def positions(self, groups: dict[str, str]) -> dict[str, TypedPositions]:
        self.calls += 1
        return {g: TypedPositions(g, "share", {A0: 0, A1: 0}, dict(self.lag)) for g in groups}


@dataclass
class FakeLive:
    admin: FakeGroupAdmin
    share_reads: dict[str, SharePositions] = field(default_factory=dict)
    share_state_notes: dict[str, str] = field(default_factory=dict)

    def group_type(self, cluster: str, group: str) -> str:
        return "share" if group.startswith("s") else ""

    def group_admin(self, cluster: str) -> FakeGroupAdmin:
        return self.admin


BOUNDS = {A0: Bounds(0, 200), A1: Bounds(0, 200)}


def test_the_state_read_counts_exactly_what_was_acknowledged_past_a_gap() -> None:
    read = SharePositions(
        positions={"s1": {A0: 50, A1: 50}},
        start_offsets={"s1": {A0: 0, A1: 0}},
        acknowledged_past={"s1": {A0: 49, A1: 49}},
    )
    live = FakeLive(FakeGroupAdmin({}), share_reads={"A": read})
    b = SimpleNamespace(live=live, notes=[])
    note_share_groups(b, "A", "B", {"s1": {A0: 50, A1: 50}, "c": {A0: 9}}, BOUNDS)  # type: ignore[arg-type]
    (note,) = b.notes
    assert note.startswith("share group s1: MirrorMaker 2 never translates share groups; this plan sets its positions")
    assert "(2 partition(s) past the start offset Kafka reports)" in note
    assert "98 record(s) the group acknowledged past a gap on A will be delivered again" in note
    assert live.admin.calls == 0


def test_without_the_state_the_lag_bounds_it_and_the_note_names_the_permission() -> None:
    missing = (
        "the share-partition state on A could not be read (denied): ... READ and DESCRIBE on topic __share_group_state"
    )
    live = FakeLive(FakeGroupAdmin({A0: 100, A1: 150}), share_state_notes={"A": missing})
    b = SimpleNamespace(live=live, notes=[])
    note_share_groups(b, "A", "B", {"s1": {A0: 0, A1: 0}}, BOUNDS)  # type: ignore[arg-type]
    assert b.notes[0] == missing
    assert "sets its start offsets on B. 150 record(s) past them were already acknowledged on A" in b.notes[1]
