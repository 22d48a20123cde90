"""The admin state's two group-offset tables (``schemas.SOURCE_GROUP_OFFSETS_SCHEMA`` and
``TARGET_GROUP_OFFSETS_SCHEMA``) from the committed offsets as ``inspector.reads.committed_offsets`` reads them:
columns, a group number per row. What MM2 mirrors and what the user asked for is decided once per group and once per
distinct topic, and applied to the columns by Arrow, so nothing here is done per offset in Python.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.inspector.reads.committed_offsets import WRITTEN_BY, GroupOffsetColumns


def kept_rows(table: pa.Table, wanted: Sequence[bool], topic_ok: Callable[[str], bool]) -> pa.Table:
    """The rows of ``table`` (``inspector.reads.committed_offsets.OFFSETS_SCHEMA``) of a wanted group on a topic
    ``topic_ok`` keeps: one decision per group and per distinct topic."""
    topics = pc.unique(table.column("topic")).to_pylist()
    ok_topics = pa.array([t for t in topics if topic_ok(t)], pa.string())
    on_topic = pc.is_in(table.column("topic"), value_set=ok_topics)
    of_group = pa.array(wanted, pa.bool_()).take(table.column("group_index"))
    return table.filter(pc.and_(on_topic, of_group))


def partitions_of(rows: pa.Table) -> Iterator[tuple[str, int]]:
    """The distinct (topic, partition) of ``rows``."""
    distinct = rows.group_by(["topic", "partition"]).aggregate([])
    yield from zip(distinct.column("topic").to_pylist(), distinct.column("partition").to_pylist(), strict=True)


def offsets_table(
    name: str,
    rows: pa.Table,
    groups: Sequence[str],
    errors: Sequence[str | None],
    *,
    written_by: bool = False,
    share: Mapping[tuple[str, str, int], tuple[int, int]] | None = None,
) -> pa.Table:
    """``rows`` (group numbers into ``groups``) in the group-offsets schema, each with its group's error, and
    with ``written_by`` (the target's table) the metadata of the offsets mm2ctl wrote; with ``share`` (the
    source's table) the share groups' start offsets and records acknowledged past their positions, by (group,
    topic, partition)."""
    index = rows.column("group_index")
    columns = {
        "cluster_pair": pa.repeat(pa.scalar(name, pa.string()), rows.num_rows),
        "group": pa.array(groups, pa.string()).take(index),
        "topic": rows.column("topic").cast(pa.string()),
        "partition": rows.column("partition").cast(pa.int32()),
        "committed_offset": rows.column("committed_offset").cast(pa.int64()),
        "error": pa.array(errors, pa.string()).take(index),
    }
    if written_by:
        columns["written_by"] = rows.column("written_by").cast(pa.string())
    if share is not None:
        group, topic, partition = (columns[c].to_pylist() for c in ("group", "topic", "partition"))
        keys = zip(group, topic, partition, strict=True)
        found = [share.get(k) for k in keys] if share else [None] * rows.num_rows
        columns["share_start_offset"] = pa.array([f[0] if f else None for f in found], pa.int64())
        columns["share_acknowledged_past"] = pa.array([f[1] if f else None for f in found], pa.int64())
    return pa.table(columns)


def target_rows(
    read: GroupOffsetColumns, source_rows: pa.Table, numbers: Sequence[int], remote_of: dict[str, str]
) -> tuple[pa.Table, list[int]]:
    """The target's offsets on the remote topics, and for each group whose whole lookup failed, a row without an
    offset for every partition it has on the source (its ``source_rows``, numbered as ``numbers`` maps the target
    groups' numbers to the source's), under the remote names; in the order of the groups. Also the numbers of the
    failed groups."""
    table = read.table
    remote = pa.array(sorted(set(remote_of.values())), pa.string())
    answered = table.filter(pc.is_in(table.column("topic"), value_set=remote))
    counts = np.bincount(table.column("group_index").to_numpy(), minlength=len(read.groups))
    failed = [i for i, e in enumerate(read.errors) if e is not None and counts[i] == 0]
    parts = [answered.cast(_NULLABLE_OFFSETS)]
    if failed:
        target_number = np.full(max(numbers) + 1, -1, np.int32)
        target_number[[numbers[i] for i in failed]] = failed
        rows = source_rows.filter(pc.is_in(source_rows.column("group_index"), pa.array([numbers[i] for i in failed])))
        topics = pc.unique(rows.column("topic"))
        remote_names = pa.array([remote_of[t] for t in topics.to_pylist()], pa.string())
        parts.append(
            pa.table(
                [
                    pa.array(target_number[rows.column("group_index").to_numpy()], pa.int32()),
                    remote_names.take(pc.index_in(rows.column("topic"), value_set=topics)),
                    rows.column("partition"),
                    pa.nulls(rows.num_rows, pa.int64()),
                    pa.nulls(rows.num_rows, WRITTEN_BY),
                ],
                schema=_NULLABLE_OFFSETS,
            )
        )
    together = pa.concat_tables(parts)
    # Arrow's sort is stable: within a group, the rows keep their (topic, partition) order.
    return together.take(pc.sort_indices(together, sort_keys=[("group_index", "ascending")])), failed


_NULLABLE_OFFSETS = pa.schema(
    [
        ("group_index", pa.int32()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("committed_offset", pa.int64()),
        ("written_by", WRITTEN_BY),
    ]
)
