"""Apply, resume and roll back a plan (docs/design.md, "Plans, apply and rollback"). The order of operations
is the safety argument:

apply
  1. re-read every fingerprint part and the cluster ids: ``ForeignPlanError`` (other clusters) before
     ``StalePlanError`` (same clusters, state moved);
  2. ``--dry-run``: check every step's precondition against live state overlaid with the simulated
     effects of the steps before it, then stop: no lock, no journal, no write;
  3. take the per-cluster lock; check the ACLs the steps need (beside the stale check of 1, which is made
     under the lock); read configs of connectors a later step re-creates (memory only);
  4. for each step: check its precondition, journal its before-state (fsynced), run it, journal the
     outcome. The first failure is journaled and ends the apply with how to resume or roll back.
     A run of independent group-offset steps (a failover's writes, then its read-backs) goes through
     ``remediate.group_batches`` instead: the same four things per step, for a batch of groups at once,
     with at most ``parallelism`` requests in flight.

resume (``apply --resume JOURNAL``): the plan comes from the journal; only the foreign check runs (the
state has moved by design). Each step whose effect is uncertain (in progress when the process died, or
failed) is re-checked: if its effect is already present it is marked complete, otherwise its precondition
is checked and it runs again.

rollback: completed steps (and uncertain ones whose effect is present) are undone newest first, each
behind its executor's guard that the state is still what apply left.

``ApplyHooks`` names the points between those journal writes where a caller may run code of its own, in the
applying process: mm2ctl's commands pass none; the crash and fault tests kill or hold apply there.

The engine never prints; it reports progress through the ``progress`` callback, and counts its steps there
(``core.progress.count``) so a terminal can draw step i of n.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mm2ctl.core.errors import ApplyError, ForeignPlanError, JournalError, Mm2ctlError, PreconditionError
from mm2ctl.core.progress import Progress, count, no_progress
from mm2ctl.plans.connector_config import SecretSource
from mm2ctl.plans.deferred import parse_translated, plan_as_applied, with_translations
from mm2ctl.plans.document import Plan
from mm2ctl.plans.fingerprint import check_not_foreign, check_plan_against_live, freeze_json
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.payloads import ConnectorCreate, ConnectorDelete
from mm2ctl.plans.permissions import check_permissions, plan_permissions
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import ConnectorTarget, GroupTarget
from mm2ctl.remediate.connector_stops import StopFailed, run_stops, stop_run_end
from mm2ctl.remediate.executors import EXECUTORS, ExecContext, Executor, UndoContext
from mm2ctl.remediate.group_batches import (
    CONCURRENT_KINDS,
    DEFAULT_PARALLELISM,
    MAX_PARALLELISM,
    BatchFailed,
    ConcurrentRun,
    run_end,
)
from mm2ctl.remediate.journal import Journal, JournalState, new_journal_path
from mm2ctl.remediate.lock import lock_for_plan
from mm2ctl.remediate.precondition_checks import StateView, failures, require_step

#: The phases the engine counts its steps in (``core.progress.count``): done of the plan's steps, or of the
#: steps a rollback undoes.
DRY_RUN_PHASE = "steps checked"
APPLY_PHASE = "steps applied"
ROLLBACK_CHECK_PHASE = "undos checked"
ROLLBACK_PHASE = "steps rolled back"


def _no_hook(_journal: Path, _indices: list[int]) -> None:
    return None


@dataclass(frozen=True)
class ApplyHooks:
    """Where a caller of ``apply_plan`` or ``resume_apply`` may run code of its own, in the applying process,
    between the journal's durable writes. Each hook gets the journal's path and the indices of the steps it
    concerns. mm2ctl's own commands pass none (``NO_HOOKS``); the crash and fault tests use them to SIGKILL
    apply, or hold it, at an exact point (``tests/integration/faulty_apply.py``).
    """

    #: The steps' before-states are journaled and fsynced; none of their requests is sent yet (one step, or
    #: the steps of a batch of group steps that will run).
    before_send: Callable[[Path, list[int]], None] = _no_hook
    #: The steps' completions are journaled and fsynced (one step, or the steps of a batch that succeeded,
    #: once the batch's outcomes are).
    journaled: Callable[[Path, list[int]], None] = _no_hook
    #: Kafka acknowledged the write of one step's group, in a batch whose outcomes are not journaled yet.
    group_written: Callable[[Path, list[int]], None] = _no_hook


NO_HOOKS = ApplyHooks()


@dataclass
class RunResult:
    """What an apply, resume or rollback did; the CLI renders it."""

    journal: Path | None
    dry_run: bool
    steps: list[str] = field(default_factory=list)
    changes: int = 0


def _executor(step: Step) -> Executor:
    ex = EXECUTORS.get(step.kind)
    if ex is None:
        raise ApplyError(f"step {step.index} is a {step.kind.value} step, which this mm2ctl cannot apply yet")
    return ex


def verify_against_live(plan: Plan, live: LiveState, *, stale_check: bool = True) -> None:
    """Foreign first, then stale (fingerprint parts re-read through the same reader the planner used). The
    plan's share and streams groups are noted first, so every read and write of them takes their type's path;
    last, a cluster too old for their type refuses the plan."""
    typed: dict[str, list[str]] = {}
    for step in plan.steps:
        if isinstance(step.target, GroupTarget) and step.target.group_type:
            live.note_group_type(step.target.cluster, step.target.group, step.target.group_type)
            typed.setdefault(step.target.cluster, []).append(step.target.group)
    live_clusters = {}
    for alias in plan.clusters:
        try:
            live_clusters[alias] = live.admin(alias).cluster_id()
        except Mm2ctlError as exc:
            if "is not in" in str(exc):
                continue  # reported as "not configured now" by the foreign check
            raise
    connect_id = None
    if plan.connect is not None and live.connect is not None:
        connect_id = live.server_info().kafka_cluster_id
    if stale_check:
        check_plan_against_live(
            plan,
            live_clusters=live_clusters,
            live_connect_cluster_id=connect_id,
            live_fingerprint=live.fingerprint(plan.fingerprint.parts),
        )
    else:
        check_not_foreign(plan, live_clusters=live_clusters, live_connect_cluster_id=connect_id)
    for cluster, groups in typed.items():  # before any write: a cluster too old for a type refuses the plan
        live.require_hosted(cluster, groups)


def _capture_live_configs(plan: Plan, live: LiveState) -> dict[str, dict[str, str]]:
    """Configs (with secrets) of connectors a step will re-create, read before the first write."""
    out: dict[str, dict[str, str]] = {}
    for step in plan.steps:
        p = step.payload
        if isinstance(p, (ConnectorCreate, ConnectorDelete)) and isinstance(step.target, ConnectorTarget):
            if isinstance(p, ConnectorCreate) and p.secrets_from is not SecretSource.LIVE_CONNECTOR:
                continue
            config = live.connector_config(step.target.connector)
            if config is not None:
                out[step.target.connector] = config
    return out


def dry_run(
    plan: Plan,
    live: LiveState,
    *,
    progress: Progress = no_progress,
    allow_untranslatable: bool = False,
    parallelism: int = DEFAULT_PARALLELISM,
) -> RunResult:
    """Every read and check of an apply, and no write: preconditions run against simulated effects."""
    plan.check_untranslatable(allowed=allow_untranslatable)
    for step in plan.steps:
        _executor(step)
    verify_against_live(plan, live)
    check_permissions(live, plan_permissions(plan))
    view = StateView(live)
    result = RunResult(journal=None, dry_run=True)
    run_ends_at = 0
    for done, step in enumerate(plan.steps):
        count(progress, DRY_RUN_PHASE, done, len(plan.steps))
        if done >= run_ends_at and step.kind in CONCURRENT_KINDS:
            # A run of group writes: its groups are read in a few batched calls, then checked one by one.
            run_ends_at = run_end(plan.steps, done)
            view.forget_groups()
            if step.kind is StepKind.GROUP_OFFSETS_WRITE:
                _prefetch(view, plan.steps[done:run_ends_at], parallelism)
        elif done >= run_ends_at:
            view.forget_groups()
        require_step(step, view, what=f"step {step.index} ({step.kind.value})")
        _executor(step).simulate(step, view)
        result.steps.append(f"would apply step {step.index}: {step.description or step.kind.value}")
        if step.kind not in CONCURRENT_KINDS:
            progress(result.steps[-1])
        result.changes += int(step.writes)
    count(progress, DRY_RUN_PHASE, len(plan.steps), len(plan.steps))
    return result


def _prefetch(view: StateView, steps: Sequence[Step], parallelism: int) -> None:
    by_cluster: dict[str, list[Step]] = {}
    for step in steps:
        cluster = getattr(step.target, "cluster", "")
        by_cluster.setdefault(cluster, []).append(step)
    for cluster, group_steps in by_cluster.items():
        partitions = sorted({(r.topic, r.partition) for s in group_steps for r in getattr(s.payload, "rows", ())})
        view.prefetch_groups(
            cluster, [getattr(s.target, "group", "") for s in group_steps], partitions, concurrency=parallelism
        )


def _hint(journal: Path) -> str:
    return f"resume with: mm2ctl apply --resume {journal}   or undo with: mm2ctl rollback {journal}"


def _failed(journal: Journal, index: int, message: str, exc: Mm2ctlError, *, started: bool) -> ApplyError:
    """Journal the end of a failed apply (naming the step, also one that never started) and build the
    error the CLI reports: exit 8 for a precondition, 11 for a step that failed."""
    if started:
        journal.step_failed(index, error=str(exc))
    journal.apply_finished(status="failed", step=index, error=message)
    err = ApplyError(f"{message}. {_hint(journal.path)}")
    if isinstance(exc, (PreconditionError, BatchFailed)):
        err.exit_code = exc.exit_code
    return err


def _run_steps(
    journal: Journal,
    plan: Plan,
    ctx: ExecContext,
    start: int,
    uncertain: frozenset[int] = frozenset(),
    in_progress: frozenset[int] = frozenset(),
    parallelism: int = DEFAULT_PARALLELISM,
    completed: frozenset[int] = frozenset(),
    hooks: ApplyHooks = NO_HOOKS,
) -> RunResult:
    """Apply ``plan.steps[start:]``. ``uncertain``: steps whose effect is unknown (resume), of which
    ``in_progress`` were still in progress in the journal; ``completed``: steps an earlier attempt finished
    (after the first one it did not, only in a run of group steps or of connector stops)."""
    result = RunResult(journal=journal.path, dry_run=False)
    total = len(plan.steps)
    i = start
    while i < total:
        count(ctx.progress, APPLY_PHASE, i, total)
        end = run_end(plan.steps, i)
        if end > i:
            run = ConcurrentRun(
                journal=journal,
                ctx=ctx,
                steps=plan.steps[i:end],
                unknown=frozenset(j for j in uncertain if i <= j < end),
                in_progress={j for j in in_progress if i <= j < end},
                completed=frozenset(j for j in completed if i <= j < end),
                parallelism=parallelism,
                before_send=lambda indices: hooks.before_send(journal.path, indices),
                after_batch=lambda indices: hooks.journaled(journal.path, indices),
                group_written=lambda indices: hooks.group_written(journal.path, indices),
            )
            try:
                report = run.apply()
            except JournalError:
                raise
            except BatchFailed as exc:
                raise _failed(journal, exc.index, str(exc), exc, started=False) from exc
            result.steps += report.lines
            result.changes += report.changes
            i = end
            continue
        if i in completed:  # a stop of a concurrent run that finished while another of the run failed
            result.steps.append(f"step {i} ({plan.steps[i].kind.value}): completed by an earlier attempt")
            i += 1
            continue
        stops_end = stop_run_end(plan.steps, i, uncertain | completed)
        if stops_end > i:  # the pair's connectors stopped side by side (``remediate.connector_stops``)
            try:
                lines = run_stops(
                    journal,
                    plan.steps[i:stops_end],
                    ctx,
                    before_send=lambda indices: hooks.before_send(journal.path, indices),
                    journaled=lambda indices: hooks.journaled(journal.path, indices),
                )
            except StopFailed as exc:
                raise _failed(journal, exc.index, str(exc), exc, started=False) from exc
            if lines is not None:
                result.steps += lines
                result.changes += sum(int(s.writes) for s in plan.steps[i:stops_end])
                i = stops_end
                continue
        step = plan.steps[i]
        ex = _executor(step)
        what = f"step {step.index} ({step.kind.value})"
        started = False
        try:
            if step.index in uncertain and ex.is_done(step, ctx):
                if step.index not in in_progress:  # failed before: its effect is there after all
                    journal.step_started(step.index, before=ex.observe(step, ctx))
                journal.step_completed(step.index, outcome="already_applied", after=ex.observe(step, ctx))
                ctx.progress(f"{what}: its effect was already present; marked complete")
                result.steps.append(f"{what}: already applied")
                hooks.journaled(journal.path, [step.index])
                i += 1
                continue
            require_step(step, ctx.view, what=what)
            before = ex.observe(step, ctx)
            journal.step_started(step.index, before=before)
            started = True
            hooks.before_send(journal.path, [step.index])
            ctx.progress(f"{what}: {step.description or step.kind.value}")
            after = ex.run(step, ctx)
        except JournalError:
            raise
        except Mm2ctlError as exc:
            raise _failed(journal, step.index, f"{what} failed: {exc}", exc, started=started) from exc
        journal.step_completed(step.index, outcome="applied", after=after)
        if step.kind is StepKind.GROUP_OFFSETS_TRANSLATE:
            plan = with_translations(plan, parse_translated(freeze_json(after)))  # the writes after it use them
        result.steps.append(f"{what}: applied")
        result.changes += int(step.writes)
        hooks.journaled(journal.path, [step.index])
        i += 1
    count(ctx.progress, APPLY_PHASE, total, total)
    journal.apply_finished(status="succeeded")
    return result


def check_parallelism(parallelism: int) -> int:
    """``--parallelism``: 1 to ``MAX_PARALLELISM`` group requests in flight."""
    from mm2ctl.core.errors import ConfigError

    if not 1 <= parallelism <= MAX_PARALLELISM:
        raise ConfigError(f"--parallelism must be between 1 and {MAX_PARALLELISM}, not {parallelism}")
    return parallelism


def apply_plan(
    plan: Plan,
    live: LiveState,
    *,
    journal_path: Path | None = None,
    plan_path: str | None = None,
    progress: Progress = no_progress,
    operator_secrets: Mapping[str, str] | None = None,
    state_dir: Path | None = None,
    allow_untranslatable: bool = False,
    parallelism: int = DEFAULT_PARALLELISM,
    plan_document: Mapping[str, Any] | None = None,
    override_mm2_sync: bool = False,
    hooks: ApplyHooks = NO_HOOKS,
) -> RunResult:
    """Apply ``plan`` for real (see the module docstring for the order of checks and writes). A plan that
    leaves group partitions untranslatable is refused unless ``allow_untranslatable``. ``plan_document``: the
    document ``plan`` was read from, which the journal embeds as it is. ``hooks``: see ``ApplyHooks``."""
    plan.check_untranslatable(allowed=allow_untranslatable)
    check_parallelism(parallelism)
    for step in plan.steps:
        _executor(step)
    verify_against_live(plan, live, stale_check=False)  # a plan for other clusters: refused before the lock
    with lock_for_plan(plan, state_dir=state_dir, command="apply"):
        # Stale or not is decided under the lock: another apply may have just finished. (Once is enough: a
        # failover plan's fingerprint holds every source group's offsets, thousands of reads.)
        _permitted_and_fresh(plan, live)
        path = journal_path or new_journal_path(plan, state_dir)
        with Journal.create(path, plan, plan_path=plan_path, document=plan_document) as journal:
            ctx = ExecContext(
                live=live,
                artifact_path=journal.artifact_path,
                progress=progress,
                live_configs=_capture_live_configs(plan, live),
                operator_secrets=dict(operator_secrets or {}),
                override_mm2_sync=override_mm2_sync,
                plan_id=plan.plan_id,
            )
            return _run_steps(journal, plan, ctx, 0, parallelism=parallelism, hooks=hooks)


def _permitted_and_fresh(plan: Plan, live: LiveState) -> None:
    """A missing ACL stops the apply before its first write, and a stale plan is refused. The two are
    independent reads (the groups' authorized operations, the fingerprint's parts), made side by side; a
    missing ACL is the error reported when both fail, as it says what to fix first."""
    for alias in plan.clusters:
        if alias in live.mm2.clusters:
            live.admin(alias)  # each client made once, before the two threads share it
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="permissions") as pool:
        permitted = pool.submit(check_permissions, live, plan_permissions(plan))
        try:
            verify_against_live(plan, live)
        finally:
            if permitted.exception() is not None:  # the other read is over before the first error leaves
                permitted.result()


def resume_apply(
    journal_path: Path,
    live: LiveState,
    *,
    progress: Progress = no_progress,
    operator_secrets: Mapping[str, str] | None = None,
    state_dir: Path | None = None,
    parallelism: int = DEFAULT_PARALLELISM,
    override_mm2_sync: bool = False,
    hooks: ApplyHooks = NO_HOOKS,
) -> RunResult:
    """Continue a killed or failed apply from its journal. ``hooks``: see ``ApplyHooks``."""
    check_parallelism(parallelism)
    with Journal.open(journal_path) as probe:
        state = probe.state
    plan = applied_plan(state)
    if state.rollback_started:
        raise JournalError(f"{journal_path}: a rollback was started from this journal; it cannot be resumed")
    if state.apply_status == "succeeded":
        return RunResult(journal=journal_path, dry_run=False, steps=["the apply had already succeeded"])
    verify_against_live(plan, live, stale_check=False)
    check_permissions(live, plan_permissions(plan))
    with lock_for_plan(plan, state_dir=state_dir, command="resume"), Journal.open(journal_path) as journal:
        state = journal.state
        journal.resume_started()
        start = state.next_step_to_apply()
        if start is None:
            journal.apply_finished(status="succeeded")
            return RunResult(journal=journal_path, dry_run=False, steps=["every step had completed"])
        progress(f"resuming {plan.plan_id} at step {start}")
        ctx = ExecContext(
            live=live,
            artifact_path=journal.artifact_path,
            progress=progress,
            live_configs=_capture_live_configs(plan, live),
            operator_secrets=dict(operator_secrets or {}),
            override_mm2_sync=override_mm2_sync,
            plan_id=plan.plan_id,
        )
        return _run_steps(
            journal,
            applied_plan(state),
            ctx,
            start,
            frozenset(state.uncertain_steps),
            frozenset(state.in_progress_steps),
            parallelism=parallelism,
            completed=frozenset(state.completed_steps),
            hooks=hooks,
        )


def applied_plan(state: JournalState) -> Plan:
    """The journal's plan as apply ran it: with the answers of its completed ``group_offsets_translate``
    steps (``plans.deferred``) in the group writes and read-backs after them."""
    completed = {i: rec.after for i, rec in state.steps.items() if i in set(state.completed_steps)}
    return plan_as_applied(state.plan, completed)


def _ran_later(plan: Plan, index: int, done: set[int]) -> bool:
    """Did a later completed step let the connector this offsets step concerns run again?"""
    step = plan.steps[index]
    name = getattr(step.payload, "connector", None) or getattr(step.target, "connector", None)
    return any(
        later.index in done
        and later.kind in (StepKind.CONNECTOR_RESUME, StepKind.CONNECTOR_CREATE)
        and isinstance(later.target, ConnectorTarget)
        and later.target.connector == name
        for later in plan.steps[index + 1 :]
    )


def _undo_context(state: JournalState, index: int) -> UndoContext:
    rec = state.steps[index]
    done = set(state.completed_steps)
    return UndoContext(before=rec.before, after=rec.after, connector_ran_later=_ran_later(state.plan, index, done))


def rollback(
    journal_path: Path,
    live: LiveState,
    *,
    dry_run_only: bool = False,
    progress: Progress = no_progress,
    operator_secrets: Mapping[str, str] | None = None,
    state_dir: Path | None = None,
) -> RunResult:
    """Undo the journal's completed steps newest first, each behind its guard."""
    with Journal.open(journal_path) as probe:
        state = probe.state
    plan = applied_plan(state)
    try:
        verify_against_live(plan, live, stale_check=False)
    except ForeignPlanError as exc:
        raise ForeignPlanError(f"refusing to roll back: {exc}") from exc
    todo = state.steps_to_roll_back()
    check_permissions(live, plan_permissions(plan, undo=True, steps=todo))
    result = RunResult(journal=journal_path, dry_run=dry_run_only)
    ctx = ExecContext(
        live=live,
        artifact_path=_artifacts_of(journal_path),
        progress=progress,
        operator_secrets=dict(operator_secrets or {}),
        plan_id=plan.plan_id,
    )
    if dry_run_only:
        for done, i in enumerate(todo):
            count(progress, ROLLBACK_CHECK_PHASE, done, len(todo))
            step = plan.steps[i]
            problems = _executor(step).undo_problems(step, _undo_context(state, i), ctx)
            line = f"step {i} ({step.kind.value}): " + ("; ".join(problems) if problems else "would undo")
            result.steps.append(line)
            progress(line)
            result.changes += 0 if problems else 1
        count(progress, ROLLBACK_CHECK_PHASE, len(todo), len(todo))
        return result
    with lock_for_plan(plan, state_dir=state_dir, command="rollback"), Journal.open(journal_path) as journal:
        state = journal.state
        todo = state.steps_to_roll_back()
        uncertain = set(state.uncertain_steps)
        journal.rollback_started(todo)
        for done, i in enumerate(todo):
            count(progress, ROLLBACK_PHASE, done, len(todo))
            step = plan.steps[i]
            ex = _executor(step)
            what = f"rollback of step {i} ({step.kind.value})"
            undo = _undo_context(state, i)
            try:
                if i in uncertain and not ex.is_done(step, ctx):
                    journal.rollback_step_started(i, before=ex.observe(step, ctx))
                    journal.rollback_step_completed(i, outcome="never_applied")
                    result.steps.append(f"{what}: the step never took effect")
                    continue
                problems = ex.undo_problems(step, undo, ctx)
                if problems:
                    raise PreconditionError(f"{what}: the state is not what apply left: " + "; ".join(problems))
                journal.rollback_step_started(i, before=ex.observe(step, ctx))
                outcome, after = ex.undo(step, undo, ctx)
            except JournalError:
                raise
            except Mm2ctlError as exc:
                if journal.state.rollback_in_progress_step == i:
                    journal.rollback_step_failed(i, error=str(exc))
                journal.rollback_finished(status="failed")
                err = ApplyError(f"{exc}. Fix it, then run again: mm2ctl rollback {journal_path}")
                if isinstance(exc, PreconditionError):
                    err.exit_code = exc.exit_code
                raise err from exc
            journal.rollback_step_completed(i, outcome=outcome, after=after)
            progress(f"{what}: {outcome}")
            result.steps.append(f"{what}: {outcome}")
            result.changes += 1
        count(progress, ROLLBACK_PHASE, len(todo), len(todo))
        journal.rollback_finished(status="succeeded")
    return result


def _artifacts_of(journal_path: Path) -> Callable[[str], Path]:
    def path(name: str) -> Path:
        return journal_path.parent / f"{journal_path.stem}.{name}"

    return path


__all__ = [
    "DEFAULT_PARALLELISM",
    "MAX_PARALLELISM",
    "NO_HOOKS",
    "ApplyHooks",
    "RunResult",
    "apply_plan",
    "check_parallelism",
    "dry_run",
    "failures",
    "resume_apply",
    "rollback",
]
