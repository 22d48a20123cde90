"""Everything known about each group offset, joined into one row, and its status: pure DataFrame → DataFrame.

``join_target_state`` looks up the admin state of both clusters and the live checkpoint for each translated
group offset (``inspector.transforms.translated_offsets``); ``classify`` gives each row its status, message and failover
estimate by ``inspector.statuses``' rules and precedence. Each is one Spark SQL statement (no Python UDF;
``inspector.transforms.sql_text``), unit-tested on tiny frames (``tests/unit/test_inspector_classify.py``).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import DataFrame

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.kafka.group_admin import UNMIRRORED_TYPES
from mm2ctl.core.translation.methods import EXACT_METHODS
from mm2ctl.inspector import statuses
from mm2ctl.inspector.reads.spark_query_rows import SPARK_QUERY_TYPE
from mm2ctl.inspector.schemas import FRESH_CHECKPOINT
from mm2ctl.inspector.statuses import Blocking, Status
from mm2ctl.inspector.transforms.sql_text import Statement, micros, moment

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


def _explanation(q: Statement) -> str:
    """Why a row cannot be translated, and what can still translate it; for a ``not_yet_copied`` row, how far
    MM2 is behind its group and what to do (null for every other row).

    MM2 drops offset syncs under back-pressure (its writer keeps only the newest pending sync of a
    partition), so a partition copied in a burst can be left with no sync below a group's offset; MM2 then
    never checkpoints that group until it commits at or beyond the oldest sync, which an idle group never
    does.
    """
    up, down = "cast(oldest_sync_upstream AS STRING)", "cast(oldest_sync_downstream AS STRING)"
    active = q.values(sorted(s.upper() for s in statuses.ACTIVE_GROUP_STATES))
    consuming = f"upper(translate(coalesce(source_group_state, ''), '_ ', '')) IN ({active})"
    oldest = f"concat({q.value(OLDEST_SYNC)}, {up}, '->', {down})"
    when = f"concat(' at or beyond ', {up})"
    will = f"concat({q.value(WILL_CHECKPOINT)}, {when}, {q.value(', as it consumes')})"
    never = (
        f"concat({q.value(NEVER_CHECKPOINTS)}, coalesce(source_group_state, 'unknown'), "
        f"{q.value(CHECKPOINTS_ONCE)}, {when})"
    )
    below = (
        f"concat({q.value(NO_SYNC_BELOW)}, cast(committed_offset AS STRING), '; ', {oldest}, '. ', "
        f"CASE WHEN {consuming} THEN {will} ELSE {never} END, {q.value(STILL_TRANSLATES)})"
    )
    none = q.value(
        "Untranslatable: MM2 wrote no offset sync for this partition. plan failover can still translate it by "
        "timestamp (--fallback timestamp)."
    )
    untranslatable = "committed_offset IS NOT NULL AND translated_offset IS NULL"
    return (
        f"CASE WHEN status = '{Status.NOT_YET_COPIED.value}' THEN {_not_copied_explanation(q)} "
        f"WHEN status = '{Status.NOT_CHECKPOINTED.value}' AND group_type = '{SPARK_QUERY_TYPE}' "
        f"THEN {q.value(QUERY_EXPLANATION)} "
        f"WHEN status = '{Status.NOT_CHECKPOINTED.value}' THEN {_unmirrored_explanation(q)} "
        f"WHEN {untranslatable} AND status = '{Status.NO_OFFSET_SYNCS.value}' THEN {none} "
        f"WHEN {untranslatable} AND oldest_sync_upstream IS NOT NULL AND status = '{Status.NOT_SYNCED.value}' "
        f"THEN {below} END"
    )


MM2_BEHIND = "MM2 is "
RECORDS_BEHIND = " record(s) behind this group: the group committed offset "
COPIED_BELOW = ", MM2 has copied this partition only below "
WAIT_FOR_MM2 = (
    ". Wait for MM2 to catch up (inspect --rows partitions shows its lag), or run plan failover "
    "--stop-mirroring, which waits for MM2 to catch up and translates after it."
)


def _not_copied_explanation(q: Statement) -> str:
    """How far MM2 is behind a ``not_yet_copied`` row's group, and what to do."""
    return (
        f"concat({q.value(MM2_BEHIND)}, cast(_behind AS STRING), {q.value(RECORDS_BEHIND)}, "
        f"cast(committed_offset AS STRING), {q.value(COPIED_BELOW)}, cast(_copied AS STRING), {q.value(WAIT_FOR_MM2)})"
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


def _unmirrored_explanation(q: Statement) -> str:
    """Where a share or streams group would start after a failover through MM2 alone, and what moves it."""
    start = f"CASE WHEN group_type = 'share' THEN {q.value(SHARE_START)} ELSE {q.value(STREAMS_START)} END"
    none_there = (
        f"CASE WHEN target_offset IS NULL THEN concat({q.value(NO_TARGET_POSITION)}, {start}, '. ') "
        "ELSE ' groups. ' END"
    )
    redelivers = f"CASE WHEN group_type = 'share' THEN {q.value(SHARE_REDELIVERS)} ELSE '' END"
    never = q.value(NEVER_CHECKPOINTS_TYPE)
    return f"concat({never}, group_type, {none_there}, {q.value(RUN_PLAN)}, {redelivers}, '.')"


QUERY_EXPLANATION = (
    "A Spark Structured Streaming query (--spark-checkpoint): its position is its checkpoint's last committed "
    "batch, not a committed offset in Kafka, so MM2 never checkpoints it; mm2ctl translates its position "
    "(translated_offset). Started on the target without it, the query starts at its startingOffsets (latest by "
    "default: the log end), which the replay and skip columns count; plan failover with --spark-checkpoint moves "
    "it to the translated position."
)


def _copy_position() -> tuple[str, str]:
    """SQL for ``P``, MM2's copy position (``inspector.statuses``; null when MM2's position is unknown), and
    for the records MM2 still has to copy up to the group's position ``c - P``, at least 0 (null without ``P``,
    or for a group past the source's end)."""
    known = "(coalesce(mm2_position_known, false) AND source_earliest IS NOT NULL AND source_latest IS NOT NULL)"
    # ``greatest`` skips nulls: the source's earliest offset is never null here.
    past_sync = "try_add(latest_sync_upstream, try_subtract(target_latest, latest_sync_downstream))"
    copied = (
        f"CASE WHEN {known} THEN greatest(mm2_next_offset, source_earliest, try_add(latest_sync_upstream, 1), "
        f"{past_sync}) END"
    )
    # A group past the source's end (``source_group_too_old``) has no records there left to copy.
    behind = (
        f"CASE WHEN {known} AND committed_offset <= source_latest "
        f"THEN greatest(CAST(0 AS BIGINT), try_subtract(committed_offset, {copied})) END"
    )
    return copied, behind


def _messages(q: Statement, others_synced: bool) -> str:
    return q.map_of(
        {code.value: statuses.aiven_message(code, others_synced) or statuses.OWN_MESSAGES[code] for code in Status}
    )


def _message(q: Statement) -> str:
    """SQL: a row's message, by its status (Aiven's variant by whether other partitions are synced); a
    Structured Streaming query's own when MM2 never checkpoints it."""
    query = f"status = '{Status.NOT_CHECKPOINTED.value}' AND group_type = '{SPARK_QUERY_TYPE}'"
    return (
        f"CASE WHEN {query} THEN {q.value(statuses.NOT_CHECKPOINTED_QUERY_MESSAGE)} "
        f"WHEN _others_synced THEN {_messages(q, True)}[status] ELSE {_messages(q, False)}[status] END"
    )


def classify(
    joined: DataFrame,
    *,
    sync_group_offsets_enabled: bool,
    offset_lag_max: int = 100,
    as_of: dt.datetime | None = None,
    fresh_checkpoint_age: dt.timedelta = dt.timedelta(minutes=5),
) -> DataFrame:
    """One status, message and failover estimate per row; the rules and precedence are ``inspector.statuses``.

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
    q = Statement()
    unmirrored = f"coalesce(group_type IN ({q.values(sorted(UNMIRRORED_TYPES | {SPARK_QUERY_TYPE}))}), false)"
    # MM2 never writes a share or streams group, nor a Structured Streaming query: it is judged by whatever the
    # target holds, else by where it starts without a position (``inspector.statuses``, ``not_checkpointed``).
    mm2_judged = "target_offset" if sync_group_offsets_enabled else "checkpoint_offset"
    reset = f"CASE WHEN group_type IN ('share', '{SPARK_QUERY_TYPE}') THEN target_latest ELSE target_earliest END"
    judged_sql = f"CASE WHEN {unmirrored} THEN coalesce(target_offset, {reset}) ELSE {mm2_judged} END"
    judged = "_judged"
    active_states = q.values(sorted(s.upper() for s in statuses.ACTIVE_GROUP_STATES))
    active = (
        f"({'true' if sync_group_offsets_enabled else 'false'} AND NOT {unmirrored} "
        f"AND (coalesce(target_group_members > 0, false) "
        f"OR coalesce(upper(translate(target_group_state, '_ ', '')) IN ({active_states}), false)))"
    )
    both = f"({judged} IS NOT NULL AND translated_offset IS NOT NULL)"
    gap = f"try_subtract(translated_offset, {judged})"
    slack = (
        f"try_add(CAST({q.value(offset_lag_max)} AS BIGINT), "
        "greatest(CAST(0 AS BIGINT), try_subtract(latest_sync_upstream, committed_offset)))"
    )
    fresh = "false"
    moments: dict[str, DataFrame] = {}
    if as_of is not None:
        moments["fresh_since"] = moment(joined.sparkSession, as_of - fresh_checkpoint_age)
        fresh = "coalesce(checkpoint_timestamp >= fresh_since.at, false)"
    s = {code: f"'{code.value}'" for code in Status}
    status = f"""CASE
      WHEN error IS NOT NULL THEN {s[Status.ERROR]}
      WHEN target_latest IS NULL THEN {s[Status.REMOTE_TOPIC_MISSING]}
      WHEN {active} THEN {s[Status.TARGET_GROUP_ACTIVE]}
      WHEN coalesce(_behind > 0, false) THEN {s[Status.NOT_YET_COPIED]}
      WHEN {unmirrored} THEN {s[Status.NOT_CHECKPOINTED]}
      WHEN {both} AND {judged} > translated_offset THEN {s[Status.TARGET_AHEAD]}
      WHEN {both} AND coalesce({gap} > {slack}, false) AND NOT {fresh} THEN {s[Status.STALE_SYNC]}
      WHEN {judged} IS NOT NULL THEN {s[Status.SYNCED]}
      WHEN coalesce(source_earliest = source_latest, false) THEN {s[Status.SOURCE_PARTITION_EMPTY]}
      WHEN committed_offset IS NULL OR coalesce(committed_offset < source_earliest, false)
        OR coalesce(committed_offset > source_latest, false) THEN {s[Status.SOURCE_GROUP_TOO_OLD]}
      WHEN sync_count = 0 THEN {s[Status.NO_OFFSET_SYNCS]}
      ELSE {s[Status.NOT_SYNCED]}
    END"""
    blocking = _blocking(q, sync_group_offsets_enabled=sync_group_offsets_enabled)
    # A share group's row is exact only with its share-partition state read: its position, and the records it
    # acknowledged past it (delivered again after any failover, added to the replay). Else it is at its start
    # offset, and what it acknowledged past that is unknown here: a bound.
    exact = (
        f"(coalesce(translation_method IN ({q.values(sorted(EXACT_METHODS))}), false) "
        "AND (coalesce(group_type != 'share', true) OR share_acknowledged_past IS NOT NULL))"
    )
    ok = ", ".join(f"'{code.value}'" for code in sorted(statuses.OK_STATUSES))
    zero = "CAST(0 AS BIGINT)"
    # Records a share group acknowledged past a gap come again when it resumes at or before its translated
    # position; resuming past it (a skip), how many of them lie beyond is unknown: not exact, and 0 as a bound.
    past = f"coalesce(share_acknowledged_past, {zero})"
    replay = f"CASE WHEN {gap} >= 0 THEN try_add({gap}, {past}) ELSE {zero} END"
    exact = f"({exact} AND ({past} = 0 OR coalesce({gap} >= 0, false)))"
    skip = f"try_subtract({judged}, translated_offset)"
    sync_shift = "try_subtract(latest_sync_upstream, latest_sync_downstream)"
    lag_to_source = f"try_subtract(source_latest, try_add(target_offset, {sync_shift}))"
    cross_join = "CROSS JOIN {fresh_since} fresh_since" if moments else ""
    copied, behind = _copy_position()
    text = f"""
    WITH positioned AS (
      SELECT j.*, {copied} AS _copied, {behind} AS _behind, {judged_sql} AS _judged FROM {{joined}} j
    ),
    staged AS (SELECT p.*, {status} AS status, {fresh} AS _fresh FROM positioned p {cross_join}),
    grouped AS (
      SELECT *, (sum(CAST(status = {s[Status.SYNCED]} AS INT)) OVER (PARTITION BY cluster_pair, `group`)
        - CAST(status = {s[Status.SYNCED]} AS INT)) > 0 AS _others_synced
      FROM staged
    )
    SELECT cluster_pair, topic, `partition`, `group`, source_earliest, source_latest, source_group_state,
      committed_offset AS source_offset, try_subtract(source_latest, committed_offset) AS source_lag,
      target_earliest, target_latest, target_group_state, target_offset,
      CASE WHEN target_latest IS NOT NULL AND target_offset IS NOT NULL
        THEN greatest(try_subtract(target_latest, target_offset), {zero}) END AS target_lag,
      {lag_to_source} AS target_lag_to_source,
      source_earliest < source_latest AS source_has_data,
      (source_earliest <= committed_offset) AND (committed_offset <= source_latest) AS source_group_valid,
      target_earliest < target_latest AS target_has_data,
      status IN ({ok}) AS is_ok,
      {blocking} AS blocking_component,
      {_message(q)} AS message,
      status, remote_topic, translated_offset, translation_method, checkpoint_offset, checkpoint_timestamp,
      sync_count,
      CASE WHEN {both} AND {exact} THEN {replay} END AS replay_if_failover_now,
      CASE WHEN {both} AND {exact} THEN greatest({skip}, {zero}) END AS skip_if_failover_now,
      CASE WHEN {both} THEN {replay} END AS replay_if_failover_now_at_least,
      CASE WHEN {both} THEN greatest({skip}, {zero}) END AS skip_if_failover_now_at_most,
      _behind AS mm2_records_behind,
      {_explanation(q)} AS explanation,
      error, group_type, target_written_by, share_start_offset,
      CASE WHEN _fresh THEN checkpoint_timestamp END AS {FRESH_CHECKPOINT}
    FROM grouped
    """
    return q.run(joined.sparkSession, text, joined=joined, **moments)


def _blocking(q: Statement, *, sync_group_offsets_enabled: bool) -> str:
    """SQL: the component that blocks a row of each ``status`` (``blocking_component``)."""
    s = {code: f"'{code.value}'" for code in Status}
    ahead_blocker = Blocking.TARGET_GROUP if sync_group_offsets_enabled else Blocking.CHECKPOINT_CONNECTOR
    blockers = {
        Status.ERROR: Blocking.INSPECTOR,
        Status.REMOTE_TOPIC_MISSING: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.TARGET_GROUP_ACTIVE: Blocking.TARGET_GROUP,
        Status.NOT_YET_COPIED: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.NOT_CHECKPOINTED: Blocking.CHECKPOINT_CONNECTOR,
        Status.TARGET_AHEAD: ahead_blocker,
        Status.STALE_SYNC: Blocking.CHECKPOINT_CONNECTOR,
        Status.SOURCE_PARTITION_EMPTY: Blocking.SOURCE_PARTITION,
        Status.SOURCE_GROUP_TOO_OLD: Blocking.SOURCE_GROUP,
        Status.NO_OFFSET_SYNCS: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.NOT_SYNCED: Blocking.CHECKPOINT_CONNECTOR,
    }
    # Not synced and untranslatable: MM2 wrote no sync the group could be translated with.
    return (
        f"CASE WHEN status = {s[Status.NOT_SYNCED]} AND translated_offset IS NULL "
        f"THEN '{Blocking.MIRROR_SOURCE_CONNECTOR.value}' "
        f"ELSE {q.map_of({c.value: b.value for c, b in blockers.items()})}[status] END"
    )


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
