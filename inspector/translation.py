"""Translate every group offset through its partition's runs of syncs (``inspector.sync_state``).

The rule is ``plans.translation``'s, and the runs hold exactly the syncs of the current mapping: for a
committed source offset ``c``, the newest sync with ``upstream <= c`` gives ``downstream`` when ``upstream ==
c``, else ``downstream + 1``; no such sync leaves the row untranslatable (null). The run with the greatest
start at or below ``c`` holds that sync: the one at ``c`` when ``c`` falls inside it, else its last.

How it scales: an as-of join done as one sort and one window pass. The group-offset rows (the probes) and the
runs are unioned, shuffled once by source partition and sorted by position, and a running ``last(run)`` hands
each probe the run at or below it, in O((groups + runs) log) per partition. A range join (``_u0 <= c``) would
pair every group offset with every run of its partition. A probe carries its group-offset row as one struct,
so the sort rows stay narrow; the partition's key comes back from the broadcast numbering.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from mm2ctl.inspector.sync_state import D0, PART, U0, N, run_facts
from mm2ctl.plans.payloads import EXACT_METHODS

PAIR = "cluster_pair"
SYNC_KEY = [PAIR, "topic", "partition"]
#: ``translation_method`` of the rule's two answers (``plans.payloads.TranslationMethod``'s values).
METHOD_SYNC_EXACT, METHOD_SYNC_NEXT = "offset_sync_exact", "offset_sync_next"


def translate(group_offsets: DataFrame, runs: DataFrame, numbers: DataFrame) -> DataFrame:
    """Append the rule's translation of ``committed_offset`` to every row of ``group_offsets``.

    ``numbers`` (``cluster_pair``, ``topic``, ``partition``, ``_part``; small, broadcast) numbers every
    partition of ``group_offsets``, as ``runs`` are numbered. Appended per row: ``translated_offset``,
    ``translation_method``, the sync used (``sync_upstream``/``sync_downstream``), the partition's oldest and
    latest sync (``oldest_sync_*``, ``latest_sync_*``) and the sync records of its mapping (``sync_count``).
    ``group_offsets`` needs (cluster_pair, topic, partition, committed_offset) and keeps all its columns.
    """
    numbering = F.broadcast(numbers.select(*SYNC_KEY, PART))
    carried = [c for c in group_offsets.columns if c not in SYNC_KEY]
    no_long = F.lit(None).cast("long")
    probes = group_offsets.join(numbering, on=SYNC_KEY).select(
        PART,
        F.col("committed_offset").alias(U0),
        no_long.alias(D0),
        no_long.alias(N),
        F.struct(*carried).alias("_probe"),
    )
    probe_type = probes.schema["_probe"].dataType
    run_rows = runs.select(PART, U0, D0, N, F.lit(None).cast(probe_type).alias("_probe"))
    # At one position a run sorts before a probe (a probe has no ``_n``): the sync at ``c`` translates ``c``.
    as_of = (
        Window.partitionBy(PART)
        .orderBy(F.col(U0).asc_nulls_first(), F.col(N).asc_nulls_last())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )

    def last_run(column: str) -> Column:
        return F.last(F.when(F.col(N).isNotNull(), F.col(column)), ignorenulls=True).over(as_of)

    marked = run_rows.unionByName(probes).select(
        PART, N, "_probe", last_run(U0).alias("_ru0"), last_run(D0).alias("_rd0"), last_run(N).alias("_rn")
    )
    c = F.col("_probe.committed_offset")
    ru0, rd0, rn = F.col("_ru0"), F.col("_rd0"), F.col("_rn")
    inside = F.try_subtract(c, ru0) < rn
    used_up = F.when(inside, c).otherwise(ru0 + (rn - 1))
    used_down = F.when(inside, F.try_add(rd0, F.try_subtract(c, ru0))).otherwise(rd0 + (rn - 1))
    translated = F.when(inside, used_down).otherwise(F.try_add(used_down, F.lit(1)))
    method = F.when(inside, F.lit(METHOD_SYNC_EXACT)).when(translated.isNotNull(), F.lit(METHOD_SYNC_NEXT))
    known = c.isNotNull() & ru0.isNotNull()
    keys = numbering.select(PART, *SYNC_KEY)
    facts = F.broadcast(run_facts(runs))
    translated_rows = marked.where(F.col(N).isNull()).join(keys, on=PART).join(facts, on=PART, how="left")
    return translated_rows.select(
        *[F.col(name) if name in SYNC_KEY else F.col(f"_probe.{name}").alias(name) for name in group_offsets.columns],
        F.when(known, translated).alias("translated_offset"),
        F.when(known, method).alias("translation_method"),
        F.when(known, used_up).alias("sync_upstream"),
        F.when(known, used_down).alias("sync_downstream"),
        "latest_sync_upstream",
        "latest_sync_downstream",
        "oldest_sync_upstream",
        "oldest_sync_downstream",
        F.coalesce(F.col("sync_count"), F.lit(0).cast("long")).alias("sync_count"),
    )


def inexact(translated: DataFrame) -> DataFrame:
    """The translated rows whose position is not exact (``EXACT_METHODS``): what ``inspect --exact`` reads."""
    return translated.where(
        F.col("committed_offset").isNotNull()
        & F.col("error").isNull()
        & ~F.coalesce(F.col("translation_method").isin(*sorted(EXACT_METHODS)), F.lit(False))
    ).select("group", "topic", "partition", "committed_offset", "sync_upstream", "sync_downstream")


def with_exact_positions(translated: DataFrame, exact: DataFrame) -> DataFrame:
    """``translated`` with the positions ``inspect --exact`` found (``schemas.EXACT_POSITIONS_SCHEMA``) in place
    of the rule's: ``translated_offset`` and ``translation_method`` then say what ``plan failover`` would
    write, found how."""
    key = [PAIR, "group", "topic", "partition"]
    joined = translated.join(exact, on=key, how="left")
    replaced = {"translated_offset": "exact_offset", "translation_method": "exact_method"}
    return joined.select(
        *[F.coalesce(replaced[c], c).alias(c) if c in replaced else F.col(c) for c in translated.columns]
    )
