"""Concurrent apply of independent group-offset steps: a failover's writes and read-backs, many groups at once.

A failover plan writes each consumer group in a step of its own and reads it back in another. Kafka takes
one request per group, to that group's coordinator, and those requests can run side by side; one group's
write depends on no other's. So a run of consecutive steps of one kind (``group_offsets_write`` or
``group_offsets_verify``), one step per group, is applied in batches of ``BATCH_GROUPS`` steps, with at most
``parallelism`` requests in flight:

0. before the first batch of a run of writes, every write of the run is checked against one read of its
   groups (``remediate.write_checks``): one refused group refuses them all, so nothing is half-written;
1. the batch's preconditions are read in a few batched calls (``StateView.prefetch_groups``), while the
   batch before it is sent (other groups: neither read nor write waits for the other), and checked step
   by step, in plan order; the first step whose precondition fails ends the batch there (the steps before it
   still run), exactly as one step at a time would;
2. every started step's before-state, taken from those same reads, is journaled in one fsynced append
   (``Journal.steps_started``), before any write of the batch is sent;
3. the writes (or read-backs) run concurrently;
4. every step's outcome, completed or failed, is journaled in one fsynced append (``Journal.steps_finished``).

A process killed between 2 and 4 leaves the whole batch in progress: resume and rollback check each step's
effect (a group is written by one ``AlterConsumerGroupOffsets`` call, so it is either all written or not at
all). A failure ends the apply after its batch's outcomes are recorded, naming the first failed step.

Progress counts groups done out of the run's total (``WRITE_PHASE``, ``VERIFY_PHASE``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

from mm2ctl.core.errors import ApplyError, JournalError, Mm2ctlError, PreconditionError
from mm2ctl.core.kafka.admin import TP, PartitionResult
from mm2ctl.core.progress import count
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.offset_metadata import READ_BACK, same_metadata, write_metadata
from mm2ctl.plans.payloads import GroupOffsetsVerify, GroupOffsetsWrite
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import GroupTarget
from mm2ctl.remediate.executors.base import ExecContext
from mm2ctl.remediate.journal import Journal, StepOutcome
from mm2ctl.remediate.precondition_checks import StateView, advanced_by_mm2, step_failures
from mm2ctl.remediate.write_checks import WritesRefused, check_writes

#: Requests in flight at once by default: enough to keep a broker's group coordinators busy, few enough
#: that a shared cluster hardly notices. ``apply --parallelism`` changes it.
DEFAULT_PARALLELISM = 32
MAX_PARALLELISM = 256
#: Steps journaled and checked together: their before-states share one fsync, their outcomes another.
BATCH_GROUPS = 250
CONCURRENT_KINDS = frozenset({StepKind.GROUP_OFFSETS_WRITE, StepKind.GROUP_OFFSETS_VERIFY})

WRITE_PHASE = "groups written"
VERIFY_PHASE = "groups verified"

#: The shortest pause of a settling read-back between two reads, and how long past its window it may keep
#: rewriting.
SETTLE_POLL_S = 0.5
SETTLE_GRACE_FACTOR = 4.0


def _target(step: Step) -> GroupTarget:
    assert isinstance(step.target, GroupTarget)
    return step.target


def run_end(steps: Sequence[Step], start: int) -> int:
    """Where the run of concurrent steps beginning at ``start`` ends (exclusive): consecutive steps of the
    same group-offset kind, each on a group no earlier step of the run names. ``start`` itself when the step
    there is of another kind."""
    if steps[start].kind not in CONCURRENT_KINDS:
        return start
    kind = steps[start].kind
    seen: set[tuple[str, str]] = set()
    end = start
    while end < len(steps) and steps[end].kind is kind:
        t = _target(steps[end])
        if (t.cluster, t.group) in seen:
            break
        seen.add((t.cluster, t.group))
        end += 1
    return end


def _offsets_json(offsets: dict[TP, int]) -> list[list[object]]:
    return [[t, p, o] for (t, p), o in sorted(offsets.items())]


def _rows(step: Step) -> dict[TP, int]:
    assert isinstance(step.payload, GroupOffsetsWrite)
    return {(r.topic, r.partition): r.offset for r in step.payload.rows}


def _metadata(step: Step, plan_id: str) -> dict[TP, str]:
    assert isinstance(step.payload, GroupOffsetsWrite)
    return write_metadata(plan_id, step.payload.rows)


def _expected(step: Step) -> dict[TP, int | None]:
    assert isinstance(step.payload, GroupOffsetsVerify)
    return {(o.topic, o.partition): o.offset for o in step.payload.expected}


def _partitions(step: Step) -> list[TP]:
    return list(_rows(step) if step.kind is StepKind.GROUP_OFFSETS_WRITE else _expected(step))


def _failed_partitions(results: list[PartitionResult]) -> str | None:
    bad = [r for r in results if r.error is not None]
    if not bad:
        return None
    first = bad[0]
    assert first.error is not None
    return f"{len(bad)} partition(s) failed, first {first.topic}/{first.partition}: {first.error.message}"


@dataclass
class RunReport:
    """What one run of concurrent steps did, for the engine's result."""

    lines: list[str] = field(default_factory=list)
    changes: int = 0
    #: Offsets found moved forward since planning, up to the plan (MM2), and written over.
    moved_forward: int = 0


class BatchFailed(ApplyError):
    """A step of a concurrent run failed; its batch's outcomes are journaled. ``index`` names the step."""

    def __init__(self, message: str, *, index: int, cause: Mm2ctlError | None = None) -> None:
        super().__init__(message)
        self.index = index
        if isinstance(cause, PreconditionError):
            self.exit_code = cause.exit_code


@dataclass
class ConcurrentRun:
    """Applies one run of concurrent steps (``run_end``) through ``journal``."""

    journal: Journal
    ctx: ExecContext
    steps: Sequence[Step]
    #: Steps of the run whose effect is unknown (in progress or failed when the apply was resumed).
    unknown: frozenset[int] = frozenset()
    #: Steps the journal has in progress (resume): completing one needs no new start entry.
    in_progress: set[int] = field(default_factory=set)
    #: Steps of the run an earlier attempt completed (resume after a failed batch): skipped.
    completed: frozenset[int] = frozenset()
    #: Called with the indices of a batch once their before-states are durable, before any request is
    #: sent; with the indices whose outcomes were just journaled; and with a write step's index once Kafka
    #: acknowledged its group's write, before the batch's outcomes are journaled (``engine.ApplyHooks``).
    before_send: Callable[[list[int]], None] = lambda _indices: None
    after_batch: Callable[[list[int]], None] = lambda _indices: None
    group_written: Callable[[list[int]], None] = lambda _indices: None
    parallelism: int = DEFAULT_PARALLELISM
    report: RunReport = field(default_factory=RunReport)
    #: Moves of MM2's sync that ``--override-mm2-sync`` accepted, by (cluster, group) (``write_checks``).
    accepted: dict[tuple[str, str], frozenset[TP]] = field(default_factory=dict)
    _done: int = 0

    @property
    def kind(self) -> StepKind:
        return self.steps[0].kind

    @property
    def phase(self) -> str:
        return WRITE_PHASE if self.kind is StepKind.GROUP_OFFSETS_WRITE else VERIFY_PHASE

    def apply(self) -> RunReport:
        """Run every step of the run, batch after batch; raises ``BatchFailed`` at the first failure."""
        total = len(self.steps)
        cluster = _target(self.steps[0]).cluster
        verb = "writing" if self.kind is StepKind.GROUP_OFFSETS_WRITE else "reading back"
        self.ctx.progress(
            f"{verb} the offsets of {total} group(s) on {cluster}, up to {self.parallelism} request(s) at a time"
        )
        todo = [s for s in self.steps if s.index not in self.completed]
        self._done = total - len(todo)
        count(self.ctx.progress, self.phase, self._done, total)
        fresh = [s for s in todo if s.index not in self.unknown]
        checked: StateView | None = None
        if self.kind is StepKind.GROUP_OFFSETS_WRITE and fresh:
            checked = StateView(self.ctx.live)
            try:
                self.accepted = check_writes(fresh, self.ctx, parallelism=self.parallelism, view=checked)
            except WritesRefused as exc:
                refused = next(s for s in fresh if s.index == exc.index)
                what = f"step {refused.index} ({refused.kind.value})"
                raise self._fail(refused, PreconditionError(f"{what}: precondition does not hold: {exc}")) from exc
            except JournalError:
                raise
            except Mm2ctlError as exc:
                raise self._fail(fresh[0], exc) from exc
        batches = [todo[start : start + BATCH_GROUPS] for start in range(0, len(todo), BATCH_GROUPS)]
        try:
            with ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch-read") as reader:
                # The first batch is checked against the read the run's check just made (nothing happened in
                # between); each later one reads its groups again, while the batch before it is sent.
                upcoming: Future[StateView] | None = None
                for i, batch in enumerate(batches):
                    view = checked if i == 0 and checked is not None else self._read_of(batch, upcoming)
                    following = batches[i + 1] if i + 1 < len(batches) else None
                    read_next = None if following is None else partial(reader.submit, self._read, following)
                    upcoming = self._batch(batch, view, read_next)
        finally:
            if self.report.moved_forward:
                self.ctx.progress(
                    f"{self.report.moved_forward} offset(s) had moved forward since planning, at most to the planned "
                    "position (MirrorMaker 2's group-offset sync): the planned offsets were written over them"
                )
        return self.report

    # -- one batch

    def _read(self, batch: list[Step]) -> StateView:
        """What the checks of ``batch`` read (module docstring, 1), in a few batched calls per cluster."""
        view = StateView(self.ctx.live)
        by_cluster: dict[str, list[Step]] = {}
        for s in batch:
            by_cluster.setdefault(_target(s).cluster, []).append(s)
        for cluster, steps in by_cluster.items():
            view.prefetch_groups(
                cluster,
                [_target(s).group for s in steps],
                sorted({tp for s in steps for tp in _partitions(s)})
                if self.kind is StepKind.GROUP_OFFSETS_WRITE
                else (),
                concurrency=self.parallelism,
                members=self.kind is StepKind.GROUP_OFFSETS_WRITE,  # a read-back's check reads none
            )
        return view

    def _read_of(self, batch: list[Step], started: Future[StateView] | None) -> StateView:
        """``batch``'s read: the one ``started`` while the batch before it was sent, else one made now."""
        try:
            return self._read(batch) if started is None else started.result()
        except JournalError:
            raise
        except Mm2ctlError as exc:
            raise self._fail(batch[0], exc) from exc

    def _batch(
        self, batch: list[Step], view: StateView, read_next: Callable[[], Future[StateView]] | None = None
    ) -> Future[StateView] | None:
        """One batch (module docstring, 2 to 4), checked against ``view``, a read of its groups (a group it
        lacks, one of a resumed step, is read live). ``read_next`` starts the next batch's read: as this
        batch's requests are sent, or at its end when it sends none; returns that read."""
        upcoming: Future[StateView] | None = None
        # A step whose effect is already present (resume) is completed without a write; the first step whose
        # precondition fails ends the batch there, and the steps after it do not start, as one at a time.
        present: list[Step] = []
        runnable: list[Step] = []
        refused: tuple[Step, str] | None = None
        for s in batch:
            if s.index in self.unknown and self._effect_present(s, view):
                present.append(s)
                continue
            t = _target(s)
            problems = step_failures(s, view, accepted=self.accepted.get((t.cluster, t.group), frozenset()))
            if problems:
                refused = (s, "; ".join(problems))
                break
            runnable.append(s)
        # An in-progress step needs no new start to be completed; a failed one, or one to run, does.
        done_already = {s.index for s in present}
        self.journal.steps_started(
            (s.index, self._before(s, view))
            for s in sorted((*present, *runnable), key=lambda s: s.index)
            if not (s.index in self.in_progress and s.index in done_already)
        )
        outcomes = [StepOutcome(s.index, "already_applied", {"offsets_as_planned": True}) for s in present]
        if runnable:
            self.before_send([s.index for s in runnable])
            if read_next is not None:
                upcoming = read_next()
            try:
                if self.kind is StepKind.GROUP_OFFSETS_WRITE:
                    outcomes += self._write(runnable, view)
                else:
                    outcomes += self._verify(runnable, view)
            except JournalError:
                raise
            except Mm2ctlError as exc:  # nothing is known of what this batch's requests did
                outcomes = [o for o in outcomes if o.outcome == "already_applied" and o.error is None]
                outcomes += [StepOutcome(s.index, error=str(exc)) for s in runnable]
        self.journal.steps_finished(outcomes)
        if upcoming is None and read_next is not None:
            upcoming = read_next()
        self.in_progress -= {o.index for o in outcomes}
        self.after_batch(sorted(o.index for o in outcomes if o.error is None))
        self._done += len(outcomes)
        count(self.ctx.progress, self.phase, self._done, len(self.steps))
        kinds = {s.index: s for s in batch}
        failed = []
        for o in sorted(outcomes, key=lambda o: o.index):
            step = kinds[o.index]
            if o.error is not None:
                failed.append(o)
            elif o.outcome == "already_applied":
                self.report.lines.append(f"step {o.index} ({step.kind.value}): already applied")
            else:
                self.report.lines.append(f"step {o.index} ({step.kind.value}): applied")
                self.report.changes += int(step.writes)
        if failed:
            more = f" ({len(failed) - 1} more step(s) of the batch failed too)" if len(failed) > 1 else ""
            step = kinds[failed[0].index]
            raise BatchFailed(
                f"step {step.index} ({step.kind.value}) failed: {failed[0].error}{more}", index=step.index
            )
        if refused is not None:
            s, why = refused
            what = f"step {s.index} ({s.kind.value})"
            raise self._fail(s, PreconditionError(f"{what}: precondition does not hold: {why}"))
        return upcoming

    def _fail(self, step: Step, exc: Mm2ctlError) -> BatchFailed:
        text = str(exc)
        prefix = f"step {step.index} ({step.kind.value})"
        message = text if text.startswith(prefix) else f"{prefix} failed: {text}"
        return BatchFailed(message, index=step.index, cause=exc)

    def _effect_present(self, step: Step, view: StateView) -> bool:
        if step.kind is not StepKind.GROUP_OFFSETS_WRITE:
            return False  # a read-back is always run again
        t = _target(step)
        current = view.group_offsets(t.cluster, t.group)
        return all(current.get(tp) == off for tp, off in _rows(step).items())

    def _before(self, step: Step, view: StateView) -> JSONable:
        t = _target(step)
        current = view.group_offsets(t.cluster, t.group)
        if step.kind is StepKind.GROUP_OFFSETS_WRITE:
            return {"exists": bool(current), "offsets": _offsets_json(current)}
        # A read-back changes nothing rollback would restore (the write step's before-state covers a group it
        # writes again), so it records how the group stood, not every offset a second time.
        wanted = _expected(step)
        differ = sorted(tp for tp, o in wanted.items() if current.get(tp) != o)
        return {"as_planned": len(wanted) - len(differ), "differ": [[t, p, current.get((t, p))] for t, p in differ]}

    # -- writes

    def _write(self, steps: list[Step], view: StateView) -> list[StepOutcome]:
        cluster = _target(steps[0]).cluster
        moved = 0
        for s in steps:
            assert isinstance(s.payload, GroupOffsetsWrite)
            current = view.group_offsets(cluster, _target(s).group)
            moved += sum(
                1
                for r in s.payload.rows
                if current.get((r.topic, r.partition)) != r.before_offset
                and advanced_by_mm2(r.before_offset, current.get((r.topic, r.partition)), r.offset)
            )
        self.report.moved_forward += moved
        by_group = {_target(s).group: s for s in steps}
        done = [self._done]

        def heard(group: str, results: list[PartitionResult]) -> None:
            if _failed_partitions(results) is None:
                self.group_written([by_group[group].index])
            done[0] += 1
            count(self.ctx.progress, self.phase, done[0], len(self.steps))

        try:
            got = self.ctx.live.write_group_offsets(
                cluster,
                {g: _rows(s) for g, s in by_group.items()},
                concurrency=self.parallelism,
                on_done=heard,
                metadata={g: _metadata(s, self.ctx.plan_id) for g, s in by_group.items()},
            )
        except Mm2ctlError as exc:  # the whole call failed: no group is known to be written
            return [StepOutcome(s.index, error=str(exc)) for s in steps]
        now = time.monotonic()
        out = []
        for g, s in by_group.items():
            problem = _failed_partitions(got.get(g, []))
            if problem is None:
                self.ctx.written_at[(cluster, g)] = now
                out.append(StepOutcome(s.index, "applied", {"written_partitions": len(_rows(s)), "provenance": True}))
            else:
                out.append(StepOutcome(s.index, error=f"writing the offsets of group {g} on {cluster}: {problem}"))
        return out

    # -- read-backs

    def _verify(self, steps: list[Step], view: StateView) -> list[StepOutcome]:
        cluster = _target(steps[0]).cluster
        settle = max((s.payload.settle_seconds for s in steps if isinstance(s.payload, GroupOffsetsVerify)), default=0)
        pending = {_target(s).group: s for s in steps}
        outcomes: dict[int, StepOutcome] = {}
        rewritten: dict[str, int] = {}
        started = time.monotonic()
        deadline = started + settle * SETTLE_GRACE_FACTOR + 30.0
        current = {g: view.group_offsets(cluster, g) for g in pending}
        while pending:
            now = time.monotonic()
            below: dict[str, Step] = {}
            for g, s in list(pending.items()):
                want = _expected(s)
                wrong = [(tp, w, current[g].get(tp)) for tp, w in want.items() if current[g].get(tp) != w]
                if not wrong:
                    if now >= self.ctx.written_at.get((cluster, g), started) + settle:
                        outcomes[s.index] = StepOutcome(s.index, "applied", {"verified": len(want)})
                        del pending[g]
                    continue
                if settle > 0 and all(got is not None and w is not None and got < w for _tp, w, got in wrong):
                    below[g] = s
                    continue
                (topic, part), w, got = wrong[0]
                outcomes[s.index] = StepOutcome(
                    s.index,
                    error=f"group {g} on {cluster}: {len(wrong)} offset(s) read back differ from what was written "
                    f"(first {topic}/{part}: expected {w}, found {got})",
                )
                del pending[g]
            if below:
                self._rewrite(cluster, below, outcomes, pending, rewritten)
            if not pending:
                break
            if time.monotonic() > deadline:
                for g, s in pending.items():
                    outcomes[s.index] = StepOutcome(
                        s.index,
                        error=f"group {g} on {cluster}: offsets were still being moved below the plan after "
                        f"{time.monotonic() - started:.0f}s (rewritten {rewritten.get(g, 0)} time(s)); is a "
                        "consumer or another tool committing them?",
                    )
                break
            # MM2 puts a group back at most once, within the window after our write, and nothing writes the plan
            # but us: so one read when the pending groups' windows have ended tells, not a poll throughout.
            ends = max(self.ctx.written_at.get((cluster, g), started) + settle for g in pending)
            time.sleep(min(max(ends - time.monotonic(), SETTLE_POLL_S), max(deadline - time.monotonic(), 0.0)))
            current.update(self.ctx.live.many_group_offsets(cluster, list(pending), concurrency=self.parallelism))
        if rewritten:
            self.ctx.progress(
                f"{len(rewritten)} group(s) were moved back below the plan after their write (MirrorMaker 2's "
                f"group-offset sync, from a read made before it); written again, {sum(rewritten.values())} time(s)"
            )
        return [outcomes[s.index] for s in steps]

    def _rewrite(
        self,
        cluster: str,
        below: dict[str, Step],
        outcomes: dict[int, StepOutcome],
        pending: dict[str, Step],
        rewritten: dict[str, int],
    ) -> None:
        """Write the plan again over offsets MM2 moved back below it, if their groups still have no members."""
        members = self.ctx.live.describe_groups(cluster, list(below))
        todo: dict[str, dict[TP, int]] = {}
        for g, s in below.items():
            d = members.get(g)
            if d is None or d.error is not None or d.members:
                why = "it has members" if d is not None and d.members else "its members could not be read"
                outcomes[s.index] = StepOutcome(
                    s.index, error=f"group {g} on {cluster}: offsets read back below the plan, and {why}"
                )
                del pending[g]
                continue
            todo[g] = {tp: o for tp, o in _expected(s).items() if o is not None}
        if not todo:
            return
        plan_id = self.ctx.plan_id
        metadata = {g: same_metadata(plan_id, offsets, READ_BACK) for g, offsets in todo.items()}
        got = self.ctx.live.write_group_offsets(cluster, todo, concurrency=self.parallelism, metadata=metadata)
        now = time.monotonic()
        for g in todo:
            problem = _failed_partitions(got.get(g, []))
            if problem is not None:
                s = pending.pop(g)
                outcomes[s.index] = StepOutcome(s.index, error=f"writing group {g} on {cluster} again: {problem}")
                continue
            self.ctx.written_at[(cluster, g)] = now
            rewritten[g] = rewritten.get(g, 0) + 1


__all__ = [
    "BATCH_GROUPS",
    "CONCURRENT_KINDS",
    "DEFAULT_PARALLELISM",
    "MAX_PARALLELISM",
    "VERIFY_PHASE",
    "WRITE_PHASE",
    "BatchFailed",
    "ConcurrentRun",
    "RunReport",
    "run_end",
]
