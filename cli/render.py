"""What the CLI shows a person: the inspection's summary table.

The domain types are imported for type checking only, so rendering never pulls Spark or a Kafka client into
a command that does not need them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mm2ctl.inspector.job import InspectResult


# -------------------------------------------------------------------------------------------- inspect


def inspect_summary_lines(result: InspectResult, *, max_problem_rows: int = 40) -> list[str]:
    """The default ``table`` format: per pair and status, then notes, then the problem rows."""
    from mm2ctl.inspector.report import ORDER

    lines: list[str] = []
    summary = result.summary.collect()
    for pair in result.pairs:
        rows = [r for r in summary if r["cluster_pair"] == pair]
        total = rows[0]["pair_partitions"] if rows else 0
        problems = rows[0]["pair_problem_partitions"] if rows else 0
        problem_groups = rows[0]["pair_problem_groups"] if rows else 0
        lines.append(f"{pair}: {total} group partition(s), {problems} problem(s) in {problem_groups} group(s)")
        lines.append(f"  {'status':<26} {'ok':<4} {'partitions':>10} {'groups':>7} {'replay':>9} {'skip':>9}")
        for r in rows:
            lines.append(
                f"  {r['status']:<26} {'yes' if r['is_ok'] else 'NO':<4} {r['partitions']:>10} {r['groups']:>7} "
                f"{_num(r['replay_if_failover_now']):>9} {_num(r['skip_if_failover_now']):>9}"
            )
    for note in result.notes:
        lines.append(f"note: {note.cluster_pair}: {note.topic} on {note.cluster}: {note.message}")
    problems_frame = result.rows.where("NOT is_ok")
    shown = problems_frame.orderBy(*ORDER).limit(max_problem_rows).collect()
    if shown:
        lines.append("")
        lines.append("problem rows (group  topic/partition  source offset -> target offset  status: message)")
        for r in shown:
            target = _num(r["target_offset"])
            lines.append(
                f"  {r['group']}  {r['topic']}/{r['partition']}  {_num(r['source_offset'])} -> {target}"
                f"  {r['status']}: {r['message']}" + (f" [{r['error']}]" if r["error"] else "")
            )
        more = problems_frame.count() - len(shown)
        if more > 0:
            lines.append(f"  … and {more} more; --format csv|json --output FILE writes every row")
    return lines


def _num(value: Any) -> str:
    return "-" if value is None else str(value)
