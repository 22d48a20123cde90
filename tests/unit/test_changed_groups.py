"""Which groups a live session's run classifies again (``inspector.kept.changed_groups``): pure pyarrow, no Spark."""

from __future__ import annotations

import dataclasses
from typing import Any

import pyarrow as pa
import pytest

from mm2ctl.inspector import schemas
from mm2ctl.inspector.kept.changed_groups import (
    ClassifyInputs,
    TopicChanges,
    changed_groups,
    changed_keys,
    worth_merging,
)

PAIR = "a->b"
#: g1 and g2 read orders-0 and orders-1; g3 reads only audit-0.
READS = {"g1": [("orders", 0), ("orders", 1)], "g2": [("orders", 0), ("orders", 1)], "g3": [("audit", 0)]}
PARTITIONS = [("orders", 0), ("orders", 1), ("audit", 0)]


def _table(schema: Any, rows: list[dict[str, Any]]) -> pa.Table:
    arrow = schemas.arrow_schema(schema)
    return pa.Table.from_pylist([{n: r.get(n) for n in arrow.names} for r in rows], schema=arrow)


def _inputs() -> ClassifyInputs:
    offsets = [
        {"cluster_pair": PAIR, "group": g, "topic": t, "partition": p, "committed_offset": 10}
        for g, tps in READS.items()
        for t, p in tps
    ]
    bounds = [
        {"cluster_pair": PAIR, "topic": t, "partition": p, "earliest_offset": 0, "latest_offset": 50}
        for t, p in PARTITIONS
    ]
    source = [{**b, "remote_topic": f"src.{b['topic']}"} for b in bounds]
    target = [{**b, "topic": f"src.{b['topic']}"} for b in bounds]
    target_offsets = [{**o, "topic": f"src.{o['topic']}"} for o in offsets]
    groups = [{"cluster_pair": PAIR, "group": g, "state": "Empty", "member_count": 0} for g in READS]
    positions = [
        {**b, "remote_topic": f"src.{b['topic']}", "position_known": True, "mm2_next_offset": 50} for b in bounds
    ]
    return ClassifyInputs(
        group_offsets=_table(schemas.SOURCE_GROUP_OFFSETS_SCHEMA, offsets),
        source_partitions=_table(schemas.SOURCE_PARTITIONS_SCHEMA, source),
        target_partitions=_table(schemas.TARGET_PARTITIONS_SCHEMA, target),
        target_group_offsets=_table(schemas.TARGET_GROUP_OFFSETS_SCHEMA, target_offsets),
        source_groups=_table(schemas.GROUP_STATES_SCHEMA, groups),
        target_groups=_table(schemas.GROUP_STATES_SCHEMA, groups),
        mm2_positions=_table(schemas.REPLICATED_PARTITIONS_SCHEMA, positions),
    )


def _set(table: pa.Table, row: int, column: str, value: Any) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    index = table.schema.get_field_index(column)
    return table.set_column(index, table.schema.field(index), pa.array(values, table.schema.field(index).type))


def _changed(**tables: pa.Table) -> set[str] | None:
    before = _inputs()
    return changed_groups(before, dataclasses.replace(before, **tables), TopicChanges(everything=False))


def test_nothing_changed_classifies_nothing_again() -> None:
    assert _changed() == set()


@pytest.mark.parametrize(
    ("table", "row", "column", "value", "expected"),
    [
        ("group_offsets", 0, "committed_offset", 11, {"g1"}),  # g1 committed
        ("group_offsets", 4, "error", "source group offsets: denied", {"g3"}),
        ("target_group_offsets", 2, "committed_offset", 3, {"g2"}),  # MM2 or a consumer moved g2 on the target
        ("source_groups", 2, "state", "Stable", {"g3"}),
        ("target_groups", 0, "member_count", 1, {"g1"}),
        ("source_partitions", 2, "latest_offset", 60, {"g3"}),  # audit-0 took records
        ("source_partitions", 0, "earliest_offset", 5, {"g1", "g2"}),  # orders-0's log start moved
        ("target_partitions", 1, "latest_offset", 51, {"g1", "g2"}),  # src.orders-1 on the target: orders-1
        ("mm2_positions", 2, "mm2_next_offset", 49, {"g3"}),
    ],
)
def test_a_changed_row_of_a_group_or_a_partition_classifies_its_groups_again(
    table: str, row: int, column: str, value: Any, expected: set[str]
) -> None:
    assert _changed(**{table: _set(getattr(_inputs(), table), row, column, value)}) == expected


def test_a_group_that_appears_or_goes_is_classified_again() -> None:
    offsets = _inputs().group_offsets
    assert _changed(group_offsets=offsets.slice(0, 4)) == {"g3"}  # g3's only row is gone
    extra = _table(
        schemas.SOURCE_GROUP_OFFSETS_SCHEMA,
        [{"cluster_pair": PAIR, "group": "g4", "topic": "audit", "partition": 0, "committed_offset": 1}],
    )
    assert _changed(group_offsets=pa.concat_tables([offsets, extra])) == {"g4"}


def test_what_the_kept_topics_changed_adds_its_partitions_groups_and_groups() -> None:
    inputs = _inputs()
    topics = TopicChanges(everything=False, partitions={("audit", 0)}, groups={"g2"})
    assert changed_groups(inputs, inputs, topics) == {"g2", "g3"}
    assert changed_groups(inputs, inputs, TopicChanges()) is None  # a topic read in full: every group


def test_changed_keys_counts_duplicates_and_nulls() -> None:
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    before = pa.table({"k": ["a", "a", "b", None], "v": [1, 1, None, 3]}, schema=schema)
    same = pa.table({"k": [None, "b", "a", "a"], "v": [3, None, 1, 1]}, schema=schema)
    assert changed_keys(before, same, ["k"]).num_rows == 0
    one_less = pa.table({"k": ["a", "b", None], "v": [1, None, 3]}, schema=schema)
    assert changed_keys(before, one_less, ["k"]).column("k").to_pylist() == ["a"]


def test_merging_pays_only_while_at_most_half_the_groups_changed() -> None:
    inputs = _inputs()
    assert worth_merging({"g1"}, inputs)
    assert not worth_merging({"g1", "g2"}, inputs)
    assert not worth_merging(None, inputs)


def test_tables_in_the_same_order_are_compared_row_by_row_and_others_by_content() -> None:
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    before = pa.table({"k": ["a", "b", "c"], "v": [1, None, 3]}, schema=schema)
    aligned = pa.table({"k": ["a", "b", "c"], "v": [1, 2, None]}, schema=schema)
    assert changed_keys(before, aligned, ["k"]).column("k").to_pylist() == ["b", "c"]
    shuffled = pa.table({"k": ["c", "a", "b"], "v": [None, 1, 2]}, schema=schema)
    assert sorted(changed_keys(before, shuffled, ["k"]).column("k").to_pylist()) == ["b", "b", "c", "c"]


def test_the_inputs_of_some_groups_hold_only_their_rows_per_group_partition() -> None:
    inputs = _inputs()
    some = inputs.of_groups({"g3"})
    assert some.group_offsets.column("group").to_pylist() == ["g3"]
    assert some.target_group_offsets.column("group").to_pylist() == ["g3"]
    assert some.source_partitions.equals(inputs.source_partitions)  # looked up by the rows: all kept
