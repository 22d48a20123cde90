"""The Spark 3.5 paths of ``inspector.spark.compat`` give what the Spark 4 APIs give.

Every fallback is exercised on whichever pyspark is installed (its internals exist on 4.x too), against a
reference that does not go through it: the rows put in, and on 4.x the Spark 4 API itself.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BinaryType, BooleanType, LongType, StringType, StructField, StructType, TimestampType

from mm2ctl.inspector.spark import compat

pytestmark = pytest.mark.spark

UTC = dt.UTC
SCHEMA = StructType(
    [
        StructField("name", StringType()),
        StructField("offset", LongType()),
        StructField("payload", BinaryType()),
        StructField("seen", TimestampType()),
        StructField("ok", BooleanType()),
    ]
)
ROWS: list[dict[str, Any]] = [
    # Offsets past 2^53 next to a null: a pandas round trip would make floats of them and lose digits.
    {"name": "a", "offset": 2**63 - 1, "payload": b"\x00\xff", "seen": dt.datetime(2026, 1, 2, 3, 4, 5, 6, UTC)},
    {"name": None, "offset": None, "payload": None, "seen": None, "ok": None},
    {"name": "u", "offset": -(2**63), "payload": b"", "seen": dt.datetime(1970, 1, 1, tzinfo=UTC), "ok": False},
    {"name": "c", "offset": 2**53 + 1, "payload": b"x", "seen": dt.datetime(2026, 11, 25, 23, 59, 59, 999999, UTC)},
]
for _row in ROWS:
    _row.setdefault("ok", True)


def _native_and_fallback(owner: object, name: str) -> list[bool]:
    """The runs to make: the installed API when it has ``name``, and always the fallback without it."""
    return [True, False] if hasattr(owner, name) else [False]


def _table(rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=to_arrow_schema(SCHEMA))


def _collected(frame: Any) -> list[dict[str, Any]]:
    rows = [r.asDict() for r in frame.collect()]
    for row in rows:  # the session's zone is UTC: Spark hands back naive datetimes in it
        if row["seen"] is not None:
            row["seen"] = row["seen"].replace(tzinfo=UTC)
        if row["payload"] is not None:
            row["payload"] = bytes(row["payload"])
    return sorted(rows, key=lambda r: (r["name"] is None, str(r["name"])))


def test_a_frame_from_arrow_keeps_every_value_on_the_35_path(spark: Any) -> None:
    expected = sorted(ROWS, key=lambda r: (r["name"] is None, str(r["name"])))
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    frame = compat._frame_from_arrow_35(spark, _table(ROWS), SCHEMA)
    assert frame.schema == SCHEMA
    assert _collected(frame) == expected
    assert _collected(compat.frame_from_arrow(spark, _table(ROWS), SCHEMA)) == expected


def test_naive_arrow_timestamps_are_read_in_the_sessions_zone_on_the_35_path(spark: Any) -> None:
    schema = StructType([StructField("seen", TimestampType())])
    naive = pa.table({"seen": pa.array([dt.datetime(2026, 5, 1, 12, 0)], pa.timestamp("us"))})
    got = compat._frame_from_arrow_35(spark, naive, schema).select(F.unix_timestamp("seen").alias("s"))
    assert got.collect()[0].s == int(dt.datetime(2026, 5, 1, 12, 0, tzinfo=UTC).timestamp())


def test_an_empty_table_is_an_empty_frame_of_the_schema(spark: Any) -> None:
    for make in (compat._frame_from_arrow_35, compat.frame_from_arrow):
        frame = make(spark, _table([]), SCHEMA)
        assert frame.schema == SCHEMA and frame.count() == 0


def test_to_arrow_gives_the_rows_and_the_schema(spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from pyspark.sql import DataFrame

    frame = compat.frame_from_arrow(spark, _table(ROWS), SCHEMA).repartition(3)
    for native in _native_and_fallback(DataFrame, "toArrow"):
        with monkeypatch.context() as m:
            if not native:
                m.delattr(DataFrame, "toArrow", raising=False)
            table = compat.to_arrow(frame)
            assert table.schema == to_arrow_schema(SCHEMA), f"native={native}"
            got = sorted(table.to_pylist(), key=lambda r: (r["name"] is None, str(r["name"])))
            assert got == sorted(ROWS, key=lambda r: (r["name"] is None, str(r["name"]))), f"native={native}"
            empty = compat.to_arrow(frame.where("false"))
            assert empty.num_rows == 0 and empty.schema == to_arrow_schema(SCHEMA), f"native={native}"


def test_error_condition_on_this_release_and_before_the_rename() -> None:
    error = PySparkRuntimeError(None, "JAVA_GATEWAY_EXITED", {})  # positional: the keywords were renamed too
    assert compat.error_condition(error) == "JAVA_GATEWAY_EXITED"

    class Before40:
        def getErrorClass(self) -> str:
            return "JAVA_GATEWAY_EXITED"

    assert compat.error_condition(Before40()) == "JAVA_GATEWAY_EXITED"  # type: ignore[arg-type]


def test_array_position_of_a_column(spark: Any) -> None:
    frame = spark.createDataFrame([("b",), ("z",), (None,)], "v string")
    reasons = F.array(F.lit("a"), F.lit("b"), F.lit("c"))
    got = frame.select("v", compat.array_position(reasons, F.col("v")).alias("at")).collect()
    assert {r.v: r.at for r in got} == {"b": 2, "z": 0, None: None}


def test_every_accumulator_server_of_this_release_logs_a_cut_connection(spark: Any) -> None:
    """The session quiets PySpark's accumulator server, whose class names differ across releases (one class up
    to 4.1.3, a TCP and a Unix one in 4.1.4): every socket server class this pyspark defines is covered."""
    import socketserver

    from pyspark import accumulators

    servers = [
        value
        for value in vars(accumulators).values()
        if isinstance(value, type)
        and issubclass(value, socketserver.BaseServer)
        and value.__module__ == accumulators.__name__
    ]
    assert servers
    for server in servers:
        assert server.handle_error is not socketserver.BaseServer.handle_error, server.__name__


def test_a_table_with_an_empty_part_keeps_every_row(spark: Any) -> None:
    """A table concatenated from parts, one of them empty: pyspark's Arrow path alone stops at the empty
    batch; the frame holds every row."""
    parts = [
        pa.table({"offset": pa.array(range(10 * i, 10 * i + (0 if i == 1 else 10)), pa.int64())}) for i in range(3)
    ]
    table = pa.concat_tables(parts)
    schema = StructType([StructField("offset", LongType())])
    rows = compat.frame_from_arrow(spark, table, schema).collect()
    assert sorted(r.offset for r in rows) == [*range(10), *range(20, 30)]
