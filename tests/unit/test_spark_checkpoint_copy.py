"""The translated copy of a checkpoint (``core.spark_checkpoints.copy_form``): which checkpoints allow one,
and the rewritten offset and initial-offset files, byte for byte as Spark writes them and read back by the
reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.copy_form import (
    copy_refusals,
    initial_offsets_file,
    initial_offsets_path,
    kafka_offset_json,
    rewritten_offset_file,
)
from mm2ctl.core.spark_checkpoints.read import (
    kafka_positions,
    parse_initial_offsets,
    parse_offset_file,
    read_checkpoint,
)
from tests.unit.test_spark_checkpoint import METADATA_40, kafka_json, make_checkpoint, offsets_file

ORIGINAL = offsets_file([kafka_json({"orders": {1: 25, 0: 20}}), '{"logOffset":3}', kafka_json({"audit": {0: 7}})])


def test_kafka_lines_replaced_and_every_other_byte_kept() -> None:
    rewritten = rewritten_offset_file(ORIGINAL, {0: {"orders": {0: 18, 1: 24}}, 2: {"audit": {0: 6}}}, where="o")
    lines = rewritten.decode().split("\n")
    assert lines[:2] == ["v1", METADATA_40]
    assert lines[2:] == ['{"orders":{"0":18,"1":24}}', '{"logOffset":3}', '{"audit":{"0":6}}']
    assert not rewritten.endswith(b"\n")
    _, metadata, read = parse_offset_file(rewritten, where="o")
    assert metadata is not None and metadata.conf["spark.sql.shuffle.partitions"] == "200"
    assert kafka_positions(read[0] or "", where="o") == {"orders": {0: 18, 1: 24}}


def test_a_source_left_out_keeps_its_line() -> None:
    rewritten = rewritten_offset_file(ORIGINAL, {2: {"audit": {0: 6}}}, where="o")
    assert rewritten.decode().split("\n")[2] == kafka_json({"orders": {1: 25, 0: 20}})


@pytest.mark.parametrize(
    ("replacements", "problem"),
    [
        ({0: {"orders": {0: 18}}}, "other topic partitions than the checkpoint's"),
        ({0: {"primary.orders": {0: 18, 1: 24}}}, "other topic partitions"),
        ({1: {"orders": {0: 1}}}, "source 1 has no Kafka offset to replace"),
        ({3: {"orders": {0: 1}}}, "no source 3 (the file has 3)"),
    ],
)
def test_a_replacement_that_does_not_fit_is_refused(replacements: dict, problem: str) -> None:
    with pytest.raises(SparkCheckpointError) as info:
        rewritten_offset_file(ORIGINAL, replacements, where="/c/offsets/4")
    assert str(info.value).startswith("/c/offsets/4: ")
    assert problem in str(info.value)


def test_line_breaks_spark_does_not_write_are_refused() -> None:
    with pytest.raises(SparkCheckpointError, match="line breaks other than"):
        rewritten_offset_file(ORIGINAL.replace(b"\n", b"\r\n"), {0: {"orders": {0: 1, 1: 1}}}, where="o")


def test_initial_offsets_read_back() -> None:
    data = initial_offsets_file({"orders": {1: 24, 0: 18}})
    assert data == b'\x00v1\n{"orders":{"0":18,"1":24}}'
    assert parse_initial_offsets(data, where="s") == {"orders": {0: 18, 1: 24}}
    assert initial_offsets_path(2) == "sources/2/0"
    assert kafka_offset_json({"b": {0: 1}, "a": {10: 2, 9: 3}}) == '{"a":{"9":3,"10":2},"b":{"0":1}}'


def test_a_checkpoint_of_kafka_sources_allows_a_copy(tmp_path: Path) -> None:
    files = make_checkpoint(tmp_path, {b: [kafka_json({"t": {0: b}})] for b in range(3)}, committed=[0, 1, 2])
    (tmp_path / "state" / "0" / "_metadata").mkdir(parents=True)
    assert copy_refusals(read_checkpoint(files), files) == []


def test_what_the_checkpoint_alone_refuses(tmp_path: Path) -> None:
    batches = {b: [kafka_json({"t": {0: b}}), '{"logOffset":1}', "-"] for b in range(4)}
    files = make_checkpoint(tmp_path, batches, committed=[0, 1, 2])
    (tmp_path / "offsets" / "1").unlink()
    (tmp_path / "state" / "0" / "_metadata" / "v2").mkdir(parents=True)
    (tmp_path / "state" / "1" / "_metadata").mkdir(parents=True)
    assert copy_refusals(read_checkpoint(files), files) == [
        "source 1 is not a Kafka source; mm2ctl does not translate its offset",
        "source 2 has no offset yet, so mm2ctl cannot tell whether it reads Kafka",
        "batch 3 was planned but never committed: on a copy Spark would plan it again over another range, which a "
        "sink that skips the batch ids it committed (file sink, Delta, an idempotent foreachBatch) would skip",
        "offsets/1 is gone, and Spark resumes batch 2 only with it",
        "stateful operator 0 is a transformWithState (operator metadata v2), whose metadata names its schema files "
        "by the original checkpoint's path",
    ]
