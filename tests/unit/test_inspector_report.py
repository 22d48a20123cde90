"""Report writers: rows come in report order; the CSV is RFC 4180 and parses back to exactly the rows
written; JSON is one object a line."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
from typing import Any

import pytest

from mm2ctl.inspector.inspection import SparkRows
from mm2ctl.inspector.output.row_files import csv_text, write_csv, write_json_lines
from mm2ctl.inspector.schemas import GROUP_ROWS_SCHEMA

COLUMNS = tuple(GROUP_ROWS_SCHEMA.fieldNames())

pytestmark = pytest.mark.spark

# Messages that broke the anchor's CSV: commas, quotes, a newline, non-ASCII.
TRICKY = [
    'Erroneously not synced. Source partition has data, and other partitions for this group are "synced".',
    "line one\nline two, with a comma",
    "ünïcödé, ✓",
    "",
]


def _row(i: int, message: str) -> dict[str, Any]:
    base: dict[str, Any] = {name: None for name in COLUMNS}
    base.update(
        cluster_pair="primary->backup",
        topic=f"orders,{i}",
        partition=i,
        group=f'g"{i}',
        source_earliest=0,
        source_latest=-(2**63) if i == 0 else 2**63 - 1,
        source_offset=10 + i,
        is_ok=i % 2 == 0,
        message=message,
        status="synced",
        sync_count=i,
        checkpoint_timestamp=dt.datetime(2026, 11, 21, 12, 0, 0, 123456, tzinfo=dt.UTC) if i else None,
        group_checkpoint_age_seconds=[5.0, 1e-05, None, 123456789.125][i],
    )
    return base


@pytest.fixture
def frame(spark: Any) -> Any:
    rows = [tuple(_row(i, m)[c] for c in COLUMNS) for i, m in enumerate(TRICKY)]
    return SparkRows(spark.createDataFrame(rows, GROUP_ROWS_SCHEMA)).to_arrow()


def test_csv_parses_back_to_exactly_the_rows_written(frame: Any) -> None:
    out = io.StringIO(newline="")
    assert write_csv(frame, out) == len(TRICKY)
    text = out.getvalue()
    assert text.startswith('"cluster_pair","topic","partition","group",')
    assert "\r\n" in text
    parsed = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    assert parsed[0] == list(COLUMNS)
    expected = [[csv_text(_row(i, m)[c]) for c in COLUMNS] for i, m in enumerate(TRICKY)]
    assert parsed[1:] == expected
    # Spot-check the spelling of each kind of value.
    second = dict(zip(COLUMNS, parsed[2], strict=True))
    assert second["message"] == "line one\nline two, with a comma"
    assert second["is_ok"] == "false"
    assert second["source_latest"] == str(2**63 - 1)
    assert second["checkpoint_timestamp"] == "2026-11-21T12:00:00.123Z"
    assert second["group_checkpoint_age_seconds"] == "1e-05"
    first = dict(zip(COLUMNS, parsed[1], strict=True))
    assert first["source_latest"] == str(-(2**63))
    assert first["group_checkpoint_age_seconds"] == "5.0" and first["checkpoint_timestamp"] == ""
    assert text.count('""') >= len(TRICKY)  # a null is an empty quoted field, as every other field is quoted


def test_json_lines_are_one_object_per_row_with_nulls(frame: Any) -> None:
    out = io.StringIO()
    assert write_json_lines(frame, out) == len(TRICKY)
    lines = out.getvalue().splitlines()
    assert len(lines) == len(TRICKY)
    objs = [json.loads(line) for line in lines]
    assert list(objs[0]) == list(COLUMNS)
    assert objs[0]["target_offset"] is None
    assert objs[0]["is_ok"] is True
    assert objs[1]["message"] == TRICKY[1]
    assert objs[3]["checkpoint_timestamp"] == "2026-11-21T12:00:00.123Z"
    assert objs[0]["group_checkpoint_age_seconds"] == 5.0 and objs[2]["group_checkpoint_age_seconds"] is None


def test_rows_come_in_report_order(spark: Any) -> None:
    rows = [tuple(_row(i, "m")[c] for c in COLUMNS) for i in (3, 1, 2, 0)]
    frame = spark.createDataFrame(rows, GROUP_ROWS_SCHEMA).repartition(3)
    out = io.StringIO(newline="")
    write_csv(SparkRows(frame).to_arrow(), out)
    parsed = list(csv.reader(io.StringIO(out.getvalue(), newline="")))[1:]
    groups = [r[COLUMNS.index("group")] for r in parsed]
    assert groups == sorted(groups) == ['g"0', 'g"1', 'g"2', 'g"3']
