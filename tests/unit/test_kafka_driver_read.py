"""The driver-side read's shaping: librdkafka's records as Spark's Kafka source gives the same records
(``schemas.KAFKA_RECORD_SCHEMA``), and the threshold that picks the driver over the source."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, TIMESTAMP_NOT_AVAILABLE

from mm2ctl.core.kafka import codecs
from mm2ctl.core.kafka.records import RawRecord, java_timestamp_type
from mm2ctl.inspector.reads import kafka_read
from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA, arrow_schema
from mm2ctl.inspector.spark.compat import frame_from_arrow
from mm2ctl.inspector.transforms import decode

MS = 1_700_000_000_123


def _record(offset: int, *, key: bytes | None = b"k", value: bytes | None = b"v", ts_type: int = 0) -> RawRecord:
    return RawRecord("mm2-offset-syncs.b.internal", 2, offset, MS + offset, key, value, timestamp_type=ts_type)


def test_librdkafka_timestamp_types_become_javas_ids() -> None:
    assert java_timestamp_type(TIMESTAMP_CREATE_TIME) == 0
    assert java_timestamp_type(TIMESTAMP_LOG_APPEND_TIME) == 1
    assert java_timestamp_type(TIMESTAMP_NOT_AVAILABLE) == -1


def test_records_table_has_the_kafka_sources_schema_and_values() -> None:
    table = kafka_read.records_table([_record(7), _record(9, key=None, value=None, ts_type=1)], "a->b")
    assert table.schema == arrow_schema(KAFKA_RECORD_SCHEMA)
    assert table.to_pylist() == [
        {
            "cluster_pair": "a->b",
            "key": b"k",
            "value": b"v",
            "topic": "mm2-offset-syncs.b.internal",
            "partition": 2,
            "offset": 7,
            "timestamp": dt.datetime.fromtimestamp((MS + 7) / 1000, dt.UTC),
            "timestampType": 0,
        },
        {
            "cluster_pair": "a->b",
            "key": None,
            "value": None,
            "topic": "mm2-offset-syncs.b.internal",
            "partition": 2,
            "offset": 9,
            "timestamp": dt.datetime.fromtimestamp((MS + 9) / 1000, dt.UTC),
            "timestampType": 1,
        },
    ]


def test_no_records_is_an_empty_table_of_the_same_schema() -> None:
    table = kafka_read.records_table([], "a->b")
    assert table.num_rows == 0
    assert table.schema == arrow_schema(KAFKA_RECORD_SCHEMA)


def test_a_timestamp_keeps_its_milliseconds() -> None:
    (row,) = kafka_read.records_table([_record(0)], "p").to_pylist()
    assert row["timestamp"] == dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=dt.UTC)


@pytest.mark.spark
def test_a_driver_read_decodes_like_any_kafka_frame(spark: Any) -> None:
    key = codecs.encode_offset_sync_key("orders", 3)
    rows = [_record(0, key=key, value=codecs.encode_offset_sync_value(10, 4))]
    frame = frame_from_arrow(spark, kafka_read.records_table(rows, "a->b"), KAFKA_RECORD_SCHEMA)
    (decoded,) = decode.decode_offset_syncs(frame).collect()
    got = (decoded.topic, decoded.partition, decoded.upstream_offset, decoded.downstream_offset)
    assert got == ("orders", 3, 10, 4)
    assert decoded.record_offset == 0 and decoded.malformed_reason is None


def test_small_reads_go_to_the_driver_and_large_ones_to_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[int, tuple[int, int]]] = []

    def on_driver(settings: Any, topic: str, ranges: dict[int, tuple[int, int]], *, cluster_pair: str) -> Any:
        asked.append(dict(ranges))
        return kafka_read.records_table([], cluster_pair)

    monkeypatch.setattr(kafka_read, "read_on_driver", on_driver)
    monkeypatch.setattr(kafka_read, "frame_from_arrow", lambda spark, table, schema: ("local", table.num_rows))
    limit = kafka_read.DRIVER_READ_MAX_OFFSETS
    got = kafka_read.read_ranges(
        None,  # type: ignore[arg-type]
        {},
        "t",
        {0: (5, 5 + limit - 1), 1: (3, 4), 2: (8, 8)},
        cluster_pair="p",
        min_partitions=1,
    )
    assert got == ("local", 0)
    assert asked == [{0: (5, 5 + limit - 1), 1: (3, 4)}]  # the empty range is left out

    class NoSpark:
        @property
        def read(self) -> Any:
            raise LookupError("Spark's source")

    with pytest.raises(LookupError, match="Spark's source"):
        kafka_read.read_ranges(
            NoSpark(),  # type: ignore[arg-type]
            {},
            "t",
            {0: (0, limit), 1: (0, 1)},
            cluster_pair="p",
            min_partitions=1,
        )
    assert len(asked) == 1
