"""Batch-read MM2's internal topics with Spark's own Kafka source (``spark-sql-kafka-0-10``).

The offset-syncs and checkpoints topics are compacted and may carry transaction markers, so their offsets
have gaps. A batch read does not count those gaps as lost data, whatever ``failOnDataLoss`` says; what
``failOnDataLoss=true`` refuses is a requested offset below the log start, i.e. records deleted under the
read (``tests/integration/test_spark_read.py`` measures both). The inspector reads each partition from
the run's snapshot of its bounds (or from past what a live session kept) to the snapshot's end, with
``failOnDataLoss=false``, so a retention or delete-records pass racing the read cannot fail an inspection,
and with ``read_committed``, so aborted records are skipped. Both topics have a single partition, which
``minPartitions`` splits into several Spark tasks by offset range.

A read of ranges that hold at most ``DRIVER_READ_MAX_OFFSETS`` offsets (what a live session reads past its
previous snapshot, or a small topic's whole history) is made on the driver instead, through librdkafka
(``core.kafka.records.read_ranges``, ``read_committed``, the client settings ``core.security.client_settings``
makes of the same Java ones), and handed to Spark as a local relation of the same shape (``records_table``).
Spark's Kafka source has a fixed cost a read (planning, a task, its consumer's start) that dwarfs librdkafka's
read of a few hundred records; above the threshold the source's parallel tasks win. The local relation is
Arrow sent to the JVM, or to a Spark Connect server (``inspector.spark.compat.frame_from_arrow``). A driver read stops
at each range's end as the source does; a transaction marker (never delivered) ends a range early, and aborted
records are skipped, as ``read_committed`` has the source skip them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mm2ctl.core.kafka import records
from mm2ctl.core.security.client_settings import to_librdkafka
from mm2ctl.inspector.rules import decoding
from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA, arrow_schema
from mm2ctl.inspector.spark.compat import frame_from_arrow

#: Offsets (the sum of the ranges' ``end - start``; gaps included) up to which a read is made on the driver
#: through librdkafka rather than by Spark's Kafka source: 50,000 offset syncs or checkpoints are a few MiB,
#: read in well under a second on one consumer.
DRIVER_READ_MAX_OFFSETS = 50_000
#: Offsets up to which an inspection on the driver engine reads a topic's whole history on the driver and folds
#: it there (``inspector.kept.pair_topics``): about a second of librdkafka and Arrow at this size.
DRIVER_ENGINE_MAX_OFFSETS = 200_000


def driver_max_offsets(*, on_driver: bool) -> int:
    """The most offsets a read makes and folds on the driver: on the driver engine, what it reads in full there."""
    return DRIVER_ENGINE_MAX_OFFSETS if on_driver else DRIVER_READ_MAX_OFFSETS


#: Records per Spark task of a full read, and the same rows per shuffle partition of the records' sort.
RECORDS_PER_TASK = 500_000

#: Java client settings Spark's Kafka source may be given (``kafka.``-prefixed); everything else a client
#: config holds (deserializers, group ids, offsets reset) is Spark's to set and it refuses them.
_PASSED_PREFIXES = ("security.", "ssl.", "sasl.")
_PASSED_KEYS = frozenset({"bootstrap.servers", "client.dns.lookup", "request.timeout.ms", "client.id"})


def tasks_for(records: int, *, per_task: int = RECORDS_PER_TASK) -> int:
    """Spark tasks for ``records`` rows: one per ``per_task``, at most four per core, at least one."""
    return max(1, min(4 * (os.cpu_count() or 2), -(-records // per_task)))


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
    min_partitions: int | None = None,
) -> DataFrame:
    """The records of ``topic`` in each partition's ``[start, end)`` of ``ranges`` (a run's snapshot, or what
    is past the previous one), shaped as ``schemas.KAFKA_RECORD_SCHEMA``. Partitions with nothing to read are
    left out; with none left, no read at all. Spark reads it in ``min_partitions`` tasks at least (default:
    ``tasks_for`` the offsets)."""
    wanted = {p: r for p, r in sorted(ranges.items()) if r[0] < r[1]}
    if not wanted:
        return empty_records(spark)
    offsets = sum(end - start for start, end in wanted.values())
    if min_partitions is None:
        min_partitions = tasks_for(offsets)
    if offsets <= DRIVER_READ_MAX_OFFSETS:
        table = read_on_driver(java_client_settings, topic, wanted, cluster_pair=cluster_pair)
        return frame_from_arrow(spark, table, KAFKA_RECORD_SCHEMA)
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


def read_on_driver(
    java_client_settings: Mapping[str, str],
    topic: str,
    ranges: Mapping[int, tuple[int, int]],
    *,
    cluster_pair: str,
) -> pa.Table:
    """The records of ``topic`` in each partition's ``[start, end)``, read through librdkafka on this process
    (``read_committed``), as ``records_table``. A denied read raises the authorization error naming the
    principal; an unreachable broker, ``KafkaClusterError`` after the reader's timeout."""
    config = to_librdkafka(java_client_settings)
    wanted = {(topic, p): r for p, r in ranges.items()}
    return records_table(records.read_ranges(config, wanted, isolation="read_committed"), cluster_pair)


def records_table(read: Iterable[records.RawRecord], cluster_pair: str) -> pa.Table:
    """``read`` as Spark's Kafka source gives the same records (``schemas.KAFKA_RECORD_SCHEMA``;
    ``inspector.rules.decoding.kafka_records``)."""
    return decoding.kafka_records(read, cluster_pair).cast(arrow_schema(KAFKA_RECORD_SCHEMA))


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
