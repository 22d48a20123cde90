"""The target groups' state a failover plan reads beside its translation (``failover.checks._target_state``):
what the early read holds is used, and only what it cannot answer is read again."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.kafka.admin import TP, GroupDescription
from mm2ctl.plans.planners.failover.checks import TargetState, _target_state, read_target_state

T = ("B.orders", 0)


@dataclass
class FakeLive:
    """The two reads ``read_target_state`` makes, answered from memory and recorded."""

    offsets: dict[str, dict[TP, int]]
    types: dict[str, str] = field(default_factory=dict)
    described: list[list[str]] = field(default_factory=list)
    read: list[list[str]] = field(default_factory=list)

    def describe_groups(self, cluster: str, groups: Sequence[str]) -> dict[str, GroupDescription]:
        self.described.append(list(groups))
        return {g: GroupDescription(g, "Empty", 0) for g in groups}

    def many_group_offsets(self, cluster: str, groups: Sequence[str]) -> dict[str, dict[TP, int]]:
        self.read.append(list(groups))
        return {g: dict(self.offsets.get(g, {})) for g in groups}

    def group_type(self, cluster: str, group: str) -> str:
        return self.types.get(group, "")


def _done(value: TargetState) -> Future[TargetState]:
    fut: Future[TargetState] = Future()
    fut.set_result(value)
    return fut


def test_the_early_read_answers_every_group_it_holds() -> None:
    live = FakeLive({"a": {T: 5}, "b": {T: 7}})
    early = _done(read_target_state(live, "B", ["a", "b"]))  # type: ignore[arg-type]
    live.offsets = {"a": {T: 6}, "b": {T: 8}}  # moved since: the plan keeps the read it made
    described, current = _target_state(live, "B", ["a", "b"], early)  # type: ignore[arg-type]
    assert current == {"a": {T: 5}, "b": {T: 7}} and set(described) == {"a", "b"}
    assert live.read == [["a", "b"]] and live.described == [["a", "b"]]


def test_a_group_it_lacks_or_now_typed_on_the_target_is_read_again() -> None:
    live = FakeLive({"a": {T: 5}, "s": {T: 1}, "c": {T: 9}})
    early = _done(read_target_state(live, "B", ["a", "s"]))  # type: ignore[arg-type]
    live.types["s"] = "share"  # the typed listing answered after the early read: read through its own client
    described, current = _target_state(live, "B", ["a", "c", "s"], early)  # type: ignore[arg-type]
    assert live.read == [["a", "s"], ["c", "s"]]
    assert current == {"a": {T: 5}, "c": {T: 9}, "s": {T: 1}} and set(described) == {"a", "c", "s"}


def test_a_failed_early_read_is_made_again_whole() -> None:
    live = FakeLive({"a": {T: 5}})
    early: Future[TargetState] = Future()
    early.set_exception(Mm2ctlError("coordinator not available"))
    _, current = _target_state(live, "B", ["a"], early)  # type: ignore[arg-type]
    assert current == {"a": {T: 5}} and live.read == [["a"]]
