"""Replication health per source partition, and checkpoint freshness per group: pure DataFrame → DataFrame.

The group-partition rows say whether each consumer group would resume at the right place on the target. These
say whether MM2 itself keeps up: one row per replicated source partition, from MM2's stored position (the
next upstream offset it copies, ``inspector.mm2_position``), the partition's bounds on both clusters, and the
partition's newest offset sync. Definitions (DESIGN §12), with ``n`` MM2's next offset to copy and
``[earliest, latest)`` the source partition:

``replication_lag_records``    ``latest - max(n, earliest)``, at least 0: records waiting to be copied. Records
                               retention deleted are not waiting any more, so they are not lag; with no
                               stored position (MM2 copied nothing yet) it is ``latest - earliest``.
``records_lost_to_retention``  ``earliest - n`` when positive: records deleted before MM2 copied them. MM2
                               resumes at the source's earliest offset, so they never reach the target.
``source_reset``               ``n > latest``: MM2's position is beyond the source's end, the topic was
                               recreated or truncated under MM2.

Statuses, first match wins (``PartitionStatus``):

1. ``error``             a lookup for the row failed (the source or target bounds, or reading MM2's position
                         through the way it was given); see ``error``.
2. ``position_unknown``  there was no way to read MM2's position (no ``--connect-url``, no dedicated-mode
                         offsets topic): the position fields are empty. Not a problem.
3. ``source_reset``      as above.
4. ``lost_records``      records were lost to retention.
5. ``not_started``       MM2 has stored no position for a partition that holds records.
6. ``lagging``           more than ``lag_threshold`` records wait to be copied.
7. ``replicating``       none of the above.

The stored position trails what MM2 has copied by up to one offset flush (``offset.flush.interval.ms``,
60 s by default), so a partition that takes many records a second shows that much lag while MM2 keeps up:
set ``lag_threshold`` above one flush interval's traffic.

Freshness comes from the record timestamps of the topics the job reads anyway: the age of a partition's newest
offset sync (``offset_sync_age_seconds``), and of a group's newest checkpoint over the partitions inspected
(``group_checkpoint_age_seconds``), both as of when the admin state was read.
"""

from __future__ import annotations

import datetime as dt
from enum import StrEnum

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from mm2ctl.inspector import decode
from mm2ctl.inspector.schemas import CLASSIFIED_SCHEMA

PAIR = "cluster_pair"
PARTITION_KEY = [PAIR, "topic", "partition"]

#: The default of ``inspect --lag-threshold``: more records than this waiting to be copied is ``lagging``.
DEFAULT_LAG_THRESHOLD = 10_000


class PartitionStatus(StrEnum):
    """Stable status codes of a replicated source partition; part of the report format."""

    ERROR = "error"
    POSITION_UNKNOWN = "position_unknown"
    SOURCE_RESET = "source_reset"
    LOST_RECORDS = "lost_records"
    NOT_STARTED = "not_started"
    LAGGING = "lagging"
    REPLICATING = "replicating"


#: Statuses that need no action.
OK_PARTITION_STATUSES = frozenset({PartitionStatus.REPLICATING, PartitionStatus.POSITION_UNKNOWN})

PARTITION_MESSAGES: dict[PartitionStatus, str] = {
    PartitionStatus.ERROR: "Not inspected: a lookup for this partition failed; see the error column.",
    PartitionStatus.POSITION_UNKNOWN: (
        "MM2's position is unknown: give --connect-url (or run dedicated-mode MM2) to read it."
    ),
    PartitionStatus.SOURCE_RESET: (
        "Source reset: MM2's position is beyond the source partition's end, so the topic was recreated or "
        "truncated under MM2; it starts again from the source's earliest offset."
    ),
    PartitionStatus.LOST_RECORDS: (
        "Records lost: retention deleted records on the source before MM2 copied them; they are not on the target."
    ),
    PartitionStatus.NOT_STARTED: (
        "Not started: MM2 has stored no position for this partition, which holds records; check the "
        "MirrorSourceConnector's tasks and topic filter."
    ),
    PartitionStatus.LAGGING: "Lagging: more records wait to be copied than the lag threshold allows.",
    PartitionStatus.REPLICATING: "Replicating: MM2 keeps up with this partition.",
}


def _f(name: str, dtype: object, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable)  # type: ignore[arg-type]


#: The driver's input (``inspector.replication_state``): one row per replicated source partition.
#: ``position_known`` is the pair's (false: no way to read MM2's position); ``mm2_next_offset`` is null for a
#: partition MM2 stored no position for; ``error`` joins the row's failed lookups.
REPLICATED_PARTITIONS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("remote_topic", StringType(), False),
        _f("source_earliest", LongType()),
        _f("source_latest", LongType()),
        _f("target_latest", LongType()),
        _f("position_known", BooleanType(), False),
        _f("mm2_next_offset", LongType()),
        _f("error", StringType()),
    ]
)

#: ``newest_syncs``: the newest offset-sync record of each source partition that has one.
NEWEST_SYNCS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("newest_sync_upstream", LongType()),
        _f("newest_sync_downstream", LongType()),
        _f("newest_sync_timestamp", TimestampType()),
    ]
)

#: The partition rows (``inspect --rows partitions``), in report column order.
PARTITION_HEALTH_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("remote_topic", StringType(), False),
        _f("source_earliest", LongType()),
        _f("source_latest", LongType()),
        _f("target_latest", LongType()),
        _f("mm2_next_offset", LongType()),
        _f("replication_lag_records", LongType()),
        _f("records_lost_to_retention", LongType()),
        _f("source_reset", BooleanType()),
        _f("newest_sync_upstream", LongType()),
        _f("newest_sync_downstream", LongType()),
        _f("newest_sync_timestamp", TimestampType()),
        _f("offset_sync_age_seconds", DoubleType()),
        _f("status", StringType(), False),
        _f("is_ok", BooleanType(), False),
        _f("message", StringType(), False),
        _f("error", StringType()),
    ]
)

PARTITION_COLUMNS: tuple[str, ...] = tuple(PARTITION_HEALTH_SCHEMA.fieldNames())

#: The column ``with_group_checkpoint_age`` appends to the group-partition rows.
GROUP_CHECKPOINT_AGE = "group_checkpoint_age_seconds"

#: The group-partition rows as reported: ``transforms.classify``'s columns, then the group's checkpoint age.
GROUP_ROWS_SCHEMA = StructType([*CLASSIFIED_SCHEMA.fields, _f(GROUP_CHECKPOINT_AGE, DoubleType())])


def _age_seconds(timestamp: Column, as_of: dt.datetime) -> Column:
    """Seconds from ``timestamp`` to ``as_of``, at least 0 (a record written after the admin read is fresh)."""
    micros = F.unix_micros(F.lit(as_of).cast("timestamp")) - F.unix_micros(timestamp)
    return F.when(timestamp.isNotNull(), F.greatest(micros, F.lit(0)).cast("double") / 1e6)


def newest_syncs(sync_records: DataFrame, partitions: DataFrame) -> DataFrame:
    """The newest offset sync of each of ``partitions`` (``cluster_pair``, ``topic``, ``partition``) in the
    offset-syncs topic's raw records (``schemas.KAFKA_RECORD_SCHEMA``).

    Newest is by record offset, as compaction keeps it; MM2 writes and reads partition 0 only. A record whose
    value cannot be a sync (not 16 bytes) is passed over, so the good one before it stands; a partition whose
    newest record is a tombstone has no sync. The records are grouped by their raw key bytes, every buffer a
    primitive, so Spark aggregates them in a hash table before its shuffle (a row per key and task crosses
    it), and the keys are matched to ``partitions`` by MM2's exact key bytes, never parsed. Decoding every
    record in full first took twice as long at ten million records. Output: ``NEWEST_SYNCS_SCHEMA``.
    """
    v, offset = F.col("value"), F.col("offset")
    upstream, downstream = decode.offset_sync_value(v)
    candidates = sync_records.where(
        (F.col("partition") == 0) & F.col("key").isNotNull() & (v.isNull() | (F.octet_length(v) == 16))
    )
    newest = candidates.groupBy(PAIR, "key").agg(
        F.max_by(v.isNull(), offset).alias("_tombstone"),
        F.max_by(upstream, offset).alias("newest_sync_upstream"),
        F.max_by(downstream, offset).alias("newest_sync_downstream"),
        F.max_by("timestamp", offset).alias("newest_sync_timestamp"),
    )
    keys = partitions.select(*PARTITION_KEY, decode.offset_sync_key(F.col("topic"), F.col("partition")).alias("key"))
    return (
        newest.where(~F.col("_tombstone"))
        .join(F.broadcast(keys), on=[PAIR, "key"])
        .select(*PARTITION_KEY, "newest_sync_upstream", "newest_sync_downstream", "newest_sync_timestamp")
    )


def classify_partitions(
    partitions: DataFrame,
    syncs: DataFrame,
    *,
    lag_threshold: int = DEFAULT_LAG_THRESHOLD,
    as_of: dt.datetime,
) -> DataFrame:
    """One status per replicated source partition (module docstring), with its lag, loss and freshness.

    ``partitions`` is ``REPLICATED_PARTITIONS_SCHEMA``, ``syncs`` ``newest_syncs``'s output (both small: a
    row per partition, so the join is broadcast). ``as_of`` is when the admin state was read.
    Output: ``PARTITION_HEALTH_SCHEMA``.
    """
    joined = partitions.join(F.broadcast(syncs), on=PARTITION_KEY, how="left")
    n, se, sl = F.col("mm2_next_offset"), F.col("source_earliest"), F.col("source_latest")
    # ``known`` also needs both bounds: Spark's ``greatest`` skips nulls, so it must never see a missing one.
    known = F.col("position_known") & se.isNotNull() & sl.isNotNull()
    stored = n.isNotNull()
    zero = F.lit(0).cast("long")
    lag = F.when(known & stored, F.greatest(F.try_subtract(sl, F.greatest(n, se)), zero)).when(
        known, F.greatest(F.try_subtract(sl, se), zero)
    )
    lost = F.when(known & stored, F.greatest(F.try_subtract(se, n), zero)).when(known, zero)
    reset = F.when(known & stored, n > sl).when(known, F.lit(False))
    staged = joined.select(
        "*",
        lag.alias("replication_lag_records"),
        lost.alias("records_lost_to_retention"),
        reset.alias("source_reset"),
    )

    def status(s: PartitionStatus) -> Column:
        return F.lit(s.value)

    code = (
        F.when(F.col("error").isNotNull() | se.isNull() | sl.isNull(), status(PartitionStatus.ERROR))
        .when(~F.col("position_known"), status(PartitionStatus.POSITION_UNKNOWN))
        .when(F.col("source_reset"), status(PartitionStatus.SOURCE_RESET))
        .when(F.col("records_lost_to_retention") > 0, status(PartitionStatus.LOST_RECORDS))
        .when(~stored & (sl > se), status(PartitionStatus.NOT_STARTED))
        .when(F.col("replication_lag_records") > F.lit(lag_threshold), status(PartitionStatus.LAGGING))
        .otherwise(status(PartitionStatus.REPLICATING))
    )
    messages = F.create_map(*[F.lit(x) for item in PARTITION_MESSAGES.items() for x in item])
    no_bounds = F.when(se.isNull() | sl.isNull(), F.lit("source partition: no bounds"))
    classified = staged.withColumn("status", code)
    return classified.select(
        *PARTITION_KEY,
        "remote_topic",
        "source_earliest",
        "source_latest",
        "target_latest",
        "mm2_next_offset",
        "replication_lag_records",
        "records_lost_to_retention",
        "source_reset",
        "newest_sync_upstream",
        "newest_sync_downstream",
        "newest_sync_timestamp",
        _age_seconds(F.col("newest_sync_timestamp"), as_of).alias("offset_sync_age_seconds"),
        "status",
        F.col("status").isin(*[s.value for s in OK_PARTITION_STATUSES]).alias("is_ok"),
        messages[F.col("status")].alias("message"),
        F.coalesce(F.col("error"), no_bounds).alias("error"),
    )


def with_group_checkpoint_age(classified: DataFrame, *, as_of: dt.datetime) -> DataFrame:
    """``classified`` (one pair's group-partition rows) with ``group_checkpoint_age_seconds``: the age of the
    group's newest checkpoint over its inspected partitions, null when MM2 checkpointed none of them.

    A window over (pair, group): ``transforms.classify`` already clusters and sorts its rows so, and Spark
    reuses that, so this adds no shuffle.
    """
    newest = F.max("checkpoint_timestamp").over(Window.partitionBy(PAIR, "group"))
    return classified.select("*", _age_seconds(newest, as_of).alias(GROUP_CHECKPOINT_AGE))


def summarize_partitions(partitions: DataFrame) -> DataFrame:
    """Counts per pair and partition status, with the lag and loss they add up to, for the table."""
    return partitions.groupBy(PAIR, "status").agg(
        F.min("is_ok").alias("is_ok"),
        F.count(F.lit(1)).alias("partitions"),
        F.sum("replication_lag_records").alias("replication_lag_records"),
        F.sum("records_lost_to_retention").alias("records_lost_to_retention"),
        F.max("offset_sync_age_seconds").alias("max_offset_sync_age_seconds"),
    )
