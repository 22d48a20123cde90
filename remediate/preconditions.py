"""Checking a step's precondition against live state, or against live state plus a dry run's simulation.

A precondition says what must hold *when its step runs*, given the steps before it (a reset's offsets step
requires the connector STOPPED, which the plan's earlier stop step brings about). A real apply checks it
live, just before the step. A dry run writes nothing, so the earlier steps never happen; ``StateView``
lets it overlay what they would have done (``simulate``) on top of live reads, and so check every step.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from mm2ctl.core.errors import PreconditionError
from mm2ctl.plans.fingerprint import canonical_json, thaw_json
from mm2ctl.plans.live_state import LiveState, offsets_json, stored_json
from mm2ctl.plans.preconditions import (
    AllOf,
    ConnectorAbsent,
    ConnectorOffsetsUnchanged,
    ConnectorStateIn,
    ConnectorStopped,
    GroupEmptyOrAbsent,
    GroupOffsetsInRange,
    GroupOffsetsUnchanged,
    NoPrecondition,
    OffsetsRecordsUnchanged,
    Precondition,
    TopicEndOffsetEquals,
    WorkerGroupHasNoMembers,
)

ABSENT = None  # a connector state meaning "no such connector"


@dataclass
class StateView:
    """Live reads, optionally overlaid with simulated effects (dry run)."""

    live: LiveState
    states: dict[str, str | None] = field(default_factory=dict)
    offsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tombstoned: set[tuple[str, str, str]] = field(default_factory=set)  # (cluster, topic, key_b64)

    def connector_state(self, name: str) -> str | None:
        if name in self.states:
            return self.states[name]
        return self.live.connector_state(name)

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        if name in self.offsets:
            return self.offsets[name]
        return self.live.connector_offsets(name)

    def stored_values(self, cluster: str, topic: str, connector: str) -> dict[tuple[int, str], str | None]:
        """(partition, key_b64) -> value_b64 of the newest record (None: tombstone) for the connector."""
        out = {}
        for s in stored_json(self.live.all_stored_offsets(cluster, topic, connector)):
            value = None if (cluster, topic, s["key_b64"]) in self.tombstoned else s["value_b64"]
            out[(s["partition"], s["key_b64"])] = value
        return out


def _key_connector(key_b64: str) -> str:
    import json

    return str(json.loads(base64.b64decode(key_b64))[0])


def failures(pre: Precondition, view: StateView) -> list[str]:
    """What does not hold (empty: the precondition holds). Reads live state; never writes."""
    if isinstance(pre, NoPrecondition):
        return []
    if isinstance(pre, AllOf):
        return [f for c in pre.conditions for f in failures(c, view)]
    if isinstance(pre, ConnectorStateIn):
        state = view.connector_state(pre.connector)
        wanted = sorted(s.value for s in pre.states)
        if state not in wanted:
            return [f"{pre.connector} is {state or 'absent'}, expected {'/'.join(wanted)}"]
        return []
    if isinstance(pre, ConnectorStopped):
        state = view.connector_state(pre.connector)
        return [] if state == "STOPPED" else [f"{pre.connector} is {state or 'absent'}, expected STOPPED"]
    if isinstance(pre, ConnectorAbsent):
        state = view.connector_state(pre.connector)
        return [] if state is ABSENT else [f"{pre.connector} exists ({state}), expected it absent"]
    if isinstance(pre, ConnectorOffsetsUnchanged):
        expected = offsets_json(
            {"partition": thaw_json(o.partition), "offset": thaw_json(o.offset)} for o in pre.expected
        )
        live = view.connector_offsets(pre.connector)
        if canonical_json(live) != canonical_json(expected):
            return [f"the offsets of {pre.connector} changed since the plan was made"]
        return []
    if isinstance(pre, OffsetsRecordsUnchanged):
        connectors = {_key_connector(r.key_b64) for r in pre.records}
        values: dict[tuple[int, str], str | None] = {}
        for c in connectors:
            values.update(view.stored_values(pre.cluster, pre.topic, c))
        moved = [r for r in pre.records if values.get((r.partition, r.key_b64)) != r.original_value_b64]
        if moved:
            return [f"{len(moved)} stored offset(s) in {pre.cluster}:{pre.topic} changed since the plan was made"]
        return []
    if isinstance(pre, TopicEndOffsetEquals):
        end = view.live.topic_bounds(pre.cluster, pre.topic, pre.partition).end
        if end != pre.end_offset:
            return [
                f"{pre.cluster}:{pre.topic}/{pre.partition} ends at {end}, the plan saw {pre.end_offset} "
                "(records were written since)"
            ]
        return []
    if isinstance(pre, (WorkerGroupHasNoMembers, GroupEmptyOrAbsent)):
        members = view.live.group_members(pre.cluster, pre.group)
        return [] if members == 0 else [f"group {pre.group} on {pre.cluster} has {members} member(s)"]
    if isinstance(pre, GroupOffsetsUnchanged):
        current = view.live.admin(pre.cluster).committed_offsets([pre.group])[pre.group].offsets
        changed = [o for o in pre.expected if current.get((o.topic, o.partition)) != o.offset]
        return [f"{len(changed)} committed offset(s) of {pre.group} changed"] if changed else []
    if isinstance(pre, GroupOffsetsInRange):
        tps = [(o.topic, o.partition) for o in pre.offsets]
        bounds = view.live.admin(pre.cluster).partition_bounds(tps)
        out = []
        for o in pre.offsets:
            b = bounds[(o.topic, o.partition)]
            if b.error is not None or b.earliest is None or b.latest is None:
                out.append(f"cannot read the offsets of {pre.cluster}:{o.topic}/{o.partition}")
            elif o.offset is not None and not b.earliest <= o.offset <= b.latest:
                out.append(
                    f"offset {o.offset} of {o.topic}/{o.partition} is outside [{b.earliest}, {b.latest}] "
                    f"on {pre.cluster}"
                )
        return out
    return [f"unknown precondition {type(pre).__name__}"]


def require(pre: Precondition, view: StateView, *, what: str) -> None:
    """Raise ``PreconditionError`` naming every part of ``pre`` that does not hold."""
    problems = failures(pre, view)
    if problems:
        raise PreconditionError(f"{what}: precondition does not hold: " + "; ".join(problems))
