"""The one final aggregation of an inspection's rows: a row per (pair, group, status).

Each carries its count, the failover estimates it adds up to, the group's checkpoint age, and the group's
first problem rows in report order. ``inspector.result.summarize`` makes every count the inspection reports
of these rows in plain Python: what leaves Spark is a row per group and status, however many group
partitions were inspected.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mm2ctl.inspector.result import PROBLEM_COLUMNS, PROBLEM_ROWS
from mm2ctl.inspector.schemas import GROUP_CHECKPOINT_AGE


def group_figures(rows: DataFrame, *, problem_rows: int = PROBLEM_ROWS) -> DataFrame:
    """One row per (pair, group, status) of the classified rows: the one final aggregation."""
    problem = F.when(~F.col("is_ok"), F.struct(*PROBLEM_COLUMNS))
    return rows.groupBy("cluster_pair", "group", "status").agg(
        F.min("is_ok").alias("is_ok"),
        F.count(F.lit(1)).alias("partitions"),
        # The true count where inspect knows it (an exact translation, or --exact), else the bound every
        # translated row has: replay at least, skip at most.
        F.sum(F.coalesce("replay_if_failover_now", "replay_if_failover_now_at_least")).alias("replay"),
        F.sum(F.coalesce("skip_if_failover_now", "skip_if_failover_now_at_most")).alias("skip"),
        F.sum("replay_if_failover_now_at_least").alias("replay_at_least"),
        F.sum("skip_if_failover_now_at_most").alias("skip_at_most"),
        F.min(GROUP_CHECKPOINT_AGE).alias("checkpoint_age"),
        F.slice(F.array_sort(F.collect_list(problem)), 1, problem_rows).alias("problems"),
    )
