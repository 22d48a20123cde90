"""A live session's kept rows (``inspector.kept.kept_rows``): the groups classified again replace theirs, every other
group keeps its rows and its figures, and the clock finds the groups a fresh checkpoint kept synced."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BooleanType, IntegerType, LongType, StringType, StructType

from mm2ctl.inspector.kept.changed_groups import ClassifyInputs
from mm2ctl.inspector.kept.kept_rows import KeptRows
from mm2ctl.inspector.schemas import FRESH_CHECKPOINT, GROUP_CHECKPOINT_AGE, GROUP_NEWEST_CHECKPOINT, KEPT_ROWS_SCHEMA

PAIR = "a->b"
NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)
#: The rows as classified, before the run's age is added.
CLASSIFIED = StructType([f for f in KEPT_ROWS_SCHEMA.fields if f.name != GROUP_CHECKPOINT_AGE])
DEFAULTS = {StringType(): "", IntegerType(): 0, LongType(): 0, BooleanType(): True}
NO_INPUTS = ClassifyInputs(*[pa.table({}) for _ in range(7)])


def _rows(spark: Any, *rows: tuple[str, int, str, dt.datetime | None]) -> Any:
    """Classified rows of ``(group, partition, status, the row's fresh checkpoint)``; the group's newest
    checkpoint an hour before ``NOW``."""
    values = []
    for group, partition, status, fresh in rows:
        row = {f.name: None if f.nullable else DEFAULTS[f.dataType] for f in CLASSIFIED.fields}
        ok = status == "synced"
        row.update(cluster_pair=PAIR, group=group, topic="t", partition=partition, status=status, is_ok=ok)
        row.update({FRESH_CHECKPOINT: fresh, GROUP_NEWEST_CHECKPOINT: NOW - dt.timedelta(hours=1)})
        values.append(row)
    return spark.createDataFrame(pa.Table.from_pylist(values, schema=to_arrow_schema(CLASSIFIED)), CLASSIFIED)


def _seen(kept: KeptRows) -> list[tuple[str, int, str]]:
    return sorted((r.group, r.partition, r.status) for r in kept.rows(SparkSession.getActiveSession(), PAIR).collect())


def _persisted(spark: Any) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


@pytest.mark.spark
def test_groups_classified_again_replace_theirs_and_the_others_keep_rows_and_figures(spark: Any) -> None:
    held = _persisted(spark)
    base = KeptRows.classified(
        _rows(spark, ("g1", 0, "synced", NOW), ("g1", 1, "synced", None), ("g2", 0, "stale_sync", None)),
        NO_INPUTS,
        NOW,
    )
    assert _persisted(spark) == held + 1
    assert {g: [(f["status"], f["partitions"]) for f in fs] for g, fs in base.figures.items()} == {
        "g1": [("synced", 2)],
        "g2": [("stale_sync", 1)],
    }

    later = NOW + dt.timedelta(minutes=1)
    one = base.again(PAIR, {"g2"}, _rows(spark, ("g2", 0, "synced", None)), NO_INPUTS, later)
    base.release_unshared(one)
    assert _seen(one) == [("g1", 0, "synced"), ("g1", 1, "synced"), ("g2", 0, "synced")]
    assert one.figures["g1"] is base.figures["g1"]  # kept, not aggregated again
    assert _persisted(spark) == held + 2  # the base, shared, and the overlay

    two = one.again(PAIR, {"g1", "g3"}, _rows(spark, ("g1", 0, "not_synced", None)), NO_INPUTS, later)
    one.release_unshared(two)
    assert _seen(two) == [("g1", 0, "not_synced"), ("g2", 0, "synced")]
    assert sorted(two.figures) == ["g1", "g2"]  # g3 has no row
    assert two.replaced == {"g1", "g2", "g3"}
    assert _persisted(spark) == held + 2  # the first overlay replaced by the second

    ages = {f["group"]: f["checkpoint_age"] for f in two.figures_at(NOW + dt.timedelta(hours=2))}
    assert ages == {"g1": 3 * 3600.0, "g2": 3 * 3600.0}
    two.release_unshared(None)
    assert _persisted(spark) == held


@pytest.mark.spark
def test_a_group_kept_synced_by_a_fresh_checkpoint_is_stale_once_it_is_not(spark: Any) -> None:
    kept = KeptRows.classified(
        _rows(spark, ("g1", 0, "synced", NOW - dt.timedelta(minutes=1)), ("g2", 0, "synced", None)), NO_INPUTS, NOW
    )
    try:
        age = dt.timedelta(minutes=5)
        assert kept.stale(NOW + dt.timedelta(minutes=3), age) == set()
        assert kept.stale(NOW + dt.timedelta(minutes=5), age) == {"g1"}
    finally:
        kept.release_unshared(None)


def _table(spark: Any, *rows: tuple[str, int, str, dt.datetime | None]) -> pa.Table:
    """``_rows``' rows as the driver holds them."""
    return pa.Table.from_pylist([r.asDict() for r in _rows(spark, *rows).collect()], schema=to_arrow_schema(CLASSIFIED))


@pytest.mark.spark
def test_groups_classified_on_the_driver_replace_theirs_wherever_they_were(spark: Any) -> None:
    """Rows classified again on the driver replace a group's rows in the base and in Spark's overlay, and
    Spark's rows replace the driver's, in any order; each carries its figures."""
    later = NOW + dt.timedelta(minutes=1)
    base = KeptRows.classified(
        _rows(spark, ("g1", 0, "synced", None), ("g2", 0, "synced", None), ("g3", 0, "synced", None)), NO_INPUTS, NOW
    )
    one = base.again_on_driver({"g1"}, _table(spark, ("g1", 0, "stale_sync", None)), NO_INPUTS, later)
    assert _seen(one) == [("g1", 0, "stale_sync"), ("g2", 0, "synced"), ("g3", 0, "synced")]
    assert [(f["status"], f["partitions"]) for f in one.figures["g1"]] == [("stale_sync", 1)]
    assert one.figures["g2"] is base.figures["g2"]

    two = one.again(PAIR, {"g1", "g2"}, _rows(spark, ("g1", 0, "not_synced", None), ("g2", 0, "target_ahead", None)),
                    NO_INPUTS, later)  # fmt: skip
    one.release_unshared(two)
    assert _seen(two) == [("g1", 0, "not_synced"), ("g2", 0, "target_ahead"), ("g3", 0, "synced")]

    three = two.again_on_driver({"g2"}, _table(spark, ("g2", 0, "synced", None), ("g2", 1, "synced", None)),
                                NO_INPUTS, later)  # fmt: skip
    assert _seen(three) == [("g1", 0, "not_synced"), ("g2", 0, "synced"), ("g2", 1, "synced"), ("g3", 0, "synced")]
    assert [(f["status"], f["partitions"]) for f in three.figures["g2"]] == [("synced", 2)]
    four = three.again_on_driver({"g3", "g1"}, _table(spark, ("g3", 0, "stale_sync", None)), NO_INPUTS, later)
    assert _seen(four) == [("g2", 0, "synced"), ("g2", 1, "synced"), ("g3", 0, "stale_sync")]
    assert sorted(four.figures) == ["g2", "g3"]
    four.release_unshared(None)


@pytest.mark.spark
def test_every_group_classified_on_the_driver_is_held_there_with_no_base(spark: Any) -> None:
    held = _persisted(spark)
    later = NOW + dt.timedelta(minutes=1)
    table = _table(spark, ("g1", 0, "synced", None), ("g2", 0, "stale_sync", None))
    whole = KeptRows.on_driver(table, NO_INPUTS, NOW)
    assert whole.base is None and whole.held_only() is table  # nothing in Spark
    assert _persisted(spark) == held
    assert _seen(whole) == [("g1", 0, "synced"), ("g2", 0, "stale_sync")]
    assert {g: [f["status"] for f in fs] for g, fs in whole.figures.items()} == {"g1": ["synced"], "g2": ["stale_sync"]}
    spark_again = whole.again(PAIR, {"g2"}, _rows(spark, ("g2", 0, "synced", None)), NO_INPUTS, later)
    assert _seen(spark_again) == [("g1", 0, "synced"), ("g2", 0, "synced")]
    driver_again = spark_again.again_on_driver({"g1"}, _table(spark, ("g1", 0, "not_synced", None)), NO_INPUTS, later)
    assert _seen(driver_again) == [("g1", 0, "not_synced"), ("g2", 0, "synced")]
    driver_again.release_unshared(None)
    assert _persisted(spark) == held
