"""What every step executor gets and must provide.

An executor owns one step kind end to end: what to record as the before-state (read at apply time, which
is what rollback restores), how to tell that the step's effect is already present (a resumed apply must
not repeat a step the crashed process finished), how to run it, how to simulate it for a dry run, and
how to undo it behind a guard that the state is still what apply left.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.plans.fingerprint import FrozenJSON, JSONable
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import ConnectorTarget, TopicPartitionsTarget
from mm2ctl.remediate.precondition_checks import StateView


@dataclass
class ExecContext:
    """Clients and files an executor may use. ``artifact_path`` maps a plan's bare file name to a path
    beside the journal (offset-syncs backups live there)."""

    live: LiveState
    artifact_path: Callable[[str], Path]
    progress: Progress = no_progress
    #: Connector configs with secrets, read live before the first write; memory only, never journaled.
    live_configs: dict[str, dict[str, str]] = field(default_factory=dict)
    #: Secret values an operator supplied (``--secrets-file``), keyed by config key.
    operator_secrets: Mapping[str, str] = field(default_factory=dict)
    wait_timeout_s: float = 180.0
    #: When this process last wrote each (cluster, group) (``time.monotonic``): a settling read-back
    #: (``GroupOffsetsVerify.settle_seconds``) counts its window from there.
    written_at: dict[tuple[str, str], float] = field(default_factory=dict)
    #: ``apply --override-mm2-sync``: a target offset MM2's own group-offset sync moved since planning is
    #: written over instead of refusing the apply (``remediate.write_checks``).
    override_mm2_sync: bool = False
    #: The plan being applied or rolled back: every offset written carries it (``plans.offset_metadata``).
    plan_id: str = ""

    @property
    def view(self) -> StateView:
        return StateView(self.live)


@dataclass(frozen=True)
class UndoContext:
    """What rollback knows about a step: the journaled before/after, and whether a later completed step of
    the same apply let the connector run again (then it legitimately rewrote its offsets)."""

    before: FrozenJSON
    after: FrozenJSON
    connector_ran_later: bool


class Executor(Protocol):
    def observe(self, step: Step, ctx: ExecContext) -> JSONable: ...

    def is_done(self, step: Step, ctx: ExecContext) -> bool: ...

    def run(self, step: Step, ctx: ExecContext) -> JSONable: ...

    def simulate(self, step: Step, view: StateView) -> None: ...

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]: ...

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]: ...


class ReadOnlyStep:
    """The simulate/undo half of an executor whose step changes nothing (a backup, a read-back, a wait):
    nothing to simulate, nothing that could block a rollback, nothing to undo."""

    def simulate(self, step: Step, view: StateView) -> None:
        return None

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        return []

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        return "nothing_to_undo", None


def step_connector(step: Step) -> str:
    """The connector a step acts on; only for the kinds whose target is a connector (``TARGET_OF_KIND``)."""
    assert isinstance(step.target, ConnectorTarget)
    return step.target.connector


def step_topic(step: Step) -> tuple[str, str]:
    """``(cluster alias, topic)`` a step acts on; only for the kinds whose target is topic partitions."""
    assert isinstance(step.target, TopicPartitionsTarget)
    return step.target.cluster, step.target.topic


def as_dict(value: FrozenJSON) -> dict[str, Any]:
    """A journaled JSON object as a plain dict ({} for anything else)."""
    from mm2ctl.plans.fingerprint import thaw_json

    thawed = thaw_json(value)
    return thawed if isinstance(thawed, dict) else {}
