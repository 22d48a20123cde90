"""The one final aggregation of an inspection's rows, in Spark: ``inspector.rules.group_figures``' rule, run over
rows clustered by group (``inspector.spark.arrow_rules.by_key``).

``inspector.output.inspection_result.summarize`` makes every count the inspection reports of these rows in plain
Python: what leaves Spark is a row per group and status, however many group partitions were inspected.
"""

from __future__ import annotations

import functools

from pyspark.sql import DataFrame
from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from mm2ctl.inspector.output.inspection_result import PROBLEM_COLUMNS, PROBLEM_ROWS
from mm2ctl.inspector.rules import group_figures as figures_rule
from mm2ctl.inspector.schemas import CLASSIFIED_SCHEMA, FRESH_CHECKPOINT, GROUP_CHECKPOINT_AGE, GROUP_NEWEST_CHECKPOINT
from mm2ctl.inspector.spark.arrow_rules import by_key, ship_by_value

_PROBLEM = StructType([CLASSIFIED_SCHEMA[c] for c in PROBLEM_COLUMNS])
#: ``group_figures``' rows.
FIGURES_SCHEMA = StructType(
    [
        StructField("cluster_pair", StringType()),
        StructField("group", StringType()),
        StructField("status", StringType()),
        StructField("is_ok", BooleanType()),
        StructField("partitions", LongType()),
        *(StructField(c, LongType()) for c in ("replay", "skip", "replay_at_least", "skip_at_most")),
        StructField("checkpoint_age", DoubleType()),
        StructField("newest_checkpoint_micros", LongType()),
        StructField("fresh_until_micros", LongType()),
        StructField("group_type", StringType()),
        StructField("written_by_mm2ctl", LongType()),
        StructField("problems", ArrayType(_PROBLEM)),
    ]
)
#: The columns of the rows the rule reads.
_READ = sorted(
    {
        "cluster_pair",
        "group",
        "status",
        "is_ok",
        "replay_if_failover_now",
        "replay_if_failover_now_at_least",
        "skip_if_failover_now",
        "skip_if_failover_now_at_most",
        "group_type",
        "target_written_by",
        GROUP_CHECKPOINT_AGE,
        GROUP_NEWEST_CHECKPOINT,
        FRESH_CHECKPOINT,
        *PROBLEM_COLUMNS,
    }
)


def rule(*, problem_rows: int = PROBLEM_ROWS) -> figures_rule.Rule:
    """``inspector.rules.group_figures.group_figures`` over rows shaped as ``schemas.KEPT_ROWS_SCHEMA``."""
    return functools.partial(
        figures_rule.group_figures,
        age_column=GROUP_CHECKPOINT_AGE,
        newest_column=GROUP_NEWEST_CHECKPOINT,
        fresh_column=FRESH_CHECKPOINT,
        problem_columns=PROBLEM_COLUMNS,
        problem_rows=problem_rows,
    )


def group_figures(rows: DataFrame, *, problem_rows: int = PROBLEM_ROWS) -> DataFrame:
    """One row per (pair, group, status) of the classified rows (``schemas.KEPT_ROWS_SCHEMA``'s columns):
    the one final aggregation (``FIGURES_SCHEMA``)."""
    ship_by_value(figures_rule)
    return by_key(rows.select(*_READ), ["cluster_pair", "group"], rule(problem_rows=problem_rows), FIGURES_SCHEMA)
