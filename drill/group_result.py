"""What the group-types drill found: one row per group type and method (``GroupTypeRow``), the drill as a whole
(``GroupTypesDrill``), and its plain-text table (``table``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from mm2ctl.core.kafka.group_admin import GROUP_TYPES


@dataclass(frozen=True)
class GroupTypeRow:
    """One group type moved one way, counted by content on the cluster it resumed on."""

    group_type: str
    method: str
    group: str
    resumed_on: str
    lost: int
    delivered_again: int
    #: Share groups moved by mm2ctl: the records the plan's note says were acknowledged past the start offset.
    planned_again: int | None = None
    #: The goal (None: measured, no goal) and whether it was met.
    goal: str | None = None
    met: bool | None = None
    note: str = ""


@dataclass(frozen=True)
class GroupTypesDrill:
    pair: str
    topic: str
    remote_topic: str
    partitions: int
    first: int
    later: int
    more: int
    accepted: tuple[int, ...]
    rows: tuple[GroupTypeRow, ...]
    seconds: float
    workdir: str
    notes: tuple[str, ...] = ()
    #: The offset the share groups released in every partition (-1: none).
    released: int = -1

    @property
    def goals_met(self) -> bool:
        return all(r.met is not False for r in self.rows)

    def row(self, group_type: str, method: str) -> GroupTypeRow | None:
        return next((r for r in self.rows if (r.group_type, r.method) == (group_type, method)), None)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["goals_met"] = self.goals_met
        return doc


_COLUMNS = (("mm2", "MM2 alone: lost", 16), ("mm2ctl", "mm2ctl: lost", 15), ("failback", "failback: lost", 17))
_LABELS = {"mm2": "MM2 alone", "mm2ctl": "mm2ctl", "failback": "failback"}


def _summary(rows: list[GroupTypeRow]) -> str:
    """A type's note column: the goals it missed, and the share records the plans count."""
    missed = [_LABELS[r.method] for r in rows if r.met is False]
    counted = [f"{r.planned_again} ({_LABELS[r.method]})" for r in rows if r.planned_again is not None]
    parts = [f"GOAL MISSED: {', '.join(missed)}"] if missed else []
    if counted:
        parts.append(f"acknowledged past a gap, counted by the plan: {', '.join(counted)}")
    return "; ".join(parts)


def table(result: GroupTypesDrill) -> list[str]:
    """The drill as a plain-text table: one line per group type with what each method lost and delivered
    again, then each row's note (what MM2 left on the target, what mm2ctl's plan wrote) and the goal."""
    lines = [
        f"failover drill per group type on {result.pair}: {result.topic} -> {result.remote_topic}, "
        f"{result.partitions} partitions, {result.first} records each before the groups stopped, "
        f"{result.later} after, {result.more} more before the failback ({result.seconds:.0f}s)",
        "",
        f"{'group type':<12}" + "".join(f"{head:>{width}}{'again':>7}" for _, head, width in _COLUMNS) + "   note",
    ]
    details: list[str] = []
    for t in GROUP_TYPES:
        rows = [r for m, _, _ in _COLUMNS if (r := result.row(t, m)) is not None]
        cells = ""
        for method, _, width in _COLUMNS:
            r = result.row(t, method)
            cells += f"{'-' if r is None else r.lost:>{width}}{'-' if r is None else r.delivered_again:>7}"
        lines.append(f"{t:<12}{cells}   {_summary(rows)}".rstrip())
        for i, r in enumerate(x for x in rows if x.note):
            details.append(f"  {t if i == 0 else '':<10}{_LABELS[r.method]:<11}{r.note}")
    verdict = "met" if result.goals_met else "MISSED"
    return [
        *lines,
        "",
        "notes:",
        *details,
        "",
        f"goal {verdict}: mm2ctl's failover and failback lose nothing and deliver nothing again, but for a share "
        "group's records acknowledged past its start offset, which the plan counts",
    ]
