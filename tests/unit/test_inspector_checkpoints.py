"""MM2's live checkpoints (``inspector.rules.checkpoint_fold``, which Spark runs through
``inspector.transforms.live_checkpoints``): the newest record of each key, a tombstone deleting it, in a full read
and folded in by a later one, in Spark and on the driver alike."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from mm2ctl.inspector.rules import checkpoint_fold
from mm2ctl.inspector.schemas import CHECKPOINTS_SCHEMA, DECODED_CHECKPOINT_SCHEMA
from mm2ctl.inspector.transforms import live_checkpoints
from tests.property_examples import drawn

pytestmark = pytest.mark.spark

PAIR = "a->b"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _df(spark: Any, schema: StructType, rows: list[dict[str, Any]]) -> Any:
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )
    return spark.createDataFrame(table, schema)


def _checkpoint_record(offset: int, group: str, up: int | None, down: int | None, reason: str | None = None) -> dict:
    return {
        "cluster_pair": PAIR,
        "group": None if reason else group,
        "topic": None if reason else "src.t",
        "partition": None if reason else 0,
        "upstream_offset": up,
        "downstream_offset": down,
        "metadata": "" if up is not None else None,
        "is_tombstone": up is None and reason is None,
        "malformed_reason": reason,
        "record_partition": 0,
        "record_offset": offset,
        "record_timestamp": T0 + dt.timedelta(seconds=offset),
    }


def _live(frame: Any) -> dict[str, tuple[int, int, int]]:
    return {r.group: (r.upstream_offset, r.downstream_offset, r.record_offset) for r in frame.collect()}


RECORDS = [
    _checkpoint_record(0, "g1", 10, 9),
    _checkpoint_record(1, "g1", 5, 4),  # an upstream rewind: newer record, lower offsets, still wins
    _checkpoint_record(2, "g2", 10, 9),
    _checkpoint_record(3, "g2", None, None),  # tombstone
    _checkpoint_record(4, "g3", None, None),
    _checkpoint_record(5, "g3", 7, 7),  # written after its tombstone: live
    _checkpoint_record(6, "g1", None, None, reason="value truncated"),
]


def test_live_checkpoints_newest_wins_tombstone_deletes(spark: Any) -> None:
    got = live_checkpoints.live_checkpoints(_df(spark, DECODED_CHECKPOINT_SCHEMA, RECORDS))
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in CHECKPOINTS_SCHEMA]
    assert _live(got) == {"g1": (5, 4, 1), "g3": (7, 7, 5)}


def test_a_later_read_folds_in_newer_checkpoints_and_tombstones(spark: Any) -> None:
    kept = live_checkpoints.live_checkpoints(_df(spark, DECODED_CHECKPOINT_SCHEMA, RECORDS))
    later = _df(
        spark,
        DECODED_CHECKPOINT_SCHEMA,
        [
            _checkpoint_record(7, "g3", None, None),  # deletes a kept key
            _checkpoint_record(8, "g4", 1, 1),
            _checkpoint_record(9, "g1", 6, 5),
            _checkpoint_record(10, "g1", 8, 7),  # the newer of two in one read
        ],
    )
    assert _live(live_checkpoints.merged_checkpoints(kept, later, 4)) == {"g1": (8, 7, 10), "g4": (1, 1, 8)}


#: A record of one of three groups: a checkpoint (its upstream offset) or a tombstone (None).
record = st.tuples(st.sampled_from(["g1", "g2", "g3"]), st.one_of(st.none(), st.integers(0, 50)))


def _compacted(ordered: list[tuple[str, int | None]]) -> dict[str, int]:
    """What a compacted topic holding ``ordered`` (in offset order) says: each key's last value, unless None."""
    last: dict[str, int | None] = {}
    for group, up in ordered:
        last[group] = up
    return {g: up for g, up in last.items() if up is not None}


def _driver_live(table: pa.Table) -> dict[str, int]:
    return dict(zip(table.column("group").to_pylist(), table.column("upstream_offset").to_pylist(), strict=True))


def test_property_spark_and_the_driver_compact_as_the_topic_does(spark: Any) -> None:
    """The live checkpoints, read at once or in two reads, in Spark or on the driver, are what the compacted
    topic holds: each key's newest record, unless a tombstone. Each example's groups are its own."""
    examples = drawn(st.tuples(st.lists(record, max_size=30), st.floats(0.0, 1.0)))
    first_part: list[tuple[str, int | None]] = []
    second_part: list[tuple[str, int | None]] = []
    for e, (records, split) in enumerate(examples):
        mine = [(f"e{e}-{g}", up) for g, up in records]
        cut = int(split * len(mine))
        first_part, second_part = first_part + mine[:cut], second_part + mine[cut:]
    ordered = first_part + second_part
    rows = [_checkpoint_record(i, g, up, None if up is None else up + 1) for i, (g, up) in enumerate(ordered)]
    expected = _compacted(ordered)
    once = live_checkpoints.live_checkpoints(_df(spark, DECODED_CHECKPOINT_SCHEMA, rows))
    assert {g: up for g, (up, _d, _r) in _live(once).items()} == expected
    cut = len(first_part)
    first = live_checkpoints.live_checkpoints(_df(spark, DECODED_CHECKPOINT_SCHEMA, rows[:cut]))
    later = _df(spark, DECODED_CHECKPOINT_SCHEMA, rows[cut:])
    twice = live_checkpoints.merged_checkpoints(first, later, len(rows) - cut)
    assert {g: up for g, (up, _d, _r) in _live(twice).items()} == expected
    decoded = pa.Table.from_pylist(rows, schema=to_arrow_schema(DECODED_CHECKPOINT_SCHEMA))
    assert _driver_live(checkpoint_fold.live_of(decoded)) == expected
    folded = checkpoint_fold.fold_checkpoints(checkpoint_fold.live_of(decoded.slice(0, cut)), decoded.slice(cut))
    assert _driver_live(folded.live) == expected
