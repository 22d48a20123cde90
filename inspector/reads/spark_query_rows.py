"""Structured Streaming queries in an inspection (``inspect --spark-checkpoint``): each Kafka source of a query's
checkpoint becomes one more "group" of the pair whose flow mirrors its topics, so its partitions get rows like a
consumer group's, named ``spark:<query id>`` (``core.spark_checkpoints.query_sources``).

A query's position is its checkpoint's last committed batch, per partition the next record to read, as a group's
committed offset is; it is not in Kafka. So it joins the source's committed offsets (``inspector.reads.pair_admin``) as
columns of its own, after the share and streams groups, and the rest of the inspection translates and classifies it as
it does every group: nothing is looked up for it on the target (it is no Kafka group there either), and its type,
``spark_query``, makes it a group MirrorMaker 2 never checkpoints (``inspector.transforms.classify``,
``not_checkpointed``).

``--groups`` and ``--active-only`` choose Kafka groups and leave the queries alone (each was asked for by name);
``--topics`` narrows their partitions as it narrows every group's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.query_sources import (
    QuerySource,
    local_files,
    local_path,
    query_positions,
    query_sources,
)
from mm2ctl.core.spark_checkpoints.read import CheckpointFiles, read_checkpoint
from mm2ctl.inspector.reads.committed_offsets import GroupOffsetColumns
from mm2ctl.inspector.reads.typed_groups import columns_of

#: The ``group_type`` of a query's rows.
SPARK_QUERY_TYPE = "spark_query"

#: The session a checkpoint on another file system than the local one is read through (called only then).
SessionGetter = Callable[[], Any]


def checkpoint_files(location: str, session: SessionGetter | None) -> CheckpointFiles:
    """A local path or ``file:`` URI as local files (no JVM needed); any other URI (``hdfs://``, ``s3a://``...)
    through the Hadoop file system of the Spark session ``session`` gives (none: ``SparkCheckpointError``)."""
    if local_path(location) is not None or session is None:
        return local_files(location)
    from mm2ctl.core.spark_checkpoints.hadoop import hadoop_checkpoint_files

    return hadoop_checkpoint_files(session(), location)


def all_local(locations: Sequence[str]) -> bool:
    """Whether every checkpoint can be read without a Spark session."""
    return all(local_path(location) is not None for location in locations)


def read_queries(locations: Sequence[str], session: SessionGetter | None = None) -> tuple[QuerySource, ...]:
    """The Kafka sources of the checkpoints at ``locations``, each named
    (``core.spark_checkpoints.query_sources.query_sources``), read now: a query that moved on since the last read
    resumes from its newest committed batch."""
    return tuple(query_sources([read_checkpoint(checkpoint_files(loc, session)) for loc in locations]))


def assign_queries(sources: Sequence[QuerySource], pairs: Sequence[PairConfig]) -> dict[str, tuple[QuerySource, ...]]:
    """pair name -> the query sources it inspects: each goes to every pair whose flow mirrors all the topics it
    reads (its offsets do not say which cluster it read; the flow's source is taken to be it). A source no one
    pair mirrors entirely is a ``SparkCheckpointError`` naming the topics."""
    out: dict[str, list[QuerySource]] = {pair.name: [] for pair in pairs}
    for qs in sources:
        topics = sorted(qs.source.positions)
        fits = [pair for pair in pairs if all(pair.replicates_topic(t) for t in topics)]
        if not fits:
            names = ", ".join(pair.name for pair in pairs)
            nowhere = [t for t in topics if not any(pair.replicates_topic(t) for pair in pairs)]
            problem = (
                f"{', '.join(nowhere)}, which {names} {'does' if len(pairs) == 1 else 'do'} not mirror"
                if nowhere
                else f"{', '.join(topics)}, which no one flow of {names} mirrors together"
            )
            raise SparkCheckpointError(qs.read.location, f"{qs.name} (source {qs.source.index}) reads {problem}")
        for pair in fits:
            out[pair.name].append(qs)
    return {name: tuple(found) for name, found in out.items()}


def query_columns(sources: Sequence[QuerySource]) -> GroupOffsetColumns:
    """The queries' positions as committed-offset columns (``inspector.reads.committed_offsets.OFFSETS_SCHEMA``), one
    "group" per source, in ``sources``' order, with no error."""
    positions: Mapping[str, Mapping[tuple[str, int], int]] = query_positions(sources)
    return columns_of(tuple(qs.name for qs in sources), positions, {})


def no_columns(names: Sequence[str]) -> GroupOffsetColumns:
    """No offset for any of ``names``: what the target holds of the queries (they are no Kafka groups)."""
    return columns_of(tuple(names), {}, {})


def query_groups_table(pair: str, names: Sequence[str]) -> pa.Table:
    """The queries' rows of a group-states table (``schemas.GROUP_STATES_SCHEMA``): no state, no members, no
    error, of type ``spark_query``."""
    n = len(names)
    return pa.table(
        {
            "cluster_pair": pa.array([pair] * n, pa.string()),
            "group": pa.array(list(names), pa.string()),
            "state": pa.nulls(n, pa.string()),
            "member_count": pa.nulls(n, pa.int32()),
            "error": pa.nulls(n, pa.string()),
            "group_type": pa.array([SPARK_QUERY_TYPE] * n, pa.string()),
        }
    )
