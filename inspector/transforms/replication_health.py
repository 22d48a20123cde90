"""Checkpoint freshness per group, and the replay in time: pure DataFrame → DataFrame over the group-partition rows.

Freshness comes from the record timestamps of the topics the job reads anyway: the age of a partition's newest
offset sync (``offset_sync_age_seconds``), and of a group's newest checkpoint over the partitions inspected
(``group_checkpoint_age_seconds``), both as of when the admin state was read.

The replicated partitions' health (MM2's lag and losses per source partition) is ``inspector.rules.partition_health``.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mm2ctl.inspector.schemas import CHECKPOINT_LAG, GROUP_CHECKPOINT_AGE, GROUP_NEWEST_CHECKPOINT
from mm2ctl.inspector.transforms.sql_text import Statement, moment, quoted

PAIR = "cluster_pair"


def age_seconds(timestamp: str, as_of: str) -> str:
    """SQL: seconds from ``timestamp`` to ``as_of`` (a column), at least 0 (a record written after the admin
    read is fresh); null without a timestamp."""
    micros = f"greatest(unix_micros({as_of}) - unix_micros({timestamp}), 0)"
    return f"CASE WHEN {timestamp} IS NOT NULL THEN CAST({micros} AS DOUBLE) / 1e6 END"


def with_group_newest_checkpoint(classified: DataFrame) -> DataFrame:
    """``classified`` (one pair's group-partition rows) with ``GROUP_NEWEST_CHECKPOINT``: the newest checkpoint
    of the row's group over its inspected partitions, null when MM2 checkpointed none of them.

    A window over (pair, group): ``classify.classify`` already clusters and sorts its rows so, and Spark
    reuses that, so this adds no shuffle.
    """
    window = f"max(checkpoint_timestamp) OVER (PARTITION BY cluster_pair, `group`) AS {GROUP_NEWEST_CHECKPOINT}"
    return Statement().run(classified.sparkSession, f"SELECT *, {window} FROM {{rows}}", rows=classified)


def with_group_checkpoint_age(rows: DataFrame, *, as_of: dt.datetime) -> DataFrame:
    """``rows`` (``with_group_newest_checkpoint``'s) with ``group_checkpoint_age_seconds``: the age of the
    group's newest checkpoint at ``as_of``, null when there is none. A projection, so rows kept from an earlier
    run get the age of now."""
    columns = ", ".join(quoted(c) for c in rows.columns)
    text = f"""
    SELECT {columns}, {age_seconds(GROUP_NEWEST_CHECKPOINT, "as_of.at")} AS {GROUP_CHECKPOINT_AGE}
    FROM {{rows}} CROSS JOIN {{as_of}} as_of
    """
    spark = rows.sparkSession
    return Statement().run(spark, text, rows=rows, as_of=moment(spark, as_of))


def with_checkpoint_lag(rows: DataFrame, seconds: DataFrame) -> DataFrame:
    """``rows`` (group-partition rows) with ``checkpoint_lag_seconds``, where the position is exact: 0 when
    the committed target offset is the translated position, else the driver's reading (``seconds``,
    ``schemas.REPLAY_SECONDS_SCHEMA``, small, so broadcast; ``inspector.reads.replay_time``), null where it has
    none. Null where the position is not exact."""
    columns = ", ".join(f"r.{quoted(c)}" for c in rows.columns)
    text = f"""
    SELECT /*+ BROADCAST(l) */ {columns},
      CASE WHEN r.replay_if_failover_now = 0 AND r.skip_if_failover_now = 0 THEN CAST(0 AS DOUBLE)
           WHEN r.replay_if_failover_now IS NOT NULL THEN l.seconds END AS {CHECKPOINT_LAG}
    FROM {{rows}} r LEFT JOIN {{seconds}} l
      ON r.cluster_pair = l.cluster_pair AND r.`group` = l.`group` AND r.topic = l.topic
        AND r.`partition` = l.`partition`
    """
    return Statement().run(rows.sparkSession, text, rows=rows, seconds=seconds)


def without_checkpoint_lag(rows: DataFrame) -> DataFrame:
    """``rows`` with ``checkpoint_lag_seconds`` null: a run that reads no record for it (without ``--exact``)."""
    return rows.withColumn(CHECKPOINT_LAG, F.lit(None).cast("double"))


#: The exact rows whose replay in time the driver reads: a failover now would replay or skip something.
REPLAY_PROBES = (
    "replay_if_failover_now IS NOT NULL AND target_offset IS NOT NULL AND source_offset IS NOT NULL "
    "AND source_latest IS NOT NULL AND target_latest IS NOT NULL "
    "AND (replay_if_failover_now > 0 OR skip_if_failover_now > 0)"
)
