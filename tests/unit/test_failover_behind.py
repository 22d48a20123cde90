"""Failover while MM2 lags, the pure parts: which rows MM2 has not copied up to, the log-end rule, and the plan
apply runs once the rows deferred to after the catch-up are translated (``plans.deferred``)."""

from __future__ import annotations

import dataclasses

import pytest

from mm2ctl.core.errors import JournalError
from mm2ctl.core.translation.positions import Sides, at_log_end
from mm2ctl.core.translation.rule import Bounds
from mm2ctl.plans.deferred import parse_translated, plan_as_applied, translated_json, with_translations
from mm2ctl.plans.document import Plan
from mm2ctl.plans.fingerprint import freeze_json
from mm2ctl.plans.payloads import GroupOffsetsVerify, GroupOffsetsWrite, TranslationMethod
from mm2ctl.plans.planners.failover.planner import FailoverRow, not_copied
from mm2ctl.plans.preconditions import AllOf, GroupOffsetsInRange
from mm2ctl.plans.steps import StepKind
from mm2ctl.remediate.precondition_checks import UNBOUNDED, planned_offsets
from tests.unit.test_plan_samples import sample_plan

M = TranslationMethod


def _row(source_offset: int, method: TranslationMethod | None, next_copy: int | None) -> FailoverRow:
    target = None if method is None else 10
    return FailoverRow("g", "t", "A.t", 0, source_offset, target, None, method, "", None, next_copy)


@pytest.mark.parametrize(
    ("row", "late"),
    [
        (_row(1_800, M.OFFSET_SYNC_NEXT, 800), True),  # the cautious rule past MM2's copy
        (_row(1_800, None, 800), True),  # untranslatable now, translatable once copied
        (_row(1_800, M.VERIFIED_DELTA, 800), False),  # the records prove the copy exists
        (_row(800, M.OFFSET_SYNC_NEXT, 800), False),  # at MM2's position: the last record read is copied
        (_row(1_800, M.OFFSET_SYNC_NEXT, None), False),  # MM2's position unknown: not judged
    ],
)
def test_not_copied(row: FailoverRow, late: bool) -> None:
    assert not_copied(row) is late


class _NoRecords:
    def read(self, start: int, end: int) -> list[object]:
        raise AssertionError("the log-end rule reads no record")


def _sides(source: Bounds, copied: int | None, target_end: int = 77) -> Sides:
    return Sides(_NoRecords(), _NoRecords(), source, Bounds(0, target_end), copied_end=copied)  # type: ignore[arg-type]


def test_log_end_needs_the_partition_copied_to_its_end() -> None:
    tr = at_log_end(300, _sides(Bounds(0, 300), 300))
    assert tr is not None and tr.offset == 77 and tr.method is M.LOG_END
    empty = at_log_end(0, _sides(Bounds(0, 0), 0, target_end=0))
    assert empty is not None and empty.offset == 0 and "empty" in empty.detail
    assert at_log_end(300, _sides(Bounds(0, 300), 250)) is None  # MM2 is behind
    assert at_log_end(300, _sides(Bounds(0, 300), None)) is None  # MM2's position is not known
    assert at_log_end(299, _sides(Bounds(0, 300), 300)) is None  # not at the end
    assert at_log_end(300, _sides(Bounds(0, 300), 310)) is None  # a position past the end proves nothing


def _deferred_plan() -> tuple[Plan, int]:
    """The sample plan with the first row of its group write deferred to after the catch-up."""
    plan = sample_plan()
    i = next(s.index for s in plan.steps if s.kind is StepKind.GROUP_OFFSETS_WRITE)
    write = plan.steps[i]
    assert isinstance(write.payload, GroupOffsetsWrite)
    rows = (dataclasses.replace(write.payload.rows[0], method=M.AFTER_CATCH_UP), *write.payload.rows[1:])
    steps = list(plan.steps)
    steps[i] = dataclasses.replace(write, payload=GroupOffsetsWrite(rows=rows))
    return dataclasses.replace(plan, steps=tuple(steps)), i


def test_translations_reach_the_write_its_range_check_and_its_read_back() -> None:
    plan, i = _deferred_plan()
    assert planned_offsets(plan.steps[i]) == {("A.orders", 0): UNBOUNDED, ("A.orders", 1): 51, ("A.payments", 0): 0}
    found = {("B", "billing", "A.orders", 0): (2_345, M.VERIFIED_DELTA)}
    applied = with_translations(plan, found)
    write = applied.steps[i]
    assert isinstance(write.payload, GroupOffsetsWrite) and isinstance(write.precondition, AllOf)
    assert (write.payload.rows[0].offset, write.payload.rows[0].method) == (2_345, M.VERIFIED_DELTA)
    assert [r.offset for r in write.payload.rows][1:] == [51, 0]  # the other rows as planned
    in_range = next(c for c in write.precondition.conditions if isinstance(c, GroupOffsetsInRange))
    assert {(o.topic, o.partition): o.offset for o in in_range.offsets}[("A.orders", 0)] == 2_345
    verify = next(s for s in applied.steps if s.kind is StepKind.GROUP_OFFSETS_VERIFY)
    assert isinstance(verify.payload, GroupOffsetsVerify)
    assert {(o.topic, o.partition): o.offset for o in verify.payload.expected}[("A.orders", 0)] == 2_345
    assert planned_offsets(write) == {("A.orders", 0): 2_345, ("A.orders", 1): 51, ("A.payments", 0): 0}


def test_the_journaled_answers_rebuild_the_same_plan() -> None:
    plan, _write = _deferred_plan()
    translate = next(s.index for s in plan.steps if s.kind is StepKind.GROUP_OFFSETS_TRANSLATE)
    found = {("B", "billing", "A.orders", 0): (2_345, M.VERIFIED_SEARCH)}
    after = freeze_json(translated_json("B", found))
    assert parse_translated(after) == found
    assert plan_as_applied(plan, {translate: after}) == with_translations(plan, found)
    assert plan_as_applied(plan, {}) == plan  # the translation never completed: nothing to substitute
    with pytest.raises(JournalError):
        parse_translated(freeze_json({"cluster": "B", "rows": [["billing", "A.orders"]]}))
