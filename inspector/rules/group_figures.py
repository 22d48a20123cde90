"""The one final aggregation of an inspection's rows: a row per (pair, group, status), as an Arrow function.

Each carries its count, the failover estimates it adds up to, the group's checkpoint age, and the group's
first problem rows in report order. ``inspector.output.inspection_result.summarize`` makes every count the
inspection reports of these rows: what leaves Spark (or a live session's in-process classification) is a row
per group and status, however many group partitions were inspected.

``replay`` and ``skip`` are the true counts where inspect knows them (an exact translation, or ``--exact``),
else the bound every translated row has: replay at least, skip at most. ``newest_checkpoint_micros`` and
``fresh_until_micros`` (the oldest checkpoint that proved MM2 was keeping up) let a live session age a group's
figures, and find when the clock alone may change its rows, without reading them again.

Only pyarrow and numpy are imported (the ``inspector.rules`` convention).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KEY = ["cluster_pair", "group", "status"]
Rule = Callable[[pa.Table], pa.Table]


def _micros(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pc.cast(column, pa.int64())


def _problems(rows: pa.Table, columns: Sequence[str], limit: int) -> pa.Table:
    """The first ``limit`` problem rows of each (pair, group, status), by topic and partition, as a list of
    structs of ``columns`` per key."""
    bad = rows.filter(pc.invert(rows.column("is_ok")))
    bad = bad.sort_by([(c, "ascending") for c in [*KEY, "topic", "partition"]])
    keys = [np.asarray(bad.column(c).to_pylist(), dtype=object) for c in KEY]
    n = bad.num_rows
    starts = np.ones(n, bool)
    if n:
        starts[1:] = np.any([k[1:] != k[:-1] for k in keys], axis=0)
    first = np.flatnonzero(starts)
    rank = np.arange(n) - np.repeat(first, np.diff(np.append(first, n)))
    taken = bad.filter(pa.array(rank < limit))
    counts = np.minimum(np.diff(np.append(first, n)), limit)
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32))
    structs = pa.StructArray.from_arrays([taken.column(c).combine_chunks() for c in columns], list(columns))
    lists = pa.ListArray.from_arrays(offsets, structs)
    heads = bad.take(pa.array(first, pa.int64())).select(KEY)
    return heads.append_column("problems", lists)


def group_figures(rows: pa.Table, *, age_column: str, newest_column: str, fresh_column: str,
                  problem_columns: Sequence[str], problem_rows: int) -> pa.Table:  # fmt: skip
    """One row per (pair, group, status) of the classified ``rows`` (which carry every row of each group
    they hold): the counts, sums and the first ``problem_rows`` problem rows (``problem_columns``)."""
    replay = pc.coalesce(rows.column("replay_if_failover_now"), rows.column("replay_if_failover_now_at_least"))
    skip = pc.coalesce(rows.column("skip_if_failover_now"), rows.column("skip_if_failover_now_at_most"))
    work = pa.table(
        {
            **{c: rows.column(c) for c in KEY},
            "is_ok": rows.column("is_ok"),
            "replay": replay,
            "skip": skip,
            "replay_at_least": rows.column("replay_if_failover_now_at_least"),
            "skip_at_most": rows.column("skip_if_failover_now_at_most"),
            "checkpoint_age": rows.column(age_column),
            "newest": _micros(rows.column(newest_column)),
            "fresh": _micros(rows.column(fresh_column)),
            "group_type": rows.column("group_type"),
            "written": pc.cast(pc.is_valid(rows.column("target_written_by")), pa.int64()),
        }
    )
    summed = work.group_by(KEY, use_threads=False).aggregate(
        [
            ("is_ok", "all"),
            ("is_ok", "count"),
            ("replay", "sum"),
            ("skip", "sum"),
            ("replay_at_least", "sum"),
            ("skip_at_most", "sum"),
            ("checkpoint_age", "min"),
            ("newest", "max"),
            ("fresh", "min"),
            ("group_type", "max"),
            ("written", "sum"),
        ]
    )
    problems = _problems(rows, problem_columns, problem_rows)
    at = {key: i for i, key in enumerate(zip(*(problems.column(c).to_pylist() for c in KEY), strict=True))}
    keys = zip(*(summed.column(c).to_pylist() for c in KEY), strict=True)
    lists = problems.column("problems").take(pa.array([at.get(k) for k in keys], pa.int64()))
    joined = summed.append_column("problems", lists)
    empty = pa.array([[]] * joined.num_rows, problems.schema.field("problems").type)
    return pa.table(
        {
            **{c: joined.column(c) for c in KEY},
            "is_ok": joined.column("is_ok_all"),
            "partitions": joined.column("is_ok_count"),
            "replay": joined.column("replay_sum"),
            "skip": joined.column("skip_sum"),
            "replay_at_least": joined.column("replay_at_least_sum"),
            "skip_at_most": joined.column("skip_at_most_sum"),
            "checkpoint_age": joined.column("checkpoint_age_min"),
            "newest_checkpoint_micros": joined.column("newest_max"),
            "fresh_until_micros": joined.column("fresh_min"),
            "group_type": joined.column("group_type_max"),
            "written_by_mm2ctl": joined.column("written_sum"),
            "problems": pc.coalesce(joined.column("problems"), empty),
        }
    )
