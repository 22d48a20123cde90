"""Everything the CLI shows a person or a script, in one place: plans, failover rows, the inspection's
summary table, lab status, the drill's table, and the results of apply and rollback.

Renderers return text (or a JSON-ready dict); the command modules only echo it. ``result_json`` gives every
``--json`` result the same tail, ``exit_code`` and ``exit_meaning`` (``core.exit_codes``), so a script reads
any command's outcome the same way.

The domain types are imported for type checking only (and the drill's ``Strategy`` where it is used), so
rendering never pulls Spark or a Kafka client into a command that does not need them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from mm2ctl.core.exit_codes import ExitCode, meaning_of

if TYPE_CHECKING:
    from mm2ctl.core.config.describe import Difference, SetupReport
    from mm2ctl.drill.failover_drill import DrillResult
    from mm2ctl.inspector.output.inspection_result import InspectionResult, RecoveryPoint
    from mm2ctl.inspector.selection import InspectOptions
    from mm2ctl.lab.control import LabInfo, LabStatus
    from mm2ctl.plans.document import Plan
    from mm2ctl.plans.planners.failover.planner import FailoverReport
    from mm2ctl.plans.planners.failover.spark_queries import PlannedQuery
    from mm2ctl.remediate.engine import RunResult


# ------------------------------------------------------------------------------------------- results


def result_json(fields: Mapping[str, Any], code: int = ExitCode.OK) -> str:
    """A ``--json`` result: the command's fields, then the exit code it ends with and what that means."""
    return json.dumps({**fields, "exit_code": int(code), "exit_meaning": meaning_of(code)}, indent=2)


def run_fields(command: str, result: RunResult, plan: Plan, **extra: Any) -> dict[str, Any]:
    """The JSON fields of an apply, resume, dry run or rollback: the steps done and the journal."""
    return {
        "command": command,
        "plan_id": plan.plan_id,
        "dry_run": result.dry_run,
        "steps": list(result.steps),
        "changes": result.changes,
        "journal": None if result.journal is None else str(result.journal),
        **extra,
    }


def dry_run_lines(plan: Plan, result: RunResult) -> list[str]:
    return [
        render_plan(plan),
        f"dry run: every check passed; {result.changes} step(s) would change live state; nothing was written",
    ]


def apply_line(result: RunResult, *, resumed: bool) -> str:
    if resumed:
        return f"apply resumed and finished: {len(result.steps)} step(s); journal {result.journal}"
    return (
        f"apply succeeded: {len(result.steps)} step(s); journal {result.journal} "
        f"(undo with: mm2ctl rollback {result.journal})"
    )


def rollback_lines(result: RunResult) -> list[str]:
    return [*result.steps, "rollback dry run: nothing was changed" if result.dry_run else "rollback finished"]


# ---------------------------------------------------------------------------------------------- plans


def render_plan(plan: Plan) -> str:
    """The human view of a plan: what it was made for, each step, what cannot be undone."""
    lines = [f"plan {plan.plan_id} ({plan.kind.value}{', pair ' + plan.pair if plan.pair else ''})"]
    if plan.untranslatable:
        lines.append(
            f"  UNTRANSLATABLE: {len(plan.untranslatable)} group partition(s) get no offset; their consumers would "
            "resume at auto.offset.reset (apply refuses this plan without --allow-untranslatable):"
        )
        lines += [f"    {u}" for u in plan.untranslatable[:20]]
        if len(plan.untranslatable) > 20:
            lines.append(f"    ... {len(plan.untranslatable) - 20} more (mm2ctl show --json)")
    if plan.description:
        lines.append(f"  {plan.description}")
    lines.append("  clusters: " + ", ".join(f"{a}={cid}" for a, cid in plan.clusters.items()))
    if plan.connect is not None:
        lines.append(
            f"  connect: {', '.join(plan.connect.urls)} (Kafka {plan.connect.version}, "
            f"cluster {plan.connect.kafka_cluster_id})"
        )
    if not plan.steps:
        lines.append("  no changes: nothing to apply")
    for s in plan.steps:
        flag = "" if s.reversible else "  [cannot be undone by rollback]"
        lines.append(f"  {s.index:>2}. {s.kind.value:<26} {s.description}{flag}")
    for note in plan.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def failover_rows(report: FailoverReport, limit: int = 50, header: str = "source offset -> target offset") -> str:
    """``plan failover``'s (or ``plan failback``'s) per-partition decisions, the first ``limit`` of them."""
    lines = [f"  group partitions ({header}, method):"]
    for r in report.rows[:limit]:
        target = "untranslatable" if r.target_offset is None else str(r.target_offset)
        if r.deferred:
            target = f"(after MM2's catch-up; MM2 at {r.mm2_next_offset})"
        before = "" if r.before_offset is None else f" (now {r.before_offset})"
        method = "" if r.method is None else r.method.value
        lines.append(f"    {r.group} {r.source_topic}/{r.partition}: {r.source_offset} -> {target}{before} {method}")
    if len(report.rows) > limit:
        lines.append(f"    ... {len(report.rows) - limit} more (see --json)")
    return "\n".join(lines)


def failover_rows_json(report: FailoverReport) -> list[dict[str, object]]:
    """Every row of ``plan failover --json``."""
    return [
        {
            "group": r.group,
            "source_topic": r.source_topic,
            "target_topic": r.target_topic,
            "partition": r.partition,
            "source_offset": r.source_offset,
            "target_offset": r.target_offset,
            "before_offset": r.before_offset,
            "method": None if r.method is None else r.method.value,
            "delta_candidate": r.delta_candidate,
            "mm2_next_offset": r.mm2_next_offset,
            "detail": r.detail,
        }
        for r in report.rows
    ]


def spark_queries_json(queries: Sequence[PlannedQuery]) -> list[dict[str, object]]:
    """``spark_queries`` of ``plan failover --json``: per checkpoint, the form and output, and every row."""
    return [
        {
            "location": q.location,
            "query_id": q.query_id,
            "batch_id": q.batch_id,
            "uncommitted_batch_id": q.uncommitted_batch_id,
            "form": q.form,
            "output": q.output,
            "refusals": q.refusals,
            "untranslated_sources": q.untranslated_sources,
            "rows": [
                {
                    "name": r.group,
                    "source_index": q.source_indexes.get(r.group),
                    "source_topic": r.source_topic,
                    "target_topic": r.target_topic,
                    "partition": r.partition,
                    "source_offset": r.source_offset,
                    "target_offset": r.target_offset,
                    "method": None if r.method is None else r.method.value,
                    "detail": r.detail,
                }
                for r in q.rows
            ],
        }
        for q in queries
    ]


def spark_queries_table(queries: Sequence[PlannedQuery]) -> str:
    """The Spark queries of ``plan failover``: where each goes, then its partitions."""
    lines = []
    for q in queries:
        lines.append(f"\n  Spark query {q.query_id or q.location} (batch {q.batch_id}): {q.form} -> {q.output}")
        for r in q.rows:
            method = "" if r.method is None else r.method.value
            lines.append(f"    {r.source_topic}/{r.partition}: {r.source_offset} -> {r.target_offset} {method}")
    return "".join(line + "\n" for line in lines).rstrip("\n") if lines else ""


# -------------------------------------------------------------------------------------------- inspect


def inspect_summary_lines(result: InspectionResult) -> list[str]:
    """The default ``table`` format: per pair and status, then notes, then the first problem rows."""
    lines: list[str] = []
    summary = result.summary
    for pair in result.pairs:
        totals = summary.totals[pair]
        lines.append(
            f"{pair}: {totals.partitions} group partition(s), {totals.problem_partitions} problem(s) in "
            f"{totals.problem_groups} group(s)"
        )
        if totals.groups_by_type:
            kinds = ", ".join(f"{kind} {count}" for kind, count in totals.groups_by_type.items())
            lines.append(f"  groups by type: {kinds}")
        if totals.written_by_mm2ctl:
            lines.append(
                f"  target offsets mm2ctl wrote (target_written_by names the plan): {totals.written_by_mm2ctl}"
            )
        lines.append(f"  {'status':<26} {'ok':<4} {'partitions':>10} {'groups':>7} {'replay>=':>9} {'skip<=':>9}")
        for r in summary.statuses:
            if r.pair != pair:
                continue
            lines.append(
                f"  {r.status:<26} {'yes' if r.is_ok else 'NO':<4} {r.partitions:>10} {r.groups:>7} "
                f"{_num(r.replay_if_failover_now_at_least):>9} {_num(r.skip_if_failover_now_at_most):>9}"
            )
    for note in result.notes:
        lines.append(f"note: {note.cluster_pair}: {note.topic} on {note.cluster}: {note.message}")
    shown = summary.problem_rows
    if shown:
        lines.append("")
        lines.append("problem rows (group  topic/partition  source offset -> target offset  status: message)")
        for p in shown:
            lines.append(
                f"  {p['group']}  {p['topic']}/{p['partition']}  {_num(p['source_offset'])} -> "
                f"{_num(p['target_offset'])}  {p['status']}: {p['message']}"
                + (f" {p['explanation']}" if p["explanation"] else "")
                + (f" [{p['error']}]" if p["error"] else "")
            )
        more = summary.problems - len(shown)
        if more > 0:
            lines.append(f"  … and {more} more; --format csv|json --output FILE writes every row")
    return lines


def replication_summary_lines(
    result: InspectionResult, options: InspectOptions, *, max_problem_rows: int = 40
) -> list[str]:
    """The ``table`` format's replication section: per pair, where MM2's position came from, its recovery point
    and retention margin, the replicated partitions per status with their lag and loss, the freshness of
    offset syncs and checkpoints, then the problem partitions."""
    from mm2ctl.inspector.output.inspection_result import recovery_points, summarize_partitions

    lines = [
        "",
        "replication (MM2's next offset to copy against the source; lagging above "
        f"{options.lag_threshold} records or {options.lag_seconds_threshold:g} s)",
    ]
    summary = summarize_partitions(result.partitions)
    points = recovery_points(result.partitions)
    for position in result.positions:
        pair = position.pair
        rows = [r for r in summary if r.pair == pair]
        total = sum(r.partitions for r in rows)
        problems = sum(r.partitions for r in rows if not r.is_ok)
        lines.append(f"{pair}: {total} replicated partition(s), {problems} problem(s)")
        if position.known:
            lines.append(f"  MM2's position: {position.read_from}")
            lines.append(f"  {recovery_point_line(points.get(pair))}")
        else:
            lines.append(f"  MM2's position is unknown: {position.reason}")
        lines.append(f"  {'status':<18} {'ok':<4} {'partitions':>10} {'lag':>12} {'lost':>10} {'oldest sync':>12}")
        for r in rows:
            lines.append(
                f"  {r.status:<18} {'yes' if r.is_ok else 'NO':<4} {r.partitions:>10} "
                f"{_num(r.replication_lag_records):>12} {_num(r.records_lost_to_retention):>10} "
                f"{_age(r.max_offset_sync_age_seconds):>12}"
            )
        totals = result.summary.totals.get(pair)
        if totals is not None and totals.groups:
            lines.append(
                f"  checkpoints: {totals.checkpointed_groups} of {totals.groups} group(s) have one; the oldest "
                f"group's newest is {_age(totals.oldest_checkpoint_age_seconds)} old"
            )
    problem_rows = [r for r in result.partitions.to_pylist() if not r["is_ok"]]
    if problem_rows:
        lines.append("")
        lines.append("problem partitions (pair  topic/partition  MM2 next  source [earliest, latest)  status: message)")
        for r in problem_rows[:max_problem_rows]:
            lines.append(
                f"  {r['cluster_pair']}  {r['topic']}/{r['partition']}  {_num(r['mm2_next_offset'])}  "
                f"[{_num(r['source_earliest'])}, {_num(r['source_latest'])})  {r['status']}: {r['message']}"
                + (f" [{r['error']}]" if r["error"] else "")
            )
        more = len(problem_rows) - max_problem_rows
        if more > 0:
            lines.append(f"  … and {more} more; --rows partitions --format csv|json writes every row")
    return lines


def recovery_point_line(point: RecoveryPoint | None) -> str:
    """A flow's recovery point (what the source dying now would lose) and its retention margin, in words."""
    if point is None:
        return "recovery point: no replicated partition"
    line = f"recovery point: {_num(point.records)} record(s), the oldest {_age(point.seconds)} old"
    if point.margin_seconds is None:
        return line + "; retention margin: none (nothing waiting, compacted or unlimited)"
    return line + f"; retention margin: {_age(point.margin_seconds)} ({point.margin_basis})"


def _age(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}s"


def _num(value: Any) -> str:
    return "-" if value is None else str(value)


# --------------------------------------------------------------------------------------------- config


def _short(value: str, width: int = 60) -> str:
    """A value on one line: a PEM block or a long list is summarised, not printed whole."""
    if "-----BEGIN" in value:
        return f"({value.count('-----BEGIN')} PEM block(s))"
    flat = value.replace("\n", " ")
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def config_show_lines(report: SetupReport) -> list[str]:
    """``config show``: each flow, its topic names, and every setting with where it came from."""
    lines = [f"MM2 setup from {report.source}", f"  clusters: {', '.join(report.clusters)}"]
    if not report.flows:
        lines.append("  no enabled flow")
    for flow in report.flows:
        lines.append(f"flow {flow.name}")
        for name, value in flow.topics.items():
            lines.append(f"  {name.replace('_', ' '):<18} {value}")
        lines.append("  settings:")
        for s in flow.settings:
            lines.append(f"    {s.name:<52} {_short(s.value):<24} {s.origin}")
        for alias, settings in flow.clusters.items():
            lines.append(f"  cluster {alias}:")
            for s in settings:
                lines.append(f"    {s.name:<52} {_short(s.value):<24} {s.origin}")
        for c in flow.conditions:
            lines.append(f"  note: {c.message}")
    lines += [f"warning: {w}" for w in report.warnings]
    return lines


def config_diff_lines(differences: list[Difference], left: str, right: str) -> list[str]:
    """``config diff``: one line per difference, each side's value and where it came from."""
    if not differences:
        return [f"no difference between {left} and {right}"]
    lines = [f"{len(differences)} difference(s) between {left} (file) and {right} (live):"]
    for d in differences:
        a = "absent" if d.left is None else repr(_short(d.left))
        b = "absent" if d.right is None else repr(_short(d.right))
        where = f" [{d.left_origin} | {d.right_origin}]" if d.left_origin or d.right_origin else ""
        lines.append(f"  {d.what}: file {a}, live {b}{where}")
    return lines


# ------------------------------------------------------------------------------------------------ lab


def lab_up_lines(info: LabInfo) -> list[str]:
    lines = [f"Kafka {info.kafka_version} lab up in {info.boot_seconds:.1f}s ({info.dir})"]
    lines += [f"  {c.alias:<8} {c.bootstrap:<22} cluster id {c.cluster_id}" for c in info.clusters.values()]
    lines.append(f"  connect  {info.connect_url}" + (" (exactly-once source support)" if info.exactly_once else ""))
    lines.append(f"  mm2 config: {info.mm2_config}")
    if info.resource:
        lines.append(f"  the same as a KafkaMirrorMaker2 resource: {info.resource} (--secrets {info.secrets})")
    if info.secured:
        lines.append("  security: SASL_SSL + SCRAM-SHA-512, OAUTHBEARER, ACLs; MM2 runs as User:mm2-admin,")
        lines.append("            the mm2 config connects as User:mm2ctl (least privilege)")
        lines.append(f"  over OAUTHBEARER: {info.mm2_oauth_config} (tokens from {info.token_url})")
    return lines


def lab_status_json(st: LabStatus) -> dict[str, Any]:
    return {
        "healthy": st.healthy,
        "kafka_version": st.info.kafka_version,
        "clusters": [asdict(c) for c in st.clusters],
        "connect": {"url": st.info.connect_url, "alive": st.connect_alive},
        "connectors": st.connectors,
    }


def lab_status_lines(st: LabStatus) -> list[str]:
    lines = [f"Kafka {st.info.kafka_version} lab in {st.info.dir}"]
    for c in st.clusters:
        state = (
            f"up, {c.topics} topics" if c.reachable else ("process alive, not answering" if c.process_alive else "down")
        )
        lines.append(f"  {c.alias:<8} {c.bootstrap:<22} {state}")
    lines.append(f"  connect  {st.info.connect_url:<22} {'up' if st.connect_alive else 'down'}")
    for name, s in sorted(st.connectors.items()):
        tasks = ",".join(s["tasks"]) or "no tasks"  # type: ignore[arg-type]
        lines.append(f"    {name:<32} {s['state']:<9} tasks: {tasks}")
    return lines


# ---------------------------------------------------------------------------------------------- drill


def drill_table(result: DrillResult) -> list[str]:
    """The drill's table, one line per strategy (docs/drill.md quotes it)."""
    from mm2ctl.drill.failover_drill import Strategy

    aborted = f", {result.aborted_transactions} aborted" if result.aborted_transactions else ""
    lines = [
        f"failover drill: {result.pair}, policy {result.replication_policy}, {result.topic} -> "
        f"{result.remote_topic}, {result.partitions} partitions, {result.records} records "
        f"({result.deleted_before_mirroring} deleted before mirroring, {result.transactions} transactions"
        f"{aborted}), group {result.group}, {result.seconds:.0f}s",
        f"  {'strategy':<48} {'lost':>6} {'duplicated':>10} {'aborted':>7}  goal",
    ]
    for s in result.strategies:
        verdict = "" if s.goal is None else f"{s.goal}: {'met' if s.met else 'MISSED'}"
        lines.append(f"  ({s.strategy.value}) {s.label:<44} {s.lost:>6} {s.duplicated:>10} {s.aborted:>7}  {verdict}")
    for s in result.strategies:
        offs = ", ".join(
            f"p{x.partition}: {x.source_committed}->{'-' if x.target_offset is None else x.target_offset}"
            for x in s.partitions
        )
        lines.append(f"  ({s.strategy.value}) offsets {offs}" + (f" [{s.detail}]" if s.detail else ""))
    conservative = result.outcome(Strategy.CONSERVATIVE)
    intervals = ", ".join(
        f"p{x.partition}: {'-' if x.sync_interval is None else x.sync_interval}" for x in conservative.partitions
    )
    lines.append(f"  sync interval MM2 left at the commit point (offset.lag.max {result.offset_lag_max}): {intervals}")
    lines.extend(f"  note: {n}" for n in result.notes)
    return lines
