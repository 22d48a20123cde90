"""Translating group offsets through their partitions' runs of offset syncs: the conservative rule of
``core.translation`` (``core.translation.rule.conservative``), as one function over Arrow tables.

The runs are ``inspector.transforms.sync_runs``': per source partition (``_part``), the syncs ``_u0 + i ->
_d0 + i`` for ``0 <= i < _n``, disjoint and increasing on both sides, ``_records`` sync records in all. For a
committed offset ``c`` the run with the greatest ``_u0 <= c`` holds the newest sync at or below ``c``: the one
at ``c`` when ``c - _u0 < _n`` (``downstream``, ``offset_sync_exact``), else its last sync (``downstream + 1``,
``offset_sync_next``). No run at or below ``c``, or a null ``c``, translates nothing. Arithmetic is Spark SQL's
``try_add``/``try_subtract`` (``inspector.rules.columns``): an overflow is null, and a ``downstream + 1`` that
overflows leaves the method null too.

Spark runs ``translate_union`` over the group offsets and runs of each source partition, shuffled together
(``inspector.transforms.translated_offsets``); a process holding both as Arrow runs ``translate_numbered`` or
``translate_rows``. ``tests/unit/test_translation_rule.py`` holds the two to the same rows.

Only pyarrow, numpy and other ``inspector.rules`` modules are imported, so Spark can ship the module to a Python
worker by value.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.inspector.rules.columns import case, scalar, try_add, try_subtract

PART, U0, D0, N, RECORDS = "_part", "_u0", "_d0", "_n", "_records"
RUN_COLUMNS = (PART, U0, D0, N, RECORDS)
#: ``translate_union``'s column telling a run's row (true) from a group offset's (false).
IS_RUN = "_run"
COMMITTED = "committed_offset"
PARTITION_KEY = ["cluster_pair", "topic", "partition"]
#: ``translation_method`` of the rule's two answers (``core.translation.methods.TranslationMethod``'s values).
METHOD_SYNC_EXACT, METHOD_SYNC_NEXT = "offset_sync_exact", "offset_sync_next"
#: The columns ``translate_rows`` appends, in order (``inspector.schemas.TRANSLATION_FIELDS``).
TRANSLATION_COLUMNS = pa.schema(
    [
        pa.field("translated_offset", pa.int64()),
        pa.field("translation_method", pa.string()),
        pa.field("sync_upstream", pa.int64()),
        pa.field("sync_downstream", pa.int64()),
        pa.field("latest_sync_upstream", pa.int64()),
        pa.field("latest_sync_downstream", pa.int64()),
        pa.field("oldest_sync_upstream", pa.int64()),
        pa.field("oldest_sync_downstream", pa.int64()),
        pa.field("sync_count", pa.int64(), nullable=False),
    ]
)


class _SortedRuns:
    """A table of runs as numpy columns, sorted by (``_part``, ``_u0``, ``_n``); a run missing any of its
    positions is left out, a null ``_records`` counts none."""

    def __init__(self, runs: pa.Table) -> None:
        complete = np.ones(runs.num_rows, bool)
        for c in (PART, U0, D0, N):
            complete &= np.asarray(pc.is_valid(runs[c]), bool)
        whole = runs.filter(pa.array(complete))
        part, u0, d0, n = (np.asarray(whole[c].combine_chunks(), np.int64) for c in (PART, U0, D0, N))
        records = np.asarray(pc.fill_null(whole[RECORDS], 0).combine_chunks(), np.int64)
        order = np.lexsort((n, u0, part))
        self.part, self.u0, self.d0, self.n, self.records = (x[order] for x in (part, u0, d0, n, records))

    def __len__(self) -> int:
        return len(self.part)


def translate_rows(group_offsets: pa.Table, parts: pa.Array | pa.ChunkedArray, runs: pa.Table) -> pa.Table:
    """``group_offsets``' rows (any columns, ``committed_offset`` among them), each of source partition
    ``parts[i]`` (non-null), translated through ``runs`` (``RUN_COLUMNS``).

    Output: ``group_offsets``' columns, in order, then ``TRANSLATION_COLUMNS``: the translation, the sync it
    used, and the partition's latest and oldest syncs and sync records (null, and 0 records, without runs)."""
    sorted_runs = _SortedRuns(runs)
    part = np.asarray(_whole(parts), np.int64)
    committed = _whole(group_offsets[COMMITTED]).cast(pa.int64())
    answer = _answers(part, committed, sorted_runs)
    facts = _partition_facts(part, sorted_runs)
    appended = answer | facts
    out = group_offsets
    for field in TRANSLATION_COLUMNS:
        out = out.append_column(field, appended[field.name])
    return out


def translate_numbered(group_offsets: pa.Table, runs: pa.Table, numbers: pa.Table) -> pa.Table:
    """``translate_rows`` over the rows of ``group_offsets`` whose (cluster_pair, topic, partition) ``numbers``
    numbers (``inspector.schemas.PARTITION_NUMBERS_SCHEMA``, one ``_part`` per partition); other rows are left
    out. Rows keep their order."""
    kept, parts = numbered(group_offsets, numbers)
    return translate_rows(kept, parts, runs)


def numbered(group_offsets: pa.Table, numbers: pa.Table) -> tuple[pa.Table, pa.Array]:
    """The rows of ``group_offsets`` that ``numbers`` numbers, in order, and the ``_part`` of each."""
    row = "_row"
    keys = group_offsets.select(PARTITION_KEY).append_column(row, pa.array(np.arange(group_offsets.num_rows)))
    matched = keys.join(numbers.select([*PARTITION_KEY, PART]), keys=PARTITION_KEY, join_type="inner")
    matched = matched.sort_by(row)
    return group_offsets.take(matched[row]), _whole(matched[PART])


def translate_union(rows: pa.Table, columns: Sequence[str]) -> pa.Table:
    """Spark's call: ``rows`` hold the group offsets (``columns`` and ``_part``, ``IS_RUN`` false) and the runs
    (``RUN_COLUMNS``, ``IS_RUN`` true) of the source partitions they cover; the group offsets translated."""
    is_run = pc.fill_null(rows[IS_RUN], False)
    probes = rows.filter(pc.invert(is_run))
    return translate_rows(probes.select(list(columns)), probes[PART], rows.filter(is_run).select(list(RUN_COLUMNS)))


def _whole(x: pa.Array | pa.ChunkedArray) -> pa.Array:
    return x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x


def _run_at_or_below(part: np.ndarray, at: np.ndarray, runs: _SortedRuns) -> np.ndarray:
    """For each (``part``, ``at``), the index in ``runs`` of its partition's run with the greatest start at or
    below ``at``, or -1: one merge of the probes into the sorted runs, a run sorting before a probe at its start."""
    m, k = len(runs), len(part)
    order = np.lexsort(
        (
            np.concatenate([np.zeros(m, np.int8), np.ones(k, np.int8)]),
            np.concatenate([runs.u0, at]),
            np.concatenate([runs.part, part]),
        )
    )
    index = np.concatenate([np.arange(m, dtype=np.int64), np.full(k, -1, np.int64)])[order]
    last = np.maximum.accumulate(index) if len(index) else index
    is_probe = order >= m
    found = np.empty(k, np.int64)
    found[order[is_probe] - m] = last[is_probe]
    ours = found >= 0
    ours[ours] = runs.part[found[ours]] == part[ours]
    return np.where(ours, found, -1)


def _answers(part: np.ndarray, committed: pa.Array, runs: _SortedRuns) -> dict[str, pa.Array]:
    """The rule's translation of each committed offset, and the sync it used."""
    k = len(part)
    valid = np.asarray(pc.is_valid(committed), bool)
    c = np.asarray(committed.fill_null(0), np.int64)
    found = np.full(k, -1, np.int64)
    found[valid] = _run_at_or_below(part[valid], c[valid], runs)
    answered = found >= 0
    at = np.where(answered, found, 0)

    def of_run(values: np.ndarray) -> pa.Array:
        return pa.array(values[at] if len(values) else np.zeros(k, np.int64), pa.int64(), mask=~answered)

    ru0, rd0, rn = of_run(runs.u0), of_run(runs.d0), of_run(runs.n)
    with np.errstate(over="ignore"):
        last_up, last_down = of_run(runs.u0 + (runs.n - 1)), of_run(runs.d0 + (runs.n - 1))
    inside = pc.less(try_subtract(committed, ru0), rn)
    up = case([(inside, committed)], last_up)
    down = case([(inside, try_add(rd0, try_subtract(committed, ru0)))], last_down)
    after = try_add(down, 1)
    is_answered = pa.array(answered)
    nothing = pa.nulls(k, pa.int64())
    return {
        "translated_offset": case([(pc.and_(is_answered, inside), down), (is_answered, after)], nothing),
        "translation_method": case(
            [
                (pc.and_(is_answered, inside), scalar(METHOD_SYNC_EXACT, k, pa.string())),
                (pc.and_(is_answered, pc.is_valid(after)), scalar(METHOD_SYNC_NEXT, k, pa.string())),
            ],
            pa.nulls(k, pa.string()),
        ),
        "sync_upstream": case([(is_answered, up)], nothing),
        "sync_downstream": case([(is_answered, down)], nothing),
    }


def _partition_facts(part: np.ndarray, runs: _SortedRuns) -> dict[str, pa.Array]:
    """Each row's partition's latest and oldest sync and its sync records (``sync_count``, 0 without runs)."""
    k = len(part)
    names = ("latest_sync_upstream", "latest_sync_downstream", "oldest_sync_upstream", "oldest_sync_downstream")
    if not len(runs):
        return {**{name: pa.nulls(k, pa.int64()) for name in names}, "sync_count": pa.array(np.zeros(k, np.int64))}
    starts = np.flatnonzero(np.concatenate([[True], runs.part[1:] != runs.part[:-1]]))
    keys = runs.part[starts]
    with np.errstate(over="ignore"):
        per_part = (
            np.maximum.reduceat(runs.u0 + (runs.n - 1), starts),
            np.maximum.reduceat(runs.d0 + (runs.n - 1), starts),
            np.minimum.reduceat(runs.u0, starts),
            np.minimum.reduceat(runs.d0, starts),
        )
        records = np.add.reduceat(runs.records, starts)
    at = np.minimum(np.searchsorted(keys, part), len(keys) - 1)
    has = keys[at] == part
    facts = {name: pa.array(values[at], pa.int64(), mask=~has) for name, values in zip(names, per_part, strict=True)}
    return {**facts, "sync_count": pa.array(np.where(has, records[at], 0), pa.int64())}
