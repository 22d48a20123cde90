"""Spark's Kafka source against a really compacted, transactional topic in the lab (docs/design.md, "The lab").

MM2's internal topics are compacted and may hold transaction markers, so their offsets have gaps. This proves
what the inspector relies on: a batch read with ``failOnDataLoss=false`` and ``read_committed`` returns
exactly the records a Kafka consumer sees, split over several Spark tasks; and it records what
``failOnDataLoss=true`` does with the same gaps. A small read is made on the driver through librdkafka instead
(``inspector.reads.kafka_read.DRIVER_READ_MAX_OFFSETS``): both ways give the same rows, and the same decoded offset
syncs and checkpoints.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from mm2ctl.core.kafka import codecs, records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.inspector.reads import kafka_read
from mm2ctl.inspector.reads.kafka_read import read_topic
from mm2ctl.inspector.transforms import decode
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually, source_conf, uniq

pytestmark = pytest.mark.integration

COMPACT_FAST = {
    "cleanup.policy": "compact",
    "segment.ms": "100",
    "min.cleanable.dirty.ratio": "0.001",
    "delete.retention.ms": "100",
    "min.compaction.lag.ms": "0",
}


def _gappy_topic(lab: LabInfo) -> tuple[str, list[tuple[int, bytes | None, bytes | None]]]:
    topic = uniq("compacted")
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1}, config=COMPACT_FAST)
    # Ten keys rewritten fifty times, in batches spread over time so segments roll and the cleaner has work.
    for round_ in range(5):
        records.produce(
            source_conf(lab), topic, [(f"k{i % 10}".encode(), f"r{round_}-{i}".encode(), 0) for i in range(100)]
        )
        time.sleep(0.15)
    # A committed and an aborted transaction: markers and aborted records leave more gaps.
    producer = Producer({**source_conf(lab), "transactional.id": f"mm2ctl-test-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    for commit in (True, False):
        producer.begin_transaction()
        for i in range(5):
            producer.produce(topic, key=f"tx{i}".encode(), value=f"{'commit' if commit else 'abort'}-{i}".encode())
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)

    # A record well after the rest rolls the active segment, so everything before it may be cleaned.
    time.sleep(0.2)
    records.produce(source_conf(lab), topic, [(b"roll", b"x", 0)])

    def read() -> list[tuple[int, bytes | None, bytes | None]]:
        return [(r.offset, r.key, r.value) for r in records.read_partitions(source_conf(lab), topic)]

    def compacted_and_settled() -> list[tuple[int, bytes | None, bytes | None]] | None:
        first = read()
        time.sleep(1.5)
        second = read()
        has_gaps = [o for o, _k, _v in second] != list(range(second[0][0], second[0][0] + len(second)))
        return second if first == second and has_gaps and len(second) < 300 else None

    return topic, eventually(compacted_and_settled, timeout_s=120, interval_s=0.5, what=f"{topic} compacted")


def test_batch_read_of_a_compacted_transactional_topic(lab: LabInfo, spark: Any) -> None:
    topic, expected = _gappy_topic(lab)
    assert not any(v is not None and v.startswith(b"abort") for _o, _k, v in expected)

    frame = read_topic(spark, {"bootstrap.servers": lab.source.bootstrap}, topic, cluster_pair="p", min_partitions=4)
    assert frame.rdd.getNumPartitions() >= 2  # the single Kafka partition is split over several tasks
    got = sorted((r["offset"], _bytes(r["key"]), _bytes(r["value"])) for r in frame.collect())
    assert got == expected


def _bytes(value: Any) -> bytes | None:
    return None if value is None else bytes(value)


def test_fail_on_data_loss_ignores_compaction_gaps_but_not_deleted_records(lab: LabInfo, spark: Any) -> None:
    """What ``failOnDataLoss`` really guards in a batch read, measured rather than assumed.

    Compaction gaps and transaction markers are not "data loss" to Spark: ``true`` reads the same records as
    ``false``. What it refuses is a requested offset below the log start (records deleted under the read);
    ``false`` then starts at the log start instead.
    """
    topic, expected = _gappy_topic(lab)
    strict = read_topic(
        spark, {"bootstrap.servers": lab.source.bootstrap}, topic, cluster_pair="p", min_partitions=4,
        fail_on_data_loss=True,
    )  # fmt: skip
    assert sorted((r["offset"], _bytes(r["key"]), _bytes(r["value"])) for r in strict.collect()) == expected

    deleted = uniq("deleted")
    admin = KafkaAdmin.connect(source_conf(lab))
    admin.create_topics({deleted: 1})
    records.produce(source_conf(lab), deleted, [(None, f"d{i}".encode(), 0) for i in range(20)])
    admin.delete_records({(deleted, 0): 10})

    def read_from_zero(fail_on_data_loss: bool) -> list[int]:
        frame = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", lab.source.bootstrap)
            .option("subscribe", deleted)
            .option("startingOffsets", json.dumps({deleted: {"0": 0}}))
            .option("endingOffsets", "latest")
            .option("failOnDataLoss", str(fail_on_data_loss).lower())
            .load()
        )
        return sorted(r["offset"] for r in frame.collect())

    assert read_from_zero(False) == list(range(10, 20))
    with pytest.raises(Exception, match=r"(?i)data loss|lost|out of range|OffsetOutOfRange"):
        read_from_zero(True)


def _both_ways(
    spark: Any, lab: LabInfo, topic: str, ranges: dict[int, tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Any]:
    """The same ranges read by Spark's Kafka source and on the driver (the threshold moved each way)."""
    settings = {"bootstrap.servers": lab.source.bootstrap}
    monkeypatch.setattr(kafka_read, "DRIVER_READ_MAX_OFFSETS", 0)
    by_spark = kafka_read.read_ranges(spark, settings, topic, ranges, cluster_pair="p", min_partitions=2)
    monkeypatch.setattr(kafka_read, "DRIVER_READ_MAX_OFFSETS", 10**9)
    on_driver = kafka_read.read_ranges(spark, settings, topic, ranges, cluster_pair="p", min_partitions=2)
    return by_spark, on_driver


def _rows(frame: Any) -> list[tuple[Any, ...]]:
    return sorted((tuple(bytes(v) if isinstance(v, bytearray) else v for v in r) for r in frame.collect()), key=repr)


def _end(lab: LabInfo, topic: str) -> int:
    return int(KafkaAdmin.connect(source_conf(lab)).partition_bounds([(topic, 0)])[(topic, 0)].latest or 0)


def test_a_driver_read_gives_the_kafka_sources_rows(lab: LabInfo, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    topic, _settled = _gappy_topic(lab)  # the cleaner may still drop records: the two reads are compared
    end = _end(lab, topic)
    by_spark, on_driver = _both_ways(spark, lab, topic, {0: (0, end)}, monkeypatch)
    # The same columns and types; the local relation's nullability is ``KAFKA_RECORD_SCHEMA``'s, as an absent
    # topic's empty frame has it (the source says every column but ``cluster_pair`` may be null).
    assert [(f.name, f.dataType) for f in on_driver.schema] == [(f.name, f.dataType) for f in by_spark.schema]
    got = _rows(on_driver)
    assert got == _rows(by_spark)
    offsets = sorted(r[5] for r in got)
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets)))  # compaction gaps and markers
    assert not any(r[2] is not None and r[2].startswith(b"abort") for r in got)
    assert {r[7] for r in got} == {0}  # the producers' create time


def _transactional_syncs(lab: LabInfo) -> str:
    """Offset syncs and checkpoints in one topic, some in a committed and some in an aborted transaction, with
    a malformed record: the decoders' every path, on a topic with markers and aborted records."""
    topic = uniq("tx-internal")
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    plain = [
        (codecs.encode_offset_sync_key("orders", i % 3), codecs.encode_offset_sync_value(10 * i, i), 0)
        for i in range(6)
    ]
    records.produce(source_conf(lab), topic, [*plain, (b"bad", b"short", 0)])
    producer = Producer({**source_conf(lab), "transactional.id": f"mm2ctl-test-{uuid.uuid4().hex}"})
    producer.init_transactions(30)
    for commit in (True, False, True):
        producer.begin_transaction()
        for i in range(4):
            key = codecs.encode_offset_sync_key("orders", i % 3)
            producer.produce(topic, key=key, value=codecs.encode_offset_sync_value(100 + i, 50 + i), partition=0)
        producer.flush(30)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    return topic


def test_a_driver_read_decodes_as_the_kafka_sources(lab: LabInfo, spark: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    topic = _transactional_syncs(lab)
    end = _end(lab, topic)
    for start in (0, 3):
        by_spark, on_driver = _both_ways(spark, lab, topic, {0: (start, end)}, monkeypatch)
        syncs = _rows(decode.decode_offset_syncs(on_driver))
        assert syncs == _rows(decode.decode_offset_syncs(by_spark))
        assert len(syncs) == 7 - start + 8  # the plain records past start and two committed transactions
        assert _rows(decode.decode_checkpoints(on_driver)) == _rows(decode.decode_checkpoints(by_spark))
