"""Malformed records are counted in the one read of each topic, never fatal; the Parquet writer's options."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from mm2ctl.core.kafka import codecs
from mm2ctl.inspector.kept.pair_topics import Numbering
from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA, PARTITION_NUMBERS_SCHEMA
from mm2ctl.inspector.transforms import decode, sync_runs

pytestmark = pytest.mark.spark

TS = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _records(spark: Any, pairs: list[tuple[bytes | None, bytes | None]]) -> Any:
    rows = [("a->b", k, v, "syncs", 0, i, TS, 0) for i, (k, v) in enumerate(pairs)]
    dicts = [dict(zip(KAFKA_RECORD_SCHEMA.names, r, strict=True)) for r in rows]
    table = pa.Table.from_pylist(dicts, schema=to_arrow_schema(KAFKA_RECORD_SCHEMA))
    return spark.createDataFrame(table, KAFKA_RECORD_SCHEMA)


def test_malformed_offset_syncs_are_counted_per_reason_and_the_good_ones_kept(spark: Any) -> None:
    key = codecs.encode_offset_sync_key("orders", 0)
    value = codecs.encode_offset_sync_value(5, 4)
    raw = _records(
        spark,
        [(key, value), (key, b"\x00\x01"), (key, b"\x00\x02"), (None, value), (key[:3], value), (key, None)],
    )
    numbering = Numbering.of([("orders", 0)])
    known = spark.createDataFrame(numbering.table("a->b"), schema=PARTITION_NUMBERS_SCHEMA)
    records = sync_runs.sorted_records(sync_runs.records(decode.decode_offset_syncs(raw, known=known)), 2)
    facts = {f._part: f for f in sync_runs.partition_facts(records).collect()}
    counts = dict(zip(decode.MALFORMED_REASONS, facts[None].malformed, strict=True))
    assert {r: n for r, n in counts.items() if n} == {"key truncated": 1, "null key": 1, "value truncated": 2}
    newest = facts[numbering.parts[("orders", 0)]]
    assert (newest.newest_is_sync, newest.tangled) == (False, True)  # the last good record is a tombstone


def test_numbering_is_in_key_order_and_covers_what_it_numbered() -> None:
    numbering = Numbering.of([("b", 1), ("a", 2), ("b", 0), ("a", 2)])
    assert numbering.parts == {("a", 2): 1, ("b", 0): 2, ("b", 1): 3}
    assert numbering.covers([("a", 2), ("b", 1)]) and not numbering.covers([("c", 0)])
    assert numbering.table("p").column("_part").to_pylist() == [1, 2, 3]


def test_parquet_rows_skip_the_dictionary_on_near_unique_columns_only(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from mm2ctl.inspector.output.row_files import PARQUET_PLAIN_COLUMNS, parquet_writer_options

    rows = spark.range(2000).selectExpr("id AS source_offset", "IF(id % 2 = 0, 'synced', 'stale_sync') AS status")
    out = tmp_path / "rows.parquet"
    rows.coalesce(1).write.options(**parquet_writer_options()).parquet(str(out))
    (part,) = out.glob("part-*.parquet")
    chunks = pq.ParquetFile(part).metadata.row_group(0)
    dictionary = {chunks.column(i).path_in_schema: chunks.column(i).has_dictionary_page for i in range(2)}
    assert "source_offset" in PARQUET_PLAIN_COLUMNS and "status" not in PARQUET_PLAIN_COLUMNS
    assert dictionary == {"source_offset": False, "status": True}
