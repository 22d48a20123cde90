"""The translated copy of a Structured Streaming checkpoint (the checkpoint form): whether a checkpoint allows
one, and the bytes of the files the copy rewrites (docs/design.md, "The checkpoint form").

The conditions that need the flow (an exact translation of every partition, the identity policy, the same
partitions on the target, MM2 having copied up to the translated offsets) are the planner's; the ones the
checkpoint alone decides are :func:`copy_refusals`'. Nothing here writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.read import (
    OFFSETS_DIR,
    SOURCES_DIR,
    STATE_DIR,
    VOID_OFFSET,
    CheckpointFiles,
    CheckpointRead,
    Positions,
    kafka_positions,
    parse_offset_file,
)


def copy_refusals(read: CheckpointRead, files: CheckpointFiles) -> list[str]:
    """Why the checkpoint read as ``read`` cannot be copied with translated offsets, one sentence a reason;
    empty when the checkpoint itself allows it."""
    reasons: list[str] = []
    for other in read.other_sources:
        if other.offset_json is None:
            reasons.append(f"source {other.index} has no offset yet, so mm2ctl cannot tell whether it reads Kafka")
        else:
            reasons.append(f"source {other.index} is not a Kafka source; mm2ctl does not translate its offset")
    if not read.kafka_sources:
        reasons.append("the query has no Kafka source")
    if read.uncommitted_batch_id is not None:
        reasons.append(
            f"batch {read.uncommitted_batch_id} was planned but never committed: on a copy Spark would plan it "
            "again over another range, which a sink that skips the batch ids it committed (file sink, Delta, an "
            "idempotent foreachBatch) would skip"
        )
    if read.batch_id > 0 and files.read(f"{OFFSETS_DIR}/{read.batch_id - 1}") is None:
        reasons.append(
            f"{OFFSETS_DIR}/{read.batch_id - 1} is gone, and Spark resumes batch {read.batch_id} only with it"
        )
    for operator in read.state_operators:
        if files.list_dir(f"{STATE_DIR}/{operator}/_metadata/v2") is not None:
            reasons.append(
                f"stateful operator {operator} is a transformWithState (operator metadata v2), whose metadata names "
                "its schema files by the original checkpoint's path"
            )
    return reasons


def kafka_offset_json(positions: Positions) -> str:
    """``KafkaSourceOffset.json`` for ``positions``: compact, topics and partitions in order (Spark writes a hash
    map's order; ``JsonUtils.partitionOffsets`` reads any)."""
    return json.dumps(
        {topic: {str(p): positions[topic][p] for p in sorted(positions[topic])} for topic in sorted(positions)},
        separators=(",", ":"),
    )


def rewritten_offset_file(original: bytes, replacements: Mapping[int, Positions], *, where: str) -> bytes:
    """``original`` (an ``offsets/<batch>`` file) with the offset lines of the sources in ``replacements``
    replaced by their translated offsets, as ``OffsetSeqLog.serialize`` writes them: lines joined by ``\\n``, no
    final line break. The version and metadata lines and every other source's line keep their bytes.

    A replaced line must be a Kafka offset naming the same topics and partitions as its replacement (the copy
    keeps the topics' names). Raises :class:`SparkCheckpointError` otherwise, and for a file whose line breaks
    are not Spark's ``\\n``."""
    parse_offset_file(original, where=where)  # the same checks as reading it
    text = original.decode("utf-8")
    if "\r" in text:
        raise SparkCheckpointError(where, "line breaks other than \\n: not a file Spark wrote")
    lines = text.removesuffix("\n").split("\n")
    sources = lines[2:]
    for index, positions in sorted(replacements.items()):
        if not 0 <= index < len(sources):
            raise SparkCheckpointError(where, f"no source {index} (the file has {len(sources)})")
        line = sources[index]
        current = None if line == VOID_OFFSET else kafka_positions(line, where=f"{where}, source {index}")
        if current is None:
            raise SparkCheckpointError(where, f"source {index} has no Kafka offset to replace")
        if _partitions(current) != _partitions(positions):
            raise SparkCheckpointError(
                where, f"source {index}: the translated offsets name other topic partitions than the checkpoint's"
            )
        sources[index] = kafka_offset_json(positions)
    return "\n".join([*lines[:2], *sources]).encode("utf-8")


def initial_offsets_file(positions: Positions) -> bytes:
    """``sources/<index>/0`` as ``KafkaSourceInitialOffsetWriter`` writes it: a zero byte, ``v1``, a line break,
    the offsets."""
    return b"\x00" + f"v1\n{kafka_offset_json(positions)}".encode()


def initial_offsets_path(index: int) -> str:
    """The path, relative to the checkpoint, of source ``index``'s initial offsets."""
    return f"{SOURCES_DIR}/{index}/0"


def _partitions(positions: Positions) -> set[tuple[str, int]]:
    return {(topic, partition) for topic, partitions in positions.items() for partition in partitions}
