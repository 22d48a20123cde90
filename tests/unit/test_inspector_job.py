"""The job's malformed-record counting, through the actions the job runs (a Parquet write, a cached count)."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from mm2ctl.core import codecs
from mm2ctl.inspector import decode, transforms
from mm2ctl.inspector.job import MalformedCounter, partition_numbers_on_driver
from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA, SOURCE_GROUP_OFFSETS_SCHEMA
from mm2ctl.inspector.spark_compat import frame_from_arrow

pytestmark = pytest.mark.spark

TS = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _records(spark: Any, pairs: list[tuple[bytes | None, bytes | None]]) -> Any:
    rows = [("a->b", k, v, "syncs", 0, i, TS, 0) for i, (k, v) in enumerate(pairs)]
    dicts = [dict(zip(KAFKA_RECORD_SCHEMA.names, r, strict=True)) for r in rows]
    table = pa.Table.from_pylist(dicts, schema=to_arrow_schema(KAFKA_RECORD_SCHEMA))
    return frame_from_arrow(spark, table, KAFKA_RECORD_SCHEMA)


def _watched(spark: Any, *, scanned: bool = True) -> tuple[MalformedCounter, Any]:
    key = codecs.encode_offset_sync_key("orders", 0)
    value = codecs.encode_offset_sync_value(5, 4)
    records = _records(
        spark,
        [(key, value), (key, b"\x00\x01"), (key, b"\x00\x02"), (None, value), (key[:3], value), (key, None)],
    )
    counter = MalformedCounter()
    return counter, counter.watch(decode.decode_offset_syncs(records), "a->b", "syncs", "src", scanned=scanned)


EXPECTED = [
    "1 malformed record(s) skipped: key truncated",
    "1 malformed record(s) skipped: null key",
    "2 malformed record(s) skipped: value truncated",
]


def test_malformed_counter_counts_in_a_parquet_write(spark: Any, tmp_path: Path) -> None:
    counter, decoded = _watched(spark)
    decoded.where("malformed_reason IS NULL").write.parquet(str(tmp_path / "rows"))
    assert sorted(n.message for n in counter.notes()) == EXPECTED
    assert {(n.cluster_pair, n.topic, n.cluster) for n in counter.notes()} == {("a->b", "syncs", "src")}


def test_malformed_counter_counts_in_a_cached_count(spark: Any) -> None:
    counter, decoded = _watched(spark)
    good = decoded.where("malformed_reason IS NULL").cache()
    assert good.count() == 2  # the sync and the tombstone
    assert sorted(n.message for n in counter.notes()) == EXPECTED
    good.unpersist()


def test_malformed_counter_has_no_note_for_a_clean_topic(spark: Any) -> None:
    key = codecs.encode_offset_sync_key("orders", 0)
    records = _records(spark, [(key, codecs.encode_offset_sync_value(1, 1))])
    counter = MalformedCounter()
    counter.watch(decode.decode_offset_syncs(records), "a->b", "syncs", "src", scanned=True).count()
    assert counter.notes() == []


@pytest.mark.parametrize("scanned", [True, False])
def test_malformed_counter_does_not_wait_for_a_read_spark_pruned(
    spark: Any, monkeypatch: pytest.MonkeyPatch, scanned: bool
) -> None:
    """A pair with no group partition: Spark prunes the topic's read, so its observation never completes.
    ``notes`` gives up on it (at once when the caller knew, by the deadline otherwise) instead of hanging."""
    from mm2ctl.inspector import job

    deadline_s = 1.0 if scanned else 60.0
    monkeypatch.setattr(job, "OBSERVATION_WAIT_S", deadline_s)
    counter, decoded = _watched(spark, scanned=scanned)
    decoded.where(F.lit(False)).count()  # the optimizer drops the scan, and the observation with it
    started = time.monotonic()
    assert counter.notes() == []
    waited = time.monotonic() - started
    # Scanned: it waited its deadline out (the scan never ran). Not scanned: it did not wait for the deadline.
    assert waited >= deadline_s if scanned else waited < deadline_s / 2


def test_driver_partition_numbers_match_the_spark_ones(spark: Any) -> None:
    rows = [
        {"cluster_pair": pair, "group": g, "topic": t, "partition": p, "committed_offset": 1, "error": None}
        for pair in ("a->b", "b->a")
        for g in ("g1", "g2")
        for t, p in (("orders", 1), ("orders", 0), ("Ärger", 3), ("zeta", 0), ("orders", 10))
    ]
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(SOURCE_GROUP_OFFSETS_SCHEMA))
    on_driver = partition_numbers_on_driver(spark, table)
    in_spark = transforms.partition_numbers(frame_from_arrow(spark, table, SOURCE_GROUP_OFFSETS_SCHEMA))
    assert on_driver.schema == in_spark.schema
    assert sorted(on_driver.collect()) == sorted(in_spark.collect())
    assert on_driver.count() == 10


def test_parquet_rows_skip_the_dictionary_on_near_unique_columns_only(spark: Any, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    from mm2ctl.inspector.report import PARQUET_PLAIN_COLUMNS, parquet_writer_options

    rows = spark.range(2000).selectExpr("id AS source_offset", "IF(id % 2 = 0, 'synced', 'stale_sync') AS status")
    out = tmp_path / "rows.parquet"
    rows.coalesce(1).write.options(**parquet_writer_options()).parquet(str(out))
    (part,) = out.glob("part-*.parquet")
    chunks = pq.ParquetFile(part).metadata.row_group(0)
    dictionary = {chunks.column(i).path_in_schema: chunks.column(i).has_dictionary_page for i in range(2)}
    assert "source_offset" in PARQUET_PLAIN_COLUMNS and "status" not in PARQUET_PLAIN_COLUMNS
    assert dictionary == {"source_offset": False, "status": True}
