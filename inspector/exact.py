"""``inspect --exact``: the true position of every group partition whose translation is not exact, found by
reading records on both clusters, so the report's replay and skip counts are true counts.

The Spark job gives every row the rule's answer (docs/design.md, "Translation"): exact where a sync sits at the
committed offset, otherwise ``downstream + 1`` of the sync below it, which replays up to a sync interval, or nothing
where no sync lies at or below it. For those rows this module asks ``core.translation.positions`` what ``plan
failover`` asks, on the driver, a source partition at a time (each partition's records are read ahead once for all its
groups): the position proven by content, or found by timestamp. Only those rows are read; the rest keep the rule's
exact answer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import pyarrow as pa

from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.kafka.records import PartitionReader
from mm2ctl.core.progress import Progress, count, no_progress
from mm2ctl.core.translation.positions import Fallback, Sides, locate
from mm2ctl.core.translation.record_sources import KafkaRecords, OffsetsForTimes
from mm2ctl.core.translation.rule import Bounds, Sync
from mm2ctl.inspector.reads.pair_admin import PairState

#: The phase ``exact_positions`` counts: source partitions whose records were read.
EXACT_PHASE = "partitions read (--exact)"


@dataclass(frozen=True, slots=True)
class Inexact:
    """A translated row whose position is not exact yet: its committed offset and the sync the rule used."""

    group: str
    topic: str
    partition: int
    committed: int
    sync_upstream: int | None
    sync_downstream: int | None


@dataclass(frozen=True, slots=True)
class ExactPosition:
    group: str
    topic: str
    partition: int
    offset: int
    method: str


def _bounds(table: pa.Table, topic_column: str) -> dict[TP, Bounds]:
    out: dict[TP, Bounds] = {}
    for row in table.to_pylist():
        if row["error"] is None and row["earliest_offset"] is not None and row["latest_offset"] is not None:
            out[(row[topic_column], row["partition"])] = Bounds(row["earliest_offset"], row["latest_offset"])
    return out


def _remote_topics(table: pa.Table) -> dict[str, str]:
    return {row["topic"]: row["remote_topic"] for row in table.to_pylist() if row["remote_topic"]}


def exact_positions(
    config: MM2Config,
    pair: PairConfig,
    state: PairState,
    rows: Iterable[Inexact],
    *,
    progress: Progress = no_progress,
) -> list[ExactPosition]:
    """The exact (or timestamp) position of each row that ``core.translation.positions.locate`` can find."""
    source_bounds = _bounds(state.source_partitions, "topic")
    target_bounds = _bounds(state.target_partitions, "topic")
    remote = _remote_topics(state.source_partitions)
    by_partition: dict[TP, list[Inexact]] = {}
    for r in rows:
        by_partition.setdefault((r.topic, r.partition), []).append(r)
    src_conf = config.kafka_config(pair.source)
    dst_conf = config.kafka_config(pair.target)
    dst_admin = KafkaAdmin.connect(dst_conf, name=pair.target)
    src_admin = KafkaAdmin.connect(src_conf, name=pair.source)
    out: list[ExactPosition] = []
    # One consumer per cluster, re-assigned from partition to partition; the source's marks aborted records.
    with PartitionReader(src_conf, mark_aborted=True) as src_reader, PartitionReader(dst_conf) as dst_reader:
        for done, ((topic, p), group_rows) in enumerate(sorted(by_partition.items())):
            count(progress, EXACT_PHASE, done, len(by_partition))
            r_topic = remote.get(topic)
            sb, tb = source_bounds.get((topic, p)), target_bounds.get((r_topic or "", p))
            if r_topic is None or sb is None or tb is None:
                continue
            sides = Sides(
                source=KafkaRecords(src_reader, topic, p, sb.end),
                target=KafkaRecords(dst_reader, r_topic, p, tb.end),
                source_bounds=sb,
                target_bounds=tb,
                offset_for_time=OffsetsForTimes(dst_admin, r_topic, p),
                source_offset_for_time=OffsetsForTimes(src_admin, topic, p),
            )
            for r in sorted(group_rows, key=lambda x: x.committed):
                syncs = (
                    []
                    if r.sync_upstream is None or r.sync_downstream is None
                    else [Sync(r.sync_upstream, r.sync_downstream)]
                )
                tr, _why = locate(syncs, r.committed, sides, Fallback.TIMESTAMP)
                if tr is not None:
                    out.append(ExactPosition(r.group, topic, p, tr.offset, tr.method.value))
    count(progress, EXACT_PHASE, len(by_partition), len(by_partition))
    return out


def exact_table(cluster_pair: str, positions: Iterable[ExactPosition]) -> pa.Table:
    """``positions`` in ``schemas.EXACT_POSITIONS_SCHEMA``, for Spark."""
    items = list(positions)
    return pa.table(
        {
            "cluster_pair": pa.array([cluster_pair] * len(items), pa.string()),
            "group": pa.array([x.group for x in items], pa.string()),
            "topic": pa.array([x.topic for x in items], pa.string()),
            "partition": pa.array([x.partition for x in items], pa.int32()),
            "exact_offset": pa.array([x.offset for x in items], pa.int64()),
            "exact_method": pa.array([x.method for x in items], pa.string()),
        }
    )


def inexact_rows(rows: Iterable[Mapping[str, object]]) -> list[Inexact]:
    """The rows of a translated frame (as dicts) that ``exact_positions`` should read."""
    out = []
    for row in rows:
        c = row["committed_offset"]
        if not isinstance(c, int):
            continue
        up, down = row["sync_upstream"], row["sync_downstream"]
        out.append(
            Inexact(
                str(row["group"]),
                str(row["topic"]),
                int(row["partition"]),  # type: ignore[call-overload]
                c,
                up if isinstance(up, int) else None,
                down if isinstance(down, int) else None,
            )
        )
    return out
