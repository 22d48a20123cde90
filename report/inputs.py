"""What a report is made of: an inspection's two row sets as Arrow tables, and reading them from the files
``mm2ctl inspect`` saves.

A report reads the group-partition rows (``inspect --rows groups``, the default) and the replicated-partition
rows (``inspect --rows partitions``), each as ``inspect --format parquet`` (a folder of part files, or one
Parquet file) or ``--format json`` (JSON lines) writes it. Only the columns the report shows are read, and
each is cast to one type here, so a Parquet file written by Spark and JSON lines parsed by Arrow give the
same table. A file that is missing, unreadable, or holds the other kind of rows is an
``InspectionFileError`` naming the path, the missing columns, and the option that was probably meant.

Spark is never imported here: a saved inspection becomes a report without a JVM.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pa_ds
import pyarrow.json as pa_json

from mm2ctl.core.errors import InspectionFileError

#: The group-partition columns a report reads, with the type each is read as (``inspect``'s names).
GROUP_ROW_SCHEMA = pa.schema(
    [
        ("cluster_pair", pa.string()),
        ("group", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("status", pa.string()),
        ("is_ok", pa.bool_()),
        ("message", pa.string()),
        ("source_offset", pa.int64()),
        ("target_offset", pa.int64()),
        ("target_group_state", pa.string()),
        ("translated_offset", pa.int64()),
        ("translation_method", pa.string()),
        ("replay_if_failover_now", pa.int64()),
        ("skip_if_failover_now", pa.int64()),
        ("replay_if_failover_now_at_least", pa.int64()),
        ("skip_if_failover_now_at_most", pa.int64()),
        ("group_checkpoint_age_seconds", pa.float64()),
        ("error", pa.string()),
    ]
)

#: The replicated-partition columns a report reads (``inspect --rows partitions``).
PARTITION_ROW_SCHEMA = pa.schema(
    [
        ("cluster_pair", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("status", pa.string()),
        ("is_ok", pa.bool_()),
        ("message", pa.string()),
        ("replication_lag_records", pa.int64()),
        ("records_lost_to_retention", pa.int64()),
        ("offset_sync_age_seconds", pa.float64()),
        ("error", pa.string()),
        ("replication_lag_seconds", pa.float64()),
        ("retention_margin_seconds", pa.float64()),
        ("retention_margin_basis", pa.string()),
    ]
)
#: Columns an inspection saved before mm2ctl wrote them lacks: read as nulls.
OPTIONAL_COLUMNS = frozenset({"replication_lag_seconds", "retention_margin_seconds", "retention_margin_basis"})

#: A column only each kind of rows has, to tell the user which option a file belongs to.
_KIND_MARKERS = {"group": "group", "partition": "replication_lag_records"}


@dataclass(frozen=True)
class InspectionTables:
    """An inspection as a report takes it: both row sets, and when and where it was made."""

    #: ``GROUP_ROW_SCHEMA``; empty when only partition rows were given.
    groups: pa.Table
    #: ``PARTITION_ROW_SCHEMA``; None when they were not given (the report says what it cannot tell then).
    partitions: pa.Table | None
    #: When the inspection ran (a saved one: when its files were last written).
    inspected_at: dt.datetime
    #: Where the rows came from, for the page's header.
    origin: str


def conform(table: pa.Table, schema: pa.Schema, *, path: str) -> pa.Table:
    """``table``'s columns of ``schema``, in its order and types; missing ones are an ``InspectionFileError``."""
    missing = [name for name in schema.names if name not in table.column_names and name not in OPTIONAL_COLUMNS]
    if missing:
        raise InspectionFileError(path, _missing_text(missing, schema))
    try:
        columns = [
            table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
            for f in schema
        ]
        return pa.table(columns, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InspectionFileError(path, f"a column has the wrong type: {exc}") from exc


def _missing_text(missing: Sequence[str], schema: pa.Schema) -> str:
    wanted = "group" if "group" in schema.names else "partition"
    other = "partition" if wanted == "group" else "group"
    hint = ""
    if _KIND_MARKERS[other] not in missing and _KIND_MARKERS[wanted] in missing:
        hint = f" (these look like {other} rows: give them with --{other}-rows)"
    listed = ", ".join(missing[:5]) + (", …" if len(missing) > 5 else "")
    option = "" if wanted == "group" else " --rows partitions"
    return f"not the {wanted} rows `inspect{option}` writes: no {listed}{hint}"


def read_rows(path: str | Path, schema: pa.Schema) -> pa.Table:
    """The rows of a saved inspection at ``path``: a Parquet folder or file, or JSON lines."""
    where = Path(path)
    shown = str(path)
    if not where.exists():
        raise InspectionFileError(shown, "no such file or folder")
    if where.is_dir() or _is_parquet(where):
        return _read_parquet(where, schema, shown)
    return _read_json_lines(where, schema, shown)


def _is_parquet(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            return f.read(4) == b"PAR1"
    except OSError as exc:
        raise InspectionFileError(str(path), f"cannot be read: {exc.strerror or exc}") from exc


def _read_parquet(path: Path, schema: pa.Schema, shown: str) -> pa.Table:
    try:
        dataset = pa_ds.dataset(str(path), format="parquet")
        present = [name for name in schema.names if name in dataset.schema.names]
        table = dataset.to_table(columns=present)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InspectionFileError(shown, f"not a readable Parquet inspection: {_first_line(exc)}") from exc
    if not dataset.files:
        raise InspectionFileError(shown, "the folder holds no Parquet part file")
    return conform(table, schema, path=shown)


def _read_json_lines(path: Path, schema: pa.Schema, shown: str) -> pa.Table:
    try:
        with path.open("r", encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), None)
    except (OSError, UnicodeDecodeError) as exc:
        raise InspectionFileError(shown, f"cannot be read: {_first_line(exc)}") from exc
    if first is None:
        return schema.empty_table()
    try:
        columns = json.loads(first)
    except json.JSONDecodeError:
        columns = None
    if not isinstance(columns, dict):
        raise InspectionFileError(
            shown, "neither Parquet nor JSON lines (`inspect --format parquet` or `--format json` writes those)"
        )
    missing = [name for name in schema.names if name not in columns and name not in OPTIONAL_COLUMNS]
    if missing:
        raise InspectionFileError(shown, _missing_text(missing, schema))
    options = pa_json.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pa_json.read_json(str(path), parse_options=options)
    except pa.ArrowInvalid as exc:
        raise InspectionFileError(shown, f"a line is not a row `inspect` writes: {_first_line(exc)}") from exc
    return conform(table, schema, path=shown)


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def written_at(path: str | Path) -> dt.datetime:
    """When a saved inspection was last written: its newest file's modification time, in UTC."""
    where = Path(path)
    files = [p for p in where.rglob("*") if p.is_file()] if where.is_dir() else [where]
    newest = max((p.stat().st_mtime for p in files), default=where.stat().st_mtime)
    return dt.datetime.fromtimestamp(newest, dt.UTC)


def read_saved(group_rows: str | None, partition_rows: str | None) -> InspectionTables:
    """A saved inspection: the group rows, the partition rows, or both (at least one)."""
    if group_rows is None and partition_rows is None:
        raise ValueError("read_saved needs group_rows or partition_rows")
    groups = read_rows(group_rows, GROUP_ROW_SCHEMA) if group_rows else GROUP_ROW_SCHEMA.empty_table()
    partitions = read_rows(partition_rows, PARTITION_ROW_SCHEMA) if partition_rows else None
    given = [p for p in (group_rows, partition_rows) if p]
    return InspectionTables(
        groups=groups,
        partitions=partitions,
        inspected_at=max(written_at(p) for p in given),
        origin="saved inspection: " + ", ".join(given),
    )
