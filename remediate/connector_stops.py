"""Several connectors stopped at once: a failover's ``--stop-mirroring`` stops its pair's MM2 connectors.

Stopping a connector is one ``PUT /connectors/{c}/stop``, then a wait until the worker reports it and its
tasks STOPPED (``executors.lifecycle``); most of the time is the worker stopping the tasks. The pair's
connectors are independent: none's stop depends on another's, and what the plan does after them (the
writes) needs only all of them stopped. So a run of consecutive ``connector_stop`` steps, each on a connector
no earlier step of the run names, is applied together, with the same four things per step as one at a time:

1. every step's precondition is checked, in plan order, before any request is sent; one that does not hold
   leaves the run to the engine's one-step-at-a-time path, which stops at that step exactly as before;
2. every step's before-state is journaled (fsynced) before its request is sent;
3. the stops run side by side, one thread per connector, each waiting for its own STOPPED;
4. every step's outcome, completed or failed, is journaled in plan order; the first failure ends the apply.

Nothing after the run starts before every stop of it has landed. A process killed between 2 and 4 leaves
the steps in progress: resume checks each one's effect (``is_done``: the connector is STOPPED) as it does
for a single step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from mm2ctl.core.errors import ApplyError, Mm2ctlError
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.remediate.executors import EXECUTORS, ExecContext
from mm2ctl.remediate.executors.base import step_connector
from mm2ctl.remediate.journal import Journal, StepOutcome
from mm2ctl.remediate.precondition_checks import step_failures


class StopFailed(ApplyError):
    """A stop of a concurrent run failed; every outcome of the run is journaled. ``index`` names the step."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


def stop_run_end(steps: Sequence[Step], start: int, uncertain: frozenset[int] = frozenset()) -> int:
    """Where the run of concurrent ``connector_stop`` steps beginning at ``start`` ends (exclusive):
    consecutive stops, each of a connector no earlier step of the run names, none of them uncertain (a resumed
    step is re-checked alone). ``start`` itself when fewer than two such steps follow."""
    seen: set[str] = set()
    end = start
    while end < len(steps) and steps[end].kind is StepKind.CONNECTOR_STOP and steps[end].index not in uncertain:
        name = step_connector(steps[end])
        if name in seen:
            break
        seen.add(name)
        end += 1
    return end if end - start >= 2 else start


def _what(step: Step) -> str:
    return f"step {step.index} ({step.kind.value})"


def run_stops(
    journal: Journal,
    steps: Sequence[Step],
    ctx: ExecContext,
    *,
    before_send: Callable[[list[int]], None],
    journaled: Callable[[list[int]], None],
) -> list[str] | None:
    """Apply ``steps`` (a ``stop_run_end`` run) together; the lines for the result, or None, with nothing
    journaled or sent, when a precondition does not hold (the engine then applies them one at a time and
    reports that step). Raises ``StopFailed`` once every outcome is journaled when a stop failed."""
    view = ctx.view
    if any(step_failures(step, view) for step in steps):
        return None
    ex = EXECUTORS[StepKind.CONNECTOR_STOP]
    journal.steps_started((step.index, ex.observe(step, ctx)) for step in steps)
    indices = [step.index for step in steps]
    before_send(indices)
    for step in steps:
        ctx.progress(f"{_what(step)}: {step.description or step.kind.value}")
    with ThreadPoolExecutor(max_workers=len(steps), thread_name_prefix="connector-stop") as pool:
        futures = [pool.submit(ex.run, step, ctx) for step in steps]
    outcomes: list[StepOutcome] = []
    failed: tuple[Step, Exception] | None = None
    for step, fut in zip(steps, futures, strict=True):
        exc = fut.exception()
        if exc is None:
            after: JSONable = fut.result()
            outcomes.append(StepOutcome(index=step.index, after=after))
            continue
        if not isinstance(exc, Mm2ctlError):
            raise exc  # a bug, not a failed stop
        outcomes.append(StepOutcome(index=step.index, error=str(exc)))
        failed = failed or (step, exc)
    journal.steps_finished(outcomes)
    journaled([o.index for o in outcomes if o.error is None])
    if failed is not None:
        step, exc = failed
        raise StopFailed(f"{_what(step)} failed: {exc}", index=step.index)
    return [f"{_what(step)}: applied" for step in steps]


__all__ = ["StopFailed", "run_stops", "stop_run_end"]
