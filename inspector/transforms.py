"""The inspection as pure DataFrame → DataFrame steps: compaction semantics, translation, joins, statuses.

Nothing here builds a session, reads or writes: the job module gives frames in the shapes of
``inspector.schemas`` and takes frames back. Every step is Spark SQL (no Python UDF), so it runs at the
scale of the offset-syncs topic and of every group on a cluster, and each step is unit-tested on tiny frames.

The pipeline the job runs::

    checkpoints = latest_checkpoints(decode_checkpoints(checkpoint_records))
    translated  = translate(source_group_offsets, decode_offset_syncs(sync_records))
    joined      = join_target_state(translated, source_partitions=..., target_partitions=...,
                                    target_group_offsets=..., source_groups=..., target_groups=...,
                                    checkpoints=checkpoints)
    report      = classify(joined, sync_group_offsets_enabled=..., offset_lag_max=..., as_of=...)
    summary     = summarize(report)
"""

from __future__ import annotations

import datetime as dt

from pyspark.sql import Column, DataFrame, Window, WindowSpec
from pyspark.sql import functions as F

from mm2ctl.inspector import statuses
from mm2ctl.inspector.statuses import Blocking, Status

PAIR = "cluster_pair"
SYNC_KEY = [PAIR, "topic", "partition"]


# --- offset syncs ---

# One sort order serves every offset-sync step: per source partition (``_part``), by position (a sync's
# upstream offset, a probe's committed offset), then by record offset. The rows are kept narrow, because there
# are as many as there are records in the topic, so a row's kind is not a column of its own but told by which
# of the two is null:
#
# * a sync has a position and a record offset;
# * a tombstone has a record offset and no position (it has no upstream offset), so it sorts first;
# * a probe (a group offset, ``translate``) has no record offset, so it sorts after the syncs at its position.
#
# Every window below is over this one order.
_PART = "_part"
_POS, _REC, _DOWN = "_pos", "record_offset", "_down"


def _order() -> list[Column]:
    return [F.col(_POS).asc_nulls_first(), F.col(_REC).asc_nulls_last()]


def _is_sync() -> Column:
    return F.col(_POS).isNotNull() & F.col(_REC).isNotNull()


def _is_tombstone() -> Column:
    return F.col(_POS).isNull() & F.col(_REC).isNotNull()


#: The columns ``translate`` reads of syncs decoded with ``known`` (and numbered by it): a caller that puts an
#: operator Spark cannot prune through (an ``observe``) between the decode and ``translate`` selects these first,
#: so the rows materialized there are narrow.
NUMBERED_SYNC_COLUMNS = (
    "_part",
    "upstream_offset",
    "downstream_offset",
    "record_offset",
    "record_partition",
    "malformed_reason",
)


def _sync_rows(decoded_syncs: DataFrame) -> DataFrame:
    """The well-formed records of partition 0 (MM2 writes and reads no other, DESIGN §3)."""
    return decoded_syncs.where(F.col("malformed_reason").isNull() & (F.col("record_partition") == 0))


def _record_row(part: Column) -> list[Column]:
    """A well-formed sync or tombstone record as a sort row. The decoder leaves a tombstone's offsets null
    and a sync's set, so the upstream offset is the position as it stands."""
    return [
        part.alias(_PART),
        F.col("upstream_offset").alias(_POS),
        F.col("record_offset").alias(_REC),
        F.col("downstream_offset").alias(_DOWN),
    ]


def _sorted(rows: DataFrame) -> DataFrame:
    """One shuffle by source partition and one sort; every window below reuses both."""
    return rows.repartition(_PART).sortWithinPartitions(F.col(_PART), *_order())


def _ordered() -> WindowSpec:
    return Window.partitionBy(_PART).orderBy(*_order())


def _whole() -> WindowSpec:
    """The whole partition, in the one order (evaluated in the same pass as the ordered frames)."""
    return _ordered().rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)


def _with_liveness(rows: DataFrame) -> DataFrame:
    """Mark the syncs that still count (``_live``), in the one sort order.

    A sync is dead when a tombstone of its key or an *upstream rewind* comes after it in the topic. MM2's
    OffsetSyncStore drops its whole history on a rewind (a sync whose upstream is below the previous one's):
    the source partition was truncated, recreated or re-replicated. The live syncs of a partition are thus the
    longest tombstone-free suffix of its records whose upstream never decreases, and the last rewind sits
    right after the last record ``a`` that some later record ``b`` undercuts (``up_b < up_a``). In position
    order that is a running maximum: ``a`` is undercut when a row before it (a lower position, or the same
    position and a lower record offset, which cannot undercut it) has a higher record offset. So the cut is
    found in the sort the as-of join needs, and no sort by record offset is needed.

    Two window passes: the running maximum, then the partition's last undercut and last tombstone; the syncs
    recorded after both (all of them, when there is neither) count. Only ``_live`` is added; the partition's
    other facts (its newest live sync, its live count) are taken by the caller's next pass, which needs it.
    """
    before = _ordered().rowsBetween(Window.unboundedPreceding, -1)
    rec = F.col(_REC)
    sync = _is_sync()
    staged = rows.select("*", F.when(sync & (F.max(F.when(sync, rec)).over(before) > rec), rec).alias("_undercut"))
    partition = Window.partitionBy(_PART)
    last_dead = F.greatest(F.max("_undercut").over(partition), F.max(F.when(_is_tombstone(), rec)).over(partition))
    live = sync & (last_dead.isNull() | (rec > last_dead))
    return staged.select(*rows.columns, live.alias("_live"))


def _live_facts(frame: WindowSpec, up: str, down: str) -> list[Column]:
    """The last live sync of ``frame`` as its (upstream, downstream): a live sync has both set, so the two
    ``last``s come from the same row."""
    live = F.col("_live")
    return [
        F.last(F.when(live, F.col(_POS)), ignorenulls=True).over(frame).alias(up),
        F.last(F.when(live, F.col(_DOWN)), ignorenulls=True).over(frame).alias(down),
    ]


def _sync_count() -> Column:
    """The partition's live sync count (evaluated in the same pass as a window of the same order)."""
    return F.sum(F.col("_live").cast("long")).over(_whole()).alias("sync_count")


def latest_syncs(decoded_syncs: DataFrame) -> DataFrame:
    """The syncs of the offset-syncs topic that still count, each with its partition's ``sync_count``.

    The topic is compacted on the key (source topic, partition), so a fully compacted topic holds one sync per
    partition; before the cleaner runs it holds many, and every one of them is a valid translation point, so
    all are kept (that is how the inspector sees more than MM2's sparse in-memory store). Dropped:

    * malformed records (the job counts them: ``inspector.job.MalformedCounter``);
    * records outside partition 0 (MM2 writes and reads partition 0 only, DESIGN §3);
    * everything of a partition written before a tombstone: the tombstone deletes the key;
    * everything of a partition written before an *upstream rewind* (a sync whose upstream offset is lower
      than the previous sync's): MM2's OffsetSyncStore discards its whole history then ("old offsets are
      invalid"), because the source partition was truncated, recreated or re-replicated.

    ``translate`` applies the same rules itself, fused into its one sort; this is the same step on its own,
    for looking at the live syncs. Output: ``schemas.SYNCS_SCHEMA``.
    """
    rows = _sync_rows(decoded_syncs).select(*SYNC_KEY, "record_timestamp", *_record_row(F.struct(*SYNC_KEY)))
    marked = _with_liveness(_sorted(rows)).select("*", _sync_count())
    return marked.where("_live").select(
        *SYNC_KEY,
        F.col(_POS).alias("upstream_offset"),
        F.col(_DOWN).alias("downstream_offset"),
        "record_offset",
        "record_timestamp",
        "sync_count",
    )


def partition_numbers(group_offsets: DataFrame) -> DataFrame:
    """A small int (``_part``) per source partition that has a group offset, in key order (deterministic).

    ``translate`` numbers the partitions so; pass the same frame to ``decode.decode_offset_syncs`` as
    ``known`` and to ``translate`` as ``numbers`` to match the syncs to them by their raw key bytes instead.
    Output: ``schemas.PARTITION_NUMBERS_SCHEMA`` (the job builds the same numbering on the driver).
    """
    keys = group_offsets.select(*SYNC_KEY).where(F.col("topic").isNotNull() & F.col("partition").isNotNull())
    return keys.distinct().select("*", F.row_number().over(Window.orderBy(*SYNC_KEY)).alias(_PART))


def translate(group_offsets: DataFrame, decoded_syncs: DataFrame, *, numbers: DataFrame | None = None) -> DataFrame:
    """Append DESIGN §5's translation of ``committed_offset`` to every row of ``group_offsets``.

    ``decoded_syncs`` is ``decode.decode_offset_syncs``'s output; only the syncs that still count are used
    (``latest_syncs``'s rules). For a committed source offset ``c`` the newest sync with ``upstream <= c`` is
    the one with the greatest upstream (ties: the latest record wins); ``upstream == c`` gives
    ``downstream``, ``upstream < c`` gives ``downstream + 1``, and no such sync leaves the row untranslatable
    (null). Also appended, per row: the sync used (``sync_upstream``/``sync_downstream``); the partition's
    newest sync (``latest_sync_*``, Aiven's "lag to source" and the stale-sync slack use it); and
    ``sync_count`` (0 when the partition has no sync).

    How it scales: this is an as-of join done as one sort. The group-offset rows (the probes) and the sync
    records are unioned, shuffled once by source partition and sorted once by position; liveness, the
    partition's facts and a running ``last(live sync, ignorenulls)`` are windows over that same order, so
    every probe is handed the sync at or below it in O((groups + syncs) log) per partition, and the probe
    rows come out already translated: no join back to the group offsets (only their partition's key, from the
    broadcast numbering). A range join (``upstream <= c``) would pair every group offset with every sync of its
    partition, quadratic in an un-compacted topic (MM2 3.7+ writes a sync per partition on every offset commit).

    The sort rows are kept narrow, because there are as many as there are records in the topic: the source
    partition is a small int (numbered from the group offsets' partitions, broadcast); a sync row is that int,
    three longs and one null probe, with no kind or flag column (see the sort order above); a probe row carries
    its group-offset row as one struct, less the source partition's key, which its number gives back (from the
    broadcast numbering) once the probes are translated. Syncs of partitions no group has an offset on cannot
    translate anything and are dropped by that broadcast join.

    ``group_offsets`` needs (cluster_pair, topic, partition, committed_offset) and keeps all its columns.
    ``numbers`` is ``partition_numbers(group_offsets)`` (or any numbering of the same partitions, one distinct
    ``_part`` each) when the syncs were decoded with it as ``known``: they then carry their partition's
    number already and are not joined with it again.
    """
    if numbers is None:
        numbers = partition_numbers(group_offsets)
        numbered = _sync_rows(decoded_syncs).join(F.broadcast(numbers), on=SYNC_KEY)
    else:
        numbered = _sync_rows(decoded_syncs.select(*NUMBERED_SYNC_COLUMNS)).where(F.col(_PART).isNotNull())
    numbers = F.broadcast(numbers.select(*SYNC_KEY, _PART))
    carried = [c for c in group_offsets.columns if c not in SYNC_KEY]
    # The key rides along (``_probe._key``) only where no number can give it back (a partition the numbering
    # lacks); a sync row's probe is one null.
    probe = F.struct(*carried, F.when(F.col(_PART).isNull(), F.struct(*SYNC_KEY)).alias("_key"))
    no_long = F.lit(None).cast("long")
    probe_rows = group_offsets.join(numbers, on=SYNC_KEY, how="left").select(
        F.col(_PART),
        F.col("committed_offset").alias(_POS),
        no_long.alias(_REC),
        no_long.alias(_DOWN),
        probe.alias("_probe"),
    )
    probe_type = probe_rows.schema["_probe"].dataType
    sync_rows = numbered.select(*_record_row(F.col(_PART)), F.lit(None).cast(probe_type).alias("_probe"))
    marked = _with_liveness(_sorted(sync_rows.unionByName(probe_rows)))
    as_of = _ordered().rowsBetween(Window.unboundedPreceding, Window.currentRow)
    translated_rows = marked.select(
        _PART,
        _REC,
        "_probe",
        *_live_facts(as_of, "_prev_up", "_prev_down"),
        *_live_facts(_whole(), "latest_sync_upstream", "latest_sync_downstream"),
        _sync_count(),
    ).where(F.col(_REC).isNull())
    c = F.col("_probe.committed_offset")
    up, down = F.col("_prev_up"), F.col("_prev_down")
    translated = F.when(up == c, down).otherwise(F.try_add(down, F.lit(1)))
    keys = numbers.select(*[F.col(k).alias(f"_n_{k}") for k in SYNC_KEY], _PART)

    def column(name: str) -> Column:
        if name in SYNC_KEY:
            return F.coalesce(F.col(f"_n_{name}"), F.col(f"_probe._key.{name}")).alias(name)
        return F.col(f"_probe.{name}").alias(name)

    return translated_rows.join(keys, on=_PART, how="left").select(
        *[column(name) for name in group_offsets.columns],
        F.when(c.isNotNull(), translated).alias("translated_offset"),
        F.when(c.isNotNull(), up).alias("sync_upstream"),
        F.when(c.isNotNull(), down).alias("sync_downstream"),
        "latest_sync_upstream",
        "latest_sync_downstream",
        "sync_count",
    )


# --- checkpoints ---


def latest_checkpoints(decoded_checkpoints: DataFrame) -> DataFrame:
    """The live checkpoint per (pair, group, target topic, partition): compacted-topic semantics.

    The newest record of a key (by Kafka offset) wins; if that record is a tombstone the key is gone.
    Malformed records are ignored (the job counts them). Output: ``schemas.CHECKPOINTS_SCHEMA``.

    The newest record is found with a window over the key, not an aggregate: a ``max(struct)`` cannot be
    hash-aggregated, so Spark sorts the records twice for it (before and after the shuffle), while the
    window sorts them once, after the shuffle, by (pair, group, topic, partition), which is also the order
    ``join_target_state`` joins them in, so that join does not sort them again.
    """
    key = [PAIR, "group", "topic", "partition"]
    record = F.struct("record_offset", "record_partition")  # a record's identity, should the topic have partitions
    return (
        decoded_checkpoints.where(F.col("malformed_reason").isNull())
        .repartition(PAIR, "group")  # the clustering join_target_state joins on: no second shuffle there
        .select("*", F.max(record).over(Window.partitionBy(*key)).alias("_newest"))
        .where((record == F.col("_newest")) & ~F.col("is_tombstone"))
        .select(
            *key,
            "upstream_offset",
            "downstream_offset",
            "metadata",
            "record_offset",
            "record_timestamp",
        )
    )


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
    # clustered by (pair, group), the clustering ``classify``'s per-group window needs next (``latest_checkpoints``
    # already clusters so). With ``spark.sql.requireAllClusterKeysForCoPartition=false`` (the embedded
    # session's setting) Spark then shuffles each side once; with Spark's default it adds one more shuffle.
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
        "sync_upstream",
        "sync_downstream",
        "latest_sync_upstream",
        "latest_sync_downstream",
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
    timing, not a stale sync. ``replay_if_failover_now`` / ``skip_if_failover_now`` count the messages between
    the judged offset and the translated one: replay is a lower bound and skip an upper bound, exact when the
    translation is (the sync sits at the committed offset).

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
        (te < tl).alias("target_has_data"),
        F.col("status").isin(*[s.value for s in statuses.OK_STATUSES]).alias("is_ok"),
        blocking.alias("blocking_component"),
        message.alias("message"),
        "status",
        "remote_topic",
        "translated_offset",
        "checkpoint_offset",
        "checkpoint_timestamp",
        "sync_count",
        F.when(both, F.greatest(gap, zero)).alias("replay_if_failover_now"),
        F.when(both, F.greatest(F.try_subtract(judged, translated), zero)).alias("skip_if_failover_now"),
        "error",
    )


def summarize(classified: DataFrame) -> DataFrame:
    """Counts per pair and status, with each pair's totals and problem counts beside them.

    Output: ``schemas.SUMMARY_SCHEMA``.

    ``partitions`` counts classified rows (group partitions); ``groups`` the distinct groups with a row in
    that status. ``pair_problem_groups`` counts groups with at least one row that is not ok — the number an
    operator asks first before a failover.
    """
    per_status = classified.groupBy(PAIR, "status").agg(
        F.min("is_ok").alias("is_ok"),
        F.count(F.lit(1)).alias("partitions"),
        F.countDistinct("group").alias("groups"),
        F.sum("replay_if_failover_now").alias("replay_if_failover_now"),
        F.sum("skip_if_failover_now").alias("skip_if_failover_now"),
    )
    problem_groups = (
        classified.where(~F.col("is_ok")).groupBy(PAIR).agg(F.countDistinct("group").alias("pair_problem_groups"))
    )
    pair = Window.partitionBy(PAIR)
    zero = F.lit(0).cast("long")
    return (
        per_status.join(problem_groups, on=PAIR, how="left")
        .select(
            PAIR,
            "status",
            "is_ok",
            "partitions",
            "groups",
            "replay_if_failover_now",
            "skip_if_failover_now",
            F.sum("partitions").over(pair).alias("pair_partitions"),
            F.coalesce(F.sum(F.when(~F.col("is_ok"), F.col("partitions"))).over(pair), zero).alias(
                "pair_problem_partitions"
            ),
            F.coalesce(F.col("pair_problem_groups"), zero).alias("pair_problem_groups"),
        )
        .orderBy(PAIR, "status")
    )
