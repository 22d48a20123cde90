"""What ``plan failover``/``failback`` decide for a Spark query's rows without a cluster
(``plans.planners.failover.spark_queries``): when the checkpoint form is offered, which form ``auto`` takes, and where
the output goes."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mm2ctl.core.errors import ConfigError, NotCopiedError, PlanError, SparkCheckpointError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.spark_checkpoints.query_sources import local_files, query_sources, refuse_named_like_queries
from mm2ctl.core.spark_checkpoints.read import read_checkpoint
from mm2ctl.plans.payloads import SparkNewPartition, SparkOffsetRow, SparkQueryWrite, TranslationMethod
from mm2ctl.plans.planners.failover.rows import FailoverRow
from mm2ctl.plans.planners.failover.spark_queries import (
    SparkRequest,
    _claim,
    _flow_refusals,
    _form,
    _new_partitions,
    _output,
    plan_queries,
    split_rows,
)
from mm2ctl.remediate.executors.spark_query import translated_positions
from tests.unit.test_spark_checkpoint import kafka_json, make_checkpoint


def _row(topic: str, remote: str, partition: int, method: TranslationMethod, group: str = "spark:q") -> FailoverRow:
    return FailoverRow(
        group=group,
        source_topic=topic,
        target_topic=remote,
        partition=partition,
        source_offset=10,
        target_offset=9,
        before_offset=None,
        method=method,
        detail="",
    )


EXACT = TranslationMethod.VERIFIED_DELTA


def test_the_checkpoint_form_needs_exact_rows_the_same_names_and_the_same_partitions() -> None:
    same = [_row("orders", "orders", p, EXACT) for p in (0, 1)]
    assert _flow_refusals("backup", same, {"orders": 2}) == []
    renamed = [_row("orders", "primary.orders", p, EXACT) for p in (0, 1)]
    assert _flow_refusals("backup", renamed, {"primary.orders": 2}) == [
        "the replication policy renames orders on backup: a copy would need the query changed, and state keyed on "
        "the topic would split"
    ]
    fallback = [_row("orders", "orders", 0, EXACT), _row("orders", "orders", 1, TranslationMethod.TIMESTAMP)]
    assert "not translated exactly (timestamp)" in _flow_refusals("backup", fallback, {"orders": 2})[0]
    assert _flow_refusals("backup", same, {"orders": 3}) == [
        "orders has 3 partition(s) on backup, the checkpoint names 2"
    ]


def test_auto_takes_the_checkpoint_form_only_where_it_is_safe() -> None:
    assert _form("auto", [], "/c") == "checkpoint"
    assert _form("auto", ["a reason"], "/c") == "json"
    assert _form("json", [], "/c") == "json"
    with pytest.raises(SparkCheckpointError, match="no checkpoint copy can be made safely: a reason"):
        _form("checkpoint", ["a reason"], "/c")
    with pytest.raises(ConfigError, match="--spark-form 'copy'"):
        SparkRequest(("/c",), "copy")


def test_the_output_goes_beside_the_checkpoint_or_to_the_folder_asked(tmp_path: Path) -> None:
    assert _output(SparkRequest(), "/data/q1/", "backup", "json") == "/data/q1.backup.starting-offsets.json"
    assert _output(SparkRequest(), "/data/q1", "backup", "checkpoint") == "/data/q1.backup"
    assert _output(SparkRequest(output_dir=str(tmp_path)), "/data/q1", "primary", "checkpoint") == str(
        tmp_path / "q1.primary"
    )


def test_rows_split_into_groups_and_queries_by_the_queries_read(tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "q", {0: [kafka_json({"t": {0: 5}})]}, [0])
    sources = query_sources([read_checkpoint(local_files(str(tmp_path / "q")))])
    query = _row("t", "t", 0, EXACT, group=sources[0].name)
    group, named_alike = _row("t", "t", 0, EXACT, group="billing"), _row("t", "t", 0, EXACT, group="spark:etl")
    assert split_rows([group, query, named_alike], sources) == ([group, named_alike], [query])
    with pytest.raises(SparkCheckpointError, match=f"a consumer group on primary has the query's name {query.group}"):
        refuse_named_like_queries(sources, ["billing", query.group], "primary")


def test_the_json_form_starts_the_partitions_the_checkpoint_does_not_name_at_their_earliest() -> None:
    rows = [
        SparkOffsetRow(
            source_index=0, source_topic="t", target_topic="a.t", partition=p, source_offset=5, target_offset=4,
            method=EXACT,
        )
        for p in (0, 2)
    ]  # fmt: skip
    assert _new_partitions(rows, {"a.t": 4}) == (
        SparkNewPartition(source_index=0, target_topic="a.t", partition=1),
        SparkNewPartition(source_index=0, target_topic="a.t", partition=3),
    )
    payload = SparkQueryWrite(
        form="json", output="/o.json", batch_id=0, rows=tuple(rows), new_partitions=_new_partitions(rows, {"a.t": 4})
    )
    assert translated_positions(payload) == {0: {"a.t": {0: 4, 1: -2, 2: 4, 3: -2}}}


def test_two_checkpoints_never_write_to_one_path(tmp_path: Path) -> None:
    claimed: set[Path] = set()
    _claim(str(tmp_path / "q.backup"), "checkpoint", [0], claimed)
    with pytest.raises(SparkCheckpointError, match="two checkpoints of this plan would write here"):
        _claim(str(tmp_path / "q.backup"), "checkpoint", [0], claimed)
    (tmp_path / "r.json").write_text("{}")
    with pytest.raises(SparkCheckpointError, match="exists already"):
        _claim(str(tmp_path / "r.json"), "json", [0], claimed)


def _one_query(tmp_path: Path) -> tuple[SparkRequest, list[Any]]:
    make_checkpoint(tmp_path / "q", {0: [kafka_json({"t": {0: 1800}})]}, [0])
    sources = query_sources([read_checkpoint(local_files(str(tmp_path / "q")))])
    return SparkRequest(checkpoints=(str(tmp_path / "q"),)), sources


def _builder() -> Any:
    return SimpleNamespace(live=SimpleNamespace(admin=lambda cluster: SimpleNamespace(list_topics=lambda: {"t": 1})))


def test_a_query_position_mm2_has_not_copied_is_refused_with_exit_21(tmp_path: Path) -> None:
    request, sources = _one_query(tmp_path)
    late = dataclasses.replace(
        _row("t", "t", 0, TranslationMethod.AFTER_CATCH_UP, group=sources[0].name), source_offset=1800
    )
    with pytest.raises(NotCopiedError) as refused:
        plan_queries(_builder(), "backup", request, sources, [late])
    assert refused.value.exit_code == ExitCode.NOT_COPIED == 21
    assert str(refused.value).startswith(
        f"MM2 has not copied up to the position of the Spark query at {tmp_path / 'q'} on 1 partition(s)"
    )


def test_a_query_partition_with_no_translated_position_is_refused(tmp_path: Path) -> None:
    request, sources = _one_query(tmp_path)
    lost = dataclasses.replace(
        _row("t", "t", 0, EXACT, group=sources[0].name),
        target_offset=None,
        method=None,
        detail="untranslatable: no offset sync at or below 1800",
    )
    with pytest.raises(PlanError) as refused:
        plan_queries(_builder(), "backup", request, sources, [lost])
    assert not isinstance(refused.value, NotCopiedError)
    assert str(refused.value) == (
        f"the Spark query at {tmp_path / 'q'} has 1 partition(s) with no translated position: "
        "t/0 (untranslatable: no offset sync at or below 1800); the query cannot start on the target without an "
        "offset for each"
    )
