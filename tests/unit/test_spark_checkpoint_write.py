"""A query's translated position written to local files (``core.spark_checkpoints.write``): the translated copy of
a hand-made checkpoint (batches, commits, initial offsets, state store files, Hadoop checksums), the
``startingOffsets`` files, what each reads back, and the refusal to write over anything. The copy of a checkpoint
Spark itself wrote, resumed by Spark, is ``test_spark_checkpoint_written.py``'s."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.query_sources import (
    batch_digest,
    checkpoint_moved,
    local_files,
    local_path,
    query_sources,
)
from mm2ctl.core.spark_checkpoints.read import read_checkpoint
from mm2ctl.core.spark_checkpoints.write import (
    json_outputs,
    read_copy_back,
    read_json_back,
    remove_output,
    write_copy,
    write_json,
)
from tests.unit.test_spark_checkpoint import commit_file, kafka_json, make_checkpoint

TRANSLATED = {0: {"orders": {0: 17, 1: 4}}}


def _checkpoint(root: Path) -> Path:
    batches = {b: [kafka_json({"orders": {0: 10 * b, 1: 10 * b + 5}})] for b in range(4)}
    make_checkpoint(root, batches, [0, 1, 2], initial={0: {"orders": {0: 0, 1: 0}}})
    state = root / "state" / "0" / "0"
    state.mkdir(parents=True)
    for version in (1, 2, 3, 4):  # batch 2 committed store version 3; version 4 is the uncommitted batch 3's
        (state / f"{version}.delta").write_bytes(b"d")
        (state / f".{version}.delta.crc").write_bytes(b"c")
    return root


def test_the_copy_resumes_the_last_committed_batch_at_the_translated_offsets(tmp_path: Path) -> None:
    source = _checkpoint(tmp_path / "q")
    read = read_checkpoint(local_files(str(source)))
    assert (read.batch_id, read.uncommitted_batch_id) == (2, 3)
    out = tmp_path / "q.backup"
    write_copy(source, read, TRANSLATED, out)

    copy = read_checkpoint(local_files(str(out)))
    assert (copy.batch_id, copy.uncommitted_batch_id, copy.query_id) == (2, None, read.query_id)
    assert copy.kafka_sources[0].positions == {"orders": {0: 17, 1: 4}}
    assert copy.kafka_sources[0].initial_positions == {"orders": {0: 17, 1: 4}}
    assert sorted(p.name for p in (out / "offsets").iterdir()) == ["1", "2"]  # N-1 and N, no checksum
    assert sorted(p.name for p in (out / "commits").iterdir()) == ["1", "2"]
    previous = (out / "offsets" / "1").read_text().split("\n")
    original_previous = (source / "offsets" / "1").read_text().split("\n")
    assert previous[:2] == original_previous[:2]  # its own version and metadata
    assert previous[2:] == (out / "offsets" / "2").read_text().split("\n")[2:]  # batch N's translated lines
    assert (out / "commits" / "2").read_bytes() == commit_file()
    assert sorted(p.name for p in (out / "state" / "0" / "0").iterdir()) == [
        ".1.delta.crc", ".2.delta.crc", ".3.delta.crc", "1.delta", "2.delta", "3.delta",
    ]  # fmt: skip
    assert read_copy_back(out, 2, TRANSLATED) == []
    assert read_copy_back(out, 2, {0: {"orders": {0: 18, 1: 4}}}) == [
        f"{out}: source 0 does not resume at the translated offsets"
    ]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_nothing_is_written_over(tmp_path: Path) -> None:
    source = _checkpoint(tmp_path / "q")
    read = read_checkpoint(local_files(str(source)))
    out = tmp_path / "taken"
    out.mkdir()
    with pytest.raises(SparkCheckpointError, match="exists already"):
        write_copy(source, read, TRANSLATED, out)
    assert list(out.iterdir()) == []
    json_file = tmp_path / "q.json"
    json_file.write_text("mine")
    with pytest.raises(SparkCheckpointError, match="exists already"):
        write_json(str(json_file), TRANSLATED)
    assert json_file.read_text() == "mine"


def test_starting_offsets_one_file_a_kafka_source(tmp_path: Path) -> None:
    one = str(tmp_path / "q.backup.starting-offsets.json")
    assert write_json(one, TRANSLATED) == [Path(one)]
    assert Path(one).read_text() == '{"orders":{"0":17,"1":4}}'
    assert read_json_back(one, TRANSLATED) == []
    assert read_json_back(one, {0: {"orders": {0: 17, 1: 5}}}) == [
        f"{one} does not hold the translated offsets of source 0"
    ]
    two = {0: {"a": {0: 1}}, 2: {"b": {0: 2}}}
    base = str(tmp_path / "r.json")
    assert json_outputs(base, [0, 2]) == {0: tmp_path / "r.source-0.json", 2: tmp_path / "r.source-2.json"}
    write_json(base, two)
    assert read_json_back(base, two) == []
    assert remove_output(tmp_path / "r.source-0.json") and not remove_output(tmp_path / "r.source-0.json")


def test_the_plan_notices_a_query_that_ran_since(tmp_path: Path) -> None:
    source = _checkpoint(tmp_path / "q")
    digest = batch_digest(local_files(str(source)), 2)
    assert checkpoint_moved(str(source), 2, digest) is None
    assert checkpoint_moved(f"file://{source}", 2, digest) is None
    (source / "commits" / "3").write_bytes(commit_file())
    assert checkpoint_moved(str(source), 2, digest) == (
        f"the query at {source} has committed batch 3 since the plan read batch 2"
    )
    (source / "commits" / "3").unlink()
    (source / "offsets" / "4").write_bytes((source / "offsets" / "3").read_bytes())  # planned, not committed
    ran = f"the query at {source} ran since the plan read batch 2: a batch was rewritten or planned"
    assert checkpoint_moved(str(source), 2, digest) == ran
    (source / "offsets" / "4").unlink()
    assert checkpoint_moved(str(source), 2, digest) is None
    (source / "commits" / "2").write_bytes(commit_file(body='{"nextBatchWatermarkMs":5}'))
    assert checkpoint_moved(str(source), 2, digest) == ran


def test_names_and_locations(tmp_path: Path) -> None:
    assert local_path("hdfs://nn/cp") is None
    assert local_path("file:///tmp/cp") == Path("/tmp/cp")
    with pytest.raises(SparkCheckpointError, match="not a local path"):
        local_files("s3a://bucket/cp")
    one = read_checkpoint(local_files(str(_checkpoint(tmp_path / "q"))))
    assert [qs.name for qs in query_sources([one])] == [f"spark:{one.query_id}"]
    with pytest.raises(SparkCheckpointError, match="the same query"):
        query_sources([one, one])
