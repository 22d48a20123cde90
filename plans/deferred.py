"""Rows translated at apply time: a failover plan's group partitions that MM2 had not copied up to when the
plan was made.

Such a row cannot be translated by planning (its records are not on the target yet), so the plan writes it
with ``TranslationMethod.AFTER_CATCH_UP`` and a placeholder offset, and a ``group_offsets_translate`` step
(after the catch-up wait and the connectors' stop) translates it. That step's outcome, kept in the journal,
holds the answers; ``with_translations`` gives the plan as apply then runs it: each deferred row of a write,
its read-back and its range check carry the translated offset and method. Resume and rollback rebuild the
same plan from the journal (``plan_as_applied``), so every step after the translation acts on one set of
offsets however often the process restarts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from mm2ctl.core.errors import JournalError
from mm2ctl.plans.document import Plan
from mm2ctl.plans.fingerprint import FrozenJSON, JSONable, thaw_json
from mm2ctl.plans.offsets import GroupOffset
from mm2ctl.plans.payloads import GroupOffsetRow, GroupOffsetsVerify, GroupOffsetsWrite, TranslationMethod
from mm2ctl.plans.preconditions import AllOf, GroupOffsetsInRange, Precondition
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import GroupTarget

#: (cluster, group, target topic, partition) -> (offset, method) for each row translated after the catch-up.
Translated = Mapping[tuple[str, str, str, int], tuple[int, TranslationMethod]]


def translated_json(cluster: str, found: Translated) -> JSONable:
    """A translation step's outcome as the journal keeps it."""
    return {
        "cluster": cluster,
        "rows": [[g, t, p, o, m.value] for (_c, g, t, p), (o, m) in sorted(found.items())],
    }


def parse_translated(after: FrozenJSON) -> dict[tuple[str, str, str, int], tuple[int, TranslationMethod]]:
    """The answers a completed translation step journaled (``translated_json``)."""
    doc = thaw_json(after)
    try:
        assert isinstance(doc, dict)
        cluster = str(doc["cluster"])
        return {(cluster, str(g), str(t), int(p)): (int(o), TranslationMethod(m)) for g, t, p, o, m in doc["rows"]}
    except (AssertionError, KeyError, TypeError, ValueError) as exc:
        raise JournalError(f"a group_offsets_translate step's outcome is not what mm2ctl writes: {exc}") from exc


def _row(r: GroupOffsetRow, key: tuple[str, str, str, int], found: Translated) -> GroupOffsetRow:
    if r.method is not TranslationMethod.AFTER_CATCH_UP or key not in found:
        return r
    offset, method = found[key]
    return dataclasses.replace(r, offset=offset, method=method)


def _precondition(pre: Precondition, offsets: Mapping[tuple[str, int], int]) -> Precondition:
    if isinstance(pre, AllOf):
        return AllOf(conditions=tuple(_precondition(c, offsets) for c in pre.conditions))
    if isinstance(pre, GroupOffsetsInRange):
        return GroupOffsetsInRange(
            cluster=pre.cluster,
            offsets=tuple(
                GroupOffset(topic=o.topic, partition=o.partition, offset=offsets.get((o.topic, o.partition), o.offset))
                for o in pre.offsets
            ),
        )
    return pre


def _step(step: Step, found: Translated) -> Step:
    t = step.target
    if not isinstance(t, GroupTarget):
        return step
    p = step.payload
    if isinstance(p, GroupOffsetsWrite):
        rows = tuple(_row(r, (t.cluster, t.group, r.topic, r.partition), found) for r in p.rows)
        if rows == p.rows:
            return step
        offsets = {(r.topic, r.partition): r.offset for r in rows}
        return dataclasses.replace(
            step, payload=GroupOffsetsWrite(rows=rows), precondition=_precondition(step.precondition, offsets)
        )
    if isinstance(p, GroupOffsetsVerify):
        expected = tuple(
            dataclasses.replace(o, offset=found[(t.cluster, t.group, o.topic, o.partition)][0])
            if (t.cluster, t.group, o.topic, o.partition) in found
            else o
            for o in p.expected
        )
        return (
            step
            if expected == p.expected
            else dataclasses.replace(step, payload=dataclasses.replace(p, expected=expected))
        )
    return step


def with_translations(plan: Plan, found: Translated) -> Plan:
    """``plan`` with every deferred row that ``found`` answers carrying its translated offset and method."""
    if not found:
        return plan
    return dataclasses.replace(plan, steps=tuple(_step(s, found) for s in plan.steps))


def plan_as_applied(plan: Plan, completed_afters: Mapping[int, FrozenJSON]) -> Plan:
    """``plan`` with the answers of its completed translation steps (their journaled outcomes, by index)."""
    found: dict[tuple[str, str, str, int], tuple[int, TranslationMethod]] = {}
    for step in plan.steps:
        if step.kind is StepKind.GROUP_OFFSETS_TRANSLATE and step.index in completed_afters:
            found.update(parse_translated(completed_afters[step.index]))
    return with_translations(plan, found)


def has_deferred_rows(plan: Plan) -> bool:
    """Does the plan translate rows after a catch-up (a ``group_offsets_translate`` step)?"""
    return any(s.kind is StepKind.GROUP_OFFSETS_TRANSLATE for s in plan.steps)
