"""Write an inspection's rows: RFC 4180 CSV, JSON Lines, or Spark's own distributed writers.

CSV and JSON stream the rows to one file (or stdout) through ``toLocalIterator``, so the driver never holds
the whole report. Parquet is written by the job itself (``run_inspection(parquet_output=…)``) with
``parquet_writer_options``: Spark's own writer, a folder of part files, for runs too large for one file.
Columns come in ``schemas.CLASSIFIED_SCHEMA`` order, Aiven's first, then ours, then the group's checkpoint
age (``replication_health.GROUP_ROWS_SCHEMA``); ``--rows partitions`` writes ``PARTITION_COLUMNS`` instead.

Only data writers live here, shared by ``mm2ctl inspect`` and the ``spark-submit`` entry (``job.main``);
the human table is the CLI's (``mm2ctl.cli.render``). The job imports this module, never the reverse.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from pyspark.sql import DataFrame, Row

from mm2ctl.inspector import replication_health

COLUMNS: tuple[str, ...] = tuple(replication_health.GROUP_ROWS_SCHEMA.fieldNames())


def _cell(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return stamp.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


#: The order every printed or streamed report lists its rows in.
ORDER = ("cluster_pair", "group", "topic", "partition")


#: Row columns whose values are close to unique (offsets, lags, timestamps). Parquet's dictionary encoding only
#: costs time on them: it fills a dictionary per column chunk that ends up as big as the values. Writing a
#: million rows without it on these took 0.4 s less of about 3.5 s; the file grew from 12 to 18 MB. The
#: other columns (names, states, statuses, messages, small counts) keep it.
PARQUET_PLAIN_COLUMNS = (
    "source_offset",
    "source_lag",
    "target_offset",
    "target_lag",
    "target_lag_to_source",
    "translated_offset",
    "checkpoint_offset",
    "checkpoint_timestamp",
)


def parquet_writer_options() -> dict[str, str]:
    """The Parquet writer options the rows are written with (``PARQUET_PLAIN_COLUMNS``)."""
    return {f"parquet.enable.dictionary#{c}": "false" for c in PARQUET_PLAIN_COLUMNS}


#: The replicated-partition rows (``--rows partitions``): their columns and order.
PARTITION_COLUMNS: tuple[str, ...] = replication_health.PARTITION_COLUMNS
PARTITION_ORDER = ("cluster_pair", "topic", "partition")


def _rows(frame: DataFrame, columns: Sequence[str], order: Sequence[str]) -> Iterator[Row]:
    """The rows in report order (pair, group, topic, partition), streamed a partition at a time."""
    return frame.select(*columns).orderBy(*order).toLocalIterator(prefetchPartitions=True)


def csv_text(value: Any) -> str:
    """How one value is spelled in the CSV: empty for null, ``true``/``false``, ISO-8601 UTC timestamps."""
    value = _cell(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_csv(frame: DataFrame, out: TextIO, columns: Sequence[str] = COLUMNS, order: Sequence[str] = ORDER) -> int:
    """RFC 4180: a header, CRLF line ends, every field quoted (so commas and quotes in messages survive)."""
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\r\n")
    writer.writerow(columns)
    count = 0
    for row in _rows(frame, columns, order):
        writer.writerow([csv_text(v) for v in row])
        count += 1
    return count


def write_json_lines(
    frame: DataFrame, out: TextIO, columns: Sequence[str] = COLUMNS, order: Sequence[str] = ORDER
) -> int:
    """One JSON object per row and line, nulls as ``null``."""
    count = 0
    for row in _rows(frame, columns, order):
        out.write(json.dumps({k: _cell(v) for k, v in zip(columns, row, strict=True)}, separators=(",", ":")))
        out.write("\n")
        count += 1
    return count


def write_distributed(frame: DataFrame, fmt: str, path: str, columns: Sequence[str] = COLUMNS) -> None:
    """Spark's own writers (folders of part files at a path or URI), for ``spark-submit`` on a cluster."""
    writer = frame.select(*columns).write.mode("overwrite")
    if fmt == "parquet":
        writer.options(**(parquet_writer_options() if tuple(columns) == COLUMNS else {})).parquet(path)
    elif fmt == "csv":
        writer.option("header", "true").option("quoteAll", "true").csv(path)
    else:
        writer.json(path)
