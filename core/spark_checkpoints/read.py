"""A Spark Structured Streaming checkpoint as mm2ctl reads it: the last committed batch and its Kafka sources'
offsets (docs/design.md, "Spark queries").

A checkpoint written by Spark 3.5, 4.0 or 4.1 holds, under its root:

- ``offsets/<batch>`` (``OffsetSeqLog``): ``v1``, then the batch's ``OffsetSeqMetadata`` JSON (or an empty line),
  then one line per source in the order the query's plan lists them: the source's offset JSON, or ``-`` when
  the source has none. A Kafka source's offset (``KafkaSourceOffset``) is ``{"topic":{"partition":offset}}``,
  each offset the next record to read.
- ``commits/<batch>`` (``CommitLog``): ``v1`` or ``v2``, then the ``CommitMetadata`` JSON. It is written once the
  batch's output is committed; ``v2`` (Spark 4.0+, state store checkpoint format 2) adds ``stateUniqueIds``.
- ``metadata`` (``StreamMetadata``): ``{"id":"<query id>"}``.
- ``sources/<index>/0`` (``KafkaSourceInitialOffsetWriter``): a zero byte, ``v1``, and the Kafka source's initial
  offsets.
- ``state/<operator>/...``: the state of a stateful query's operators.

Batch files are the entries whose whole name is a decimal number (``HDFSMetadataLog.isBatchFile``); Spark's
temporary and checksum files (``.0.crc``, ``.0.<uuid>.tmp``) are not batches.

Nothing here writes. The checkpoint is read through :class:`CheckpointFiles`, so the same reader serves a local
folder (:class:`LocalCheckpointFiles`) and any file system Spark's Hadoop configuration reaches
(``core.spark_checkpoints.hadoop``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from mm2ctl.core.errors import SparkCheckpointError

OFFSETS_DIR = "offsets"
COMMITS_DIR = "commits"
METADATA_FILE = "metadata"
SOURCES_DIR = "sources"
STATE_DIR = "state"

#: The offset log versions read here: Spark 3.5 to 4.1 write only ``v1``.
OFFSET_LOG_VERSIONS = frozenset({1})
#: The commit log versions read here: ``v1`` always, ``v2`` when Spark 4.0+ ran with
#: ``spark.sql.streaming.stateStore.checkpointFormatVersion=2``.
COMMIT_LOG_VERSIONS = frozenset({1, 2})
#: The version of a Kafka source's initial offsets file (``KafkaSourceInitialOffsetWriter.VERSION``).
INITIAL_OFFSETS_VERSION = 1

#: The line the offset log writes for a source with no offset (``OffsetSeqLog.SERIALIZED_VOID_OFFSET``).
VOID_OFFSET = "-"

_BATCH_NAME = re.compile(r"[0-9]+")
_VERSION_LINE = re.compile(r"v([0-9]+)")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1

#: topic -> partition -> offset of the next record to read.
Positions = Mapping[str, Mapping[int, int]]


class CheckpointFiles(Protocol):
    """Read access to one checkpoint's files. Paths are relative to the checkpoint's root, ``/``-separated."""

    @property
    def location(self) -> str:
        """The checkpoint's root as the user named it, for messages."""
        ...

    def exists(self) -> bool:
        """Whether the checkpoint's root exists and is a folder."""
        ...

    def list_dir(self, path: str) -> list[str] | None:
        """The names directly under folder ``path`` ("" is the root), or None when it does not exist."""
        ...

    def read(self, path: str) -> bytes | None:
        """The bytes of file ``path``, or None when it does not exist."""
        ...


@dataclass(frozen=True, slots=True)
class LocalCheckpointFiles:
    """A checkpoint in a local folder. A file or folder that cannot be read raises :class:`SparkCheckpointError`."""

    root: Path

    @property
    def location(self) -> str:
        return str(self.root)

    def exists(self) -> bool:
        return self.root.is_dir()

    def list_dir(self, path: str) -> list[str] | None:
        folder = self.root / path if path else self.root
        try:
            return sorted(entry.name for entry in folder.iterdir())
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise SparkCheckpointError(self.location, f"{path or '.'}: cannot be listed ({exc.strerror})") from exc

    def read(self, path: str) -> bytes | None:
        try:
            return (self.root / path).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise SparkCheckpointError(self.location, f"{path}: cannot be read ({exc.strerror})") from exc


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    """A batch's ``OffsetSeqMetadata``: the watermark and time the batch ran with and the SQL confs the query
    pinned (``spark.sql.shuffle.partitions`` among them, which fixes a stateful query's state partitions)."""

    batch_watermark_ms: int
    batch_timestamp_ms: int
    conf: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class CommitMetadata:
    """A batch's commit record. ``state_unique_ids`` (operator -> partition -> store ids) is present only in a
    ``v2`` commit log (state store checkpoint format 2)."""

    version: int
    next_batch_watermark_ms: int
    state_unique_ids: Mapping[int, tuple[tuple[str, ...], ...]] | None


@dataclass(frozen=True, slots=True)
class KafkaSource:
    """A source of the query whose offset has the shape of ``KafkaSourceOffset``.

    ``index`` is its line in the offset log. Spark numbers the folders ``sources/<i>`` in the same plan order,
    once per distinct source, so ``sources/<index>`` is this source's unless a source appears twice in the
    plan (a self-union). ``positions`` are
    the offsets the query resumes from (the last committed batch's end). ``initial_positions`` are the offsets
    the query first started from (``sources/<index>/0``), None when that file is absent.
    """

    index: int
    positions: Positions
    initial_positions: Positions | None


@dataclass(frozen=True, slots=True)
class OtherSource:
    """A source whose offset is not Kafka's shape (a file, rate or Delta source...), or that has no offset yet
    (``offset_json`` None). mm2ctl does not translate it."""

    index: int
    offset_json: str | None


@dataclass(frozen=True, slots=True)
class CheckpointRead:
    """What a checkpoint says about where its query resumes.

    ``batch_id`` is the last batch with both an ``offsets/`` and a ``commits/`` entry; its offsets are where the
    query resumes. ``uncommitted_batch_id`` is a later batch in the offset log with no commit (the query stopped
    while running it; Spark runs it again on restart): it is reported, its offsets are not used.
    """

    location: str
    query_id: str | None
    batch_id: int
    uncommitted_batch_id: int | None
    metadata: BatchMetadata | None
    commit: CommitMetadata
    kafka_sources: tuple[KafkaSource, ...]
    other_sources: tuple[OtherSource, ...]
    #: The stateful operators' ids (the folders under ``state/``); empty for a stateless query.
    state_operators: tuple[int, ...]

    @property
    def source_count(self) -> int:
        return len(self.kafka_sources) + len(self.other_sources)


def read_checkpoint(files: CheckpointFiles) -> CheckpointRead:
    """Read a checkpoint's last committed batch. Raises :class:`SparkCheckpointError` when the checkpoint is
    missing, holds no committed batch, or a file it needs is unreadable, malformed or of another version."""
    where = files.location
    if not files.exists():
        raise SparkCheckpointError(where, "no checkpoint folder here")
    # The commit log first: a query running meanwhile writes offsets/<b> before commits/<b>, so a commit listed
    # before the offset log always has its offsets in that listing.
    commits = _batch_ids(files, COMMITS_DIR) or []
    offsets = _batch_ids(files, OFFSETS_DIR)
    if offsets is None:
        raise SparkCheckpointError(where, f"not a Structured Streaming checkpoint: no {OFFSETS_DIR}/ folder")
    if not offsets:
        raise SparkCheckpointError(where, "the query has planned no batch yet: nothing to translate")
    if not commits:
        raise SparkCheckpointError(
            where, f"no committed batch (batch {max(offsets)} was planned but never committed): nothing to translate"
        )
    batch_id = max(commits)
    if batch_id not in offsets:
        raise SparkCheckpointError(
            where, f"{COMMITS_DIR}/{batch_id} has no {OFFSETS_DIR}/{batch_id}: the offset log lacks the committed batch"
        )
    latest = max(offsets)
    commit = parse_commit_file(_required(files, f"{COMMITS_DIR}/{batch_id}"), where=_at(where, COMMITS_DIR, batch_id))
    _, metadata, lines = parse_offset_file(
        _required(files, f"{OFFSETS_DIR}/{batch_id}"), where=_at(where, OFFSETS_DIR, batch_id)
    )
    kafka: list[KafkaSource] = []
    other: list[OtherSource] = []
    for index, line in enumerate(lines):
        at = f"{_at(where, OFFSETS_DIR, batch_id)}, source {index}"
        positions = None if line is None else kafka_positions(line, where=at)
        if positions is None:
            other.append(OtherSource(index=index, offset_json=line))
        else:
            kafka.append(KafkaSource(index=index, positions=positions, initial_positions=_initial(files, index)))
    return CheckpointRead(
        location=where,
        query_id=_query_id(files),
        batch_id=batch_id,
        uncommitted_batch_id=latest if latest > batch_id else None,
        metadata=metadata,
        commit=commit,
        kafka_sources=tuple(kafka),
        other_sources=tuple(other),
        state_operators=_state_operators(files),
    )


def parse_offset_file(data: bytes, *, where: str) -> tuple[int, BatchMetadata | None, list[str | None]]:
    """Parse one ``offsets/<batch>`` file as ``OffsetSeqLog`` reads it: the version, the batch metadata (None for
    an empty metadata line) and each source's offset line (None for ``-``)."""
    lines = _lines(data, where=where)
    if not lines:
        raise SparkCheckpointError(where, "empty (an incomplete offset log file)")
    version = _version(lines[0], where=where)
    if version not in OFFSET_LOG_VERSIONS:
        raise SparkCheckpointError(
            where,
            f"offset log v{version}: this mm2ctl reads v1, the format of Spark 3.5 to 4.1 "
            "(a newer Spark writes a format it does not know)",
        )
    if len(lines) < 2:
        raise SparkCheckpointError(where, "no metadata line after the version line")
    metadata_text = lines[1].strip()
    metadata = None if not metadata_text else _batch_metadata(metadata_text, where=where)
    offsets: list[str | None] = []
    for index, line in enumerate(lines[2:]):
        if not line.strip():
            raise SparkCheckpointError(where, f"source {index}: an empty line (Spark writes {VOID_OFFSET!r} for none)")
        offsets.append(None if line == VOID_OFFSET else line)
    return version, metadata, offsets


def parse_commit_file(data: bytes, *, where: str) -> CommitMetadata:
    """Parse one ``commits/<batch>`` file as ``CommitLog`` reads it (a missing metadata line reads as ``{}``)."""
    lines = _lines(data, where=where)
    if not lines:
        raise SparkCheckpointError(where, "empty (an incomplete commit log file)")
    version = _version(lines[0].strip(), where=where)
    if version not in COMMIT_LOG_VERSIONS:
        raise SparkCheckpointError(
            where,
            f"commit log v{version}: this mm2ctl reads v1 and v2, the formats of Spark 3.5 to 4.1 "
            "(a newer Spark writes a format it does not know)",
        )
    body = _json_object(lines[1] if len(lines) > 1 else "{}", where=where, what="commit metadata")
    watermark = _optional_long(body, "nextBatchWatermarkMs", where=where)
    ids = body.get("stateUniqueIds")
    return CommitMetadata(
        version=version,
        next_batch_watermark_ms=watermark,
        state_unique_ids=None if ids is None else _state_unique_ids(ids, where=where),
    )


def kafka_positions(offset_json: str, *, where: str) -> Positions | None:
    """A source's offset line as Kafka positions, or None when it does not have ``KafkaSourceOffset``'s shape.

    The shape is a non-empty JSON object of topics, each an object keyed by partition numbers. A line of that
    shape whose partitions or offsets are not what Kafka's source writes (a partition out of range, an offset
    that is not a non-negative integer) is an error, not another source.
    """
    try:
        value = json.loads(offset_json, object_pairs_hook=no_duplicate_keys)
    except DuplicateKeyError as exc:
        raise SparkCheckpointError(where, f"offset JSON repeats the key {exc.key!r}") from exc
    except ValueError:
        return None
    if not _kafka_shaped(value):
        return None
    positions: dict[str, dict[int, int]] = {}
    for topic, partitions in value.items():
        if not topic:
            raise SparkCheckpointError(where, "a Kafka offset names an empty topic")
        by_partition: dict[int, int] = {}
        for key, offset in partitions.items():
            partition = int(key)
            if partition > _INT_MAX:
                raise SparkCheckpointError(where, f"{topic}: partition {key} is out of range")
            if partition in by_partition:
                raise SparkCheckpointError(where, f"{topic}: partition {partition} is given twice")
            if isinstance(offset, bool) or not isinstance(offset, int):
                raise SparkCheckpointError(where, f"{topic}-{partition}: offset {offset!r} is not an integer")
            if offset < 0:
                raise SparkCheckpointError(
                    where,
                    f"{topic}-{partition}: offset {offset} is negative (-1 and -2 mean latest and earliest in "
                    "startingOffsets; a checkpoint holds resolved offsets)",
                )
            if offset > _LONG_MAX:
                raise SparkCheckpointError(where, f"{topic}-{partition}: offset {offset} is out of range")
            by_partition[partition] = offset
        if by_partition:
            positions[topic] = dict(sorted(by_partition.items()))
    return dict(sorted(positions.items()))


def parse_initial_offsets(data: bytes, *, where: str) -> Positions:
    """Parse ``sources/<index>/0`` as ``KafkaSourceInitialOffsetWriter`` reads it: one leading zero byte, then
    ``v1`` and the offset JSON on the next line (or, from Spark 2.1.0, the JSON alone)."""
    if not data:
        raise SparkCheckpointError(where, "empty (Spark never writes an empty initial offsets file)")
    if data[0] != 0:
        raise SparkCheckpointError(where, "does not start with the zero byte Spark writes before the version")
    text = _text(data[1:], where=where)
    if not text:
        raise SparkCheckpointError(where, "nothing after the zero byte")
    body = text
    if text[0] == "v":
        newline = text.find("\n")
        if newline <= 0:
            raise SparkCheckpointError(where, "no line break after the version line")
        version = _version(text[:newline], where=where)
        if version > INITIAL_OFFSETS_VERSION:
            raise SparkCheckpointError(where, f"initial offsets v{version}: this mm2ctl reads v1")
        body = text[newline + 1 :]
    positions = kafka_positions(body, where=where)
    if positions is None:
        raise SparkCheckpointError(where, 'not a Kafka offset ({"topic":{"partition":offset}})')
    return positions


# --- helpers --------------------------------------------------------------------------------------------------


def _at(location: str, folder: str, batch_id: int) -> str:
    return f"{location}/{folder}/{batch_id}"


def _batch_ids(files: CheckpointFiles, folder: str) -> list[int] | None:
    names = files.list_dir(folder)
    if names is None:
        return None
    return sorted(int(name) for name in names if _BATCH_NAME.fullmatch(name))


def _required(files: CheckpointFiles, path: str) -> bytes:
    data = files.read(path)
    if data is None:
        raise SparkCheckpointError(files.location, f"{path}: listed, but gone when read")
    return data


def _text(data: bytes, *, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SparkCheckpointError(where, f"not UTF-8 text (byte {exc.start})") from exc


def _lines(data: bytes, *, where: str) -> list[str]:
    """The file's lines as Scala's ``getLines`` gives them: split at ``\\n``, ``\\r\\n`` or ``\\r``; a final line
    break ends the last line rather than starting an empty one."""
    text = _text(data, where=where)
    if not text:
        return []
    lines = _LINE_BREAK.split(text)
    if lines[-1] == "":
        lines.pop()
    return lines


def _version(line: str, *, where: str) -> int:
    """``MetadataVersionUtil``'s parse: ``v`` and a positive decimal number."""
    match = _VERSION_LINE.fullmatch(line)
    if match is None or int(match.group(1)) <= 0:
        raise SparkCheckpointError(where, f"malformed version line {line[:40]!r} (expected v1, v2...)")
    return int(match.group(1))


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice: Spark's Jackson reader keeps one of them, so mm2ctl refuses it."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' ``object_pairs_hook`` that raises :class:`DuplicateKeyError` for a repeated key."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = value
    return result


def _json_object(text: str, *, where: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except DuplicateKeyError as exc:
        raise SparkCheckpointError(where, f"{what} repeats the key {exc.key!r}") from exc
    except ValueError as exc:
        raise SparkCheckpointError(where, f"{what} is not JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise SparkCheckpointError(where, f"{what} is not a JSON object")
    return value


def _optional_long(body: Mapping[str, Any], key: str, *, where: str) -> int:
    value = body.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not -(2**63) <= value <= _LONG_MAX:
        raise SparkCheckpointError(where, f"{key}: {value!r} is not a 64-bit integer")
    return value


def _batch_metadata(text: str, *, where: str) -> BatchMetadata:
    body = _json_object(text, where=where, what="batch metadata")
    conf = body.get("conf", {})
    if not isinstance(conf, dict) or not all(isinstance(v, str) for v in conf.values()):
        raise SparkCheckpointError(where, "batch metadata: conf is not an object of strings")
    return BatchMetadata(
        batch_watermark_ms=_optional_long(body, "batchWatermarkMs", where=where),
        batch_timestamp_ms=_optional_long(body, "batchTimestampMs", where=where),
        conf=dict(conf),
    )


def _state_unique_ids(value: Any, *, where: str) -> dict[int, tuple[tuple[str, ...], ...]]:
    problem = "commit metadata: stateUniqueIds is not an object of operator ids to lists of lists of strings"
    if not isinstance(value, dict):
        raise SparkCheckpointError(where, problem)
    result: dict[int, tuple[tuple[str, ...], ...]] = {}
    for key, partitions in value.items():
        if not _BATCH_NAME.fullmatch(key) or not isinstance(partitions, list):
            raise SparkCheckpointError(where, problem)
        rows: list[tuple[str, ...]] = []
        for ids in partitions:
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                raise SparkCheckpointError(where, problem)
            rows.append(tuple(ids))
        result[int(key)] = tuple(rows)
    return result


def _kafka_shaped(value: Any) -> bool:
    """A non-empty object of objects whose keys are all decimal partition numbers, with at least one partition."""
    if not isinstance(value, dict) or not value:
        return False
    if not all(isinstance(partitions, dict) for partitions in value.values()):
        return False
    keys = [key for partitions in value.values() for key in partitions]
    return bool(keys) and all(_BATCH_NAME.fullmatch(key) for key in keys)


def _initial(files: CheckpointFiles, index: int) -> Positions | None:
    path = f"{SOURCES_DIR}/{index}/0"
    data = files.read(path)
    return None if data is None else parse_initial_offsets(data, where=f"{files.location}/{path}")


def _query_id(files: CheckpointFiles) -> str | None:
    data = files.read(METADATA_FILE)
    if data is None:
        return None
    where = f"{files.location}/{METADATA_FILE}"
    body = _json_object(_text(data, where=where), where=where, what="query metadata")
    query_id = body.get("id")
    if not isinstance(query_id, str) or not query_id:
        raise SparkCheckpointError(where, "query metadata has no id")
    return query_id


def _state_operators(files: CheckpointFiles) -> tuple[int, ...]:
    names = files.list_dir(STATE_DIR) or []
    return tuple(sorted(int(name) for name in names if _BATCH_NAME.fullmatch(name)))
