"""Replication health per source partition, and checkpoint freshness per group: pure DataFrame → DataFrame.

The group-partition rows say whether each consumer group would resume at the right place on the target. These
say whether MM2 itself keeps up: one row per replicated source partition, from MM2's stored position (the
next upstream offset it copies, ``inspector.reads.mm2_position``), the partition's bounds on both clusters, and the
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
6. ``lagging``           more than ``lag_threshold`` records wait to be copied, or the oldest of them is more
                         than ``lag_seconds_threshold`` seconds old (``replication_lag_seconds``); the message
                         names both figures.
7. ``replicating``       none of the above.

The stored position trails what MM2 has copied by up to one offset flush (``offset.flush.interval.ms``,
60 s by default), so a partition that takes many records a second shows that much lag while MM2 keeps up:
set ``lag_threshold`` above one flush interval's traffic. In time, the record at the stored position was
copied at most one flush interval before the position was stored, so a healthy MM2 shows at most about one
interval: the default ``lag_seconds_threshold`` (``selection.DEFAULT_LAG_SECONDS_THRESHOLD``) is twice the
default interval.

The lag in time and the retention margin (``replication_lag_seconds``, ``retention_margin_seconds``, from
the record waiting at MM2's position: ``inspector.reads.waiting_records``) come computed from the driver and
pass through.

Freshness comes from the record timestamps of the topics the job reads anyway: the age of a partition's newest
offset sync (``offset_sync_age_seconds``), and of a group's newest checkpoint over the partitions inspected
(``group_checkpoint_age_seconds``), both as of when the admin state was read.
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mm2ctl.inspector.schemas import CHECKPOINT_LAG, GROUP_CHECKPOINT_AGE, GROUP_NEWEST_CHECKPOINT
from mm2ctl.inspector.selection import DEFAULT_LAG_SECONDS_THRESHOLD, DEFAULT_LAG_THRESHOLD
from mm2ctl.inspector.statuses import OK_PARTITION_STATUSES, PARTITION_MESSAGES, PartitionStatus
from mm2ctl.inspector.transforms.sql_text import Statement, micros, moment, quoted

PAIR = "cluster_pair"
PARTITION_KEY = [PAIR, "topic", "partition"]


def age_seconds(timestamp: str, as_of: str) -> str:
    """SQL: seconds from ``timestamp`` to ``as_of`` (a column), at least 0 (a record written after the admin
    read is fresh); null without a timestamp."""
    micros = f"greatest(unix_micros({as_of}) - unix_micros({timestamp}), 0)"
    return f"CASE WHEN {timestamp} IS NOT NULL THEN CAST({micros} AS DOUBLE) / 1e6 END"


def age_seconds_of(timestamp_micros: int | None, as_of: dt.datetime) -> float | None:
    """``age_seconds``' rule on the driver, for a timestamp Spark gave in microseconds."""
    if timestamp_micros is None:
        return None
    return float(max(micros(as_of) - timestamp_micros, 0)) / 1e6


def classify_partitions(
    partitions: DataFrame,
    syncs: DataFrame,
    *,
    lag_threshold: int = DEFAULT_LAG_THRESHOLD,
    lag_seconds_threshold: float = DEFAULT_LAG_SECONDS_THRESHOLD,
    as_of: dt.datetime,
) -> DataFrame:
    """One status per replicated source partition (module docstring), with its lag, loss and freshness.

    ``partitions`` is ``schemas.REPLICATED_PARTITIONS_SCHEMA``, ``syncs`` ``schemas.NEWEST_SYNCS_SCHEMA`` (each
    partition's newest offset sync, ``inspector.kept.pair_topics``; both small: a row per partition, so the join is
    broadcast). ``as_of`` is when the admin state was read.
    Output: ``schemas.PARTITION_HEALTH_SCHEMA``.
    """
    q = Statement()
    # ``known`` also needs both bounds: Spark's ``greatest`` skips nulls, so it must never see a missing one.
    known = "(position_known AND source_earliest IS NOT NULL AND source_latest IS NOT NULL)"
    stored = "mm2_next_offset IS NOT NULL"
    zero = "CAST(0 AS BIGINT)"
    s = {code: q.value(code.value) for code in PartitionStatus}
    ok = ", ".join(s[code] for code in sorted(OK_PARTITION_STATUSES))
    text = f"""
    WITH staged AS (
      SELECT /*+ BROADCAST(n) */ p.*, n.newest_sync_upstream, n.newest_sync_downstream, n.newest_sync_timestamp,
        CASE WHEN {known} AND {stored}
               THEN greatest(try_subtract(source_latest, greatest(mm2_next_offset, source_earliest)), {zero})
             WHEN {known} THEN greatest(try_subtract(source_latest, source_earliest), {zero}) END
          AS replication_lag_records,
        CASE WHEN {known} AND {stored} THEN greatest(try_subtract(source_earliest, mm2_next_offset), {zero})
             WHEN {known} THEN {zero} END AS records_lost_to_retention,
        CASE WHEN {known} AND {stored} THEN mm2_next_offset > source_latest WHEN {known} THEN false END
          AS source_reset
      FROM {{partitions}} p
      LEFT JOIN {{syncs}} n
        ON p.cluster_pair = n.cluster_pair AND p.topic = n.topic AND p.`partition` = n.`partition`
    ),
    classified AS (
      SELECT *, CASE
        WHEN error IS NOT NULL OR source_earliest IS NULL OR source_latest IS NULL THEN {s[PartitionStatus.ERROR]}
        WHEN NOT position_known THEN {s[PartitionStatus.POSITION_UNKNOWN]}
        WHEN source_reset THEN {s[PartitionStatus.SOURCE_RESET]}
        WHEN records_lost_to_retention > 0 THEN {s[PartitionStatus.LOST_RECORDS]}
        WHEN NOT {stored} AND source_latest > source_earliest THEN {s[PartitionStatus.NOT_STARTED]}
        WHEN replication_lag_records > {q.value(lag_threshold)}
          OR replication_lag_seconds > {q.value(float(lag_seconds_threshold))} THEN {s[PartitionStatus.LAGGING]}
        ELSE {s[PartitionStatus.REPLICATING]} END AS status
      FROM staged
    )
    SELECT cluster_pair, topic, `partition`, remote_topic, source_earliest, source_latest, target_latest,
      mm2_next_offset, replication_lag_records, records_lost_to_retention, source_reset, newest_sync_upstream,
      newest_sync_downstream, newest_sync_timestamp,
      {age_seconds("newest_sync_timestamp", "as_of.at")} AS offset_sync_age_seconds,
      status, status IN ({ok}) AS is_ok,
      CASE WHEN status = {s[PartitionStatus.LAGGING]} THEN {lagging_message(q, lag_threshold, lag_seconds_threshold)}
        ELSE {q.map_of({code.value: message for code, message in PARTITION_MESSAGES.items()})}[status] END
        AS message,
      coalesce(error, CASE WHEN source_earliest IS NULL OR source_latest IS NULL
        THEN {q.value("source partition: no bounds")} END) AS error,
      replication_lag_seconds, lag_timestamp_type, oldest_waiting_timestamp, retention_ms, retention_ms_source,
      retention_margin_seconds, retention_margin_basis
    FROM classified CROSS JOIN {{as_of}} as_of
    """
    spark = partitions.sparkSession
    return q.run(spark, text, partitions=partitions, syncs=syncs, as_of=moment(spark, as_of))


def lagging_message(q: Statement, lag_threshold: int, lag_seconds_threshold: float) -> str:
    """SQL: a lagging partition's message, naming its records and seconds and both thresholds."""
    age = (
        "CASE WHEN replication_lag_seconds IS NULL THEN 'of unknown age' "
        "ELSE format_string('%.1f s old', replication_lag_seconds) END"
    )
    limits = q.value(f"lagging above {lag_threshold:,} records or {lag_seconds_threshold:g} s")
    head = q.value("Lagging: ")
    return (
        f"concat({head}, format_number(replication_lag_records, 0), "
        f"{q.value(' records wait to be copied, the oldest ')}, {age}, {q.value(' (')}, {limits}, {q.value(').')})"
    )


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
