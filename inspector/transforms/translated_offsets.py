"""Translate every group offset through its partition's runs of syncs (``inspector.transforms.sync_runs``).

The rule is ``core.translation.rule``'s, and the runs hold exactly the syncs of the current mapping: for a
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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mm2ctl.core.translation.methods import EXACT_METHODS
from mm2ctl.inspector.transforms.sql_text import Statement, quoted

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
    carried = [c for c in group_offsets.columns if c not in SYNC_KEY]
    out = ", ".join(
        f"k.{quoted(c)}" if c in SYNC_KEY else f"_probe.{quoted(c)} AS {quoted(c)}" for c in group_offsets.columns
    )
    q = Statement()
    text = f"""
    WITH numbering AS (SELECT cluster_pair, topic, `partition`, _part FROM {{numbers}}),
    probes AS (
      SELECT /*+ BROADCAST(n) */ n._part, g.committed_offset AS _u0, CAST(NULL AS BIGINT) AS _d0,
        CAST(NULL AS BIGINT) AS _n, named_struct({", ".join(f"'{c}', g.{quoted(c)}" for c in carried)}) AS _probe
      FROM {{group_offsets}} g
      JOIN numbering n ON g.cluster_pair = n.cluster_pair AND g.topic = n.topic AND g.`partition` = n.`partition`
    ),
    rows AS (
      SELECT _part, _u0, _d0, _n, CAST(NULL AS {_struct_type(group_offsets, carried)}) AS _probe FROM {{runs}}
      UNION ALL SELECT * FROM probes
    ),
    -- At one position a run sorts before a probe (a probe has no _n): the sync at c translates c.
    marked AS (
      SELECT _part, _n, _probe,
        last(CASE WHEN _n IS NOT NULL THEN _u0 END, true) OVER w AS _ru0,
        last(CASE WHEN _n IS NOT NULL THEN _d0 END, true) OVER w AS _rd0,
        last(_n, true) OVER w AS _rn
      FROM rows
      WINDOW w AS (PARTITION BY _part ORDER BY _u0 ASC NULLS FIRST, _n ASC NULLS LAST
                   ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
    ),
    used AS (
      SELECT *, _probe.committed_offset AS _c, try_subtract(_probe.committed_offset, _ru0) < _rn AS _inside
      FROM marked WHERE _n IS NULL
    ),
    answered AS (
      SELECT *,
        CASE WHEN _inside THEN _c ELSE _ru0 + (_rn - 1) END AS _up,
        CASE WHEN _inside THEN try_add(_rd0, try_subtract(_c, _ru0)) ELSE _rd0 + (_rn - 1) END AS _down
      FROM used
    ),
    facts AS (
      SELECT _part, min(_u0) AS oldest_sync_upstream, min(_d0) AS oldest_sync_downstream,
        max(_u0 + (_n - 1)) AS latest_sync_upstream, max(_d0 + (_n - 1)) AS latest_sync_downstream,
        sum(_records) AS sync_count
      FROM {{runs}} GROUP BY _part
    )
    SELECT /*+ BROADCAST(k, f) */ {out},
      CASE WHEN _c IS NOT NULL AND _ru0 IS NOT NULL THEN
        CASE WHEN _inside THEN _down ELSE try_add(_down, 1) END END AS translated_offset,
      CASE WHEN _c IS NOT NULL AND _ru0 IS NOT NULL THEN
        CASE WHEN _inside THEN {q.value(METHOD_SYNC_EXACT)} ELSE
          CASE WHEN try_add(_down, 1) IS NOT NULL THEN {q.value(METHOD_SYNC_NEXT)} END END END AS translation_method,
      CASE WHEN _c IS NOT NULL AND _ru0 IS NOT NULL THEN _up END AS sync_upstream,
      CASE WHEN _c IS NOT NULL AND _ru0 IS NOT NULL THEN _down END AS sync_downstream,
      f.latest_sync_upstream, f.latest_sync_downstream, f.oldest_sync_upstream, f.oldest_sync_downstream,
      coalesce(f.sync_count, CAST(0 AS BIGINT)) AS sync_count
    FROM answered a
    JOIN numbering k ON a._part = k._part
    LEFT JOIN facts f ON a._part = f._part
    """
    return q.run(group_offsets.sparkSession, text, group_offsets=group_offsets, runs=runs, numbers=numbers)


def _struct_type(frame: DataFrame, columns: list[str]) -> str:
    """The SQL type of ``named_struct`` over ``columns`` of ``frame``."""
    fields = {f.name: f.dataType.simpleString() for f in frame.schema.fields}
    return "STRUCT<" + ", ".join(f"{quoted(c)}: {fields[c]}" for c in columns) + ">"


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
