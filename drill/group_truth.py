"""The group-types drill's truth, counted by content: what a group lost and got again after a move (``score``),
and each type's row with the goal of the mm2ctl methods judged (``rows``)."""

from __future__ import annotations

from collections.abc import Mapping

from mm2ctl.core.kafka.group_admin import GROUP_TYPES
from mm2ctl.drill.group_result import GroupTypeRow
from mm2ctl.drill.group_run import PARTITIONS, GroupTypesRun, Seq
from mm2ctl.drill.group_strategies import Planned


def score(everything: set[Seq], processed: set[Seq], got: list[Seq]) -> tuple[int, int]:
    """(lost, delivered again): records of ``everything`` not in ``processed`` that ``got`` lacks; deliveries
    in ``got`` of a processed record, or of one ``got`` already held."""
    seen: set[Seq] = set()
    again = 0
    for s in got:
        if s in processed or s in seen:
            again += 1
        seen.add(s)
    return len(everything - processed - seen), again


def _all_records(per_partition: int) -> set[Seq]:
    return {(p, s) for p in PARTITIONS for s in range(per_partition)}


def score_rows(
    run: GroupTypesRun, method: str, got: Mapping[str, list[Seq]], per_partition: int, planned: Planned,
    notes: Mapping[str, str],
) -> list[GroupTypeRow]:  # fmt: skip
    """Score each type's group of ``method`` and judge the mm2ctl ones; what each got counts as processed."""
    rows = []
    for t in GROUP_TYPES:
        g = run.group(method, t)
        lost, again = score(_all_records(per_partition), run.processed[g], got[g])
        run.processed[g] |= set(got[g])
        counted = planned.again.get(g) if method != "mm2" else None
        goal: str | None = None
        met: bool | None = None
        if method != "mm2" and t == "share":
            goal, met = "lose nothing; deliver again what the plan counts", lost == 0 and again == counted
        elif method != "mm2":
            goal, met = "lose nothing, deliver nothing again", lost == 0 and again == 0
        note = notes.get(t, "") if met is not False else f"GOAL MISSED ({goal}); {notes.get(t, '')}".rstrip("; ")
        resumed_on = "source" if method == "failback" else "target"
        rows.append(GroupTypeRow(t, method, g, resumed_on, lost, again, counted, goal, met, note))
    return rows
