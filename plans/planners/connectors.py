"""``mm2ctl plan connectors``: stop, pause, resume or restart connectors, and the lifecycle steps other
planners reuse (a reset stops a connector first and restores its state last).

Each step's precondition is the state the connector must be in *when the step runs*, given the steps
before it, so the same plan is checked correctly on a fresh apply, a resumed one and a dry run.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.core.config.flows import parse_flow
from mm2ctl.core.errors import PlanError
from mm2ctl.plans.connector_config import ConnectorConfig, SecretSource
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.live_state import part_connector_config, part_connector_state
from mm2ctl.plans.payloads import (
    ConnectorCreate,
    ConnectorDelete,
    ConnectorPause,
    ConnectorRestart,
    ConnectorResume,
    ConnectorStop,
)
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.find_connectors import find_pair_connectors
from mm2ctl.plans.preconditions import ConnectorAbsent, ConnectorStateIn
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import ConnectorTarget


class Action(StrEnum):
    STOP = "stop"
    PAUSE = "pause"
    RESUME = "resume"
    RESTART = "restart"


#: The state each action leaves the connector in; restart leaves it running.
ACTION_STATE = {
    Action.STOP: ConnectorState.STOPPED,
    Action.PAUSE: ConnectorState.PAUSED,
    Action.RESUME: ConnectorState.RUNNING,
    Action.RESTART: ConnectorState.RUNNING,
}
_KIND: dict[Action, tuple[StepKind, type[ConnectorStop] | type[ConnectorPause] | type[ConnectorResume]]] = {
    Action.STOP: (StepKind.CONNECTOR_STOP, ConnectorStop),
    Action.PAUSE: (StepKind.CONNECTOR_PAUSE, ConnectorPause),
    Action.RESUME: (StepKind.CONNECTOR_RESUME, ConnectorResume),
}


def observed_state(b: PlanBuilder, connector: str) -> str:
    """The connector's state now (recorded in the fingerprint); a missing connector is a plan error."""
    value = b.read(part_connector_state(connector))
    if not value["exists"]:
        raise PlanError(f"connector {connector!r} does not exist on the Connect worker")
    return str(value["state"])


def lifecycle_step(b: PlanBuilder, connector: str, action: Action, current: str) -> Step | None:
    """One stop/pause/resume/restart step from state ``current``; None when it would change nothing."""
    target = ConnectorTarget(connector=connector)
    pre = ConnectorStateIn(connector=connector, states=frozenset({ConnectorState(current)}))
    if action is Action.RESTART:
        return b.add(
            StepKind.CONNECTOR_RESTART,
            target,
            ConnectorRestart(include_tasks=True),
            pre,
            before={"state": current},
            after={"state": ConnectorState.RUNNING.value},
            description=f"restart {connector} and its tasks, wait until RUNNING",
            irreversible_reason="a restart leaves no state behind to undo",
        )
    wanted = ACTION_STATE[action]
    if current == wanted.value:
        return None
    if action is Action.STOP and not b.live.server_info().supports_stop():
        raise PlanError(
            f"the Connect worker (Kafka {b.live.server_info().version}) has no stop endpoint (needs 3.5+); "
            "use pause, or reset-connector-offsets, which deletes and re-creates connectors there"
        )
    kind, payload = _KIND[action]
    return b.add(
        kind,
        target,
        payload(),
        pre,
        before={"state": current},
        after={"state": wanted.value},
        description=f"{action.value} {connector} ({current} -> {wanted.value}), wait until {wanted.value}",
    )


def restore_step(b: PlanBuilder, connector: str, original: str, current: str) -> Step | None:
    """Bring a connector from ``current`` back to the state it was observed in before the plan."""
    if original == current:
        return None
    if original == ConnectorState.PAUSED.value:
        return lifecycle_step(b, connector, Action.PAUSE, current)
    if original == ConnectorState.STOPPED.value:
        return lifecycle_step(b, connector, Action.STOP, current)
    return lifecycle_step(b, connector, Action.RESUME, current)


def delete_step(b: PlanBuilder, connector: str, current: str) -> Step:
    """Delete a connector, saving its (redacted) config in the plan for the matching create."""
    config = b.live.connector_config(connector)
    if config is None:
        raise PlanError(f"connector {connector!r} does not exist on the Connect worker")
    b.read(part_connector_config(connector))
    return b.add(
        StepKind.CONNECTOR_DELETE,
        ConnectorTarget(connector=connector),
        ConnectorDelete(config=ConnectorConfig(values=config)),
        ConnectorStateIn(connector=connector, states=frozenset({ConnectorState(current)})),
        before={"state": current},
        after={"state": None},
        description=f"delete {connector} (its config is saved in this plan; its offsets stay)",
    )


def create_step(b: PlanBuilder, deleted: Step) -> Step:
    """Re-create the connector a ``delete_step`` removed, from the config saved in the plan."""
    assert isinstance(deleted.payload, ConnectorDelete) and isinstance(deleted.target, ConnectorTarget)
    connector = deleted.target.connector
    return b.add(
        StepKind.CONNECTOR_CREATE,
        ConnectorTarget(connector=connector),
        ConnectorCreate(config=deleted.payload.config, secrets_from=SecretSource.LIVE_CONNECTOR),
        ConnectorAbsent(connector=connector),
        before={"state": None},
        after={"state": ConnectorState.RUNNING.value},
        description=f"re-create {connector} from the config saved in step {deleted.index}, wait until RUNNING",
    )


def plan_connectors(
    b: PlanBuilder,
    action: Action,
    *,
    connectors: Sequence[str] = (),
    pair: str | None = None,
    roles: Sequence[str] = (),
) -> Plan:
    """A plan that moves each named connector (or each MM2 connector of ``pair``) to ``action``'s state."""
    names = list(connectors)
    if pair is not None:
        source, target = parse_flow(pair)
        b.pair = pair
        found = find_pair_connectors(b.live, source, target, roles)
        if not found:
            raise PlanError(f"no MM2 connectors of {pair} (roles {', '.join(roles)}) on the Connect worker")
        names += [n for n in found.values() if n not in names]
    if not names:
        raise PlanError("name connectors with --connector, or a flow with --pair")
    b.kind = PlanKind.CONNECTORS
    for name in names:
        lifecycle_step(b, name, action, observed_state(b, name))
    if not b.steps:
        b.notes.append(f"every connector is already {ACTION_STATE[action].value}: nothing to do")
    return b.build(f"{action.value} {', '.join(names)}")
