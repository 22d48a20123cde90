"""Every count an inspection reports, from its one final aggregation (``inspector.transforms.summary``) and the plain
Python over its rows (``inspector.output.inspection_result.summarize``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema

from mm2ctl.inspector.output.inspection_result import PairTotals, StatusCount, summarize
from mm2ctl.inspector.schemas import KEPT_ROWS_SCHEMA
from mm2ctl.inspector.transforms import summary


def _row(pair: str, group: str, partition: int, status: str, ok: bool, replay: int | None, age: float | None) -> dict:
    return {
        "cluster_pair": pair,
        "topic": "t",
        "partition": partition,
        "group": group,
        "is_ok": ok,
        "message": f"m-{status}",
        "status": status,
        "sync_count": 1,
        "source_offset": 10 + partition,
        "replay_if_failover_now_at_least": replay,
        "skip_if_failover_now_at_most": 0 if replay is not None else None,
        "replay_if_failover_now": replay if ok else None,
        "group_checkpoint_age_seconds": age,
        "group_type": {"g2": "share", "g3": "streams"}.get(group, "consumer"),
    }


ROWS = [
    _row("a->b", "g1", 0, "synced", True, 0, 5.0),
    _row("a->b", "g1", 1, "stale_sync", False, 500, 5.0),
    _row("a->b", "g2", 0, "synced", True, 3, None),
    _row("a->b", "g3", 0, "not_synced", False, None, 9.0),
    _row("a->b", "g1", 2, "stale_sync", False, 7, 5.0),
    _row("c->d", "g1", 0, "synced", True, 0, 1.0),
]


@pytest.mark.spark
def test_one_aggregation_gives_every_count(spark: Any) -> None:
    table = pa.Table.from_pylist(
        [{n: r.get(n) for n in KEPT_ROWS_SCHEMA.names} for r in ROWS], schema=to_arrow_schema(KEPT_ROWS_SCHEMA)
    )
    figures = [r.asDict(recursive=True) for r in summary.group_figures(spark.createDataFrame(table)).collect()]
    got = summarize(figures, ["a->b", "c->d", "e->f"], problem_rows=2)
    assert got.statuses == (
        StatusCount("a->b", "not_synced", False, 1, 1, None, None),
        StatusCount("a->b", "stale_sync", False, 2, 1, 507, 0),
        StatusCount("a->b", "synced", True, 2, 2, 3, 0),
        StatusCount("c->d", "synced", True, 1, 1, 0, 0),
    )
    assert got.totals["a->b"] == PairTotals(
        partitions=5,
        problem_partitions=3,
        problem_groups=2,
        groups=3,
        checkpointed_groups=2,
        oldest_checkpoint_age_seconds=9.0,
        groups_by_type={"consumer": 1, "share": 1, "streams": 1},
    )
    assert got.totals["e->f"] == PairTotals(0, 0, 0, 0, 0, None)
    assert (got.group_partitions, got.problems) == (6, 3)
    # the first problem rows in report order (pair, group, topic, partition), across groups and statuses
    assert [(r["group"], r["partition"], r["status"]) for r in got.problem_rows] == [
        ("g1", 1, "stale_sync"),
        ("g1", 2, "stale_sync"),
    ]
    g1 = next(g for g in got.groups if (g.pair, g.group) == ("a->b", "g1"))
    assert (g1.checkpoint_age_seconds, g1.failover_replay_messages, g1.statuses) == (
        5.0,
        507,
        {"synced": 1, "stale_sync": 2},
    )
    assert [(g.group, g.group_type) for g in got.groups if g.pair == "a->b"] == [
        ("g1", "consumer"),
        ("g2", "share"),
        ("g3", "streams"),
    ]


def test_summarize_of_no_rows_has_zeros_for_every_pair() -> None:
    got = summarize([], ["a->b"])
    assert got.statuses == () and got.problem_rows == () and got.problems == 0
    assert got.totals["a->b"].partitions == 0
