"""Apply, resume and roll back a plan (DESIGN §8). The order of operations is the safety argument:

apply
  1. re-read every fingerprint part and the cluster ids: ``ForeignPlanError`` (other clusters) before
     ``StalePlanError`` (same clusters, state moved);
  2. ``--dry-run``: check every step's precondition against live state overlaid with the simulated
     effects of the steps before it, then stop: no lock, no journal, no write;
  3. take the per-cluster lock; read configs of connectors a later step re-creates (memory only);
  4. for each step: check its precondition, journal its before-state (fsynced), run it, journal the
     outcome. The first failure is journaled and ends the apply with how to resume or roll back.

resume (``apply --resume JOURNAL``): the plan comes from the journal; only the foreign check runs (the
state has moved by design). The step that was in progress when the process died is re-checked: if its
effect is already present it is marked complete, otherwise its precondition is checked and it runs again.

rollback: completed steps (and a step in progress whose effect is present) are undone newest first, each
behind its executor's guard that the state is still what apply left.

Fault injection for crash tests: ``MM2CTL_FAULT_KILL_AFTER_STEP=k`` makes apply SIGKILL itself right after
step k's completion is journaled. It only ever kills this process.

The engine never prints; it reports progress through the ``progress`` callback, and counts its steps there
(``core.progress.count``) so a terminal can draw step i of n.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mm2ctl.core.errors import ApplyError, ForeignPlanError, JournalError, Mm2ctlError, PreconditionError
from mm2ctl.core.progress import Progress, count, no_progress
from mm2ctl.plans.connector_config import SecretSource
from mm2ctl.plans.document import Plan
from mm2ctl.plans.fingerprint import check_not_foreign, check_plan_against_live
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.payloads import ConnectorCreate, ConnectorDelete
from mm2ctl.plans.permissions import check_permissions, plan_permissions
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import ConnectorTarget
from mm2ctl.remediate.executors import EXECUTORS, ExecContext, Executor, UndoContext
from mm2ctl.remediate.journal import Journal, JournalState, new_journal_path
from mm2ctl.remediate.lock import lock_for_plan
from mm2ctl.remediate.preconditions import StateView, failures, require

FAULT_ENV = "MM2CTL_FAULT_KILL_AFTER_STEP"

#: The phases the engine counts its steps in (``core.progress.count``): done of the plan's steps, or of the
#: steps a rollback undoes.
DRY_RUN_PHASE = "steps checked"
APPLY_PHASE = "steps applied"
ROLLBACK_CHECK_PHASE = "undos checked"
ROLLBACK_PHASE = "steps rolled back"


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
    """Foreign first, then stale (fingerprint parts re-read through the same reader the planner used)."""
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
    plan: Plan, live: LiveState, *, progress: Progress = no_progress, allow_untranslatable: bool = False
) -> RunResult:
    """Every read and check of an apply, and no write: preconditions run against simulated effects."""
    plan.check_untranslatable(allowed=allow_untranslatable)
    for step in plan.steps:
        _executor(step)
    verify_against_live(plan, live)
    check_permissions(live, plan_permissions(plan))
    view = StateView(live)
    result = RunResult(journal=None, dry_run=True)
    for done, step in enumerate(plan.steps):
        count(progress, DRY_RUN_PHASE, done, len(plan.steps))
        require(step.precondition, view, what=f"step {step.index} ({step.kind.value})")
        _executor(step).simulate(step, view)
        result.steps.append(f"would apply step {step.index}: {step.description or step.kind.value}")
        progress(result.steps[-1])
        result.changes += int(step.writes)
    count(progress, DRY_RUN_PHASE, len(plan.steps), len(plan.steps))
    return result


def _hint(journal: Path) -> str:
    return f"resume with: mm2ctl apply --resume {journal}   or undo with: mm2ctl rollback {journal}"


def _maybe_crash(index: int) -> None:
    wanted = os.environ.get(FAULT_ENV)
    if wanted is not None and wanted.strip() == str(index):
        os.kill(os.getpid(), signal.SIGKILL)


def _run_steps(
    journal: Journal, plan: Plan, ctx: ExecContext, start: int, resumed_in_progress: int | None
) -> RunResult:
    result = RunResult(journal=journal.path, dry_run=False)
    total = len(plan.steps)
    for done, step in enumerate(plan.steps[start:], start):
        count(ctx.progress, APPLY_PHASE, done, total)
        ex = _executor(step)
        what = f"step {step.index} ({step.kind.value})"
        try:
            if step.index == resumed_in_progress and ex.is_done(step, ctx):
                journal.step_completed(step.index, outcome="already_applied", after=ex.observe(step, ctx))
                ctx.progress(f"{what}: its effect was already present; marked complete")
                result.steps.append(f"{what}: already applied")
                _maybe_crash(step.index)
                continue
            require(step.precondition, ctx.view, what=what)
            before = ex.observe(step, ctx)
            journal.step_started(step.index, before=before)
            ctx.progress(f"{what}: {step.description or step.kind.value}")
            after = ex.run(step, ctx)
        except JournalError:
            raise
        except Mm2ctlError as exc:
            state = journal.state
            if state.in_progress_step == step.index:
                journal.step_failed(step.index, error=str(exc))
            journal.apply_finished(status="failed")
            err = ApplyError(f"{what} failed: {exc}. {_hint(journal.path)}")
            err.exit_code = exc.exit_code if isinstance(exc, PreconditionError) else err.exit_code
            raise err from exc
        journal.step_completed(step.index, outcome="applied", after=after)
        result.steps.append(f"{what}: applied")
        result.changes += int(step.writes)
        _maybe_crash(step.index)
    count(ctx.progress, APPLY_PHASE, total, total)
    journal.apply_finished(status="succeeded")
    return result


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
) -> RunResult:
    """Apply ``plan`` for real (see the module docstring for the order of checks and writes). A plan that
    leaves group partitions untranslatable is refused unless ``allow_untranslatable``."""
    plan.check_untranslatable(allowed=allow_untranslatable)
    for step in plan.steps:
        _executor(step)
    verify_against_live(plan, live)
    check_permissions(live, plan_permissions(plan))  # a missing ACL stops the apply before its first write
    with lock_for_plan(plan, state_dir=state_dir, command="apply"):
        verify_against_live(plan, live)  # again under the lock: another apply may have just finished
        path = journal_path or new_journal_path(plan, state_dir)
        with Journal.create(path, plan, plan_path=plan_path) as journal:
            ctx = ExecContext(
                live=live,
                artifact_path=journal.artifact_path,
                progress=progress,
                live_configs=_capture_live_configs(plan, live),
                operator_secrets=dict(operator_secrets or {}),
            )
            return _run_steps(journal, plan, ctx, 0, None)


def resume_apply(
    journal_path: Path,
    live: LiveState,
    *,
    progress: Progress = no_progress,
    operator_secrets: Mapping[str, str] | None = None,
    state_dir: Path | None = None,
) -> RunResult:
    """Continue a killed or failed apply from its journal."""
    with Journal.open(journal_path) as probe:
        state = probe.state
    plan = state.plan
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
        )
        unknown = (
            state.in_progress_step
            if state.in_progress_step is not None
            else (start if start in state.failed_steps else None)
        )
        return _run_steps(journal, plan, ctx, start, unknown)


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
    plan = state.plan
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
        journal.rollback_started(todo)
        for done, i in enumerate(todo):
            count(progress, ROLLBACK_PHASE, done, len(todo))
            step = plan.steps[i]
            ex = _executor(step)
            what = f"rollback of step {i} ({step.kind.value})"
            undo = _undo_context(state, i)
            try:
                if i == state.in_progress_step and not ex.is_done(step, ctx):
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


__all__ = ["FAULT_ENV", "RunResult", "apply_plan", "dry_run", "failures", "resume_apply", "rollback"]
