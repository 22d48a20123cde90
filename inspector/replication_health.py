"""Replication health per source partition, and checkpoint freshness per group: pure DataFrame → DataFrame.

The group-partition rows say whether each consumer group would resume at the right place on the target. These
say whether MM2 itself keeps up: one row per replicated source partition, from MM2's stored position (the
next upstream offset it copies, ``inspector.mm2_position``), the partition's bounds on both clusters, and the
partition's newest offset sync. Definitions (docs/design.md, "MM2's position"), with ``n`` MM2's next offset to copy and
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

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from mm2ctl.inspector.schemas import GROUP_CHECKPOINT_AGE
from mm2ctl.inspector.statuses import OK_PARTITION_STATUSES, PARTITION_MESSAGES, PartitionStatus

PAIR = "cluster_pair"
PARTITION_KEY = [PAIR, "topic", "partition"]

#: The default of ``inspect --lag-threshold``: more records than this waiting to be copied is ``lagging``.
DEFAULT_LAG_THRESHOLD = 10_000


def _age_seconds(timestamp: Column, as_of: dt.datetime) -> Column:
    """Seconds from ``timestamp`` to ``as_of``, at least 0 (a record written after the admin read is fresh)."""
    micros = F.unix_micros(F.lit(as_of).cast("timestamp")) - F.unix_micros(timestamp)
    return F.when(timestamp.isNotNull(), F.greatest(micros, F.lit(0)).cast("double") / 1e6)


def classify_partitions(
    partitions: DataFrame,
    syncs: DataFrame,
    *,
    lag_threshold: int = DEFAULT_LAG_THRESHOLD,
    as_of: dt.datetime,
) -> DataFrame:
    """One status per replicated source partition (module docstring), with its lag, loss and freshness.

    ``partitions`` is ``schemas.REPLICATED_PARTITIONS_SCHEMA``, ``syncs`` ``schemas.NEWEST_SYNCS_SCHEMA`` (each
    partition's newest offset sync, ``inspector.pair_topics``; both small: a row per partition, so the join is
    broadcast). ``as_of`` is when the admin state was read.
    Output: ``schemas.PARTITION_HEALTH_SCHEMA``.
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
