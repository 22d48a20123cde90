"""Connector lifecycle steps: stop, pause, resume, restart, delete, create. Each waits for its state.

Connect answers 202/204 ("accepted") before the state lands, so every step polls the status with a
deadline (``ConnectClient.wait_for_state``) before the next step may rely on it.
"""

from __future__ import annotations

import contextlib

from mm2ctl.connect_client import ConnectorStatus
from mm2ctl.core.errors import ApplyError, ConnectNotFoundError, PreconditionError
from mm2ctl.core.polling import poll_until
from mm2ctl.plans.connector_config import unredact_config
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.payloads import ConnectorCreate, ConnectorDelete, ConnectorRestart
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.remediate.executors.base import ExecContext, UndoContext, as_dict, step_connector
from mm2ctl.remediate.precondition_checks import StateView

_TARGET_STATE = {
    StepKind.CONNECTOR_STOP: "STOPPED",
    StepKind.CONNECTOR_PAUSE: "PAUSED",
    StepKind.CONNECTOR_RESUME: "RUNNING",
    StepKind.CONNECTOR_RESTART: "RUNNING",
}


#: The pause between two status reads while a connector moves to a state: one small Connect request each; a
#: stop lands when the worker has stopped the tasks, often well under a second.
STATE_POLL_S = 0.1


def move_to(ctx: ExecContext, name: str, state: str | None) -> None:
    """Drive a connector to ``state`` (RUNNING/PAUSED/STOPPED) and wait until it is there."""
    client = ctx.live.require_connect()
    if state == "RUNNING":
        client.resume(name)
    elif state == "PAUSED":
        client.pause(name)
    elif state == "STOPPED":
        client.stop(name)
    else:
        raise ApplyError(f"cannot move {name} to state {state!r}")
    client.wait_for_state(name, [state], timeout=ctx.wait_timeout_s, poll_interval=STATE_POLL_S)
    ctx.progress(f"{name} is {state}")


def wait_absent(ctx: ExecContext, name: str) -> None:
    """Wait until a deleted connector is gone from the worker (a delete is acknowledged before it is done)."""
    if not poll_until(lambda: ctx.live.connector_state(name) is None, timeout_s=ctx.wait_timeout_s, interval_s=0.25):
        raise ApplyError(f"connector {name} still exists {ctx.wait_timeout_s:g}s after it was deleted")


#: How long a restart step looks for the RESTARTING state Connect's 202 announced before it trusts RUNNING.
RESTART_SEEN_GRACE_S = 10.0


def _restarting(status: ConnectorStatus) -> bool:
    return status.state == "RESTARTING" or any(t.state == "RESTARTING" for t in status.tasks)


def _await_restart_seen(ctx: ExecContext, name: str) -> None:
    """Connect answers a restart (202, "RESTARTING") before the worker writes that state to its status
    topic, so for a moment the status still shows the old RUNNING: waiting for RUNNING at once would
    return before anything restarted. Wait (bounded) until the restart shows up or is already over."""

    def seen() -> bool:
        status = ctx.live.connector_status(name)
        return status is None or _restarting(status) or not status.reached(["RUNNING"])

    poll_until(seen, timeout_s=RESTART_SEEN_GRACE_S, interval_s=0.1)


class StateChange:
    """stop / pause / resume / restart."""

    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return {"state": ctx.live.connector_state(step_connector(step))}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        if step.kind is StepKind.CONNECTOR_RESTART:
            return False  # a restart has no lasting effect to detect; repeating it is harmless
        status = ctx.live.connector_status(step_connector(step))
        return status is not None and status.reached([_TARGET_STATE[step.kind]])

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        name, wanted = step_connector(step), _TARGET_STATE[step.kind]
        if isinstance(step.payload, ConnectorRestart):
            client = ctx.live.require_connect()
            planned = client.restart(
                name, include_tasks=step.payload.include_tasks, only_failed=step.payload.only_failed
            )
            if planned is not None and _restarting(planned):
                _await_restart_seen(ctx, name)
            client.wait_for_state(name, [wanted], timeout=ctx.wait_timeout_s, poll_interval=0.25)
        else:
            move_to(ctx, name, wanted)
        return {"state": wanted}

    def simulate(self, step: Step, view: StateView) -> None:
        view.states[step_connector(step)] = _TARGET_STATE[step.kind]

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        if step.kind is StepKind.CONNECTOR_RESTART:
            return []
        left = as_dict(undo.after).get("state")
        now = ctx.live.connector_state(step_connector(step))
        return [] if now == left else [f"{step_connector(step)} is {now or 'absent'}, apply left it {left}"]

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        if step.kind is StepKind.CONNECTOR_RESTART:
            return "nothing_to_undo", None
        before = as_dict(undo.before).get("state")
        if before == as_dict(undo.after).get("state"):
            return "nothing_to_undo", {"state": before}
        if before not in ("RUNNING", "PAUSED", "STOPPED"):
            raise ApplyError(f"{step_connector(step)} was {before} before apply; mm2ctl cannot restore that state")
        move_to(ctx, step_connector(step), str(before))
        return "restored", {"state": before}


def config_to_send(step_config: object, name: str, ctx: ExecContext) -> dict[str, str]:
    """The saved (redacted) config with its secrets filled back from the live read or the operator."""
    from mm2ctl.plans.connector_config import ConnectorConfig

    assert isinstance(step_config, ConnectorConfig)
    secrets = dict(ctx.operator_secrets)
    secrets.update({k: v for k, v in ctx.live_configs.get(name, {}).items() if k in step_config.redacted_keys})
    return unredact_config(step_config, secrets)


class Delete:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return {"state": ctx.live.connector_state(step_connector(step))}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        return ctx.live.connector_state(step_connector(step)) is None

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        name = step_connector(step)
        with contextlib.suppress(ConnectNotFoundError):
            ctx.live.require_connect().delete(name)
        wait_absent(ctx, name)
        ctx.progress(f"{name} deleted")
        return {"state": None}

    def simulate(self, step: Step, view: StateView) -> None:
        view.states[step_connector(step)] = None

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        now = ctx.live.connector_state(step_connector(step))
        problems = [] if now is None else [f"{step_connector(step)} exists again ({now}); apply left it deleted"]
        assert isinstance(step.payload, ConnectorDelete)
        try:
            config_to_send(step.payload.config, step_connector(step), ctx)
        except PreconditionError as exc:
            problems.append(str(exc))
        return problems

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        assert isinstance(step.payload, ConnectorDelete)
        name = step_connector(step)
        ctx.live.require_connect().put_config(name, config_to_send(step.payload.config, name, ctx))
        wanted = as_dict(undo.before).get("state") or "RUNNING"
        client = ctx.live.require_connect()
        client.wait_for_state(name, ["RUNNING"], timeout=ctx.wait_timeout_s, poll_interval=0.25, allow_missing=True)
        if wanted in ("PAUSED", "STOPPED"):
            move_to(ctx, name, str(wanted))
        return "recreated", {"state": wanted}


class Create:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return {"state": ctx.live.connector_state(step_connector(step))}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        status = ctx.live.connector_status(step_connector(step))
        return status is not None and status.reached(["RUNNING"])

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        assert isinstance(step.payload, ConnectorCreate)
        name = step_connector(step)
        client = ctx.live.require_connect()
        if ctx.live.connector_state(name) is None:
            client.put_config(name, config_to_send(step.payload.config, name, ctx))
        client.wait_for_state(name, ["RUNNING"], timeout=ctx.wait_timeout_s, poll_interval=0.25, allow_missing=True)
        ctx.progress(f"{name} created and RUNNING")
        return {"state": "RUNNING"}

    def simulate(self, step: Step, view: StateView) -> None:
        view.states[step_connector(step)] = "RUNNING"

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        now = ctx.live.connector_state(step_connector(step))
        return [] if now is not None else [f"{step_connector(step)} no longer exists; apply left it created"]

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        name = step_connector(step)
        ctx.live.require_connect().delete(name)
        wait_absent(ctx, name)
        return "deleted", {"state": None}
