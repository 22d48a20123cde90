"""Concurrent apply of group-offset steps, with an in-memory cluster: batches, journal, resume, rollback, MM2.

The cluster is a fake admin facade holding committed offsets and member counts; everything else (the engine,
the journal on disk, the plan model, ``LiveState``) is real. ``mm2`` stands for MirrorMaker 2's group-offset
sync: a hook that moves a group's offsets as MM2 would, at chosen moments.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.errors import ApplyError, PreconditionError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka.admin import TP, GroupDescription, GroupOffsets, ItemError, PartitionBounds, PartitionResult
from mm2ctl.plans.document import Plan, PlanKind, new_plan
from mm2ctl.plans.fingerprint import fingerprint_of
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.offsets import GroupOffset
from mm2ctl.plans.payloads import GroupOffsetRow, GroupOffsetsVerify, GroupOffsetsWrite, TranslationMethod
from mm2ctl.plans.preconditions import (
    AllOf,
    GroupEmptyOrAbsent,
    GroupOffsetsInRange,
    GroupOffsetsUnchanged,
    NoPrecondition,
)
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import GroupTarget
from mm2ctl.remediate import engine, group_batches
from mm2ctl.remediate.journal import Journal, StepOutcome, read_journal

MM2 = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
TOPIC = "A.orders"


@dataclass
class FakeCluster:
    """Committed offsets and members of cluster B's groups; records every write."""

    offsets: dict[str, dict[TP, int]] = field(default_factory=dict)
    members: dict[str, int] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)
    concurrency: list[int] = field(default_factory=list)
    failing: set[str] = field(default_factory=set)
    #: The commit metadata of every write, by group (the last write of a group wins).
    metadata: dict[str, dict[TP, str]] = field(default_factory=dict)
    #: Called after each group write lands (MM2 acting right after us, a test killing the apply ...).
    after_write: Callable[[str], None] = lambda _g: None

    def cluster_id(self) -> str:
        return "cid-B"

    def authorized_operations(self, *, topics: Any = (), groups: Any = ()) -> dict[tuple[str, str], None]:
        # A cluster without an authorizer says nothing about operations: nothing is refused.
        return {**{("topic", t): None for t in topics}, **{("group", g): None for g in groups}}

    def describe_groups(self, groups: Any, **_kw: Any) -> dict[str, GroupDescription]:
        return {g: GroupDescription(g, "Empty", self.members.get(g, 0)) for g in groups}

    def list_topics(self) -> list[str]:
        return []  # no checkpoints topic: a move is never MM2's here

    def committed_offsets(self, groups: Any, **_kw: Any) -> dict[str, GroupOffsets]:
        return {g: GroupOffsets(g, dict(self.offsets.get(g, {}))) for g in groups}

    def partition_bounds(self, tps: Any, **_kw: Any) -> dict[TP, PartitionBounds]:
        return {(t, p): PartitionBounds(t, p, 0, 1_000) for t, p in tps}

    def alter_group_offsets(
        self, offsets: Any, *, concurrency: int = 32, on_done: Any = None, metadata: Any = None
    ) -> dict[str, list[PartitionResult]]:
        self.concurrency.append(concurrency)
        out = {}
        for g, rows in offsets.items():
            if g in self.failing:
                err = ItemError("REQUEST_TIMED_OUT", "Timed out")
                results = [PartitionResult(t, p, o, err) for (t, p), o in sorted(rows.items())]
            else:
                self.writes.append(g)
                self.offsets.setdefault(g, {}).update(rows)
                given = (metadata or {}).get(g, {})
                self.metadata.setdefault(g, {}).update({tp: given.get(tp, "") for tp in rows})
                results = [PartitionResult(t, p, o) for (t, p), o in sorted(rows.items())]
            out[g] = results
            if on_done is not None:
                on_done(g, results)
            if g not in self.failing:
                self.after_write(g)
        return out

    def commit_metadata(self, group: str) -> dict[TP, str]:
        return {tp: self.metadata.get(group, {}).get(tp, "") for tp in self.offsets.get(group, {})}

    def delete_group_offsets(self, group: str, partitions: Any) -> list[PartitionResult]:
        self.offsets.pop(group, None)
        self.metadata.pop(group, None)
        return [PartitionResult(t, p) for t, p in partitions]


def live_of(cluster: FakeCluster, tmp_path: Path) -> LiveState:
    path = tmp_path / "mm2.properties"
    path.write_text(MM2)
    return LiveState(
        mm2=mm2_config_from_text(MM2, path=str(path)),
        connect=None,
        admin_factory=lambda _conf, _name: cluster,  # type: ignore[arg-type,return-value]
    )


def failover_plan(planned: dict[str, dict[int, int]], before: dict[str, dict[int, int]], settle: float = 0.0) -> Plan:
    """Write then verify steps, one per group, as ``plan failover`` makes them."""
    steps: list[Step] = []
    for group, parts in planned.items():
        rows = tuple(
            GroupOffsetRow(
                topic=TOPIC,
                partition=p,
                offset=o,
                before_offset=before.get(group, {}).get(p),
                method=TranslationMethod.VERIFIED_DELTA,
            )
            for p, o in sorted(parts.items())
        )
        pre = AllOf(
            conditions=(
                GroupEmptyOrAbsent(cluster="B", group=group),
                GroupOffsetsUnchanged(
                    cluster="B",
                    group=group,
                    expected=tuple(
                        GroupOffset(topic=TOPIC, partition=r.partition, offset=r.before_offset) for r in rows
                    ),
                ),
                GroupOffsetsInRange(
                    cluster="B",
                    offsets=tuple(GroupOffset(topic=TOPIC, partition=r.partition, offset=r.offset) for r in rows),
                ),
            )
        )
        steps.append(
            Step(
                index=len(steps),
                kind=StepKind.GROUP_OFFSETS_WRITE,
                target=GroupTarget(cluster="B", group=group),
                payload=GroupOffsetsWrite(rows=rows),
                precondition=pre,
                before=None,
                after=None,
                reversible=True,
                description=f"write {group}",
            )
        )
    for group, parts in planned.items():
        steps.append(
            Step(
                index=len(steps),
                kind=StepKind.GROUP_OFFSETS_VERIFY,
                target=GroupTarget(cluster="B", group=group),
                payload=GroupOffsetsVerify(
                    expected=tuple(GroupOffset(topic=TOPIC, partition=p, offset=o) for p, o in sorted(parts.items())),
                    settle_seconds=settle,
                ),
                precondition=NoPrecondition(),
                before=None,
                after=None,
                reversible=True,
                description=f"verify {group}",
            )
        )
    return new_plan(
        kind=PlanKind.FAILOVER,
        pair=None,
        clusters={"B": "cid-B"},
        connect=None,
        fingerprint=fingerprint_of({}),
        steps=steps,
        notes=[],
        description="failover",
    )


def groups(n: int, parts: int = 3, base: int = 100) -> dict[str, dict[int, int]]:
    return {f"g{i:03d}": {p: base + i + p for p in range(parts)} for i in range(n)}


class Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []
        self.counts: list[tuple[str, int, int]] = []

    def __call__(self, message: str) -> None:
        self.messages.append(message)

    def count(self, phase: str, done: int, total: int) -> None:
        self.counts.append((phase, done, total))


def _as_offsets(planned: dict[str, dict[int, int]]) -> dict[str, dict[TP, int]]:
    return {g: {(TOPIC, p): o for p, o in parts.items()} for g, parts in planned.items()}


# ------------------------------------------------------------------------------------------- the run


def test_a_run_is_the_consecutive_steps_of_one_kind_on_distinct_groups() -> None:
    plan = failover_plan(groups(4), {})
    assert group_batches.run_end(plan.steps, 0) == 4
    assert group_batches.run_end(plan.steps, 2) == 4
    assert group_batches.run_end(plan.steps, 4) == 8


def test_many_groups_are_written_concurrently_journaled_and_counted(tmp_path: Path) -> None:
    planned = groups(600)
    cluster = FakeCluster()
    plan = failover_plan(planned, {})
    progress, journal = Recorder(), tmp_path / "j.jsonl"
    result = engine.apply_plan(
        plan, live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path, progress=progress, parallelism=7
    )
    assert cluster.offsets == _as_offsets(planned)
    assert set(cluster.concurrency) == {7}
    assert result.changes == 600 and len(result.steps) == 1200
    # Every offset names the plan that wrote it and the method that found it.
    assert {m for by_tp in cluster.metadata.values() for m in by_tp.values()} == {
        f"mm2ctl:{plan.plan_id}:verified_delta"
    }
    assert cluster.metadata.keys() == cluster.offsets.keys()
    assert all(m.keys() == cluster.offsets[g].keys() for g, m in cluster.metadata.items())
    assert result.steps[0] == "step 0 (group_offsets_write): applied"
    written = [c for c in progress.counts if c[0] == group_batches.WRITE_PHASE]
    assert written[0] == (group_batches.WRITE_PHASE, 0, 600) and written[-1] == (group_batches.WRITE_PHASE, 600, 600)
    assert (group_batches.VERIFY_PHASE, 600, 600) in progress.counts
    assert (engine.APPLY_PHASE, 1200, 1200) in progress.counts
    state = read_journal(journal)
    assert state.apply_status == "succeeded" and len(state.completed_steps) == 1200
    assert state.steps[0].before == {"exists": False, "offsets": ()}
    # Each batch's before-states share one fsynced append, written before its first write was sent.
    entries = [line for line in journal.read_bytes().splitlines()]
    first_outcome = next(i for i, e in enumerate(entries) if b'"step_completed"' in e)
    assert sum(b'"step_started"' in e for e in entries[:first_outcome]) == group_batches.BATCH_GROUPS


@dataclass
class ReadsWatched(FakeCluster):
    """Holds each write call until the next batch's groups are read (or a deadline passes), and records
    whether that read came while the write was in flight."""

    batches: list[set[str]] = field(default_factory=list)
    reads: list[set[str]] = field(default_factory=list)
    overlapped: list[bool] = field(default_factory=list)
    _read: threading.Condition = field(default_factory=threading.Condition)

    def committed_offsets(self, groups: Any, **kw: Any) -> dict[str, GroupOffsets]:
        with self._read:
            self.reads.append(set(groups))
            self._read.notify_all()
        return super().committed_offsets(groups, **kw)

    def alter_group_offsets(self, offsets: Any, **kw: Any) -> dict[str, list[PartitionResult]]:
        mine = next(i for i, b in enumerate(self.batches) if set(offsets) <= b)
        if mine + 1 < len(self.batches):
            following = self.batches[mine + 1]
            with self._read:  # the run's check read every group once before any write: count a second read
                seen = self._read.wait_for(lambda: sum(following <= r for r in self.reads) >= 2, timeout=10)
            self.overlapped.append(seen)
        return super().alter_group_offsets(offsets, **kw)


def test_each_later_batch_reads_its_groups_while_the_batch_before_it_is_sent(tmp_path: Path) -> None:
    n = 2 * group_batches.BATCH_GROUPS + 10
    planned = groups(n)
    names = list(planned)
    cluster = ReadsWatched(
        batches=[set(names[i : i + group_batches.BATCH_GROUPS]) for i in range(0, n, group_batches.BATCH_GROUPS)]
    )
    engine.apply_plan(failover_plan(planned, {}), live_of(cluster, tmp_path), journal_path=tmp_path / "j.jsonl")
    assert cluster.offsets == _as_offsets(planned)
    assert cluster.overlapped == [True, True]  # batches 2 and 3 were read while 1 and 2 were written


def test_the_before_state_of_each_group_is_what_rollback_restores(tmp_path: Path) -> None:
    planned = groups(30)
    before = {g: {p: o - 50 for p, o in parts.items()} for g, parts in list(planned.items())[:10]}
    cluster = FakeCluster(offsets=_as_offsets(before))
    plan = failover_plan(planned, before)
    journal = tmp_path / "j.jsonl"
    engine.apply_plan(plan, live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path)
    assert cluster.offsets == _as_offsets(planned)
    engine.rollback(journal, live_of(cluster, tmp_path), state_dir=tmp_path)
    assert cluster.offsets == _as_offsets(before)  # the 20 groups that had none are deleted again


def test_rollback_refuses_a_commit_made_since_at_the_offset_the_apply_wrote(tmp_path: Path) -> None:
    planned = groups(3)
    cluster = FakeCluster()
    journal = tmp_path / "j.jsonl"
    engine.apply_plan(failover_plan(planned, {}), live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path)
    consumer = sorted(planned)[1]
    cluster.alter_group_offsets({consumer: dict(cluster.offsets[consumer])})  # its own commit: no metadata of ours
    with pytest.raises(ApplyError, match=f"{consumer} were committed again since the apply wrote them, not by mm2ctl"):
        engine.rollback(journal, live_of(cluster, tmp_path), state_dir=tmp_path)
    assert cluster.offsets[consumer] == _as_offsets(planned)[consumer]  # the consumer's commit stays


def test_offsets_mm2_moved_forward_up_to_the_plan_are_written_over(tmp_path: Path) -> None:
    planned = groups(5)
    before = {g: {p: o - 40 for p, o in parts.items()} for g, parts in planned.items()}
    cluster = FakeCluster(offsets=_as_offsets(before))
    plan = failover_plan(planned, before)
    # After planning, MM2 moves g000 forward (still below the plan) and g001 exactly to it, and gives g002 a
    # partition the plan saw without an offset.
    cluster.offsets["g000"][(TOPIC, 0)] += 10
    cluster.offsets["g001"][(TOPIC, 1)] = planned["g001"][1]
    progress = Recorder()
    engine.dry_run(plan, live_of(cluster, tmp_path))
    engine.apply_plan(
        plan, live_of(cluster, tmp_path), journal_path=tmp_path / "j.jsonl", state_dir=tmp_path, progress=progress
    )
    assert cluster.offsets == _as_offsets(planned)
    assert any("moved forward since planning" in m for m in progress.messages), progress.messages


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda c, planned: c.offsets["g002"].__setitem__((TOPIC, 0), planned["g002"][0] + 1), "changed"),
        (lambda c, planned: c.offsets["g002"].__setitem__((TOPIC, 0), 1), "changed"),  # moved backwards
        (lambda c, planned: c.members.__setitem__("g002", 1), "has 1 member"),
    ],
    ids=["beyond-the-plan", "backwards", "members-joined"],
)
def test_anything_else_that_moved_refuses_every_write(tmp_path: Path, change: Any, expected: str) -> None:
    planned = groups(5)
    before = {g: {p: o - 40 for p, o in parts.items()} for g, parts in planned.items()}
    cluster = FakeCluster(offsets=_as_offsets(before))
    plan = failover_plan(planned, before)
    change(cluster, planned)
    with pytest.raises(PreconditionError, match=expected):
        engine.dry_run(plan, live_of(cluster, tmp_path))
    journal = tmp_path / "j.jsonl"
    with pytest.raises(ApplyError) as info:
        engine.apply_plan(plan, live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path)
    assert info.value.exit_code == ExitCode.STALE
    assert "step 2 (group_offsets_write)" in str(info.value) and expected in str(info.value)
    assert "group g002 on B" in str(info.value) and "none was written" in str(info.value)
    assert cluster.writes == []  # every write was checked before the first: no group is half-failed-over
    state = read_journal(journal)
    assert state.completed_steps == () and state.in_progress_steps == ()
    assert state.apply_status == "failed" and state.stopped_at == 2 and expected in (state.stop_reason or "")


def test_a_move_of_mm2s_sync_is_named_and_written_over_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MM2's sync moved g002 past the plan: refused by default, naming MM2; ``--override-mm2-sync`` writes over it."""
    from mm2ctl.remediate import write_checks

    planned = groups(5)
    before = {g: {p: o - 40 for p, o in parts.items()} for g, parts in planned.items()}
    cluster = FakeCluster(offsets=_as_offsets(before))
    plan = failover_plan(planned, before)
    moved = planned["g002"][0] + 7
    cluster.offsets["g002"][(TOPIC, 0)] = moved
    # MM2's newest checkpoint for that group partition is what it wrote (read from the checkpoints topic live).
    monkeypatch.setattr(write_checks, "_mm2_checkpoints", lambda _ctx, _cluster: {"g002": {(TOPIC, 0): moved}})
    with pytest.raises(ApplyError) as info:
        engine.apply_plan(plan, live_of(cluster, tmp_path), journal_path=tmp_path / "a.jsonl", state_dir=tmp_path)
    assert "by MirrorMaker 2's group-offset sync" in str(info.value) and "--override-mm2-sync" in str(info.value)
    assert cluster.writes == []
    engine.apply_plan(
        plan, live_of(cluster, tmp_path), journal_path=tmp_path / "b.jsonl", state_dir=tmp_path, override_mm2_sync=True
    )
    assert cluster.offsets == _as_offsets(planned)


def test_a_failed_write_is_journaled_and_resume_finishes(tmp_path: Path) -> None:
    planned = groups(8)
    cluster = FakeCluster(failing={"g003", "g005"})
    plan = failover_plan(planned, {})
    journal = tmp_path / "j.jsonl"
    with pytest.raises(ApplyError) as info:
        engine.apply_plan(plan, live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path)
    assert info.value.exit_code == ExitCode.APPLY_FAILED
    assert "step 3 (group_offsets_write) failed" in str(info.value) and "1 more step(s)" in str(info.value)
    state = read_journal(journal)
    assert state.failed_steps == (3, 5) and state.stopped_at == 3 and len(state.completed_steps) == 6
    cluster.failing.clear()
    engine.resume_apply(journal, live_of(cluster, tmp_path), state_dir=tmp_path)
    assert cluster.offsets == _as_offsets(planned)
    assert read_journal(journal).apply_status == "succeeded"


def _kill_mid_batch(tmp_path: Path, planned: dict[str, dict[int, int]], cluster: FakeCluster, acked: int) -> Path:
    """An apply killed once ``acked`` writes of its first batch landed: the journal holds the batch's
    before-states and no outcome (what SIGKILL leaves; the unit test stops the process with an exception)."""

    class Killed(BaseException):
        pass

    seen = []

    def die(group: str) -> None:
        seen.append(group)
        if len(seen) == acked:
            raise Killed

    cluster.after_write = die
    journal = tmp_path / "j.jsonl"
    with pytest.raises(Killed):
        engine.apply_plan(
            failover_plan(planned, {}), live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path
        )
    cluster.after_write = lambda _g: None
    return journal


def test_killed_in_the_middle_of_a_batch_then_resumed(tmp_path: Path) -> None:
    planned = groups(40)
    cluster = FakeCluster()
    journal = _kill_mid_batch(tmp_path, planned, cluster, acked=13)
    state = read_journal(journal)
    assert state.in_progress_steps == tuple(range(40)) and not state.completed_steps
    assert len(cluster.offsets) == 13
    writes_before = len(cluster.writes)
    result = engine.resume_apply(journal, live_of(cluster, tmp_path), state_dir=tmp_path)
    assert cluster.offsets == _as_offsets(planned)
    assert len(cluster.writes) - writes_before == 27  # the 13 written groups were not written twice
    assert sum(line.endswith("already applied") for line in result.steps) == 13
    assert read_journal(journal).apply_status == "succeeded"


def test_killed_in_the_middle_of_a_batch_then_rolled_back(tmp_path: Path) -> None:
    planned = groups(40)
    old = {"g007": {0: 1, 1: 2, 2: 3}, "g020": {0: 5, 1: 5, 2: 5}}
    cluster = FakeCluster(offsets=_as_offsets(old))
    journal = tmp_path / "j.jsonl"
    plan = failover_plan(planned, old)

    class Killed(BaseException):
        pass

    count = []

    def die(_group: str) -> None:
        count.append(1)
        if len(count) == 21:
            raise Killed

    cluster.after_write = die
    with pytest.raises(Killed):
        engine.apply_plan(plan, live_of(cluster, tmp_path), journal_path=journal, state_dir=tmp_path)
    cluster.after_write = lambda _g: None
    result = engine.rollback(journal, live_of(cluster, tmp_path), state_dir=tmp_path)
    assert cluster.offsets == _as_offsets(old)  # 21 groups undone (19 deleted, g007 and g020 restored)
    assert sum("never took effect" in line for line in result.steps) == 19


def test_the_journal_refuses_to_mix_kinds_in_one_batch(tmp_path: Path) -> None:
    from mm2ctl.core.errors import JournalError

    plan = failover_plan(groups(3), {})
    with Journal.create(tmp_path / "j.jsonl", plan) as j:
        j.steps_started([(0, None), (1, None)])
        with pytest.raises(JournalError, match="step 3 started while step 0 was still in progress"):
            j.steps_started([(3, None)])
    with Journal.create(tmp_path / "k.jsonl", plan) as j:
        j.steps_started([(0, None), (1, None), (2, None)])
        j.steps_finished([StepOutcome(1), StepOutcome(0, error="boom")])
        state = j.state
        assert state.in_progress_steps == (2,) and state.completed_steps == (1,) and state.failed_steps == (0,)
        assert state.uncertain_steps == (0, 2)


class Mm2Rewinds:
    """MM2's sync writing a group once more, from a read made before our write: back to ``to``."""

    def __init__(self, cluster: FakeCluster, rewinds: dict[str, dict[TP, int]]) -> None:
        self.cluster, self.pending = cluster, dict(rewinds)

    def __call__(self, group: str) -> None:
        rows = self.pending.pop(group, None)
        if rows is not None:
            self.cluster.offsets[group].update(rows)


def test_a_settling_read_back_writes_the_plan_again_over_an_mm2_rewind(tmp_path: Path) -> None:
    planned = groups(6)
    cluster = FakeCluster()
    cluster.after_write = Mm2Rewinds(cluster, {"g002": {(TOPIC, 1): 3}, "g004": {(TOPIC, 0): 7}})
    plan = failover_plan(planned, {}, settle=0.6)
    progress = Recorder()
    engine.apply_plan(
        plan, live_of(cluster, tmp_path), journal_path=tmp_path / "j.jsonl", state_dir=tmp_path, progress=progress
    )
    assert cluster.offsets == _as_offsets(planned)
    assert cluster.writes.count("g002") == 2 and cluster.writes.count("g004") == 2
    assert any("2 group(s) were moved back below the plan" in m for m in progress.messages), progress.messages


def test_without_settling_a_rewind_fails_the_read_back(tmp_path: Path) -> None:
    planned = groups(3)
    cluster = FakeCluster()
    cluster.after_write = Mm2Rewinds(cluster, {"g001": {(TOPIC, 1): 3}})
    with pytest.raises(ApplyError, match=r"step 4 \(group_offsets_verify\) failed: group g001 on B: 1 offset"):
        engine.apply_plan(
            failover_plan(planned, {}),
            live_of(cluster, tmp_path),
            journal_path=tmp_path / "j.jsonl",
            state_dir=tmp_path,
        )


def test_a_settling_read_back_does_not_write_over_a_group_with_members(tmp_path: Path) -> None:
    planned = groups(3)
    cluster = FakeCluster()

    def consumer_joins(group: str) -> None:
        if group == "g001":
            cluster.offsets[group][(TOPIC, 1)] = 3
            cluster.members[group] = 1

    cluster.after_write = consumer_joins
    with pytest.raises(ApplyError, match="g001 on B: offsets read back below the plan, and it has members"):
        engine.apply_plan(
            failover_plan(planned, {}, settle=0.2),
            live_of(cluster, tmp_path),
            journal_path=tmp_path / "j.jsonl",
            state_dir=tmp_path,
        )
    assert cluster.writes.count("g001") == 1


def test_parallelism_is_bounded() -> None:
    from mm2ctl.core.errors import ConfigError

    with pytest.raises(ConfigError, match="between 1 and 256"):
        engine.check_parallelism(0)
    assert engine.check_parallelism(1) == 1


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ("", 0.0),  # MM2 does not sync group offsets by default
        ("A->B.sync.group.offsets.enabled = true\n", 2 * 60 + 2.0),  # every 60 s by default
        ("sync.group.offsets.enabled = true\nsync.group.offsets.interval.seconds = 1\n", 4.0),
    ],
)
def test_a_read_back_settles_for_twice_the_flows_sync_interval(settings: str, expected: float) -> None:
    from mm2ctl.plans.planners.failover.planner import settle_window

    flow = mm2_config_from_text(MM2 + settings).pair("A->B")
    assert settle_window(flow) == expected
