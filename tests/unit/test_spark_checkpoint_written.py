"""Checkpoints written by the installed Spark itself, read by ``core.spark_checkpoints.read``: a stateful query (a
count per value over a file source, two batches), and the same on RocksDB with state store checkpoint format 2
(Spark 4.0+). Then the copy the translated-checkpoint form makes (docs/design.md, "The checkpoint form"): the query
resumed on the copy runs the next batch only, with its state.

The file source stands in for Kafka, which needs a broker: the offset lines are the only part that differs, and
the Kafka source's reading of them is the lab test's to prove."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.hadoop import hadoop_checkpoint_files
from mm2ctl.core.spark_checkpoints.read import LocalCheckpointFiles, read_checkpoint
from mm2ctl.core.spark_checkpoints.write import write_copy

pytestmark = pytest.mark.spark

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def _write_input(folder: Path, name: str, values: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    staged = folder.parent / f".{name}"
    staged.write_text("".join(f'{{"v":"{v}"}}\n' for v in values))
    staged.rename(folder / name)  # the file source must never list a half-written file


def _run_counts(spark: Any, source: Path, checkpoint: Path, table: str) -> dict[str, int]:
    """Run the count per value until the source is drained (one file a batch); the counts it ends with."""
    counts = spark.readStream.schema("v string").option("maxFilesPerTrigger", 1).json(str(source)).groupBy("v").count()
    query = (
        counts.writeStream.format("memory")
        .queryName(table)
        .outputMode("complete")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination(120)
        assert query.exception() is None
    finally:
        query.stop()
    return {row["v"]: row["count"] for row in spark.table(table).collect()}


@contextlib.contextmanager
def _confs(spark: Any, confs: dict[str, str]) -> Iterator[None]:
    """The session shared by the test run with ``confs`` set, as they were afterwards (other tests set some)."""
    saved = {key: spark.conf.get(key, None) for key in confs}
    for key, value in confs.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


@pytest.fixture
def stateful_checkpoint(spark: Any, tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    source = tmp_path / "in"
    _write_input(source, "a.json", ["x", "y", "x"])
    _write_input(source, "b.json", ["x", "z"])
    checkpoint = tmp_path / "checkpoint"
    with _confs(spark, {SHUFFLE_PARTITIONS: "2"}):
        assert _run_counts(spark, source, checkpoint, "counts_first") == {"x": 3, "y": 1, "z": 1}
    yield source, checkpoint


def test_a_checkpoint_spark_wrote(spark: Any, stateful_checkpoint: tuple[Path, Path]) -> None:
    _, checkpoint = stateful_checkpoint
    read = read_checkpoint(LocalCheckpointFiles(checkpoint))
    assert (read.batch_id, read.uncommitted_batch_id) == (1, None)
    assert read.kafka_sources == ()
    assert [(s.index, s.offset_json) for s in read.other_sources] == [(0, '{"logOffset":1}')]
    assert read.state_operators == (0,)
    assert read.metadata is not None
    assert read.metadata.conf["spark.sql.shuffle.partitions"] == "2"
    assert read.metadata.batch_timestamp_ms > 0
    assert (read.commit.version, read.commit.state_unique_ids) == (1, None)
    assert read.query_id is not None and len(read.query_id) == 36


def test_the_same_checkpoint_read_through_hadoop(spark: Any, stateful_checkpoint: tuple[Path, Path]) -> None:
    _, checkpoint = stateful_checkpoint
    local = read_checkpoint(LocalCheckpointFiles(checkpoint))
    for root in (str(checkpoint), f"file://{checkpoint}"):
        through_hadoop = read_checkpoint(hadoop_checkpoint_files(spark, root))
        assert through_hadoop.location == root
        assert dataclasses.replace(through_hadoop, location=local.location) == local
    files = hadoop_checkpoint_files(spark, str(checkpoint))
    assert files.list_dir("nowhere") is None
    assert files.list_dir("metadata") is None  # a file, not a folder
    assert files.read("offsets/99") is None
    with pytest.raises(SparkCheckpointError, match="no checkpoint folder here"):
        read_checkpoint(hadoop_checkpoint_files(spark, str(checkpoint / "nowhere")))


def test_a_query_resumes_on_the_copy_with_its_state(
    spark: Any, stateful_checkpoint: tuple[Path, Path], tmp_path: Path
) -> None:
    """The copy apply writes (``write_copy``), the offset lines kept (a file source has nothing to translate):
    offsets/N-1 holds batch N's lines under its own metadata, commits and state copied."""
    source, checkpoint = stateful_checkpoint
    copy = tmp_path / "copy"
    write_copy(checkpoint, read_checkpoint(LocalCheckpointFiles(checkpoint)), {}, copy)

    _write_input(source, "c.json", ["y", "w"])
    assert _run_counts(spark, source, copy, "counts_copy") == {"x": 3, "y": 2, "z": 1, "w": 1}
    read = read_checkpoint(LocalCheckpointFiles(copy))
    assert (read.batch_id, read.uncommitted_batch_id) == (2, None)
    assert read.query_id == read_checkpoint(LocalCheckpointFiles(checkpoint)).query_id


def test_state_store_checkpoint_format_2(spark: Any, tmp_path: Path) -> None:
    major = int(spark.version.split(".")[0])
    if major < 4:
        pytest.skip("state store checkpoint format 2 arrived in Spark 4.0")
    confs = {
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
        SHUFFLE_PARTITIONS: "2",
    }
    source = tmp_path / "in"
    _write_input(source, "a.json", ["x"])
    checkpoint = tmp_path / "checkpoint"
    with _confs(spark, confs):
        assert _run_counts(spark, source, checkpoint, "counts_v2") == {"x": 1}
    read = read_checkpoint(LocalCheckpointFiles(checkpoint))
    assert read.commit.version == 2
    assert read.commit.state_unique_ids is not None
    assert sorted(read.commit.state_unique_ids) == [0]
    assert len(read.commit.state_unique_ids[0]) == 2  # one entry per shuffle partition
