"""Batch-read MM2's internal topics with Spark's own Kafka source (``spark-sql-kafka-0-10``).

The offset-syncs and checkpoints topics are compacted and may carry transaction markers, so their offsets
have gaps. A batch read does not count those gaps as lost data, whatever ``failOnDataLoss`` says; what
``failOnDataLoss=true`` refuses is a requested offset below the log start, i.e. records deleted under the
read (``tests/integration/test_spark_read.py`` measures both). The inspector reads each partition from
the run's snapshot of its bounds (or from past what a live session kept) to the snapshot's end, with
``failOnDataLoss=false``, so a retention or delete-records pass racing the read cannot fail an inspection,
and with ``read_committed``, so aborted records are skipped. Both topics have a single partition, which
``minPartitions`` splits into several Spark tasks by offset range.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA

#: Java client settings Spark's Kafka source may be given (``kafka.``-prefixed); everything else a client
#: config holds (deserializers, group ids, offsets reset) is Spark's to set and it refuses them.
_PASSED_PREFIXES = ("security.", "ssl.", "sasl.")
_PASSED_KEYS = frozenset({"bootstrap.servers", "client.dns.lookup", "request.timeout.ms", "client.id"})


def kafka_options(java_client_settings: Mapping[str, str]) -> dict[str, str]:
    """The ``kafka.*`` reader options for a cluster, from the Java client settings the MM2 file gives it."""
    return {
        f"kafka.{k}": v for k, v in java_client_settings.items() if k in _PASSED_KEYS or k.startswith(_PASSED_PREFIXES)
    }


def read_topic(
    spark: SparkSession,
    java_client_settings: Mapping[str, str],
    topic: str,
    *,
    cluster_pair: str,
    min_partitions: int,
    fail_on_data_loss: bool = False,
) -> DataFrame:
    """Every record of ``topic`` from earliest to latest, shaped as ``schemas.KAFKA_RECORD_SCHEMA``."""
    raw = (
        spark.read.format("kafka")
        .options(**kafka_options(java_client_settings))
        .option("kafka.isolation.level", "read_committed")
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .option("failOnDataLoss", "true" if fail_on_data_loss else "false")
        .option("minPartitions", str(min_partitions))
        .load()
    )
    return _shaped(raw, cluster_pair)


def read_ranges(
    spark: SparkSession,
    java_client_settings: Mapping[str, str],
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    *,
    cluster_pair: str,
    min_partitions: int,
) -> DataFrame:
    """The records of ``topic`` in each partition's ``[start, end)`` of ``ranges`` (a run's snapshot, or what
    is past the previous one), shaped as ``schemas.KAFKA_RECORD_SCHEMA``. Partitions with nothing to read are
    left out; with none left, no read at all."""
    wanted = {p: r for p, r in sorted(ranges.items()) if r[0] < r[1]}
    if not wanted:
        return empty_records(spark)
    raw = (
        spark.read.format("kafka")
        .options(**kafka_options(java_client_settings))
        .option("kafka.isolation.level", "read_committed")
        .option("assign", json.dumps({topic: list(wanted)}))
        .option("startingOffsets", json.dumps({topic: {str(p): r[0] for p, r in wanted.items()}}))
        .option("endingOffsets", json.dumps({topic: {str(p): r[1] for p, r in wanted.items()}}))
        .option("failOnDataLoss", "false")
        .option("minPartitions", str(min_partitions))
        .load()
    )
    return _shaped(raw, cluster_pair)


def _shaped(raw: DataFrame, cluster_pair: str) -> DataFrame:
    return raw.select(
        F.lit(cluster_pair).alias("cluster_pair"),
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    )


def empty_records(spark: SparkSession) -> DataFrame:
    """What a missing topic reads as: no records (the job reports the topic as missing separately)."""
    return spark.createDataFrame([], KAFKA_RECORD_SCHEMA)
