"""Everything known about each group offset, and its status: pure DataFrame → DataFrame.

``join_target_state`` joins each translated group offset (``inspector.transforms.translated_offsets``) with the target
group's committed offset and the live checkpoint, in one Spark SQL statement (``inspector.transforms.sql_text``);
``classify`` looks each row up in the admin state of both clusters and gives it its status, message and failover
estimate by ``inspector.statuses``' rules and precedence: ``inspector.rules.admin_facts`` and
``inspector.rules.row_status``, the rules written once as Arrow functions, which Spark runs over the rows. Unit-tested
on tiny frames (``tests/unit/test_inspector_classify.py``).
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType, TimestampType

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.kafka.group_admin import UNMIRRORED_TYPES
from mm2ctl.core.translation.methods import EXACT_METHODS
from mm2ctl.inspector import statuses
from mm2ctl.inspector.reads.spark_query_rows import SPARK_QUERY_TYPE
from mm2ctl.inspector.rules import admin_facts, columns, row_status
from mm2ctl.inspector.rules.columns import micros
from mm2ctl.inspector.schemas import CLASSIFIED_SCHEMA, FRESH_CHECKPOINT, JOINED_SCHEMA
from mm2ctl.inspector.spark.arrow_rules import by_key, ship_by_value
from mm2ctl.inspector.statuses import Blocking, Status
from mm2ctl.inspector.transforms.sql_text import Statement, quoted

#: ``classify``'s output: the report's columns, then when the row's checkpoint was fresh.
CLASSIFIED_ROWS_SCHEMA = StructType([*CLASSIFIED_SCHEMA.fields, StructField(FRESH_CHECKPOINT, TimestampType())])

# --- joining the admin state ---


@dataclass(frozen=True)
class AdminFacts:
    """The admin state of both clusters a pair's rows are looked up in, on the driver: a row per source
    partition and a row per group (``inspector.rules.admin_facts``)."""

    partitions: pa.Table
    groups: pa.Table

    @classmethod
    def of(
        cls,
        *,
        source_partitions: pa.Table,
        target_partitions: pa.Table,
        mm2_positions: pa.Table,
        source_groups: pa.Table,
        target_groups: pa.Table,
    ) -> AdminFacts:
        return cls(
            admin_facts.partition_facts(source_partitions, target_partitions, mm2_positions),
            admin_facts.group_facts(source_groups, target_groups),
        )


def join_target_state(translated: DataFrame, *, target_group_offsets: DataFrame, checkpoints: DataFrame) -> DataFrame:
    """Each translated group offset (``translated``, which carries its partition's remote topic:
    ``inspector.rules.admin_facts.with_remote_topics``) with what the target holds for it: the target group's
    committed offset and the live checkpoint, both under the **remote** topic name, as MM2 writes them.

    The rows come out clustered by (pair, group), as ``classify`` needs them. The live checkpoints are kept
    clustered so (``inspector.transforms.live_checkpoints``), and with
    ``spark.sql.requireAllClusterKeysForCoPartition=false`` (the embedded session's setting) Spark shuffles each
    side once; with Spark's default it adds one more shuffle. The admin state's small tables are looked up by
    ``classify``, on the rows' own Python worker, with no broadcast.
    """
    carried = ", ".join(f"t.{quoted(c)}" for c in translated.columns if c != "error")
    text = f"""
    WITH clustered AS (SELECT /*+ REPARTITION(cluster_pair, `group`) */ * FROM {{translated}}),
    tgo AS (SELECT /*+ REPARTITION(cluster_pair, `group`) */ * FROM {{target_group_offsets}})
    SELECT {carried}, t.error AS _e_go,
      tgo.committed_offset AS target_offset, tgo.error AS _e_tgo, tgo.written_by AS target_written_by,
      cp.upstream_offset AS checkpoint_upstream, cp.downstream_offset AS checkpoint_offset,
      cp.record_timestamp AS checkpoint_timestamp
    FROM clustered t
    LEFT JOIN tgo ON t.cluster_pair = tgo.cluster_pair AND t.`group` = tgo.`group`
      AND t.remote_topic = tgo.topic AND t.`partition` = tgo.`partition`
    LEFT JOIN {{checkpoints}} cp ON t.cluster_pair = cp.cluster_pair AND t.`group` = cp.`group`
      AND t.remote_topic = cp.topic AND t.`partition` = cp.`partition`
    """
    return Statement().run(
        translated.sparkSession,
        text,
        translated=translated,
        target_group_offsets=target_group_offsets,
        checkpoints=checkpoints,
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
    rows: DataFrame,
    *,
    admin: AdminFacts | None,
    sync_group_offsets_enabled: bool,
    offset_lag_max: int = 100,
    as_of: dt.datetime | None = None,
    fresh_checkpoint_age: dt.timedelta = dt.timedelta(minutes=5),
) -> DataFrame:
    """One status, message and failover estimate per row; the rules and precedence are ``inspector.statuses``,
    written once in ``inspector.rules.row_status``, which Spark runs here over rows clustered by group.

    ``rows`` are ``join_target_state``'s, looked up in ``admin`` on the way (``inspector.rules.admin_facts``), or,
    with no ``admin``, rows that hold the admin state already (``schemas.JOINED_SCHEMA``).

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
    rule: Callable[[pa.Table], pa.Table]
    if admin is None:
        rule = functools.partial(row_status.classify_rows, settings=chosen, vocabulary=vocabulary())
    else:
        rule = functools.partial(
            row_status.look_up_and_classify,
            partitions=admin.partitions,
            groups=admin.groups,
            columns=JOINED_SCHEMA.names,
            settings=chosen,
            vocabulary=vocabulary(),
        )
    ship_by_value(row_status, columns, admin_facts)
    return by_key(rows, ["cluster_pair", "group"], rule, CLASSIFIED_ROWS_SCHEMA)


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
