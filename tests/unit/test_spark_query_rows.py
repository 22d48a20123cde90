"""Structured Streaming queries as groups of an inspection (``inspector.reads.spark_query_rows``): read from their
checkpoints, sent to the pairs that mirror their topics, shaped as the committed offsets and group states the
admin state holds, and classified as a group MirrorMaker 2 never checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.inspector import statuses
from mm2ctl.inspector.reads.committed_offsets import OFFSETS_SCHEMA
from mm2ctl.inspector.reads.pair_admin import _groups_table
from mm2ctl.inspector.reads.spark_query_rows import (
    SPARK_QUERY_TYPE,
    all_local,
    assign_queries,
    no_columns,
    query_columns,
    query_groups_table,
    read_queries,
)
from mm2ctl.inspector.reads.typed_groups import appended, columns_of
from mm2ctl.inspector.schemas import GROUP_STATES_SCHEMA, arrow_schema
from mm2ctl.inspector.statuses import Status
from mm2ctl.inspector.transforms.classify import QUERY_EXPLANATION
from tests.unit.test_inspector_classify import UNMIRRORED, _classify, healthy
from tests.unit.test_spark_checkpoint import QUERY_ID, kafka_json, make_checkpoint

MM2 = """clusters = a, b, c
a.bootstrap.servers = a:9092
b.bootstrap.servers = b:9092
c.bootstrap.servers = c:9092
a->b.enabled = true
a->b.topics = orders, payments
a->c.enabled = true
a->c.topics = orders, refunds
"""


def _checkpoint(root: Path, sources: list[dict[str, dict[int, int]]], query_id: str = QUERY_ID) -> str:
    make_checkpoint(root, {0: [kafka_json({"orders": {0: 1}})], 1: [kafka_json(s) for s in sources]}, [0, 1],
                    query_id=query_id)  # fmt: skip
    return str(root)


def test_a_checkpoint_reads_as_named_positions_of_its_last_committed_batch(tmp_path: Path) -> None:
    one = _checkpoint(tmp_path / "one", [{"orders": {0: 7, 1: 9}}])
    _checkpoint(tmp_path / "two", [{"orders": {0: 3}}, {"payments": {0: 4}}], query_id="q2")
    sources = read_queries([one, f"file://{tmp_path / 'two'}"])
    assert [(qs.name, qs.positions) for qs in sources] == [
        (f"spark:{QUERY_ID}", {("orders", 0): 7, ("orders", 1): 9}),
        ("spark:q2/0", {("orders", 0): 3}),
        ("spark:q2/1", {("payments", 0): 4}),
    ]
    assert all_local([one, "file:///x"]) and not all_local([one, "hdfs://nn/x"])


def test_a_missing_checkpoint_or_one_on_another_file_system_without_a_session_is_exit_24(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere")
    with pytest.raises(SparkCheckpointError) as got:
        read_queries([missing])
    assert got.value.exit_code == ExitCode.SPARK_CHECKPOINT == 24
    assert str(got.value) == f"{missing}: no checkpoint folder here"
    with pytest.raises(SparkCheckpointError, match="not a local path"):
        read_queries(["s3a://bucket/ckpt"])


def test_a_checkpoint_on_another_file_system_is_read_through_the_session_only_then(tmp_path: Path) -> None:
    asked: list[str] = []

    def connect_session() -> object:
        asked.append("session")
        return object()  # no driver JVM in this process, as a Spark Connect session

    read_queries([_checkpoint(tmp_path / "q", [{"orders": {0: 1}}], "q")], connect_session)
    assert asked == []
    with pytest.raises(SparkCheckpointError, match="a Spark Connect session cannot read a checkpoint"):
        read_queries(["hdfs://nn/ckpt"], connect_session)
    assert asked == ["session"]


def test_each_source_goes_to_every_pair_that_mirrors_all_its_topics(tmp_path: Path) -> None:
    config = mm2_config_from_text(MM2, path="mm2.properties")
    ab, ac = config.pair("a->b"), config.pair("a->c")
    path = _checkpoint(tmp_path / "q", [{"orders": {0: 1}}, {"payments": {0: 2}}, {"refunds": {0: 3}}], "q")
    sources = read_queries([path])
    assigned = assign_queries(sources, [ab, ac])
    assert {k: [qs.name for qs in v] for k, v in assigned.items()} == {
        "a->b": ["spark:q/0", "spark:q/1"],
        "a->c": ["spark:q/0", "spark:q/2"],
    }
    assert assign_queries([], [ab]) == {"a->b": ()}


def test_a_source_no_one_pair_mirrors_is_refused_naming_its_topics(tmp_path: Path) -> None:
    config = mm2_config_from_text(MM2, path="mm2.properties")
    ab, ac = config.pair("a->b"), config.pair("a->c")
    (unmirrored,) = read_queries([_checkpoint(tmp_path / "u", [{"orders": {0: 1}, "audit": {0: 2}}], "u")])
    with pytest.raises(SparkCheckpointError) as got:
        assign_queries([unmirrored], [ab])
    assert str(got.value) == f"{tmp_path / 'u'}: spark:u (source 0) reads audit, which a->b does not mirror"
    (split,) = read_queries([_checkpoint(tmp_path / "s", [{"payments": {0: 1}, "refunds": {0: 2}}], "s")])
    with pytest.raises(SparkCheckpointError, match=r"reads payments, refunds, which no one flow of a->b, a->c"):
        assign_queries([split], [ab, ac])


def test_queries_join_the_committed_offsets_as_groups_and_have_nothing_on_the_target(tmp_path: Path) -> None:
    sources = read_queries([_checkpoint(tmp_path / "q", [{"orders": {1: 9, 0: 7}}], "q")])
    groups = columns_of(("g",), {"g": {("orders", 0): 5}}, {})
    together = appended(groups, query_columns(sources))
    assert together.groups == ("g", "spark:q")
    assert together.errors == (None, None)
    assert together.table.schema == OFFSETS_SCHEMA
    assert together.table.select(["group_index", "topic", "partition", "committed_offset"]).to_pylist() == [
        {"group_index": 0, "topic": "orders", "partition": 0, "committed_offset": 5},
        {"group_index": 1, "topic": "orders", "partition": 0, "committed_offset": 7},
        {"group_index": 1, "topic": "orders", "partition": 1, "committed_offset": 9},
    ]
    target = no_columns(["spark:q"])
    assert target.groups == ("spark:q",) and target.table.num_rows == 0


def test_a_query_is_a_group_state_row_of_its_own_type_without_state_or_error() -> None:
    kafka = _groups_table("a->b", {}, [])
    table = pa.concat_tables([kafka, query_groups_table("a->b", ["spark:q"])])
    assert table.to_pylist() == [
        {
            "cluster_pair": "a->b",
            "group": "spark:q",
            "state": None,
            "member_count": None,
            "error": None,
            "group_type": SPARK_QUERY_TYPE,
        }
    ]
    assert table.schema.names == arrow_schema(GROUP_STATES_SCHEMA).names


# (case id, the row, expected status, replay exact, skip exact, skip at most)
QUERY_CASES: list[tuple[str, dict[str, Any], Status, int | None, int | None, int | None]] = [
    (
        "exact translation, nothing on the target: a query started there begins at the log end",
        healthy(group="spark:q", group_type=SPARK_QUERY_TYPE, target_offset=None, target_group_state=None,
                translation_method="verified_delta", **UNMIRRORED),
        Status.NOT_CHECKPOINTED, 0, 100, 100,
    ),
    (
        "the rule's translation: bounds only",
        healthy(group="spark:q", group_type=SPARK_QUERY_TYPE, target_offset=None, **UNMIRRORED),
        Status.NOT_CHECKPOINTED, None, None, 100,
    ),
    (
        "never target_group_active, even with sync.group.offsets",
        healthy(group="spark:q", group_type=SPARK_QUERY_TYPE, target_offset=None, target_group_members=3,
                **UNMIRRORED),
        Status.NOT_CHECKPOINTED, None, None, 100,
    ),
]  # fmt: skip


@pytest.mark.spark
@pytest.mark.parametrize(
    ("row", "status", "replay", "skip", "skip_at_most"), [pytest.param(*c[1:], id=c[0]) for c in QUERY_CASES]
)
def test_a_query_row_is_never_checkpointed_and_says_it_is_a_spark_query(
    spark: Any, row: dict[str, Any], status: Status, replay: int | None, skip: int | None, skip_at_most: int | None
) -> None:
    (got,) = _classify(spark, [row]).values()
    assert (got.status, got.is_ok, got.group_type) == (status.value, True, SPARK_QUERY_TYPE)
    assert (got.replay_if_failover_now, got.skip_if_failover_now) == (replay, skip)
    assert (got.replay_if_failover_now_at_least, got.skip_if_failover_now_at_most) == (0, skip_at_most)
    assert got.translated_offset == 98 and got.checkpoint_offset is None and got.checkpoint_timestamp is None
    assert got.message == statuses.NOT_CHECKPOINTED_QUERY_MESSAGE
    assert got.explanation == QUERY_EXPLANATION
    assert "Spark Structured Streaming query" in got.explanation


@pytest.mark.spark
def test_a_share_group_keeps_its_own_message_beside_a_query(spark: Any) -> None:
    share = healthy(group="s", group_type="share", target_offset=None, **UNMIRRORED)
    got = _classify(spark, [share])[("s", "orders", 0)]
    assert got.message == statuses.NOT_CHECKPOINTED_MESSAGE
    assert "MM2 never checkpoints share groups" in got.explanation
