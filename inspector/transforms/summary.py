"""The one final aggregation of an inspection's rows: a row per (pair, group, status).

Each carries its count, the failover estimates it adds up to, the group's checkpoint age, and the group's
first problem rows in report order. ``inspector.output.inspection_result.summarize`` makes every count the inspection
reports of these rows in plain Python: what leaves Spark is a row per group and status, however many group
partitions were inspected.
"""

from __future__ import annotations

from pyspark.sql import DataFrame

from mm2ctl.inspector.output.inspection_result import PROBLEM_COLUMNS, PROBLEM_ROWS
from mm2ctl.inspector.schemas import FRESH_CHECKPOINT, GROUP_CHECKPOINT_AGE, GROUP_NEWEST_CHECKPOINT
from mm2ctl.inspector.transforms.sql_text import Statement, quoted


def group_figures(rows: DataFrame, *, problem_rows: int = PROBLEM_ROWS) -> DataFrame:
    """One row per (pair, group, status) of the classified rows: the one final aggregation.

    ``replay`` and ``skip`` are the true counts where inspect knows them (an exact translation, or
    ``--exact``), else the bound every translated row has: replay at least, skip at most.
    ``newest_checkpoint_micros`` and ``fresh_until_micros`` (the oldest checkpoint that proved MM2 was keeping
    up, in microseconds) let a live session age a group's figures, and find when the clock alone may change
    its rows, without reading them again (``inspector.kept.kept_rows``)."""
    q = Statement()
    fields = ", ".join(f"'{c}', {quoted(c)}" for c in PROBLEM_COLUMNS)
    problem = f"CASE WHEN NOT is_ok THEN named_struct({fields}) END"
    text = f"""
    SELECT cluster_pair, `group`, status, min(is_ok) AS is_ok, count(1) AS partitions,
      sum(coalesce(replay_if_failover_now, replay_if_failover_now_at_least)) AS replay,
      sum(coalesce(skip_if_failover_now, skip_if_failover_now_at_most)) AS skip,
      sum(replay_if_failover_now_at_least) AS replay_at_least,
      sum(skip_if_failover_now_at_most) AS skip_at_most,
      min({GROUP_CHECKPOINT_AGE}) AS checkpoint_age,
      unix_micros(max({GROUP_NEWEST_CHECKPOINT})) AS newest_checkpoint_micros,
      unix_micros(min({FRESH_CHECKPOINT})) AS fresh_until_micros, first(group_type, true) AS group_type,
      sum(CAST(target_written_by IS NOT NULL AS INT)) AS written_by_mm2ctl,
      slice(array_sort(collect_list({problem})), 1, {q.value(problem_rows)}) AS problems
    FROM {{rows}}
    GROUP BY cluster_pair, `group`, status
    """
    return q.run(rows.sparkSession, text, rows=rows)
