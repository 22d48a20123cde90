"""The inspection as pure DataFrame → DataFrame steps: compaction semantics, translation, joins, statuses.

Nothing here builds a session, reads or writes: the job module gives frames in the shapes of
``inspector.schemas`` and takes frames back. Every step is Spark SQL (no Python UDF), so it runs at the
scale of the offset-syncs topic and of every group on a cluster, and each step is unit-tested on tiny frames.

The pipeline the job runs::

    checkpoints = latest_checkpoints(decode_checkpoints(checkpoint_records))
    translated  = translate(source_group_offsets, decode_offset_syncs(sync_records), tangled=observation)
                  # tangled partitions: translate again with cuts=mapping_starts(their syncs)
    joined      = join_target_state(translated, source_partitions=..., target_partitions=...,
                                    target_group_offsets=..., source_groups=..., target_groups=...,
                                    checkpoints=checkpoints)
    report      = classify(joined, sync_group_offsets_enabled=..., offset_lag_max=..., as_of=...)
    summary     = summarize(report)
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from pyspark.sql import Column, DataFrame, Observation, Window, WindowSpec
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
#: ``translation_method`` of the rule's two answers (``plans.payloads.TranslationMethod``'s values).
METHOD_SYNC_EXACT, METHOD_SYNC_NEXT = "offset_sync_exact", "offset_sync_next"
#: Methods whose position is exact: the replay and skip counts from it are true counts.
EXACT_METHODS = (METHOD_SYNC_EXACT, "verified_delta", "verified_search", "timestamp_verified")
#: ``mapping_starts``' column: the record offset the partition's current mapping starts after.
CUT = "_cut"
#: The metric ``translate``'s observation reports: the ``_part`` numbers of the tangled partitions, as
#: comma-separated text (``tangled_parts`` reads it).
TANGLED_METRIC = "tangled_parts"


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


def _agree(up_a: Column, down_a: Column, up_b: Column, down_b: Column) -> Column:
    """``plans.translation.agree`` as a SQL expression: the two syncs describe one mapping."""
    return (
        ((up_a < up_b) & (down_a < down_b))
        | ((up_a > up_b) & (down_a > down_b))
        | ((up_a == up_b) & (down_a == down_b))
    )


def _last_sync(frame: WindowSpec, up: str, down: str) -> list[Column]:
    """The last sync of ``frame`` as its (upstream, downstream): a sync has both set, so the two ``last``s
    come from the same row."""
    sync = _is_sync()
    return [
        F.last(F.when(sync, F.col(_POS)), ignorenulls=True).over(frame).alias(up),
        F.last(F.when(sync, F.col(_DOWN)), ignorenulls=True).over(frame).alias(down),
    ]


def _without_earlier_mappings(numbered: DataFrame, cuts: DataFrame | None, key: list[str]) -> DataFrame:
    """The records of each partition after its ``CUT`` (``mapping_starts``): the current mapping only."""
    if cuts is None:
        return numbered
    return (
        numbered.join(F.broadcast(cuts.select(*key, CUT)), on=key, how="left")
        .where(F.col(CUT).isNull() | (F.col("record_offset") > F.col(CUT)))
        .drop(CUT)
    )


def mapping_starts(decoded_syncs: DataFrame, *, key: list[str] | None = None) -> DataFrame:
    """Per partition, the record offset its current mapping starts after (``CUT``): ``plans.translation``'s
    rule (``current_mapping_start``) in Spark, for partitions whose syncs do not all agree.

    ``key`` names the partition: ``[_part]`` (the default: syncs decoded with ``known`` and numbered by it), or
    ``SYNC_KEY``. The current mapping is the longest run of the most recently written syncs that agree with each
    other, after the last tombstone. Its start is the newest record that cannot join it: the last tombstone,
    or the newest sync ``X`` that disagrees with a sync written after it. Sorted by (upstream, downstream),
    ``X`` disagrees with a later sync exactly when it disagrees with its nearest *later-written* neighbour on
    either side (the syncs after ``X`` form a chain, and a point agrees with a chain when it agrees with its
    two neighbours in it). Those neighbours are the previous and next greater record offset in that order, which
    one monotonic-stack pass over the sorted array finds each way. The newest sync flagged so is ``X``; older
    flags (below ``X``, where the later syncs are no chain) cannot exceed it.

    Each partition's records become one array, so this is for the few partitions ``translate`` found tangled
    (its observation), not for a whole topic at scale. A chain partition gets a null ``CUT`` (nothing to drop).
    Output: ``key`` + ``CUT``.
    """
    key = key or [_PART]
    up, down, rec = F.col("upstream_offset"), F.col("downstream_offset"), F.col("record_offset")
    rows = _sync_rows(decoded_syncs)
    grouped = rows.groupBy(*key).agg(
        F.max(F.when(up.isNull(), rec)).alias("_t"),
        F.collect_list(F.when(up.isNotNull(), F.struct(up.alias("u"), down.alias("d"), rec.alias("r")))).alias("_s"),
    )
    tombstone = F.col("_t")
    live = F.filter("_s", lambda x: tombstone.isNull() | (x["r"] > tombstone))
    ordered = F.array_sort(live)  # by (u, d, r)

    def newest_disagreeing(arr: Column) -> Column:
        empty = F.filter(arr, lambda _x: F.lit(False))

        def step(acc: Column, x: Column) -> Column:
            stack = F.filter(acc["stack"], lambda s: s["r"] > x["r"])  # later-written, nearest last
            top = F.try_element_at(stack, F.lit(-1))
            flagged = top.isNotNull() & ~_agree(top["u"], top["d"], x["u"], x["d"])
            best = F.when(flagged, F.greatest(acc["best"], x["r"])).otherwise(acc["best"])
            return F.struct(F.concat(stack, F.array(x)).alias("stack"), best.alias("best"))

        zero = F.struct(empty.alias("stack"), F.lit(None).cast("long").alias("best"))
        return F.aggregate(arr, zero, step, lambda acc: acc["best"])

    cut = F.greatest(tombstone, newest_disagreeing(ordered), newest_disagreeing(F.reverse(ordered)))
    return grouped.select(*key, cut.alias(CUT))


def latest_syncs(decoded_syncs: DataFrame) -> DataFrame:
    """The syncs of each partition's current mapping (``mapping_starts``), each with its partition's
    ``sync_count`` (the records of the mapping, a sync written twice counted twice).

    The topic is compacted on the key (source topic, partition), so a fully compacted topic holds one sync per
    partition; before the cleaner runs it holds many, and every one of the current mapping is a translation
    point (more than MM2's sparse in-memory store keeps). Dropped: malformed records (the job counts them:
    ``inspector.job.MalformedCounter``), records outside partition 0 (MM2 writes and reads partition 0 only,
    DESIGN §3), and every record of a partition written before its current mapping starts (a tombstone, or a
    sync that contradicts a later one). ``translate`` applies the same rule within its one sort; this is the
    same step on its own, for looking at the syncs. Output: ``schemas.SYNCS_SCHEMA``.
    """
    rows = _sync_rows(decoded_syncs)
    live = _without_earlier_mappings(rows, mapping_starts(rows, key=SYNC_KEY), SYNC_KEY)
    syncs = live.where(F.col("upstream_offset").isNotNull())
    return syncs.select(
        *SYNC_KEY,
        "upstream_offset",
        "downstream_offset",
        "record_offset",
        "record_timestamp",
        F.count(F.lit(1)).over(Window.partitionBy(*SYNC_KEY)).alias("sync_count"),
    )


def partition_numbers(group_offsets: DataFrame) -> DataFrame:
    """A small int (``_part``) per source partition that has a group offset, in key order (deterministic).

    ``translate`` numbers the partitions so; pass the same frame to ``decode.decode_offset_syncs`` as
    ``known`` and to ``translate`` as ``numbers`` to match the syncs to them by their raw key bytes instead.
    Output: ``schemas.PARTITION_NUMBERS_SCHEMA`` (the job builds the same numbering on the driver).
    """
    keys = group_offsets.select(*SYNC_KEY).where(F.col("topic").isNotNull() & F.col("partition").isNotNull())
    return keys.distinct().select("*", F.row_number().over(Window.orderBy(*SYNC_KEY)).alias(_PART))


def number_syncs(decoded_syncs: DataFrame, numbers: DataFrame) -> DataFrame:
    """The decoded syncs with their partition's ``_part`` (from ``numbers``), for ``mapping_starts``; syncs of
    partitions the numbering lacks are dropped."""
    return _sync_rows(decoded_syncs).join(F.broadcast(numbers.select(*SYNC_KEY, _PART)), on=SYNC_KEY)


def tangled_parts(metrics: dict[str, Any]) -> list[int]:
    """The ``_part`` numbers ``translate``'s observation reported (``TANGLED_METRIC``)."""
    text = metrics.get(TANGLED_METRIC) or ""
    return sorted(int(x) for x in str(text).split(",") if x)


def translate(
    group_offsets: DataFrame,
    decoded_syncs: DataFrame,
    *,
    numbers: DataFrame | None = None,
    cuts: DataFrame | None = None,
    tangled: Observation | None = None,
) -> DataFrame:
    """Append DESIGN §5's translation of ``committed_offset`` to every row of ``group_offsets``.

    ``decoded_syncs`` is ``decode.decode_offset_syncs``'s output. Which syncs count is ``plans.translation``'s
    one rule (``current_mapping_start``): the current mapping of each partition. For a committed source offset
    ``c`` the newest sync of it with ``upstream <= c`` gives ``downstream`` when ``upstream == c``, else
    ``downstream + 1``; no such sync leaves the row untranslatable (null). Also appended, per row: the sync used
    (``sync_upstream``/``sync_downstream``); the partition's newest and oldest syncs (``latest_sync_*``,
    ``oldest_sync_*``); and ``sync_count``.

    **Chains and tangled partitions.** Almost always a partition's syncs all agree with each other (a chain,
    whatever order MM2 wrote them in), and then every one of them counts. That is checked in the same pass
    that translates: sorted by position, each sync must agree with the one before it. A partition where one
    does not, or that has a tombstone, is *tangled* (a rewound, recreated or re-copied topic, before
    compaction removes the older mapping): its rows here are not final. ``tangled``, when given, is observed
    with their numbers (``TANGLED_METRIC``; read it with ``tangled_parts`` after an action), and the caller
    translates again with ``cuts=mapping_starts(...)`` of those partitions, which leaves each its current
    mapping, a chain. Without ``tangled`` the caller asserts there are none (or passes ``cuts`` for them).

    How it scales: this is an as-of join done as one sort and one window pass. The group-offset rows (the
    probes) and the sync records are unioned, shuffled once by source partition and sorted once by position;
    the chain check, the partition's facts and a running ``last(sync, ignorenulls)`` are frames of one window
    over that order, so every probe is handed the sync at or below it in O((groups + syncs) log) per
    partition, and the probe rows come out already translated: no join back to the group offsets (only their
    partition's key, from the broadcast numbering). A range join (``upstream <= c``) would pair every group
    offset with every sync of its partition, quadratic in an un-compacted topic (MM2 3.7+ writes a sync per
    partition on every offset commit).

    The sort rows are kept narrow, because there are as many as there are records in the topic: the source
    partition is a small int (numbered from the group offsets' partitions, broadcast); a sync row is that int,
    three longs and one null probe, with no kind or flag column (see the sort order above); a probe row carries
    its group-offset row as one struct, less the source partition's key, which its number gives back (from the
    broadcast numbering) once the probes are translated. Syncs of partitions no group has an offset on cannot
    translate anything and are dropped by that broadcast join.

    ``group_offsets`` needs (cluster_pair, topic, partition, committed_offset) and keeps all its columns.
    ``numbers`` is ``partition_numbers(group_offsets)`` (or any numbering of the same partitions, one distinct
    ``_part`` each) when the syncs were decoded with it as ``known``: they then carry their partition's
    number already and are not joined with it again. ``cuts`` (``_part``, ``CUT``) is ``mapping_starts`` of
    syncs numbered the same way.
    """
    if numbers is None:
        numbers = partition_numbers(group_offsets)
        numbered = number_syncs(decoded_syncs, numbers)
    else:
        numbered = _sync_rows(decoded_syncs.select(*NUMBERED_SYNC_COLUMNS)).where(F.col(_PART).isNotNull())
    numbered = _without_earlier_mappings(numbered, cuts, [_PART])
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
    before = _ordered().rowsBetween(Window.unboundedPreceding, -1)
    as_of = _ordered().rowsBetween(Window.unboundedPreceding, Window.currentRow)
    sync = _is_sync()
    marked = _sorted(sync_rows.unionByName(probe_rows)).select(
        _PART,
        _POS,
        _REC,
        _DOWN,
        "_probe",
        *_last_sync(before, "_prev_up", "_prev_down"),
        *_last_sync(as_of, "_as_of_up", "_as_of_down"),
        *_last_sync(_whole(), "latest_sync_upstream", "latest_sync_downstream"),
        F.first(F.when(sync, F.col(_POS)), ignorenulls=True).over(_whole()).alias("oldest_sync_upstream"),
        F.first(F.when(sync, F.col(_DOWN)), ignorenulls=True).over(_whole()).alias("oldest_sync_downstream"),
        F.count(F.when(sync, F.lit(1))).over(_whole()).alias("sync_count"),
    )
    if tangled is not None:
        prev_up, prev_down = F.col("_prev_up"), F.col("_prev_down")
        disagrees = sync & prev_up.isNotNull() & ~_agree(prev_up, prev_down, F.col(_POS), F.col(_DOWN))
        flagged = F.when(disagrees | _is_tombstone(), F.col(_PART).cast("string"))
        marked = marked.observe(tangled, F.array_join(F.collect_set(flagged), ",").alias(TANGLED_METRIC))
    translated_rows = marked.where(F.col(_REC).isNull())
    c = F.col("_probe.committed_offset")
    up, down = F.col("_as_of_up"), F.col("_as_of_down")
    translated = F.when(up == c, down).otherwise(F.try_add(down, F.lit(1)))
    keys = numbers.select(*[F.col(k).alias(f"_n_{k}") for k in SYNC_KEY], _PART)

    def column(name: str) -> Column:
        if name in SYNC_KEY:
            return F.coalesce(F.col(f"_n_{name}"), F.col(f"_probe._key.{name}")).alias(name)
        return F.col(f"_probe.{name}").alias(name)

    method = F.when(up == c, F.lit(METHOD_SYNC_EXACT)).when(translated.isNotNull(), F.lit(METHOD_SYNC_NEXT))
    return translated_rows.join(keys, on=_PART, how="left").select(
        *[column(name) for name in group_offsets.columns],
        F.when(c.isNotNull(), translated).alias("translated_offset"),
        F.when(c.isNotNull(), method).alias("translation_method"),
        F.when(c.isNotNull(), up).alias("sync_upstream"),
        F.when(c.isNotNull(), down).alias("sync_downstream"),
        "latest_sync_upstream",
        "latest_sync_downstream",
        "oldest_sync_upstream",
        "oldest_sync_downstream",
        "sync_count",
    )


def inexact(translated: DataFrame) -> DataFrame:
    """The translated rows whose position is not exact (``EXACT_METHODS``): what ``inspect --exact`` reads."""
    return translated.where(
        F.col("committed_offset").isNotNull()
        & F.col("error").isNull()
        & ~F.coalesce(F.col("translation_method").isin(*EXACT_METHODS), F.lit(False))
    ).select("group", "topic", "partition", "committed_offset", "sync_upstream", "sync_downstream")


def with_exact_positions(translated: DataFrame, exact: DataFrame) -> DataFrame:
    """``translated`` with the positions ``inspect --exact`` found (``schemas.EXACT_POSITIONS_SCHEMA``) in place
    of the rule's: ``translated_offset`` and ``translation_method`` then say what ``plan failover`` would
    write, found how."""
    key = [PAIR, "group", "topic", "partition"]
    joined = translated.join(exact, on=key, how="left")
    return joined.select(
        *[
            F.coalesce("exact_offset", "translated_offset").alias(c)
            if c == "translated_offset"
            else F.coalesce("exact_method", "translation_method").alias(c)
            if c == "translation_method"
            else F.col(c)
            for c in translated.columns
        ]
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
    exact = F.col("translation_method").isin(*EXACT_METHODS)

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
        F.sum("replay_if_failover_now_at_least").alias("replay_if_failover_now_at_least"),
        F.sum("skip_if_failover_now_at_most").alias("skip_if_failover_now_at_most"),
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
            "replay_if_failover_now_at_least",
            "skip_if_failover_now_at_most",
            F.sum("partitions").over(pair).alias("pair_partitions"),
            F.coalesce(F.sum(F.when(~F.col("is_ok"), F.col("partitions"))).over(pair), zero).alias(
                "pair_problem_partitions"
            ),
            F.coalesce(F.col("pair_problem_groups"), zero).alias("pair_problem_groups"),
        )
        .orderBy(PAIR, "status")
    )
