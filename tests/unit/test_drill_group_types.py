"""The group-types drill's counting and table, without a lab."""

from __future__ import annotations

import dataclasses

from mm2ctl.drill.group_load import seqs
from mm2ctl.drill.group_result import GroupTypeRow, GroupTypesDrill, table
from mm2ctl.drill.group_truth import score


def test_lost_and_delivered_again_are_counted_by_content() -> None:
    everything = {(0, s) for s in range(6)}
    processed = {(0, 0), (0, 1), (0, 2)}
    # Got 2 (processed: again), 3 twice (once again), 5; never 4 (lost).
    assert score(everything, processed, [(0, 2), (0, 3), (0, 3), (0, 5)]) == (1, 2)
    assert score(everything, processed, []) == (3, 0)
    assert seqs([b"p1-000042", b"other", None, b"p0-7"]) == [(1, 42), (0, 7)]


def _row(t: str, method: str, lost: int, again: int, **kw: object) -> GroupTypeRow:
    return GroupTypeRow(t, method, f"iso-x-{method}-{t}", "target", lost, again, **kw)  # type: ignore[arg-type]


def test_the_table_has_a_line_per_type_and_the_goal() -> None:
    rows = [_row(t, "mm2", 0, 0) for t in ("classic", "consumer")]
    rows += [_row("share", "mm2", 110, 0, note="no start offset"), _row("streams", "mm2", 0, 400)]
    for method in ("mm2ctl", "failback"):
        rows += [_row(t, method, 0, 0, met=True) for t in ("classic", "consumer", "streams")]
        rows.append(_row("share", method, 0, 30, planned_again=30, met=True, note="30 acknowledged past"))
    result = GroupTypesDrill(
        "asrc->adst", "iso-a-in", "asrc.iso-a-in", 2, 60, 40, 20, (40, 25), tuple(rows), 70.0, "/w"
    )
    lines = table(result)
    assert lines[2].split() == ["group", "type", "MM2", "alone:", "lost", "again", "mm2ctl:", "lost", "again",
                                "failback:", "lost", "again", "note"]  # fmt: skip
    share = next(line for line in lines if line.startswith("share"))
    assert share.split()[:7] == ["share", "110", "0", "0", "30", "0", "30"]
    assert share.endswith("acknowledged past a gap, counted by the plan: 30 (mm2ctl), 30 (failback)")
    notes = lines[lines.index("notes:") + 1 :]
    assert notes[:3] == [
        "  share     MM2 alone  no start offset",
        "            mm2ctl     30 acknowledged past",
        "            failback   30 acknowledged past",
    ]
    assert lines[-1].startswith("goal met")
    assert result.goals_met and result.to_json()["goals_met"] is True

    missed = dataclasses.replace(result, rows=(_row("share", "mm2ctl", 1, 0, met=False),))
    assert not missed.goals_met and table(missed)[-1].startswith("goal MISSED")
    assert "GOAL MISSED: mm2ctl" in next(line for line in table(missed) if line.startswith("share"))
