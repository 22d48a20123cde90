"""Spark's Kafka source against a really compacted, transactional topic in the lab (docs/design.md, "The lab").

MM2's internal topics are compacted and may hold transaction markers, so their offsets have gaps. This proves
what the inspector relies on: a batch read with ``failOnDataLoss=false`` and ``read_committed`` returns
exactly the records a Kafka consumer sees, split over several Spark tasks; and it records what
``failOnDataLoss=true`` does with the same gaps.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from mm2ctl.core import records
from mm2ctl.core.admin import KafkaAdmin
from mm2ctl.inspector.kafka_read import read_topic
from mm2ctl.lab.lab import LabInfo
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
