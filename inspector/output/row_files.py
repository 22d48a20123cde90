"""Write an inspection's rows as text: RFC 4180 CSV and JSON Lines, from one Arrow table.

The rows come from the run as one Arrow table in report columns and order (``result.RowSet.to_arrow``: a
Spark job, its rows sent in Arrow batches, sorted on the driver), and each column is spelled at once, never a
Python object per value for CSV. The driver then holds the report, about 0.5 KB a row; a report too large for
that is written with Parquet, by Spark's own writer (``RowSet.write``) with ``parquet_writer_options``: a folder
of part files. Columns come in ``schemas.GROUP_ROWS_SCHEMA`` order (Aiven's first, then ours, then the group's
checkpoint age), or ``schemas.PARTITION_HEALTH_SCHEMA``'s for ``--rows partitions``.

Nothing here imports Spark: the CLI writes a result's rows with it.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any, TextIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv


def _cell(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        stamp = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return stamp.astimezone(dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return value


#: Row columns whose values are close to unique (offsets, lags, timestamps). Parquet's dictionary encoding only
#: costs time on them: it fills a dictionary per column chunk that ends up as big as the values, so they are
#: written plain, faster for a somewhat larger file. The other columns (names, states, statuses, messages,
#: small counts) keep it.
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


def csv_text(value: Any) -> str:
    """How one value is spelled in the CSV: empty for null, ``true``/``false``, ISO-8601 UTC timestamps."""
    value = _cell(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _timestamps_text(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """ISO-8601 UTC with milliseconds and ``Z``, as ``_cell`` spells a datetime (microseconds truncated)."""
    millis = column.cast(pa.timestamp("ms", tz="UTC"), safe=False)
    return pc.strftime(millis, format="%Y-%m-%dT%H:%M:%SZ")  # %S carries the unit's fraction: 05.123


def _spelled(table: pa.Table, *, for_json: bool) -> pa.Table:
    """Every column as ``csv_text`` spells its values (nulls stay null), or for JSON only the timestamps."""
    spelled = []
    for field, column in zip(table.schema, table.columns, strict=True):
        if pa.types.is_timestamp(field.type):
            column = _timestamps_text(column)
        elif for_json:
            pass
        elif pa.types.is_floating(field.type):
            # Python's shortest round trip (``5.0``, ``1e-05``); Arrow would write ``5``.
            column = pa.chunked_array(
                [pa.array([None if v is None else str(v) for v in column.to_pylist()], pa.string())]
            )
        elif not pa.types.is_string(field.type):
            column = column.cast(pa.string())  # integers in decimal, booleans as true/false
        spelled.append(column)
    return pa.table(spelled, names=table.column_names)


#: Rows spelled and written per slice: bounds the text held at once besides the table.
_SLICE_ROWS = 65_536


def write_csv(table: pa.Table, out: TextIO) -> int:
    """RFC 4180: a header, CRLF line ends, every field quoted (so commas and quotes in messages survive),
    nulls as ``""``. ``table`` is in report columns and order already (``result.RowSet.to_arrow``)."""
    options = {"eol": "\r\n", "quoting_style": "all_valid"}
    out.write(",".join(f'"{c}"' for c in table.column_names) + "\r\n")
    for start in range(0, table.num_rows, _SLICE_ROWS):
        part = _spelled(table.slice(start, _SLICE_ROWS), for_json=False)
        part = pa.table([pc.fill_null(c, "") for c in part.columns], names=part.column_names)
        sink = pa.BufferOutputStream()
        pa_csv.write_csv(part, sink, pa_csv.WriteOptions(include_header=False, **options))
        out.write(sink.getvalue().to_pybytes().decode("utf-8"))
    return int(table.num_rows)


def write_json_lines(table: pa.Table, out: TextIO) -> int:
    """One JSON object per row and line, nulls as ``null``."""
    for start in range(0, table.num_rows, _SLICE_ROWS):
        part = _spelled(table.slice(start, _SLICE_ROWS), for_json=True)
        out.writelines(json.dumps(row, separators=(",", ":")) + "\n" for row in part.to_pylist())
    return int(table.num_rows)


def write_parquet(table: pa.Table, path: str) -> None:
    """One Parquet file at ``path`` (the replicated-partition rows, a row per partition: small)."""
    import pyarrow.parquet as pq

    pq.write_table(table, path)
