"""``mm2ctl plan failover``: parse options, call the failover planner, render its rows, export the CSV.

Kept apart from ``cli_plan`` so the failover command's options and rendering live in one place; ``cli_plan``
only registers it. No Kafka or HTTP here.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import typer

from mm2ctl.core.errors import ConfigError
from mm2ctl.core.flows import parse_flow
from mm2ctl.plans.document import PlanKind
from mm2ctl.plans.planners.context import PlanBuilder
from mm2ctl.plans.planners.failover import FailoverOptions, FailoverReport, Source, plan_failover
from mm2ctl.plans.serialize import dump_plan_json, write_plan_file


def export_csv(report: FailoverReport, path: Path) -> int:
    """Write ``group,topic,partition,offset`` rows (no header: ``kafka-consumer-groups --reset-offsets
    --from-file`` reads every line as data); returns the number of rows."""
    rows = report.csv_rows()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        for row in rows:
            writer.writerow(row)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return len(rows)


def render_rows(report: FailoverReport, limit: int = 50) -> str:
    lines = ["  group partitions (source offset -> target offset, method):"]
    for r in report.rows[:limit]:
        target = "untranslatable" if r.target_offset is None else str(r.target_offset)
        before = "" if r.before_offset is None else f" (now {r.before_offset})"
        method = "" if r.method is None else r.method.value
        lines.append(f"    {r.group} {r.source_topic}/{r.partition}: {r.source_offset} -> {target}{before} {method}")
    if len(report.rows) > limit:
        lines.append(f"    ... {len(report.rows) - limit} more (see --json)")
    return "\n".join(lines)


def report_json(report: FailoverReport) -> list[dict[str, object]]:
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
            "detail": r.detail,
        }
        for r in report.rows
    ]


def run_plan_failover(
    b: PlanBuilder,
    *,
    pair: str,
    groups: str,
    topics: str,
    source: str,
    source_unavailable: bool,
    stop_mirroring: bool,
    allow_rewind: bool,
    catch_up_timeout: float,
    export: Path | None,
    out: Path,
    as_json: bool,
) -> bool:
    """Plan, write the plan (and CSV), print; returns whether the plan has changes."""
    from mm2ctl.cli.plan_cmd import render_plan

    parse_flow(pair)
    try:
        src = Source(source)
    except ValueError:
        raise ConfigError(f"--from {source!r}: choose syncs or checkpoints") from None
    if stop_mirroring and b.live.connect is None:
        raise ConfigError("--stop-mirroring needs the Connect REST API: pass --connect-url")
    b.kind = PlanKind.FAILOVER
    plan, report = plan_failover(
        b,
        FailoverOptions(
            pair=pair,
            groups=groups,
            topics=topics,
            source=src,
            source_unavailable=source_unavailable,
            stop_mirroring=stop_mirroring,
            allow_rewind=allow_rewind,
            catch_up_timeout_s=catch_up_timeout,
        ),
    )
    write_plan_file(plan, out)
    exported = None if export is None else export_csv(report, export)
    if as_json:
        doc = json.loads(dump_plan_json(plan))
        typer.echo(json.dumps({"plan": doc, "rows": report_json(report)}, indent=2))
    else:
        typer.echo(render_plan(plan) + "\n" + render_rows(report) + f"\n  written to {out}")
        if exported is not None:
            typer.echo(f"  {exported} row(s) exported to {export}")
    return any(s.writes for s in plan.steps)
