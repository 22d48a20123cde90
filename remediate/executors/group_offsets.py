"""Failover steps: write a group's translated offsets, read them back, and wait for MM2 to catch up.

A group's offsets are written in one ``AlterConsumerGroupOffsets`` call, so a consumer that starts on the
target sees either none or all of them. The before-state journaled at apply (every committed offset of the
group, and whether it had any) is what rollback restores: previous offsets are written back; partitions that
had none are removed by deleting the group when it had no offsets at all before. Kafka's OffsetDelete (needed
to remove single partitions of a group that keeps others) is not in confluent-kafka, so those partitions are
reported by rollback instead (``plans.planners.failover.planner.NEW_PARTITIONS_NOTE``).
"""

from __future__ import annotations

import time
from typing import Any

from mm2ctl.core.errors import ApplyError, KafkaClusterError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.translation.record_sources import last_record_offsets
from mm2ctl.core.translation.rule import Bounds
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.offset_metadata import ROLLBACK, parse_provenance, same_metadata, write_metadata
from mm2ctl.plans.payloads import GroupOffsetsVerify, GroupOffsetsWrite, WaitForCatchUp
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import GroupTarget
from mm2ctl.remediate.executors.base import ExecContext, ReadOnlyStep, UndoContext, as_dict
from mm2ctl.remediate.precondition_checks import StateView

#: The pause between two reads of MM2's position while waiting for its catch-up: one Connect request each, and
#: MM2 commits its position every offset flush (the worker's ``offset.flush.interval.ms``), so the wait ends
#: at most this long after the flush that shows it.
CATCH_UP_POLL_S = 0.1


def _target(step: Step) -> GroupTarget:
    assert isinstance(step.target, GroupTarget)
    return step.target


def _rows(step: Step) -> dict[TP, int]:
    assert isinstance(step.payload, GroupOffsetsWrite)
    return {(r.topic, r.partition): r.offset for r in step.payload.rows}


def _offsets_json(offsets: dict[TP, int]) -> list[list[Any]]:
    return [[t, p, o] for (t, p), o in sorted(offsets.items())]


def _raise_on_errors(what: str, results: list[Any]) -> None:
    bad = [r for r in results if r.error is not None]
    if bad:
        first = bad[0]
        raise KafkaClusterError(
            f"{what}: {len(bad)} partition(s) failed, first {first.topic}/{first.partition}: {first.error.message}",
            code=first.error.code,
        )


class WriteGroupOffsets:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        t = _target(step)
        current = ctx.live.group_offsets(t.cluster, t.group)
        return {"exists": bool(current), "offsets": _offsets_json(current)}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        t = _target(step)
        current = ctx.live.group_offsets(t.cluster, t.group)
        return all(current.get(tp) == off for tp, off in _rows(step).items())

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        t = _target(step)
        rows = _rows(step)
        assert isinstance(step.payload, GroupOffsetsWrite)
        metadata = {t.group: write_metadata(ctx.plan_id, step.payload.rows)}
        results = ctx.live.write_group_offsets(t.cluster, {t.group: rows}, metadata=metadata)[t.group]
        _raise_on_errors(f"writing the offsets of group {t.group} on {t.cluster}", results)
        ctx.progress(f"wrote {len(rows)} offset(s) of group {t.group} on {t.cluster}")
        return {"offsets": _offsets_json(rows), "provenance": True}

    def simulate(self, step: Step, view: StateView) -> None:
        return None

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        t = _target(step)
        problems = []
        members = ctx.live.group_members(t.cluster, t.group)
        if members:
            problems.append(f"group {t.group} on {t.cluster} has {members} active member(s)")
        current = ctx.live.group_offsets(t.cluster, t.group)
        moved = [tp for tp, off in _rows(step).items() if current.get(tp) != off]
        if moved:
            problems.append(
                f"{len(moved)} offset(s) of group {t.group} moved since the apply wrote them "
                f"(first {moved[0][0]}/{moved[0][1]}); a consumer has run"
            )
        elif as_dict(undo.after).get("provenance") and ctx.live.group_type(t.cluster, t.group) != "share":
            # The same offsets, but committed since by someone else (a consumer that read nothing new). Only
            # for writes that carried their provenance; a share group keeps no metadata.
            metadata = ctx.live.admin(t.cluster).commit_metadata(t.group)
            foreign = [tp for tp in _rows(step) if (parse_provenance(metadata.get(tp)) or ("",))[0] != ctx.plan_id]
            if foreign:
                problems.append(
                    f"{len(foreign)} offset(s) of group {t.group} were committed again since the apply wrote them, "
                    f"not by mm2ctl (first {foreign[0][0]}/{foreign[0][1]}: metadata "
                    f"{metadata.get(foreign[0])!r}); a consumer has run"
                )
        return problems

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        t = _target(step)
        before = as_dict(undo.before)
        previous: dict[TP, int] = {(str(x[0]), int(x[1])): int(x[2]) for x in before.get("offsets", [])}
        rows = _rows(step)
        if not previous:
            # The group had no offsets at all before: deleting it is the exact inverse.
            current = ctx.live.group_offsets(t.cluster, t.group)
            results = ctx.live.delete_group_offsets(t.cluster, t.group, sorted(current))
            _raise_on_errors(f"deleting group {t.group} on {t.cluster}", results)
            ctx.progress(f"deleted group {t.group} on {t.cluster} (it did not exist before the apply)")
            return "group_deleted", {"offsets": []}
        restore = {tp: previous[tp] for tp in rows if tp in previous}
        added = sorted(tp for tp in rows if tp not in previous)
        if restore:
            metadata = {t.group: same_metadata(ctx.plan_id, restore, ROLLBACK)}
            results = ctx.live.write_group_offsets(t.cluster, {t.group: restore}, metadata=metadata)[t.group]
            _raise_on_errors(f"restoring the offsets of group {t.group} on {t.cluster}", results)
        if added:
            ctx.progress(
                f"group {t.group}: restored {len(restore)} offset(s); {len(added)} partition(s) that had no "
                f"offset before keep the written one (no OffsetDelete in confluent-kafka): "
                + ", ".join(f"{tp[0]}:{tp[1]}" for tp in added)
                + f". Remove them with: kafka-consumer-groups --delete-offsets --group {t.group} "
                + " ".join(f"--topic {tp[0]}:{tp[1]}" for tp in added)
            )
            return "restored_except_new_partitions", {
                "restored": _offsets_json(restore),
                "left_in_place": [[tp[0], tp[1]] for tp in added],
            }
        return "restored", {"restored": _offsets_json(restore)}


class VerifyGroupOffsets(ReadOnlyStep):
    def _expected(self, step: Step) -> dict[TP, int | None]:
        assert isinstance(step.payload, GroupOffsetsVerify)
        return {(o.topic, o.partition): o.offset for o in step.payload.expected}

    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        t = _target(step)
        current = ctx.live.group_offsets(t.cluster, t.group)
        return {"offsets": _offsets_json({tp: o for tp, o in current.items() if tp in self._expected(step)})}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        return False  # read only: always run it again

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        t = _target(step)
        current = ctx.live.group_offsets(t.cluster, t.group)
        wrong = [(tp, want, current.get(tp)) for tp, want in self._expected(step).items() if current.get(tp) != want]
        if wrong:
            (topic, part), want, got = wrong[0]
            raise ApplyError(
                f"group {t.group} on {t.cluster}: {len(wrong)} offset(s) read back differ from what "
                f"was written (first {topic}/{part}: expected {want}, found {got})"
            )
        ctx.progress(f"group {t.group}: {len(self._expected(step))} offset(s) read back as written")
        return {"verified": len(self._expected(step))}


class WaitForCatchUpExecutor(ReadOnlyStep):
    """Polls the MirrorSourceConnector's committed offsets (the last replicated upstream offset per source
    partition) until each partition reaches its mark: the source's last record when the wait starts, or the
    plan's ``upstream_offset`` if that is later. A record the groups read cannot lie past the mark: their
    offsets are in the plan's fingerprint, checked before the wait."""

    def _marks(self, step: Step, ctx: ExecContext) -> dict[TP, int]:
        assert isinstance(step.payload, WaitForCatchUp)
        tps = [(t.topic, t.partition) for t in step.payload.targets]
        bounds = ctx.live.admin(step.payload.source_cluster).partition_bounds(tps)
        marks = {(t.topic, t.partition): t.upstream_offset for t in step.payload.targets}
        ends: dict[TP, Bounds] = {}
        for tp, pb in bounds.items():
            if pb.error is not None or pb.earliest is None or pb.latest is None:
                raise ApplyError(f"cannot read the end of {step.payload.source_cluster}:{tp[0]}/{tp[1]}: {pb.error}")
            ends[tp] = Bounds(pb.earliest, pb.latest)
        # Every partition's last record through one consumer (one fetch round, not one per partition).
        for tp, last in last_record_offsets(ctx.live.kafka_config(step.payload.source_cluster), ends).items():
            if last is not None:
                marks[tp] = max(marks[tp], last)
        return marks

    def _lagging(self, step: Step, ctx: ExecContext, marks: dict[TP, int]) -> list[str]:
        """``topic/partition copied up to X of Y (N behind)`` for each partition MM2 has not reached."""
        name = getattr(step.target, "connector", "")
        assert isinstance(step.payload, WaitForCatchUp)
        got: dict[TP, int] = {}
        for o in ctx.live.connector_offsets(name):
            part, off = o.get("partition") or {}, o.get("offset") or {}
            if part.get("cluster") == step.payload.source_cluster and "offset" in off:
                got[(str(part.get("topic")), int(part.get("partition", -1)))] = int(off["offset"])
        out = []
        for (topic, p), mark in sorted(marks.items()):
            at = got.get((topic, p), -1)
            if at < mark:
                where = "nothing" if at < 0 else f"up to {at}"
                out.append(f"{topic}/{p} copied {where} of {mark} ({mark - at} behind)")
        return out

    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        """The before-state: what lags behind the plan's marks (``run`` reads the source's ends again, so the
        source is read once per apply, not twice)."""
        assert isinstance(step.payload, WaitForCatchUp)
        planned = {(t.topic, t.partition): t.upstream_offset for t in step.payload.targets}
        return {"lagging": self._lagging(step, ctx, planned)}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        return not self._lagging(step, ctx, self._marks(step, ctx))

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        assert isinstance(step.payload, WaitForCatchUp)
        marks = self._marks(step, ctx)
        ctx.progress(
            f"waiting for MM2 to copy up to the source's last records of {len(marks)} partition(s) "
            f"(timeout {step.payload.timeout_seconds:g}s)"
        )
        deadline = time.monotonic() + step.payload.timeout_seconds
        while True:
            lagging = self._lagging(step, ctx, marks)
            if not lagging:
                ctx.progress(f"MM2 caught up on {len(marks)} partition(s)")
                return {"caught_up": len(marks), "marks": [[t, p, m] for (t, p), m in sorted(marks.items())]}
            if time.monotonic() > deadline:
                more = f"; {len(lagging) - 10} more" if len(lagging) > 10 else ""
                raise ApplyError(
                    f"MM2 did not catch up within {step.payload.timeout_seconds:g}s, so nothing was stopped or "
                    f"written: {len(lagging)} partition(s) behind: " + "; ".join(lagging[:10]) + more
                )
            time.sleep(CATCH_UP_POLL_S)
