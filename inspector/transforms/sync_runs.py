"""The offset syncs an inspection keeps of each source partition: its current mapping, as runs of syncs.

Pure DataFrame → DataFrame steps; ``inspector.kept.pair_topics`` reads the topic and keeps the frames between runs.
Which syncs count is ``core.translation.rule``'s one rule (``current_mapping_start``): the longest run of the most
recently written syncs that agree with each other, after the partition's last tombstone. The steps here
compute exactly what it computes (``tests/unit/test_inspector_syncs.py`` holds them to it, history by history).

The frames, narrow because there are as many rows as records in the topic (ten million and more before the
log cleaner runs). A source partition is a small int, ``_part``, the pair's numbering of the partitions it
knows (``inspector.kept.pair_topics.Numbering``):

* **records** (``records``): each record of a known partition, as MM2 wrote it: ``_part``, ``_pos`` (the
  upstream offset, null for a tombstone), ``_down``, ``_rec`` (the record's offset), ``_ts``; and each
  malformed record of any partition with ``_part`` null and ``_bad`` its reason (``decode.MALFORMED_REASONS``,
  from 1). Sorted by ``record_order`` within hash partitions of ``_part`` (``sorted_records``), so every window
  below reuses that one sort.
* **runs**: ``_part``, ``_u0``, ``_d0``, ``_n``, ``_records``: the syncs ``_u0 + i -> _d0 + i`` for
  ``0 <= i < _n``, every one of which MM2 wrote (``_records`` sync records in all, a sync written twice counted
  twice). A partition's runs are its current mapping: disjoint, increasing on both sides. MM2 writes a sync
  per record while it catches up, so a partition's ten thousand syncs are often a handful of runs, and what
  an inspection keeps between runs stays small.

Translating ``c`` through the runs is the rule itself: the run with the greatest ``_u0 <= c`` holds the sync
at ``c`` when ``c < _u0 + _n`` (``downstream``, exact), else its last sync is the newest below ``c``
(``downstream + 1``). ``inspector.transforms.translated_offsets`` does that.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pyspark.sql import Column, DataFrame, Row, Window, WindowSpec
from pyspark.sql import functions as F

from mm2ctl.inspector.spark.compat import array_position
from mm2ctl.inspector.transforms import decode

PART, POS, DOWN, REC, TS, BAD = "_part", "_pos", "_down", "_rec", "_ts", "_bad"
U0, D0, N, RECORDS = "_u0", "_d0", "_n", "_records"
#: ``mapping_starts``' column: the record offset the partition's current mapping starts after.
CUT = "_cut"


def record_order() -> list[Column]:
    """The order of a partition's records: tombstones first, then syncs by upstream offset, then as written."""
    return [F.col(POS).asc_nulls_first(), F.col(REC).asc_nulls_last()]


RUN_COLUMNS = (PART, U0, D0, N, RECORDS)


def records(decoded: DataFrame) -> DataFrame:
    """``decode.decode_offset_syncs(raw, known=numbering)``'s output (which carries ``_part``) as records.

    Kept: well-formed records of partition 0 (MM2 writes and reads no other) of known partitions, and every
    malformed record (for its count). A well-formed record of a partition the numbering does not know cannot
    translate anything the run inspects and is left out (``inspector.kept.pair_topics`` reads the topic again in
    full when a partition becomes known)."""
    bad = F.col("malformed_reason")
    reasons = F.array(*[F.lit(r) for r in decode.MALFORMED_REASONS])
    good = bad.isNull()
    keep = ~good | ((F.col("record_partition") == 0) & F.col(PART).isNotNull())
    return decoded.where(keep).select(
        F.when(good, F.col(PART)).alias(PART),
        F.when(good, F.col("upstream_offset")).alias(POS),
        F.when(good, F.col("downstream_offset")).alias(DOWN),
        F.col("record_offset").alias(REC),
        F.col("record_timestamp").alias(TS),
        F.when(~good, array_position(reasons, bad)).cast("byte").alias(BAD),
    )


def sorted_records(frame: DataFrame, partitions: int) -> DataFrame:
    """``frame`` shuffled by ``_part`` into ``partitions`` and sorted by ``record_order``: cached so, every
    window over a partition's records reads it without another shuffle or sort."""
    return frame.repartition(partitions, PART).sortWithinPartitions(F.col(PART), *record_order())


def _by_position() -> WindowSpec:
    return Window.partitionBy(PART).orderBy(*record_order())


def _is_sync() -> Column:
    return F.col(POS).isNotNull() & F.col(PART).isNotNull()


def _envelope(window: WindowSpec, u0: Column, d0: Column, n: Column, sync: Column) -> tuple[Column, Column]:
    """The last upstream and downstream offsets of the syncs before each row (``window`` ends at the row
    before). In a chain the greatest upstream and the greatest downstream are the same sync's."""
    before = window.rowsBetween(Window.unboundedPreceding, -1)
    last_u = F.max(F.when(sync, u0 + (n - 1))).over(before)
    last_d = F.max(F.when(sync, d0 + (n - 1))).over(before)
    return last_u, last_d


def _disagrees(u0: Column, d0: Column, last_u: Column, last_d: Column) -> Column:
    """``core.translation.rule.agree`` between a run (in position order) and the chain before it: a run starting
    inside the chain's reach must lie on it (the sync at ``u0`` is there, every run being consecutive syncs);
    one beyond it must be ahead on the target too."""
    on_chain = F.coalesce(d0 == F.try_subtract(last_d, F.try_subtract(last_u, u0)), F.lit(False))
    return last_u.isNotNull() & F.when(u0 <= last_u, ~on_chain).otherwise(d0 <= last_d)


def partition_facts(sorted_frame: DataFrame) -> DataFrame:
    """One row per partition of ``sorted_records``' output (and one with a null ``_part`` for the malformed
    records), in one pass over the sort:

    * ``tangled``: whether its records hold more than one mapping: a tombstone, or a sync that disagrees with
      the syncs before it in position order (then it disagrees with one of them, and with a later-written one
      too, or it would not start a new mapping; ``mapping_starts`` finds where the current one starts);
    * the newest record (by offset, as compaction keeps it): ``newest_is_sync`` (false for a tombstone),
      ``newest_upstream``, ``newest_downstream``, ``newest_timestamp``;
    * ``malformed``: the malformed records per reason, an array in ``decode.MALFORMED_REASONS`` order."""
    sync = _is_sync()
    last_u, last_d = _envelope(_by_position(), F.col(POS), F.col(DOWN), F.lit(1), sync)
    flagged = sorted_frame.select(
        "*",
        (sync & _disagrees(F.col(POS), F.col(DOWN), last_u, last_d)).alias("_flag"),
    )
    tombstone = F.col(PART).isNotNull() & F.col(POS).isNull()
    newest = F.max_by(
        F.struct(sync.alias("s"), F.col(POS).alias("u"), F.col(DOWN).alias("d"), F.col(TS).alias("t")), REC
    )
    counts = [F.count_if(F.col(BAD) == i + 1) for i in range(len(decode.MALFORMED_REASONS))]
    return (
        flagged.groupBy(PART)
        .agg(
            F.max(F.col("_flag") | tombstone).alias("tangled"),
            newest.alias("_newest"),
            F.array(*counts).alias("malformed"),
        )
        .select(
            PART,
            F.coalesce("tangled", F.lit(False)).alias("tangled"),
            F.col("_newest.s").alias("newest_is_sync"),
            F.col("_newest.u").alias("newest_upstream"),
            F.col("_newest.d").alias("newest_downstream"),
            F.col("_newest.t").alias("newest_timestamp"),
            "malformed",
        )
    )


def mapping_starts(frame: DataFrame) -> DataFrame:
    """Per partition of ``frame`` (records), the record offset its current mapping starts after (``CUT``):
    ``core.translation.rule.current_mapping_start`` in Spark, for the partitions ``partition_facts`` found tangled.

    The current mapping is the longest run of the most recently written syncs that agree with each other,
    after the last tombstone. Its start is the newest record that cannot join it: the last tombstone, or the
    newest sync ``X`` that disagrees with a sync written after it. Sorted by (upstream, downstream), ``X``
    disagrees with a later sync exactly when it disagrees with its nearest *later-written* neighbour on either
    side (the syncs after ``X`` form a chain, and a point agrees with a chain when it agrees with its two
    neighbours in it). Those neighbours are the previous and next greater record offset in that order, which
    one monotonic-stack pass over the sorted array finds each way. The newest sync flagged so is ``X``; older
    flags (below ``X``, where the later syncs are no chain) cannot exceed it.

    Each partition's records become one array, so this is for the few tangled partitions, not a whole topic.
    A partition whose syncs all agree gets a null ``CUT``. Output: ``_part``, ``CUT``.
    """
    up, down, rec = F.col(POS), F.col(DOWN), F.col(REC)
    grouped = (
        frame.where(F.col(PART).isNotNull())
        .groupBy(PART)
        .agg(
            F.max(F.when(up.isNull(), rec)).alias("_t"),
            F.collect_list(F.when(up.isNotNull(), F.struct(up.alias("u"), down.alias("d"), rec.alias("r")))).alias(
                "_s"
            ),
        )
    )
    tombstone = F.col("_t")
    live = F.filter("_s", lambda x: tombstone.isNull() | (x["r"] > tombstone))
    ordered = F.array_sort(live)  # by (u, d, r)

    def newest_disagreeing(arr: Column) -> Column:
        empty = F.filter(arr, lambda _x: F.lit(False))

        def step(acc: Column, x: Column) -> Column:
            stack = F.filter(acc["stack"], lambda s: s["r"] > x["r"])  # later-written, nearest last
            top = F.try_element_at(stack, F.lit(-1))
            agree = ((top["u"] < x["u"]) & (top["d"] < x["d"])) | ((top["u"] > x["u"]) & (top["d"] > x["d"]))
            agree = agree | ((top["u"] == x["u"]) & (top["d"] == x["d"]))
            flagged = top.isNotNull() & ~agree
            best = F.when(flagged, F.greatest(acc["best"], x["r"])).otherwise(acc["best"])
            return F.struct(F.concat(stack, F.array(x)).alias("stack"), best.alias("best"))

        zero = F.struct(empty.alias("stack"), F.lit(None).cast("long").alias("best"))
        return F.aggregate(arr, zero, step, lambda acc: acc["best"])

    cut = F.greatest(tombstone, newest_disagreeing(ordered), newest_disagreeing(F.reverse(ordered)))
    return grouped.select(PART, cut.alias(CUT))


def current_syncs_as_runs(sorted_frame: DataFrame, cuts: DataFrame | None) -> DataFrame:
    """Each sync of ``sorted_records``' output that belongs to its partition's current mapping, as a run of
    one: the records after the partition's ``CUT`` (``mapping_starts``, broadcast; none for a chain), syncs
    only. The records' sort carries through (a filter and a broadcast join keep it), so ``merge_runs`` sorts
    nothing."""
    syncs = sorted_frame.where(_is_sync())
    if cuts is not None:
        syncs = syncs.join(F.broadcast(cuts), on=PART, how="left").where(
            F.col(CUT).isNull() | (F.col(REC) > F.col(CUT))
        )
    return syncs.select(
        PART,
        F.col(POS).alias(U0),
        F.col(DOWN).alias(D0),
        F.lit(1).cast("long").alias(N),
        F.lit(1).cast("long").alias(RECORDS),
    )


def tangled(facts: Iterable[Row]) -> list[int]:
    """The partitions ``partition_facts``' collected rows found tangled."""
    return sorted(int(f[PART]) for f in facts if f[PART] is not None and f["tangled"])


def current_runs(sorted_frame: DataFrame, tangled_parts: Sequence[int]) -> DataFrame:
    """Each partition's current mapping as runs (``RUN_COLUMNS``), from ``sorted_records``' output and the
    partitions ``partition_facts`` found ``tangled`` (whose mapping starts are found first)."""
    cuts = mapping_starts(sorted_frame.where(F.col(PART).isin(list(tangled_parts)))) if tangled_parts else None
    return merge_runs(current_syncs_as_runs(sorted_frame, cuts))


def _run_order() -> WindowSpec:
    return Window.partitionBy(PART).orderBy(F.col(U0).asc_nulls_first())


def disagreeing_runs(runs: DataFrame) -> DataFrame:
    """The partitions (``_part``) where some run disagrees with the runs before it in position order: the
    kept runs and a later read's new syncs (runs of one) that contradict them or each other."""
    u0, d0, n = F.col(U0), F.col(D0), F.col(N)
    last_u, last_d = _envelope(_run_order(), u0, d0, n, F.lit(True))
    flagged = runs.select(PART, _disagrees(u0, d0, last_u, last_d).alias("_flag"))
    return flagged.where("_flag").select(PART).distinct()


def merge_runs(runs: DataFrame) -> DataFrame:
    """``runs`` of a chain (every one agreeing with every other: a current mapping, or the kept runs and new
    syncs ``disagreeing_runs`` found none in) merged where they touch: a run that starts inside the reach of
    the runs before it, or just after it and just after it on the target too, joins them. Output:
    ``RUN_COLUMNS``, a run per stretch of consecutive syncs."""
    u0, d0, n = F.col(U0), F.col(D0), F.col(N)
    last_u, last_d = _envelope(_run_order(), u0, d0, n, F.lit(True))
    after = F.try_add(last_u, F.lit(1))  # null past Long.MAX_VALUE, where nothing can start
    gap = F.coalesce(u0 > after, F.lit(False))
    touches = F.coalesce(u0 == after, F.lit(False)) & F.coalesce(d0 != F.try_add(last_d, F.lit(1)), F.lit(True))
    starts = last_u.isNull() | gap | touches
    marked = runs.select(*RUN_COLUMNS, starts.cast("int").alias("_start"))
    grouped = marked.select(
        *RUN_COLUMNS,
        F.sum("_start").over(_run_order().rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("_g"),
    )
    merged = grouped.groupBy(PART, "_g").agg(
        F.min(U0).alias(U0),
        F.min(D0).alias(D0),
        F.max(u0 + (n - 1)).alias("_last"),
        F.sum(RECORDS).alias(RECORDS),
    )
    return merged.select(PART, U0, D0, (F.col("_last") - F.col(U0) + 1).alias(N), RECORDS)


def new_syncs_as_runs(frame: DataFrame) -> DataFrame:
    """A later read's records (``records``' output) as runs of one sync each, for ``disagreeing_runs`` and
    ``merge_runs`` with the kept runs."""
    return frame.where(_is_sync()).select(
        PART,
        F.col(POS).alias(U0),
        F.col(DOWN).alias(D0),
        F.lit(1).cast("long").alias(N),
        F.lit(1).cast("long").alias(RECORDS),
    )


def tombstoned_parts(frame: DataFrame) -> DataFrame:
    """The partitions with a tombstone among ``frame``'s records."""
    return frame.where(F.col(PART).isNotNull() & F.col(POS).isNull()).select(PART).distinct()
