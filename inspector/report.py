"""Render an inspection: a readable table, RFC 4180 CSV, JSON Lines, or Parquet.

CSV and JSON stream the rows to one file (or stdout) through ``toLocalIterator``, so the driver never holds
the whole report. Parquet is written by the job itself (``run_inspection(parquet_output=…)``): Spark's own
writer, a folder of part files, for runs too large for one file.
Columns come in ``schemas.CLASSIFIED_SCHEMA`` order: Aiven's first, then ours.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any, TextIO

from pyspark.sql import DataFrame, Row

from mm2ctl.inspector.job import InspectResult, parquet_writer_options
from mm2ctl.inspector.schemas import CLASSIFIED_SCHEMA

COLUMNS: tuple[str, ...] = tuple(CLASSIFIED_SCHEMA.fieldNames())


def _cell(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return stamp.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


ORDER = ("cluster_pair", "group", "topic", "partition")


def _rows(frame: DataFrame) -> Iterator[Row]:
    """The rows in report order (pair, group, topic, partition), streamed a partition at a time."""
    return frame.select(*COLUMNS).orderBy(*ORDER).toLocalIterator(prefetchPartitions=True)


def csv_text(value: Any) -> str:
    """How one value is spelled in the CSV: empty for null, ``true``/``false``, ISO-8601 UTC timestamps."""
    value = _cell(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(frame: DataFrame, out: TextIO) -> int:
    """RFC 4180: a header, CRLF line ends, every field quoted (so commas and quotes in messages survive)."""
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    count = 0
    for row in _rows(frame):
        writer.writerow([csv_text(v) for v in row])
        count += 1
    return count


def write_json_lines(frame: DataFrame, out: TextIO) -> int:
    """One JSON object per row and line, nulls as ``null``."""
    count = 0
    for row in _rows(frame):
        out.write(json.dumps({k: _cell(v) for k, v in zip(COLUMNS, row, strict=True)}, separators=(",", ":")))
        out.write("\n")
        count += 1
    return count


def write_distributed(frame: DataFrame, fmt: str, path: str) -> None:
    """Spark's own writers (folders of part files at a path or URI), for ``spark-submit`` on a cluster."""
    writer = frame.select(*COLUMNS).write.mode("overwrite")
    if fmt == "parquet":
        writer.options(**parquet_writer_options()).parquet(path)
    elif fmt == "csv":
        writer.option("header", "true").option("quoteAll", "true").csv(path)
    else:
        writer.json(path)


def summary_lines(result: InspectResult, *, max_problem_rows: int = 40) -> list[str]:
    """The default ``table`` format: per pair and status, then notes, then the problem rows."""
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
