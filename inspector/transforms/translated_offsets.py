"""Translate every group offset through its partition's runs of syncs (``inspector.transforms.sync_runs``).

The rule is ``core.translation.rule``'s, and the runs hold exactly the syncs of the current mapping: for a
committed source offset ``c``, the newest sync with ``upstream <= c`` gives ``downstream`` when ``upstream ==
c``, else ``downstream + 1``; no such sync leaves the row untranslatable (null). It is written once, as an
Arrow function (``inspector.rules.translation``), which Spark runs here and a process holding the rows runs
as it is.

How it scales: the group-offset rows (the probes, numbered by the broadcast numbering) and the runs are
unioned and shuffled once by source partition; each Spark partition then goes to the rule in one Python call,
which merges its probes into its sorted runs, in O((groups + runs) log) per partition. A range join
(``_u0 <= c``) would pair every group offset with every run of its partition.
"""

from __future__ import annotations

import functools

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, StructType

from mm2ctl.core.translation.methods import EXACT_METHODS
from mm2ctl.inspector.rules import columns, translation
from mm2ctl.inspector.rules.translation import IS_RUN, PART, RUN_COLUMNS
from mm2ctl.inspector.schemas import TRANSLATION_FIELDS
from mm2ctl.inspector.spark.arrow_rules import by_key, ship_by_value

PAIR = "cluster_pair"
SYNC_KEY = [PAIR, "topic", "partition"]


def translate(group_offsets: DataFrame, runs: DataFrame, numbers: DataFrame) -> DataFrame:
    """Append the rule's translation of ``committed_offset`` to every row of ``group_offsets``.

    ``numbers`` (``cluster_pair``, ``topic``, ``partition``, ``_part``; small, broadcast) numbers every
    partition of ``group_offsets``, as ``runs`` are numbered; a row of a partition it does not number is left
    out. Appended per row: ``translated_offset``, ``translation_method``, the sync used
    (``sync_upstream``/``sync_downstream``), the partition's oldest and latest sync (``oldest_sync_*``,
    ``latest_sync_*``) and the sync records of its mapping (``sync_count``). ``group_offsets`` needs
    (cluster_pair, topic, partition, committed_offset) and keeps all its columns.

    A row travels to the rule without its partition's key, which the numbering gives back afterwards (a
    broadcast lookup by ``_part``): the rows to and from Python stay narrow.
    """
    carried = [c for c in group_offsets.columns if c not in SYNC_KEY]
    rule = functools.partial(translation.translate_union, columns=[*carried, PART])
    ship_by_value(translation, columns)
    fields = {f.name: f for f in [*group_offsets.schema.fields, *numbers.schema.fields]}
    schema = StructType([*(fields[c] for c in carried), fields[PART], *TRANSLATION_FIELDS])
    translated = by_key(_probes_and_runs(group_offsets, carried, runs, numbers), [PART], rule, schema)
    keyed = translated.join(F.broadcast(numbers.select(*SYNC_KEY, PART)), on=PART, how="inner")
    return keyed.select(*group_offsets.columns, *[f.name for f in TRANSLATION_FIELDS])


def _probes_and_runs(group_offsets: DataFrame, carried: list[str], runs: DataFrame, numbers: DataFrame) -> DataFrame:
    """One frame of ``translation.translate_union``'s rows: each numbered group offset (its ``carried`` columns
    and ``_part``), and each run, told apart by ``IS_RUN``."""
    types = {f.name: f.dataType for f in group_offsets.schema.fields}
    run_types = {f.name: f.dataType for f in runs.schema.fields}
    numbering = F.broadcast(numbers.select(*SYNC_KEY, PART))
    probes = group_offsets.join(numbering, on=SYNC_KEY, how="inner").select(
        *[F.col(c) for c in carried],
        F.col(PART),
        *[F.lit(None).cast(run_types[c]).alias(c) for c in RUN_COLUMNS if c != PART],
        F.lit(False).cast(BooleanType()).alias(IS_RUN),
    )
    run_rows = runs.select(
        *[F.lit(None).cast(types[c]).alias(c) for c in carried],
        *[F.col(c) for c in RUN_COLUMNS],
        F.lit(True).cast(BooleanType()).alias(IS_RUN),
    )
    return probes.unionByName(run_rows)


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
