"""Everything known about each group offset, joined into one row, and its status: pure DataFrame → DataFrame.

``join_target_state`` looks up the admin state of both clusters and the live checkpoint for each translated
group offset (``inspector.transforms.translated_offsets``); ``classify`` gives each row its status, message and failover
estimate by ``inspector.statuses``' rules and precedence. The join is one Spark SQL statement
(``inspector.transforms.sql_text``); the classification is ``inspector.rules.row_status``, the rule written once as
an Arrow function, which Spark runs over the joined rows. Unit-tested on tiny frames
(``tests/unit/test_inspector_classify.py``).
"""

from __future__ import annotations

import datetime as dt
import functools

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType, TimestampType

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.kafka.group_admin import UNMIRRORED_TYPES
from mm2ctl.core.translation.methods import EXACT_METHODS
from mm2ctl.inspector import statuses
from mm2ctl.inspector.reads.spark_query_rows import SPARK_QUERY_TYPE
from mm2ctl.inspector.rules import columns, row_status
from mm2ctl.inspector.rules.columns import micros
from mm2ctl.inspector.schemas import CLASSIFIED_SCHEMA, FRESH_CHECKPOINT
from mm2ctl.inspector.spark.arrow_rules import by_key, ship_by_value
from mm2ctl.inspector.statuses import Blocking, Status
from mm2ctl.inspector.transforms.sql_text import Statement

#: ``classify``'s output: the report's columns, then when the row's checkpoint was fresh.
CLASSIFIED_ROWS_SCHEMA = StructType([*CLASSIFIED_SCHEMA.fields, StructField(FRESH_CHECKPOINT, TimestampType())])

# --- joining the admin state ---

#: Where each error of a row came from, as its ``error`` column names it.
_ERRORS = (
    ("_e_go", "source group offsets"),
    ("_e_sp", "source partition"),
    ("_e_tp", "target partition"),
    ("_e_tgo", "target group offsets"),
    ("_e_sg", "source group"),
    ("_e_tg", "target group"),
)


def join_target_state(
    translated: DataFrame,
    *,
    source_partitions: DataFrame,
    target_partitions: DataFrame,
    target_group_offsets: DataFrame,
    source_groups: DataFrame,
    target_groups: DataFrame,
    checkpoints: DataFrame,
    mm2_positions: DataFrame,
) -> DataFrame:
    """Everything known about each source group offset, on both clusters, as one row (``JOINED_SCHEMA``).

    Target-side facts are looked up under the **remote** topic name that ``source_partitions`` carries, so
    DefaultReplicationPolicy (``src.orders``) and IdentityReplicationPolicy (``orders``) both work; Aiven's
    tool looks the target group up under the source name and so misses every prefixed topic. Checkpoints
    are keyed by the remote name too, as MM2 writes them. Every input's ``error`` is carried into one
    ``error`` column (prefixed with where it came from), so one failed lookup marks its rows and nothing
    else; a source partition the job did not describe at all is reported as an error rather than guessed.
    ``mm2_positions`` (``MM2_POSITIONS_SCHEMA``) gives each row MM2's position on its source partition.
    """
    q = Statement()
    prefixed = [f"CASE WHEN {c} IS NOT NULL THEN concat({q.value(what + ': ')}, {c}) END" for c, what in _ERRORS]
    undescribed = f"CASE WHEN _sp_topic IS NULL THEN {q.value('source partition: not described by the job')} END"
    errors = f"concat_ws('; ', {prefixed[0]}, {undescribed}, {', '.join(prefixed[1:])})"
    # Per-partition and per-group facts are small (one row per source partition or group): broadcast, so the
    # group-offset rows are not shuffled for them. The two per-group-partition frames are joined on rows
    # clustered by (pair, group), the clustering ``classify``'s per-group window needs next (the live
    # checkpoints are kept clustered so: ``inspector.transforms.live_checkpoints``). With
    # ``spark.sql.requireAllClusterKeysForCoPartition=false`` (the embedded session's setting) Spark then
    # shuffles each side once; with Spark's default it adds one more shuffle. The errors are joined in a step
    # of their own: Spark does not merge two steps when that would compute a costly expression twice.
    text = f"""
    WITH facts AS (
      SELECT /*+ BROADCAST(sp, tp, sg, tg, mp) */
        t.cluster_pair, t.`group`, t.topic, t.`partition`, t.committed_offset, t.translated_offset,
        t.translation_method, t.sync_upstream, t.sync_downstream, t.latest_sync_upstream, t.latest_sync_downstream,
        t.oldest_sync_upstream, t.oldest_sync_downstream, t.sync_count,
        sp.earliest_offset AS source_earliest, sp.latest_offset AS source_latest, sp.remote_topic,
        sg.state AS source_group_state, tp.earliest_offset AS target_earliest, tp.latest_offset AS target_latest,
        tg.state AS target_group_state, tg.member_count AS target_group_members,
        mp.position_known AS mm2_position_known, mp.mm2_next_offset, sg.group_type,
        t.share_start_offset, t.share_acknowledged_past, t.error AS _e_go, sp.topic AS _sp_topic,
        sp.error AS _e_sp, tp.error AS _e_tp, sg.error AS _e_sg, tg.error AS _e_tg
      FROM {{translated}} t
      LEFT JOIN {{source_partitions}} sp
        ON t.cluster_pair = sp.cluster_pair AND t.topic = sp.topic AND t.`partition` = sp.`partition`
      LEFT JOIN {{target_partitions}} tp
        ON t.cluster_pair = tp.cluster_pair AND sp.remote_topic = tp.topic AND t.`partition` = tp.`partition`
      LEFT JOIN {{source_groups}} sg ON t.cluster_pair = sg.cluster_pair AND t.`group` = sg.`group`
      LEFT JOIN {{target_groups}} tg ON t.cluster_pair = tg.cluster_pair AND t.`group` = tg.`group`
      LEFT JOIN {{mm2_positions}} mp
        ON t.cluster_pair = mp.cluster_pair AND t.topic = mp.topic AND t.`partition` = mp.`partition`
    ),
    clustered AS (SELECT /*+ REPARTITION(cluster_pair, `group`) */ * FROM facts),
    tgo AS (SELECT /*+ REPARTITION(cluster_pair, `group`) */ * FROM {{target_group_offsets}}),
    joined AS (
      SELECT t.*, tgo.committed_offset AS target_offset, tgo.error AS _e_tgo, tgo.written_by AS target_written_by,
        cp.upstream_offset AS checkpoint_upstream, cp.downstream_offset AS checkpoint_offset,
        cp.record_timestamp AS checkpoint_timestamp
      FROM clustered t
      LEFT JOIN tgo ON t.cluster_pair = tgo.cluster_pair AND t.`group` = tgo.`group`
        AND t.remote_topic = tgo.topic AND t.`partition` = tgo.`partition`
      LEFT JOIN {{checkpoints}} cp ON t.cluster_pair = cp.cluster_pair AND t.`group` = cp.`group`
        AND t.remote_topic = cp.topic AND t.`partition` = cp.`partition`
    ),
    errors AS (SELECT *, {errors} AS _errors FROM joined)
    SELECT cluster_pair, `group`, topic, `partition`, committed_offset, translated_offset, translation_method,
      sync_upstream, sync_downstream, latest_sync_upstream, latest_sync_downstream, oldest_sync_upstream,
      oldest_sync_downstream, sync_count, source_earliest, source_latest, remote_topic, source_group_state,
      target_earliest, target_latest, target_offset, target_group_state, target_group_members,
      checkpoint_upstream, checkpoint_offset, checkpoint_timestamp, mm2_position_known, mm2_next_offset,
      CASE WHEN _errors != '' THEN _errors END AS error, group_type, target_written_by, share_start_offset,
      share_acknowledged_past
    FROM errors
    """
    return q.run(
        translated.sparkSession,
        text,
        translated=translated,
        source_partitions=source_partitions,
        target_partitions=target_partitions,
        target_group_offsets=target_group_offsets,
        source_groups=source_groups,
        target_groups=target_groups,
        checkpoints=checkpoints,
        mm2_positions=mm2_positions,
    )


# --- classification ---


OLDEST_SYNC = "the partition's oldest offset sync is "
WILL_CHECKPOINT = "MM2 will checkpoint the group once it commits"
NEVER_CHECKPOINTS = "MM2 never will while the group is not consuming (state "
CHECKPOINTS_ONCE = "): it checkpoints a group only once it commits"
NO_SYNC_BELOW = "Untranslatable: no offset sync at or below offset "
STILL_TRANSLATES = ". plan failover can still translate it by content or by timestamp (--fallback timestamp)."
NO_SYNCS = (
    "Untranslatable: MM2 wrote no offset sync for this partition. plan failover can still translate it by "
    "timestamp (--fallback timestamp)."
)
MM2_BEHIND = "MM2 is "
RECORDS_BEHIND = " record(s) behind this group: the group committed offset "
COPIED_BELOW = ", MM2 has copied this partition only below "
WAIT_FOR_MM2 = (
    ". Wait for MM2 to catch up (inspect --rows partitions shows its lag), or run plan failover "
    "--stop-mirroring, which waits for MM2 to catch up and translates after it."
)
NEVER_CHECKPOINTS_TYPE = "MM2 never checkpoints "
NO_TARGET_POSITION = " groups. The target group has no position, so after a failover through MM2 alone it starts at "
SHARE_START = "the log end (share.auto.offset.reset=latest)"
STREAMS_START = "the earliest offset (Kafka Streams' default)"
RUN_PLAN = "plan failover writes its translated position, proven by content"
SHARE_REDELIVERS = (
    "; the records it acknowledged past its position (past a gap in its acknowledgements) are delivered again "
    "after any failover"
)
QUERY_EXPLANATION = (
    "A Spark Structured Streaming query (--spark-checkpoint): its position is its checkpoint's last committed "
    "batch, not a committed offset in Kafka, so MM2 never checkpoints it; mm2ctl translates its position "
    "(translated_offset). Started on the target without it, the query starts at its startingOffsets (latest by "
    "default: the log end), which the replay and skip columns count; plan failover with --spark-checkpoint moves "
    "it to the translated position."
)
_TEXTS = (
    "OLDEST_SYNC",
    "WILL_CHECKPOINT",
    "NEVER_CHECKPOINTS",
    "CHECKPOINTS_ONCE",
    "NO_SYNC_BELOW",
    "STILL_TRANSLATES",
    "NO_SYNCS",
    "MM2_BEHIND",
    "RECORDS_BEHIND",
    "COPIED_BELOW",
    "WAIT_FOR_MM2",
    "NEVER_CHECKPOINTS_TYPE",
    "NO_TARGET_POSITION",
    "SHARE_START",
    "STREAMS_START",
    "RUN_PLAN",
    "SHARE_REDELIVERS",
    "QUERY_EXPLANATION",
)


def vocabulary() -> row_status.Vocabulary:
    """What ``inspector.rules.row_status`` writes, from ``inspector.statuses`` and the texts above."""
    ahead = {True: Blocking.TARGET_GROUP, False: Blocking.CHECKPOINT_CONNECTOR}
    blockers = {
        Status.ERROR: Blocking.INSPECTOR,
        Status.REMOTE_TOPIC_MISSING: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.TARGET_GROUP_ACTIVE: Blocking.TARGET_GROUP,
        Status.NOT_YET_COPIED: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.NOT_CHECKPOINTED: Blocking.CHECKPOINT_CONNECTOR,
        Status.STALE_SYNC: Blocking.CHECKPOINT_CONNECTOR,
        Status.SOURCE_PARTITION_EMPTY: Blocking.SOURCE_PARTITION,
        Status.SOURCE_GROUP_TOO_OLD: Blocking.SOURCE_GROUP,
        Status.NO_OFFSET_SYNCS: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.NOT_SYNCED: Blocking.CHECKPOINT_CONNECTOR,
    }

    def messages(others_synced: bool) -> dict[str, str]:
        return {c.value: statuses.aiven_message(c, others_synced) or statuses.OWN_MESSAGES[c] for c in Status}

    return row_status.Vocabulary(
        status={c.name: c.value for c in Status},
        ok_statuses=frozenset(c.value for c in statuses.OK_STATUSES),
        messages_others_synced=messages(True),
        messages_others_not_synced=messages(False),
        query_message=statuses.NOT_CHECKPOINTED_QUERY_MESSAGE,
        blockers={c.value: b.value for c, b in blockers.items()},
        ahead_blockers={k: b.value for k, b in ahead.items()},
        untranslatable_blocker=Blocking.MIRROR_SOURCE_CONNECTOR.value,
        active_states=frozenset(s.upper().replace("_", "").replace(" ", "") for s in statuses.ACTIVE_GROUP_STATES),
        exact_methods=frozenset(EXACT_METHODS),
        unmirrored_types=frozenset(UNMIRRORED_TYPES | {SPARK_QUERY_TYPE}),
        spark_query_type=SPARK_QUERY_TYPE,
        texts={name: globals()[name] for name in _TEXTS},
    )


def settings(
    *,
    sync_group_offsets_enabled: bool,
    offset_lag_max: int = 100,
    as_of: dt.datetime | None = None,
    fresh_checkpoint_age: dt.timedelta = dt.timedelta(minutes=5),
) -> row_status.Settings:
    """``classify``'s arguments as the rule takes them."""
    fresh = None if as_of is None else micros(as_of - fresh_checkpoint_age)
    return row_status.Settings(sync_group_offsets_enabled, offset_lag_max, fresh)


def classify_in_process(
    joined: pa.Table,
    *,
    sync_group_offsets_enabled: bool,
    offset_lag_max: int = 100,
    as_of: dt.datetime | None = None,
    fresh_checkpoint_age: dt.timedelta = dt.timedelta(minutes=5),
) -> pa.Table:
    """``classify`` over rows this process holds (``schemas.JOINED_SCHEMA``, every row of each group): the same
    rule, with no Spark job."""
    chosen = settings(
        sync_group_offsets_enabled=sync_group_offsets_enabled,
        offset_lag_max=offset_lag_max,
        as_of=as_of,
        fresh_checkpoint_age=fresh_checkpoint_age,
    )
    return row_status.classify_rows(joined, chosen, vocabulary())


def classify(
    joined: DataFrame,
    *,
    sync_group_offsets_enabled: bool,
    offset_lag_max: int = 100,
    as_of: dt.datetime | None = None,
    fresh_checkpoint_age: dt.timedelta = dt.timedelta(minutes=5),
) -> DataFrame:
    """One status, message and failover estimate per row; the rules and precedence are ``inspector.statuses``,
    written once in ``inspector.rules.row_status``, which Spark runs here over rows clustered by group.

    ``sync_group_offsets_enabled`` decides what a row is judged by: the target group's committed offset (MM2
    writes it) or the checkpoint (a failover translates through it). ``offset_lag_max`` is the pair's
    ``offset.lag.max``. ``as_of`` is when the admin state was read; when given, a checkpoint written within
    ``fresh_checkpoint_age`` of it proves MM2 is checkpointing, so a gap to the translation is interval
    timing, not a stale sync.

    A consumer resuming on the target from the judged offset ``J`` reads again, or never sees, the messages
    between ``J`` and the group's true position ``P`` there. ``replay_if_failover_now`` and
    ``skip_if_failover_now`` count them when ``translation_method`` is exact (``EXACT_METHODS``: ``P`` is the
    translated offset), and are null otherwise; ``replay_if_failover_now_at_least`` and
    ``skip_if_failover_now_at_most`` are the bounds any translation gives, since every method that is not exact
    replays rather than skips (``P`` is at or after the translated offset). ``explanation`` says why a row
    cannot be translated and what can still translate it.

    Output: ``schemas.CLASSIFIED_SCHEMA`` (Aiven's columns first, in its order), then ``FRESH_CHECKPOINT``:
    the row's checkpoint timestamp when it was fresh at ``as_of``, for ``stale_at`` to tell once it is not.
    """
    chosen = settings(
        sync_group_offsets_enabled=sync_group_offsets_enabled,
        offset_lag_max=offset_lag_max,
        as_of=as_of,
        fresh_checkpoint_age=fresh_checkpoint_age,
    )
    rule = functools.partial(row_status.classify_rows, settings=chosen, vocabulary=vocabulary())
    ship_by_value(row_status, columns)
    return by_key(joined, ["cluster_pair", "group"], rule, CLASSIFIED_ROWS_SCHEMA)


def stale_at(fresh_until_micros: int | None, *, as_of: dt.datetime, fresh_checkpoint_age: dt.timedelta) -> bool:
    """Whether rows classified earlier, whose oldest fresh checkpoint was ``fresh_until_micros`` (``FRESH_CHECKPOINT``'s
    minimum, in microseconds), hold one that is no longer fresh at ``as_of``: their status may have changed with
    the clock alone."""
    return fresh_until_micros is not None and fresh_until_micros < micros(as_of - fresh_checkpoint_age)


def fresh_checkpoint_age(pair: PairConfig) -> dt.timedelta:
    """How recent a checkpoint must be to prove MM2 is keeping up: two of its own emit/sync intervals.

    A gap between the translation and the target offset inside that window is MM2's interval timing, not a
    stall; a checkpoint older than that while the group moved on means the checkpoint side has stopped.
    """
    interval = pair.emit_checkpoints_interval_seconds
    if pair.sync_group_offsets_enabled:
        interval = max(interval, pair.sync_group_offsets_interval_seconds)
    return dt.timedelta(seconds=2 * max(interval, 1))
