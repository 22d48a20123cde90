"""Checking a step's precondition against live state, or against live state plus a dry run's simulation.

A precondition says what must hold *when its step runs*, given the steps before it (a reset's offsets step
requires the connector STOPPED, which the plan's earlier stop step brings about). A real apply checks it
live, just before the step. A dry run writes nothing, so the earlier steps never happen; ``StateView``
lets it overlay what they would have done (``simulate``) on top of live reads, and so check every step.

A concurrent batch of group-offset steps reads its groups once for all of them (``StateView.prefetch_groups``:
one describe, the committed offsets of every group with requests in flight side by side, one bounds read),
then checks each step against those reads, as the planner reads them.

MirrorMaker 2 moving a target group while a failover plan waits to be applied (``sync.group.offsets``) is
not a change that invalidates a group-offset write: MM2 only moves an inactive group forward, and never
past the exact translation. So a write step's "offsets unchanged" check accepts an offset that moved from
the plan's before-offset up to, at most, the planned offset (``step_failures``); the group must still have
no members (its own check). Anything else still refuses: an offset beyond the plan, one moved backwards.
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from mm2ctl.core.errors import PreconditionError
from mm2ctl.core.kafka.admin import TP, PartitionBounds
from mm2ctl.core.spark_checkpoints.query_sources import checkpoint_moved
from mm2ctl.plans.fingerprint import canonical_json, thaw_json
from mm2ctl.plans.live_state import LiveState, offsets_json, stored_json
from mm2ctl.plans.payloads import GroupOffsetsWrite, TranslationMethod
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
    SparkCheckpointAt,
    TopicEndOffsetEquals,
    WorkerGroupHasNoMembers,
)
from mm2ctl.plans.steps import Step

ABSENT = None  # a connector state meaning "no such connector"


@dataclass
class StateView:
    """Live reads, optionally overlaid with simulated effects (dry run)."""

    live: LiveState
    states: dict[str, str | None] = field(default_factory=dict)
    offsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tombstoned: set[tuple[str, str, str]] = field(default_factory=set)  # (cluster, topic, key_b64)
    #: Reads made once for a batch of group steps (``prefetch_groups``); absent keys are read live.
    members: dict[tuple[str, str], int] = field(default_factory=dict)
    committed: dict[tuple[str, str], dict[TP, int]] = field(default_factory=dict)
    bounds: dict[tuple[str, TP], PartitionBounds] = field(default_factory=dict)

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

    def group_members(self, cluster: str, group: str) -> int:
        if (cluster, group) in self.members:
            return self.members[(cluster, group)]
        return self.live.group_members(cluster, group)

    def group_offsets(self, cluster: str, group: str) -> dict[TP, int]:
        if (cluster, group) in self.committed:
            return self.committed[(cluster, group)]
        return self.live.group_offsets(cluster, group)

    def partition_bounds(self, cluster: str, tps: Iterable[TP]) -> dict[TP, PartitionBounds]:
        wanted = list(tps)
        missing = [tp for tp in wanted if (cluster, tp) not in self.bounds]
        if missing:
            for tp, b in self.live.admin(cluster).partition_bounds(missing).items():
                self.bounds[(cluster, tp)] = b
        return {tp: self.bounds[(cluster, tp)] for tp in wanted}

    def prefetch_groups(
        self,
        cluster: str,
        groups: Iterable[str],
        partitions: Iterable[TP] = (),
        *,
        concurrency: int | None = None,
        members: bool = True,
    ) -> None:
        """Read the members (unless not ``members``: a read-back checks none) and committed offsets of
        ``groups`` and the bounds of ``partitions`` on ``cluster`` in a few batched calls (at most
        ``concurrency`` offset requests in flight), for the checks of a batch of group steps that follow. The
        three reads are independent and run side by side."""
        wanted = list(dict.fromkeys(groups))
        if not wanted:
            return
        self.bounds = {k: v for k, v in self.bounds.items() if k[0] != cluster}  # bounds move: read them anew
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="prefetch") as pool:
            describing = pool.submit(self.live.describe_groups, cluster, wanted) if members else None
            tps = sorted(set(partitions))
            bounding = pool.submit(self.live.admin(cluster).partition_bounds, tps) if tps else None
            offsets = self.live.many_group_offsets(cluster, wanted, concurrency=concurrency)
            described = describing.result() if describing is not None else None
            bounds = bounding.result() if bounding is not None else {}
        if described is not None:
            for g in wanted:
                d = described.get(g)
                # An error (a group of another protocol, a coordinator moving) is read again the careful way.
                self.members[(cluster, g)] = (
                    d.members if d is not None and d.error is None else self.live.group_members(cluster, g)
                )
        for g, got in offsets.items():
            self.committed[(cluster, g)] = got
        for tp, b in bounds.items():
            self.bounds[(cluster, tp)] = b

    def forget_groups(self) -> None:
        """Drop the batch's reads (the next batch, or a step after it, reads live again)."""
        self.members.clear()
        self.committed.clear()
        self.bounds.clear()


def _key_connector(key_b64: str) -> str:
    import json

    return str(json.loads(base64.b64decode(key_b64))[0])


def advanced_by_mm2(before: int | None, now: int | None, planned: int | None) -> bool:
    """Did the offset move only as MirrorMaker 2's group-offset sync moves it (forward from the plan's
    ``before``, and not past the ``planned`` position)?"""
    return now is not None and planned is not None and now <= planned and (before is None or now >= before)


def failures(
    pre: Precondition,
    view: StateView,
    *,
    ceiling: Mapping[TP, int] | None = None,
    accepted: Collection[TP] = (),
) -> list[str]:
    """What does not hold (empty: the precondition holds). Reads live state; never writes.

    ``ceiling``: a group write's planned offsets; an offset that moved forward to at most its planned
    value is accepted as MM2's own sync (see the module docstring). ``accepted``: partitions whose move the
    operator accepted (``apply --override-mm2-sync``, ``remediate.write_checks``)."""
    if isinstance(pre, NoPrecondition):
        return []
    if isinstance(pre, AllOf):
        return [f for c in pre.conditions for f in failures(c, view, ceiling=ceiling, accepted=accepted)]
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
    if isinstance(pre, WorkerGroupHasNoMembers):
        members = view.live.group_members(pre.cluster, pre.group)
        return [] if members == 0 else [f"group {pre.group} on {pre.cluster} has {members} member(s)"]
    if isinstance(pre, GroupEmptyOrAbsent):
        members = view.group_members(pre.cluster, pre.group)
        return [] if members == 0 else [f"group {pre.group} on {pre.cluster} has {members} member(s)"]
    if isinstance(pre, GroupOffsetsUnchanged):
        current = view.group_offsets(pre.cluster, pre.group)
        top = ceiling or {}
        changed = [
            o
            for o in pre.expected
            if current.get((o.topic, o.partition)) != o.offset
            and (o.topic, o.partition) not in accepted
            and not advanced_by_mm2(o.offset, current.get((o.topic, o.partition)), top.get((o.topic, o.partition)))
        ]
        return [f"{len(changed)} committed offset(s) of {pre.group} changed"] if changed else []
    if isinstance(pre, GroupOffsetsInRange):
        tps = [(o.topic, o.partition) for o in pre.offsets]
        bounds = view.partition_bounds(pre.cluster, tps)
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
    if isinstance(pre, SparkCheckpointAt):
        why = checkpoint_moved(pre.location, pre.batch_id, pre.digest)
        return [] if why is None else [why]
    return [f"unknown precondition {type(pre).__name__}"]


def require(pre: Precondition, view: StateView, *, what: str) -> None:
    """Raise ``PreconditionError`` naming every part of ``pre`` that does not hold."""
    problems = failures(pre, view)
    if problems:
        raise PreconditionError(f"{what}: precondition does not hold: " + "; ".join(problems))


#: The ceiling of a row translated only after the catch-up, before apply has translated it (a dry run): MM2's
#: sync may move it forward by any amount, since its answer never passes the exact position.
UNBOUNDED = 2**63 - 1


def planned_offsets(step: Step) -> dict[TP, int] | None:
    """A group write's planned offsets (its ceiling for MM2's moves); None for every other step."""
    p = step.payload
    if not isinstance(p, GroupOffsetsWrite):
        return None
    return {
        (r.topic, r.partition): UNBOUNDED if r.method is TranslationMethod.AFTER_CATCH_UP else r.offset for r in p.rows
    }


def step_failures(step: Step, view: StateView, *, accepted: Collection[TP] = ()) -> list[str]:
    """``failures`` of the step's precondition, with a group write's planned offsets as the ceiling."""
    return failures(step.precondition, view, ceiling=planned_offsets(step), accepted=accepted)


def require_step(step: Step, view: StateView, *, what: str) -> None:
    """Raise ``PreconditionError`` naming every part of the step's precondition that does not hold."""
    problems = step_failures(step, view)
    if problems:
        raise PreconditionError(f"{what}: precondition does not hold: " + "; ".join(problems))
