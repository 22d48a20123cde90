"""Structured Streaming queries as mm2ctl moves them: each Kafka source of a checkpoint's last committed batch is a
position, per partition the next record to read, just as a consumer group's committed offset is. So the planners
and ``inspect`` translate it as they translate a group's, under a name of its own (``QuerySource.name``,
``spark:<query id>``) in the rows' ``group`` column.

A query resumes from ``offsets/<batch>`` of its last committed batch (``core.spark_checkpoints.read``); its offsets name
topics of the cluster it read, with no word of which cluster that was, so the checkpoints a plan reads must be
of queries that read the flow's source cluster.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.read import (
    COMMITS_DIR,
    OFFSETS_DIR,
    CheckpointFiles,
    CheckpointRead,
    KafkaSource,
    LocalCheckpointFiles,
    read_checkpoint,
)

#: The prefix of every query's name in a plan's and an inspection's rows (the ``group`` column).
QUERY_PREFIX = "spark:"

TP = tuple[str, int]


@dataclass(frozen=True, slots=True)
class QuerySource:
    """One Kafka source of one checkpoint's last committed batch. ``name`` is ``spark:<query id>``, with
    ``/<source index>`` when the query has more than one Kafka source (each resumes from its own offsets, and two
    sources may read the same partition)."""

    read: CheckpointRead
    source: KafkaSource
    name: str

    @property
    def positions(self) -> dict[TP, int]:
        return {(t, p): o for t, parts in self.source.positions.items() for p, o in parts.items()}


def local_path(location: str) -> Path | None:
    """The local folder ``location`` names: a plain path or a ``file:`` URI; None for another file system."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:  # "C:" is a Windows drive, not a scheme
        return None
    return Path(location)


def local_files(location: str) -> CheckpointFiles:
    """A local checkpoint's files; a location on another file system (``hdfs://``, ``s3a://``...) needs a Spark
    session's Hadoop configuration (``core.spark_checkpoints.hadoop``)."""
    path = local_path(location)
    if path is None:
        raise SparkCheckpointError(
            location, "not a local path: a checkpoint on another file system is read through a Spark session"
        )
    return LocalCheckpointFiles(path.expanduser().absolute())


def query_sources(reads: Sequence[CheckpointRead]) -> list[QuerySource]:
    """The Kafka sources of ``reads``, each named. A checkpoint with no Kafka source, or two checkpoints of the
    same query (a copy and its original), are refused: the plan could not tell whose position is whose."""
    out: list[QuerySource] = []
    seen: dict[str, str] = {}
    for read in reads:
        if not read.kafka_sources:
            raise SparkCheckpointError(read.location, "the query has no Kafka source: nothing to translate")
        query = read.query_id or Path(read.location.rstrip("/")).name
        if query in seen:
            raise SparkCheckpointError(read.location, f"the same query ({query}) as {seen[query]}: name it once")
        seen[query] = read.location
        many = len(read.kafka_sources) > 1
        for source in read.kafka_sources:
            name = f"{QUERY_PREFIX}{query}" + (f"/{source.index}" if many else "")
            out.append(QuerySource(read=read, source=source, name=name))
    return out


def require_mirrored(sources: Iterable[QuerySource], mirrored: Callable[[str], bool], flow_name: str) -> None:
    """Every topic a query reads must be one the flow mirrors: the others have no copy to resume on."""
    for qs in sources:
        missing = sorted(t for t in qs.source.positions if not mirrored(t))
        if missing:
            raise SparkCheckpointError(
                qs.read.location,
                f"source {qs.source.index} reads {', '.join(missing)}, which {flow_name} does not mirror",
            )


def refuse_named_like_queries(sources: Iterable[QuerySource], groups: Iterable[str], cluster: str) -> None:
    """A Kafka group named as a query (``spark:<query id>``) would be taken for it: refuse rather than guess."""
    names = {qs.name: qs for qs in sources}
    for group in groups:
        if group in names:
            raise SparkCheckpointError(
                names[group].read.location, f"a consumer group on {cluster} has the query's name {group}"
            )


def query_positions(sources: Iterable[QuerySource]) -> dict[str, dict[TP, int]]:
    """name -> {(topic, partition): next offset to read}: the queries' positions, shaped as groups' are."""
    return {qs.name: qs.positions for qs in sources}


def batch_digest(files: CheckpointFiles, batch_id: int) -> str:
    """A digest of ``offsets/<batch_id>``, ``commits/<batch_id>`` and the batches planned after it: a plan records
    it, and apply refuses a checkpoint whose last committed batch is another, was rewritten, or was followed by a
    newly planned batch (the query ran since)."""
    h = hashlib.sha256()
    for folder in (OFFSETS_DIR, COMMITS_DIR):
        data = files.read(f"{folder}/{batch_id}")
        h.update(b"-" if data is None else str(len(data)).encode() + b":" + data)
    later = sorted(int(n) for n in files.list_dir(OFFSETS_DIR) or [] if n.isdigit() and int(n) > batch_id)
    h.update(f"planned after: {later}".encode())
    return h.hexdigest()


def checkpoint_moved(location: str, batch_id: int, digest: str) -> str | None:
    """Why the local checkpoint at ``location`` is no longer the one a plan read (None: it is)."""
    files = local_files(location)
    read = read_checkpoint(files)
    if read.batch_id != batch_id:
        return f"the query at {location} has committed batch {read.batch_id} since the plan read batch {batch_id}"
    if batch_digest(files, batch_id) != digest:
        return f"the query at {location} ran since the plan read batch {batch_id}: a batch was rewritten or planned"
    return None
