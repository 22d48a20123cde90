"""Values written into the inspection's SQL statements read back as exactly themselves."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from mm2ctl.inspector.transforms.sql_text import Statement, literal

TRICKY = [
    "the partition's oldest",
    'a "quoted" word',
    "back\\slash \\' and \\n",
    "braces {name} and {{double}}",
    "ünïcödé, ✓\nline two",
    "",
]


@pytest.mark.spark
def test_literals_read_back_as_the_values(spark: Any) -> None:
    q = Statement()
    when = dt.datetime(2026, 11, 26, 1, 2, 3, 456789, tzinfo=dt.UTC)
    columns = [f"{q.value(v)} AS c{i}" for i, v in enumerate([*TRICKY, 2**62, -7, 1.5, True, when])]
    frame = spark.range(1).select("id")
    (row,) = q.run(spark, f"SELECT {', '.join(columns)} FROM {{frame}}", frame=frame).collect()
    assert list(row) == [*TRICKY, 2**62, -7, 1.5, True, when.replace(tzinfo=None)]  # the session reads UTC


def test_a_naive_time_is_taken_as_utc() -> None:
    assert literal(dt.datetime(1970, 1, 1, 0, 0, 1)) == "timestamp_micros(1000000)"
