"""A Structured Streaming checkpoint read by ``core.spark_checkpoints.read``: hand-made checkpoint folders written byte
for byte as Spark 3.5-4.1 writes them (``OffsetSeqLog``, ``CommitLog``, ``StreamMetadata``,
``KafkaSourceInitialOffsetWriter``; docs/design.md, "Spark queries"), the last committed batch and its Kafka sources
found, and each malformed file refused with the file named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.read import (
    CheckpointRead,
    KafkaSource,
    LocalCheckpointFiles,
    OtherSource,
    kafka_positions,
    parse_commit_file,
    parse_initial_offsets,
    parse_offset_file,
    read_checkpoint,
)

QUERY_ID = "3f6a1c2e-5d0b-4b7e-9a51-0c2d7e8f9a10"
#: ``OffsetSeqMetadata.json`` as Spark 4.0 writes it for a query on the default confs.
METADATA_40 = json.dumps(
    {
        "batchWatermarkMs": 0,
        "batchTimestampMs": 1764201600000,
        "conf": {
            "spark.sql.streaming.stateStore.providerClass": (
                "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
            ),
            "spark.sql.streaming.stateStore.rocksdb.formatVersion": "5",
            "spark.sql.streaming.statefulOperator.useStrictDistribution": "true",
            "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion": "2",
            "spark.sql.streaming.multipleWatermarkPolicy": "min",
            "spark.sql.streaming.aggregation.stateFormatVersion": "2",
            "spark.sql.shuffle.partitions": "200",
            "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan": "false",
            "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
            "spark.sql.streaming.join.stateFormatVersion": "2",
            "spark.sql.streaming.stateStore.compression.codec": "lz4",
        },
    },
    separators=(",", ":"),
)


def kafka_json(positions: dict[str, dict[int, int]]) -> str:
    """``KafkaSourceOffset.json`` (``JsonUtils.partitionOffsets``): partitions as strings."""
    return json.dumps({t: {str(p): o for p, o in ps.items()} for t, ps in positions.items()}, separators=(",", ":"))


def offsets_file(lines: list[str], metadata: str = METADATA_40) -> bytes:
    """``OffsetSeqLog.serialize``: ``v1``, the metadata, one line per source, no final line break."""
    return "\n".join(["v1", metadata, *lines]).encode()


def commit_file(version: int = 1, body: str = '{"nextBatchWatermarkMs":0}') -> bytes:
    """``CommitLog.serialize``: the version, a line break, the metadata JSON."""
    return f"v{version}\n{body}".encode()


def initial_file(positions: dict[str, dict[int, int]]) -> bytes:
    """``KafkaSourceInitialOffsetWriter.serialize``: a zero byte, ``v1``, a line break, the offsets."""
    return b"\x00" + f"v1\n{kafka_json(positions)}".encode()


def make_checkpoint(
    root: Path,
    batches: dict[int, list[str]],
    committed: list[int],
    *,
    initial: dict[int, dict[str, dict[int, int]]] | None = None,
    query_id: str | None = QUERY_ID,
) -> LocalCheckpointFiles:
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    for batch, lines in batches.items():
        (root / "offsets" / str(batch)).write_bytes(offsets_file(lines))
        # HDFS and local file systems leave Spark's checksum files beside each batch file.
        (root / "offsets" / f".{batch}.crc").write_bytes(b"crc")
    for batch in committed:
        (root / "commits" / str(batch)).write_bytes(commit_file())
    for index, positions in (initial or {}).items():
        (root / "sources" / str(index)).mkdir(parents=True)
        (root / "sources" / str(index) / "0").write_bytes(initial_file(positions))
    if query_id is not None:
        (root / "metadata").write_text(json.dumps({"id": query_id}, separators=(",", ":")))
    return LocalCheckpointFiles(root)


def one_source_checkpoint(root: Path, committed: list[int]) -> LocalCheckpointFiles:
    batches = {b: [kafka_json({"orders": {0: 10 * b, 1: 10 * b + 5}})] for b in range(3)}
    return make_checkpoint(root, batches, committed, initial={0: {"orders": {0: 0, 1: 0}}})


def test_the_last_committed_batch_and_its_kafka_offsets(tmp_path: Path) -> None:
    read = read_checkpoint(one_source_checkpoint(tmp_path, committed=[0, 1, 2]))
    assert read == CheckpointRead(
        location=str(tmp_path),
        query_id=QUERY_ID,
        batch_id=2,
        uncommitted_batch_id=None,
        metadata=read.metadata,
        commit=read.commit,
        kafka_sources=(
            KafkaSource(index=0, positions={"orders": {0: 20, 1: 25}}, initial_positions={"orders": {0: 0, 1: 0}}),
        ),
        other_sources=(),
        state_operators=(),
    )
    assert read.metadata is not None
    assert read.metadata.batch_timestamp_ms == 1764201600000
    assert read.metadata.conf["spark.sql.shuffle.partitions"] == "200"
    assert (read.commit.version, read.commit.next_batch_watermark_ms, read.commit.state_unique_ids) == (1, 0, None)


def test_an_uncommitted_last_batch_is_reported_and_not_used(tmp_path: Path) -> None:
    read = read_checkpoint(one_source_checkpoint(tmp_path, committed=[0, 1]))
    assert (read.batch_id, read.uncommitted_batch_id) == (1, 2)
    assert read.kafka_sources[0].positions == {"orders": {0: 10, 1: 15}}


def test_sparse_logs_of_async_progress_tracking(tmp_path: Path) -> None:
    """With asyncProgressTrackingEnabled the logs hold every few batches only: the newest committed one counts."""
    batches = {b: [kafka_json({"t": {0: b}})] for b in (0, 4, 9)}
    read = read_checkpoint(make_checkpoint(tmp_path, batches, committed=[0, 4]))
    assert (read.batch_id, read.uncommitted_batch_id, read.kafka_sources[0].positions) == (4, 9, {"t": {0: 4}})


def test_sources_are_told_apart_by_the_shape_of_their_offset(tmp_path: Path) -> None:
    lines = [
        kafka_json({"a": {0: 1}}),
        '{"logOffset":3}',  # FileStreamSourceOffset
        "-",  # a source with no offset yet
        kafka_json({"b": {1: 7, 0: 6}, "c": {0: 0}}),
        '{"0":{"value":42,"runTimeMs":1764201600000}}',  # RateStreamOffset: partitions, but not Kafka's values
        "17",  # LongOffset
    ]
    read = read_checkpoint(make_checkpoint(tmp_path, {0: lines}, committed=[0]))
    assert [(s.index, s.positions) for s in read.kafka_sources] == [
        (0, {"a": {0: 1}}),
        (3, {"b": {0: 6, 1: 7}, "c": {0: 0}}),
    ]
    assert read.other_sources == (
        OtherSource(index=1, offset_json='{"logOffset":3}'),
        OtherSource(index=2, offset_json=None),
        OtherSource(index=4, offset_json='{"0":{"value":42,"runTimeMs":1764201600000}}'),
        OtherSource(index=5, offset_json="17"),
    )
    assert read.source_count == 6
    assert [s.initial_positions for s in read.kafka_sources] == [None, None]


def test_a_stateful_query_and_a_v2_commit_log(tmp_path: Path) -> None:
    files = make_checkpoint(tmp_path, {0: [kafka_json({"t": {0: 5}})]}, committed=[])
    ids = {"0": [["5b1e"], ["9c2f"]], "1": [["aa01"], ["bb02"]]}
    (tmp_path / "commits" / "0").write_bytes(
        commit_file(2, json.dumps({"nextBatchWatermarkMs": 7, "stateUniqueIds": ids}))
    )
    for operator in ("0", "1", "_metadata-not-an-operator"):
        (tmp_path / "state" / operator).mkdir(parents=True)
    read = read_checkpoint(files)
    assert read.state_operators == (0, 1)
    assert (read.commit.version, read.commit.next_batch_watermark_ms) == (2, 7)
    assert read.commit.state_unique_ids == {0: (("5b1e",), ("9c2f",)), 1: (("aa01",), ("bb02",))}


def test_temporary_and_checksum_files_are_not_batches(tmp_path: Path) -> None:
    files = one_source_checkpoint(tmp_path, committed=[0, 1])
    (tmp_path / "offsets" / ".3.5e1f0c2a-tmp.tmp").write_bytes(b"partial")
    (tmp_path / "commits" / ".2.crc").write_bytes(b"crc")
    (tmp_path / "commits" / "2.bak").write_bytes(b"junk")
    assert (read_checkpoint(files).batch_id, read_checkpoint(files).uncommitted_batch_id) == (1, 2)


def test_no_metadata_line_content_and_no_query_metadata(tmp_path: Path) -> None:
    files = make_checkpoint(tmp_path, {0: []}, committed=[0], query_id=None)
    (tmp_path / "offsets" / "0").write_bytes(b"v1\n\n" + kafka_json({"t": {0: 1}}).encode() + b"\n")
    read = read_checkpoint(files)
    assert (read.metadata, read.query_id, read.kafka_sources[0].positions) == (None, None, {"t": {0: 1}})


def test_a_commit_without_its_metadata_line_reads_as_empty() -> None:
    commit = parse_commit_file(b"v1", where="c")
    assert (commit.version, commit.next_batch_watermark_ms, commit.state_unique_ids) == (1, 0, None)


def test_initial_offsets_of_spark_2_1_have_no_version_line() -> None:
    assert parse_initial_offsets(b'\x00{"t":{"0":3}}', where="s") == {"t": {0: 3}}


def test_line_breaks_as_scala_reads_them() -> None:
    _, _, lines = parse_offset_file(b'v1\r\n{}\r\n{"t":{"0":1}}\r\n-\n', where="o")
    assert lines == ['{"t":{"0":1}}', None]


# --- refusals -------------------------------------------------------------------------------------------------


def refusal(files: LocalCheckpointFiles) -> str:
    with pytest.raises(SparkCheckpointError) as info:
        read_checkpoint(files)
    return str(info.value)


def test_a_missing_folder_and_a_folder_that_is_not_a_checkpoint(tmp_path: Path) -> None:
    assert refusal(LocalCheckpointFiles(tmp_path / "nowhere")).endswith("nowhere: no checkpoint folder here")
    assert "no offsets/ folder" in refusal(LocalCheckpointFiles(tmp_path))


def test_no_batch_and_no_committed_batch(tmp_path: Path) -> None:
    assert "planned no batch" in refusal(make_checkpoint(tmp_path / "a", {}, committed=[]))
    message = refusal(make_checkpoint(tmp_path / "b", {0: [kafka_json({"t": {0: 1}})]}, committed=[]))
    assert "no committed batch (batch 0 was planned but never committed)" in message


def test_a_commit_whose_offsets_were_purged(tmp_path: Path) -> None:
    files = one_source_checkpoint(tmp_path, committed=[0, 1, 2])
    (tmp_path / "offsets" / "2").unlink()
    assert "commits/2 has no offsets/2" in refusal(files)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "offsets/0: empty"),
        (b"v1", "no metadata line"),
        (b"x1\n{}\n-", "malformed version line 'x1'"),
        (b"v0\n{}\n-", "malformed version line 'v0'"),
        (b"v2\n{}\n0:" + kafka_json({"t": {0: 1}}).encode(), "offset log v2: this mm2ctl reads v1"),
        (b"v1\n{not json}\n-", "batch metadata is not JSON"),
        (b'v1\n{"batchWatermarkMs":"0"}\n-', "batchWatermarkMs: '0' is not a 64-bit integer"),
        (b'v1\n{"conf":{"a":1}}\n-', "conf is not an object of strings"),
        (b"v1\n{}\n\n-", "source 0: an empty line"),
        (b'v1\n{}\n{"t":{"0":-1}}', "source 0: t-0: offset -1 is negative"),
        (b'v1\n{}\n{"t":{"0":1.5}}', "t-0: offset 1.5 is not an integer"),
        (b'v1\n{}\n{"t":{"0":true}}', "t-0: offset True is not an integer"),
        (b'v1\n{}\n{"t":{"0":1,"00":2}}', "t: partition 0 is given twice"),
        (b'v1\n{}\n{"t":{"0":1},"t":{"1":2}}', "repeats the key 't'"),
        (b'v1\n{}\n{"t":{"2147483648":1}}', "partition 2147483648 is out of range"),
        (b'v1\n{}\n{"":{"0":1}}', "names an empty topic"),
        (b"v1\n{}\n\xff", "not UTF-8 text"),
    ],
)
def test_a_malformed_offset_file_names_itself(tmp_path: Path, content: bytes, problem: str) -> None:
    files = make_checkpoint(tmp_path, {0: []}, committed=[0])
    (tmp_path / "offsets" / "0").write_bytes(content)
    message = refusal(files)
    assert message.startswith(f"{tmp_path}/offsets/0")
    assert problem in message


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty"),
        (b"v3\n{}", "commit log v3: this mm2ctl reads v1 and v2"),
        (b"1\n{}", "malformed version line '1'"),
        (b"v1\n[]", "commit metadata is not a JSON object"),
        (b'v2\n{"stateUniqueIds":{"x":[["a"]]}}', "stateUniqueIds is not an object"),
    ],
)
def test_a_malformed_commit_file_names_itself(tmp_path: Path, content: bytes, problem: str) -> None:
    files = one_source_checkpoint(tmp_path, committed=[0, 1])
    (tmp_path / "commits" / "1").write_bytes(content)
    message = refusal(files)
    assert message.startswith(f"{tmp_path}/commits/1")
    assert problem in message


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"", "empty"),
        (b'v1\n{"t":{"0":0}}', "does not start with the zero byte"),
        (b"\x00", "nothing after the zero byte"),
        (b"\x00v1", "no line break after the version line"),
        (b'\x00v2\n{"t":{"0":0}}', "initial offsets v2: this mm2ctl reads v1"),
        (b'\x00v1\n{"logOffset":0}', "not a Kafka offset"),
    ],
)
def test_a_malformed_initial_offsets_file_names_itself(tmp_path: Path, content: bytes, problem: str) -> None:
    files = one_source_checkpoint(tmp_path, committed=[0])
    (tmp_path / "sources" / "0" / "0").write_bytes(content)
    message = refusal(files)
    assert message.startswith(f"{tmp_path}/sources/0/0")
    assert problem in message


def test_query_metadata_without_an_id(tmp_path: Path) -> None:
    files = one_source_checkpoint(tmp_path, committed=[0])
    (tmp_path / "metadata").write_text('{"name":"q"}')
    assert refusal(files) == f"{tmp_path}/metadata: query metadata has no id"


def test_kafka_shape() -> None:
    assert kafka_positions('{"t":{"1":4,"0":3}}', where="w") == {"t": {0: 3, 1: 4}}
    assert kafka_positions('{"t":{}, "u":{"0":0}}', where="w") == {"u": {0: 0}}
    for other in ("{}", '{"t":{}}', "[1]", '"x"', "nonsense", '{"t":5}', '{"t":{"p":1}}'):
        assert kafka_positions(other, where="w") is None, other
