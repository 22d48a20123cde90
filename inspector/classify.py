"""Everything known about each group offset, joined into one row, and its status: pure DataFrame → DataFrame.

``join_target_state`` looks up the admin state of both clusters and the live checkpoint for each translated
group offset (``inspector.translation``); ``classify`` gives each row its status, message and failover
estimate by ``inspector.statuses``' rules and precedence. Every step is Spark SQL (no Python UDF), unit-tested
on tiny frames (``tests/unit/test_inspector_classify.py``).
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from mm2ctl.core.config import PairConfig
from mm2ctl.inspector import statuses
from mm2ctl.inspector.statuses import Blocking, Status
from mm2ctl.inspector.translation import PAIR, SYNC_KEY
from mm2ctl.plans.payloads import EXACT_METHODS

# --- joining the admin state ---


def _prefixed(column: str, what: str) -> Column:
    return F.when(F.col(column).isNotNull(), F.concat(F.lit(f"{what}: "), F.col(column)))


def join_target_state(
    translated: DataFrame,
    *,
    source_partitions: DataFrame,
    target_partitions: DataFrame,
    target_group_offsets: DataFrame,
    source_groups: DataFrame,
    target_groups: DataFrame,
    checkpoints: DataFrame,
) -> DataFrame:
    """Everything known about each source group offset, on both clusters, as one row (``JOINED_SCHEMA``).

    Target-side facts are looked up under the **remote** topic name that ``source_partitions`` carries, so
    DefaultReplicationPolicy (``src.orders``) and IdentityReplicationPolicy (``orders``) both work; Aiven's
    tool looks the target group up under the source name and so misses every prefixed topic. Checkpoints
    are keyed by the remote name too, as MM2 writes them. Every input's ``error`` is carried into one
    ``error`` column (prefixed with where it came from), so one failed lookup marks its rows and nothing
    else; a source partition the job did not describe at all is reported as an error rather than guessed.
    """
    sp = source_partitions.select(
        PAIR,
        "topic",
        "partition",
        F.col("earliest_offset").alias("source_earliest"),
        F.col("latest_offset").alias("source_latest"),
        "remote_topic",
        F.col("error").alias("_e_sp"),
        F.lit(True).alias("_sp_seen"),
    )
    tp = target_partitions.select(
        PAIR,
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("earliest_offset").alias("target_earliest"),
        F.col("latest_offset").alias("target_latest"),
        F.col("error").alias("_e_tp"),
    )
    tgo = target_group_offsets.select(
        PAIR,
        "group",
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("committed_offset").alias("target_offset"),
        F.col("error").alias("_e_tgo"),
    )
    sg = source_groups.select(PAIR, "group", F.col("state").alias("source_group_state"), F.col("error").alias("_e_sg"))
    tg = target_groups.select(
        PAIR,
        "group",
        F.col("state").alias("target_group_state"),
        F.col("member_count").alias("target_group_members"),
        F.col("error").alias("_e_tg"),
    )
    cp = checkpoints.select(
        PAIR,
        "group",
        F.col("topic").alias("remote_topic"),
        "partition",
        F.col("upstream_offset").alias("checkpoint_upstream"),
        F.col("downstream_offset").alias("checkpoint_offset"),
        F.col("record_timestamp").alias("checkpoint_timestamp"),
    )
    # Per-partition and per-group facts are small (one row per source partition or group): broadcast, so the
    # group-offset rows are not shuffled for them. The two per-group-partition frames are joined on rows
    # clustered by (pair, group), the clustering ``classify``'s per-group window needs next (the live
    # checkpoints are kept clustered so: ``inspector.checkpoint_state``). With
    # ``spark.sql.requireAllClusterKeysForCoPartition=false`` (the embedded session's setting) Spark then
    # shuffles each side once; with Spark's default it adds one more shuffle.
    by_group = [PAIR, "group"]
    joined = (
        translated.withColumnRenamed("error", "_e_go")
        .join(F.broadcast(sp), on=SYNC_KEY, how="left")
        .join(F.broadcast(tp), on=[PAIR, "remote_topic", "partition"], how="left")
        .join(F.broadcast(sg), on=by_group, how="left")
        .join(F.broadcast(tg), on=by_group, how="left")
        .repartition(*by_group)
        .join(tgo.repartition(*by_group), on=[*by_group, "remote_topic", "partition"], how="left")
        .join(cp, on=[*by_group, "remote_topic", "partition"], how="left")
    )
    errors = F.concat_ws(
        "; ",
        _prefixed("_e_go", "source group offsets"),
        F.when(F.col("_sp_seen").isNull(), F.lit("source partition: not described by the job")),
        _prefixed("_e_sp", "source partition"),
        _prefixed("_e_tp", "target partition"),
        _prefixed("_e_tgo", "target group offsets"),
        _prefixed("_e_sg", "source group"),
        _prefixed("_e_tg", "target group"),
    )
    columns = [
        PAIR,
        "group",
        "topic",
        "partition",
        "committed_offset",
        "translated_offset",
        "translation_method",
        "sync_upstream",
        "sync_downstream",
        "latest_sync_upstream",
        "latest_sync_downstream",
        "oldest_sync_upstream",
        "oldest_sync_downstream",
        "sync_count",
        "source_earliest",
        "source_latest",
        "remote_topic",
        "source_group_state",
        "target_earliest",
        "target_latest",
        "target_offset",
        "target_group_state",
        "target_group_members",
        "checkpoint_upstream",
        "checkpoint_offset",
        "checkpoint_timestamp",
    ]
    # The errors are joined once, in a step of their own: Spark does not merge two steps when that would
    # compute a costly expression twice, as ``when(errors != "", errors)`` in one step does.
    errors_joined = joined.select(*columns, errors.alias("_errors"))
    return errors_joined.select(*columns, F.when(F.col("_errors") != "", F.col("_errors")).alias("error"))


# --- classification ---


def _explanation(committed: Column, status: Column) -> Column:
    """Why a row cannot be translated, and what can still translate it (null for every other row).

    MM2 drops offset syncs under back-pressure (its writer keeps only the newest pending sync of a
    partition), so a partition copied in a burst can be left with no sync below a group's offset; MM2 then
    never checkpoints that group until it commits at or beyond the oldest sync, which an idle group never
    does.
    """
    up, down = F.col("oldest_sync_upstream"), F.col("oldest_sync_downstream")
    state = F.upper(F.translate(F.coalesce(F.col("source_group_state"), F.lit("")), "_ ", ""))
    consuming = state.isin(*sorted(s.upper() for s in statuses.ACTIVE_GROUP_STATES))
    oldest = F.concat(
        F.lit("the partition's oldest offset sync is "), up.cast("string"), F.lit("->"), down.cast("string")
    )
    when = F.concat(F.lit(" at or beyond "), up.cast("string"))
    mm2 = F.when(
        consuming, F.concat(F.lit("MM2 will checkpoint the group once it commits"), when, F.lit(", as it consumes"))
    ).otherwise(
        F.concat(
            F.lit("MM2 never will while the group is not consuming (state "),
            F.coalesce(F.col("source_group_state"), F.lit("unknown")),
            F.lit("): it checkpoints a group only once it commits"),
            when,
        )
    )
    below = F.concat(
        F.lit("Untranslatable: no offset sync at or below offset "),
        committed.cast("string"),
        F.lit("; "),
        oldest,
        F.lit(". "),
        mm2,
        F.lit(". plan failover can still translate it by content or by timestamp (--fallback timestamp)."),
    )
    none = F.lit(
        "Untranslatable: MM2 wrote no offset sync for this partition. plan failover can still translate it by "
        "timestamp (--fallback timestamp)."
    )
    untranslatable = committed.isNotNull() & F.col("translated_offset").isNull()
    return F.when(untranslatable & (status == Status.NO_OFFSET_SYNCS.value), none).when(
        untranslatable & up.isNotNull() & (status == Status.NOT_SYNCED.value), below
    )


def _status_literal(status: Status) -> Column:
    return F.lit(status.value)


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

    Output: ``schemas.CLASSIFIED_SCHEMA`` (Aiven's columns first, in its order).
    """
    c = F.col("committed_offset")
    translated = F.col("translated_offset")
    judged = F.col("target_offset") if sync_group_offsets_enabled else F.col("checkpoint_offset")
    se, sl = F.col("source_earliest"), F.col("source_latest")
    te, tl = F.col("target_earliest"), F.col("target_latest")
    target_offset = F.col("target_offset")

    def known(col: Column) -> Column:
        return F.coalesce(col, F.lit(False))

    state = F.upper(F.translate(F.col("target_group_state"), "_ ", ""))  # Stable, STABLE, PREPARING_REBALANCE…
    active = F.lit(sync_group_offsets_enabled) & (
        known(F.col("target_group_members") > 0)
        | known(state.isin(*sorted(s.upper() for s in statuses.ACTIVE_GROUP_STATES)))
    )
    both = judged.isNotNull() & translated.isNotNull()
    gap = F.try_subtract(translated, judged)
    slack = F.try_add(
        F.lit(offset_lag_max).cast("long"),
        F.greatest(F.lit(0).cast("long"), F.try_subtract(F.col("latest_sync_upstream"), c)),
    )
    if as_of is None:
        fresh = F.lit(False)
    else:
        fresh = known(F.col("checkpoint_timestamp") >= F.lit(as_of - fresh_checkpoint_age))
    empty = known(se == sl)
    too_old = c.isNull() | known(c < se) | known(c > sl)

    status = (
        F.when(F.col("error").isNotNull(), _status_literal(Status.ERROR))
        .when(tl.isNull(), _status_literal(Status.REMOTE_TOPIC_MISSING))
        .when(active, _status_literal(Status.TARGET_GROUP_ACTIVE))
        .when(both & (judged > translated), _status_literal(Status.TARGET_AHEAD))
        .when(both & known(gap > slack) & ~fresh, _status_literal(Status.STALE_SYNC))
        .when(judged.isNotNull(), _status_literal(Status.SYNCED))
        .when(empty, _status_literal(Status.SOURCE_PARTITION_EMPTY))
        .when(too_old, _status_literal(Status.SOURCE_GROUP_TOO_OLD))
        .when(F.col("sync_count") == 0, _status_literal(Status.NO_OFFSET_SYNCS))
        .otherwise(_status_literal(Status.NOT_SYNCED))
    )
    staged = joined.withColumn("status", status)
    synced_here = (F.col("status") == Status.SYNCED.value).cast("int")
    others_synced = (F.sum(synced_here).over(Window.partitionBy(PAIR, "group")) - synced_here) > 0
    staged = staged.withColumn("_others_synced", others_synced)

    def lookup(table: dict[Status, str]) -> Column:
        """``table[status]``, as one literal map (the status precedence above already chose the row's one)."""
        return F.create_map(*[F.lit(x) for item in table.items() for x in item])[F.col("status")]

    def message_table(others_synced: bool) -> dict[Status, str]:
        return {code: statuses.aiven_message(code, others_synced) or statuses.OWN_MESSAGES[code] for code in Status}

    message = F.when(F.col("_others_synced"), lookup(message_table(True))).otherwise(lookup(message_table(False)))

    ahead_blocker = Blocking.TARGET_GROUP if sync_group_offsets_enabled else Blocking.CHECKPOINT_CONNECTOR
    blockers = {
        Status.ERROR: Blocking.INSPECTOR,
        Status.REMOTE_TOPIC_MISSING: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.TARGET_GROUP_ACTIVE: Blocking.TARGET_GROUP,
        Status.TARGET_AHEAD: ahead_blocker,
        Status.STALE_SYNC: Blocking.CHECKPOINT_CONNECTOR,
        Status.SOURCE_PARTITION_EMPTY: Blocking.SOURCE_PARTITION,
        Status.SOURCE_GROUP_TOO_OLD: Blocking.SOURCE_GROUP,
        Status.NO_OFFSET_SYNCS: Blocking.MIRROR_SOURCE_CONNECTOR,
        Status.NOT_SYNCED: Blocking.CHECKPOINT_CONNECTOR,
    }
    # Not synced and untranslatable: MM2 wrote no sync the group could be translated with.
    untranslatable = (F.col("status") == Status.NOT_SYNCED.value) & translated.isNull()
    blocking = F.when(untranslatable, F.lit(Blocking.MIRROR_SOURCE_CONNECTOR.value)).otherwise(
        lookup({code: b.value for code, b in blockers.items()})
    )
    zero = F.lit(0).cast("long")
    exact = F.col("translation_method").isin(*sorted(EXACT_METHODS))

    def exact_count(value: Column) -> Column:
        return F.when(both & exact, value)

    lag_to_source = F.try_subtract(
        sl,
        F.try_add(target_offset, F.try_subtract(F.col("latest_sync_upstream"), F.col("latest_sync_downstream"))),
    )
    return staged.select(
        PAIR,
        "topic",
        "partition",
        "group",
        "source_earliest",
        "source_latest",
        "source_group_state",
        c.alias("source_offset"),
        F.try_subtract(sl, c).alias("source_lag"),
        "target_earliest",
        "target_latest",
        "target_group_state",
        "target_offset",
        F.when(tl.isNotNull() & target_offset.isNotNull(), F.greatest(F.try_subtract(tl, target_offset), zero)).alias(
            "target_lag"
        ),
        lag_to_source.alias("target_lag_to_source"),
        (se < sl).alias("source_has_data"),
        ((se <= c) & (c <= sl)).alias("source_group_valid"),
        (te < tl).alias("target_has_data"),
        F.col("status").isin(*[s.value for s in statuses.OK_STATUSES]).alias("is_ok"),
        blocking.alias("blocking_component"),
        message.alias("message"),
        "status",
        "remote_topic",
        "translated_offset",
        "translation_method",
        "checkpoint_offset",
        "checkpoint_timestamp",
        "sync_count",
        exact_count(F.greatest(gap, zero)).alias("replay_if_failover_now"),
        exact_count(F.greatest(F.try_subtract(judged, translated), zero)).alias("skip_if_failover_now"),
        F.when(both, F.greatest(gap, zero)).alias("replay_if_failover_now_at_least"),
        F.when(both, F.greatest(F.try_subtract(judged, translated), zero)).alias("skip_if_failover_now_at_most"),
        _explanation(c, F.col("status")).alias("explanation"),
        "error",
    )


def fresh_checkpoint_age(pair: PairConfig) -> dt.timedelta:
    """How recent a checkpoint must be to prove MM2 is keeping up: two of its own emit/sync intervals.

    A gap between the translation and the target offset inside that window is MM2's interval timing, not a
    stall; a checkpoint older than that while the group moved on means the checkpoint side has stopped.
    """
    interval = pair.emit_checkpoints_interval_seconds
    if pair.sync_group_offsets_enabled:
        interval = max(interval, pair.sync_group_offsets_interval_seconds)
    return dt.timedelta(seconds=2 * max(interval, 1))
