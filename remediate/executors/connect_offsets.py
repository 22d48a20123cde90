"""Connector offset steps: REST ``DELETE``/``PATCH /offsets`` (3.6+) and byte-exact tombstones (any Connect).

The before-state journaled is the offsets read at apply time, so rollback restores exactly what was there
when the write happened, even if it moved between plan and apply.

Rollback guard: the offsets must still be what apply left. The one exception is a connector that a later
completed step of the same apply let run again (resume, re-create): it re-wrote its own offsets as it
replicated, which is the expected effect, not someone else's change; the guard then requires only that
it is halted again (rollback undoes the later step first).
"""

from __future__ import annotations

import time
from typing import Any

from mm2ctl.connect_client import ConnectorOffset as RestOffset
from mm2ctl.core.errors import ApplyError
from mm2ctl.core.kafka import records
from mm2ctl.plans.fingerprint import JSONable, canonical_json, thaw_json
from mm2ctl.plans.offsets import TombstoneRecord
from mm2ctl.plans.payloads import ConnectOffsetsPatch, ConnectOffsetsTombstone
from mm2ctl.plans.preconditions import WorkerGroupHasNoMembers, iter_preconditions
from mm2ctl.plans.steps import Step
from mm2ctl.remediate.executors.base import ExecContext, UndoContext, as_dict, step_connector, step_topic
from mm2ctl.remediate.precondition_checks import StateView, failures


def _halted(ctx: ExecContext, name: str) -> list[str]:
    state = ctx.live.connector_state(name)
    return [] if state in ("STOPPED", None) else [f"{name} is {state}; offsets can only change while it is STOPPED"]


def _patch(ctx: ExecContext, name: str, entries: list[dict[str, Any]]) -> None:
    if entries:
        ctx.live.require_connect().patch_offsets(
            name, [RestOffset(partition=e["partition"], offset=e["offset"]) for e in entries]
        )


class RestDelete:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return {"offsets": ctx.live.connector_offsets(step_connector(step))}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        return ctx.live.connector_offsets(step_connector(step)) == []

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        message = ctx.live.require_connect().delete_offsets(step_connector(step))
        ctx.progress(f"{step_connector(step)}: {message or 'offsets reset'}")
        return {"offsets": ctx.live.connector_offsets(step_connector(step))}

    def simulate(self, step: Step, view: StateView) -> None:
        view.offsets[step_connector(step)] = []

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        problems = _halted(ctx, step_connector(step))
        if not undo.connector_ran_later and ctx.live.connector_offsets(step_connector(step)) != []:
            problems.append(f"{step_connector(step)} has offsets again; apply left none")
        return problems

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        before = as_dict(undo.before).get("offsets") or []
        name = step_connector(step)
        wanted = {canonical_json(o["partition"]) for o in before}
        # Partitions written since (a later resume) but absent before are removed: exact before-offsets.
        extra = [
            {"partition": o["partition"], "offset": None}
            for o in ctx.live.connector_offsets(name)
            if canonical_json(o["partition"]) not in wanted
        ]
        _patch(ctx, name, list(before) + extra)
        return "restored", {"offsets": ctx.live.connector_offsets(name)}


class RestPatch:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return {"offsets": ctx.live.connector_offsets(step_connector(step))}

    def _desired(self, step: Step) -> dict[str, Any]:
        assert isinstance(step.payload, ConnectOffsetsPatch)
        return {
            canonical_json(thaw_json(o.partition)): None if o.offset is None else thaw_json(o.offset)
            for o in step.payload.offsets
        }

    def _current(self, step: Step, ctx: ExecContext) -> dict[str, Any]:
        return {canonical_json(o["partition"]): o["offset"] for o in ctx.live.connector_offsets(step_connector(step))}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        current = self._current(step, ctx)
        return all(current.get(k) == v for k, v in self._desired(step).items())

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        assert isinstance(step.payload, ConnectOffsetsPatch)
        _patch(
            ctx,
            step_connector(step),
            [{"partition": thaw_json(o.partition), "offset": thaw_json(o.offset)} for o in step.payload.offsets],
        )
        return {"offsets": ctx.live.connector_offsets(step_connector(step))}

    def simulate(self, step: Step, view: StateView) -> None:
        current = {canonical_json(o["partition"]): o for o in view.connector_offsets(step_connector(step))}
        assert isinstance(step.payload, ConnectOffsetsPatch)
        for o in step.payload.offsets:
            key = canonical_json(thaw_json(o.partition))
            if o.offset is None:
                current.pop(key, None)
            else:
                current[key] = {"partition": thaw_json(o.partition), "offset": thaw_json(o.offset)}
        view.offsets[step_connector(step)] = [current[k] for k in sorted(current)]

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        problems = _halted(ctx, step_connector(step))
        if not undo.connector_ran_later and not self.is_done(step, ctx):
            problems.append(f"the patched offsets of {step_connector(step)} changed since apply")
        return problems

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        before = {canonical_json(o["partition"]): o for o in (as_dict(undo.before).get("offsets") or [])}
        entries = []
        for key in self._desired(step):
            old = before.get(key)
            entries.append(old if old is not None else {"partition": _partition_of(step, key), "offset": None})
        _patch(ctx, step_connector(step), entries)
        return "restored", {"offsets": ctx.live.connector_offsets(step_connector(step))}


def _partition_of(step: Step, key: str) -> Any:
    assert isinstance(step.payload, ConnectOffsetsPatch)
    for o in step.payload.offsets:
        if canonical_json(thaw_json(o.partition)) == key:
            return thaw_json(o.partition)
    raise KeyError(key)


def _newest(step: Step, ctx: ExecContext) -> dict[tuple[int, str], str | None]:
    assert isinstance(step.payload, ConnectOffsetsTombstone)
    cluster, topic = step_topic(step)
    return ctx.view.stored_values(cluster, topic, step.payload.connector)


def _produce(step: Step, ctx: ExecContext, recs: list[TombstoneRecord], *, restore: bool) -> None:
    cluster, topic = step_topic(step)
    batch = [(r.key, r.original_value if restore else None, r.partition) for r in recs]
    records.produce(ctx.live.kafka_config(cluster), topic, batch)


class Tombstones:
    """Null values for the connector's stored keys: exact key bytes, the partition each was read from."""

    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        newest = _newest(step, ctx)
        assert isinstance(step.payload, ConnectOffsetsTombstone)
        return {
            "records": [
                {"partition": r.partition, "key_b64": r.key_b64, "value_b64": newest.get((r.partition, r.key_b64))}
                for r in step.payload.records
            ]
        }

    def _live_keys(self, step: Step, ctx: ExecContext) -> list[TombstoneRecord]:
        newest = _newest(step, ctx)
        assert isinstance(step.payload, ConnectOffsetsTombstone)
        return [r for r in step.payload.records if newest.get((r.partition, r.key_b64)) is not None]

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        return not self._live_keys(step, ctx)

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        assert isinstance(step.payload, ConnectOffsetsTombstone)
        _produce(step, ctx, list(step.payload.records), restore=False)
        # A task that was still shutting down may commit once more after the tombstones; re-check and
        # re-tombstone (bounded), so the step only completes when the worker would load no offset.
        deadline = time.monotonic() + 15
        while (left := self._live_keys(step, ctx)) and time.monotonic() < deadline:
            _produce(step, ctx, left, restore=False)
        if self._live_keys(step, ctx):
            raise ApplyError(f"offsets of {step.payload.connector} keep being re-written; is a task still running?")
        ctx.progress(f"{step.payload.connector}: {len(step.payload.records)} stored offset(s) tombstoned")
        return {"tombstoned": len(step.payload.records)}

    def simulate(self, step: Step, view: StateView) -> None:
        assert isinstance(step.payload, ConnectOffsetsTombstone)
        cluster, topic = step_topic(step)
        view.tombstoned |= {(cluster, topic, r.key_b64) for r in step.payload.records}

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        assert isinstance(step.payload, ConnectOffsetsTombstone)
        problems = []
        live = ctx.live
        if live.connect is not None:
            problems += _halted(ctx, step.payload.connector)
        # Dedicated MM2: its workers must still be gone, or they would overwrite what rollback restores.
        problems += [
            p
            for c in iter_preconditions(step.precondition)
            if isinstance(c, WorkerGroupHasNoMembers)
            for p in failures(c, ctx.view)
        ]
        if not undo.connector_ran_later and not self.is_done(step, ctx):
            problems.append(f"offsets of {step.payload.connector} were written again since apply")
        return problems

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        assert isinstance(step.payload, ConnectOffsetsTombstone)
        before = {(r["partition"], r["key_b64"]): r["value_b64"] for r in as_dict(undo.before).get("records") or []}
        restore = [
            TombstoneRecord(
                partition=r.partition,
                key_b64=r.key_b64,
                original_value_b64=before.get((r.partition, r.key_b64), r.original_value_b64),
            )
            for r in step.payload.records
        ]
        with_value = [r for r in restore if r.original_value_b64 is not None]
        _produce(step, ctx, with_value, restore=True)
        gone = [r for r in restore if r.original_value_b64 is None]
        if gone:
            _produce(step, ctx, gone, restore=False)
        return "restored", {"records": len(restore)}
