"""Collect one pair's replicated source partitions on the driver: their bounds on both clusters and MM2's
position, as an Arrow table in ``inspector.schemas.REPLICATED_PARTITIONS_SCHEMA``; and MM2's lag in time, from
the record waiting at MM2's position and the topic's retention (``inspector.reads.waiting_records``).

Every partition of every source topic MM2 replicates (its topic filter and internal-topic rules, then the
user's ``--topics``) gets a row, whether or not a consumer group reads it: replication health is about MM2,
not about the groups.

MM2's position is read *before* the source's bounds. MM2 only moves forward between the two reads, so a
position beyond the source's latest offset is a real reset, never a race with MM2 copying new records.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql.types import StructType

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.admin import TP, ItemError, KafkaAdmin, PartitionBounds
from mm2ctl.core.progress import Progress
from mm2ctl.inspector.reads import waiting_records as waiting
from mm2ctl.inspector.reads.mm2_position import Mm2Position, read_position
from mm2ctl.inspector.schemas import LAG_IN_TIME_FIELDS, arrow_schema
from mm2ctl.inspector.selection import Selection


@dataclass(frozen=True, slots=True)
class ReplicationState:
    pair: PairConfig
    read_at: dt.datetime
    partitions: pa.Table  # replication_health.REPLICATED_PARTITIONS_SCHEMA
    position: Mm2Position
    #: Why the records waiting could not be read (their ages and margins are then null), else None.
    waiting_note: str | None = None


def _err(e: ItemError | None) -> str | None:
    return None if e is None else f"{e.code}: {e.message}"


def collect_replication_state(
    config: MM2Config,
    pair: PairConfig,
    selection: Selection,
    connect: ConnectClient | None,
    *,
    progress: Progress | None = None,
    timeout_s: float = 60.0,
) -> ReplicationState:
    say = progress or (lambda _m: None)
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=timeout_s)
    target = KafkaAdmin.connect(pair.target_kafka_config, name=pair.target, timeout_s=timeout_s)
    read_at = dt.datetime.now(dt.UTC)
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix=f"replication-{pair.name}") as pool:
        target_topics_f = pool.submit(target.list_topics)
        source_topics = source.list_topics()
        target_topics = target_topics_f.result()
        position = read_position(config, pair, connect, target_topics=frozenset(target_topics), timeout_s=timeout_s)
        replicated = sorted(t for t in source_topics if pair.replicates_topic(t) and selection.topic_ok(t))
        partitions = [(t, p) for t in replicated for p in range(source_topics[t])]
        remote_of = {t: pair.remote_topic(t) for t in replicated}
        remote = [(remote_of[t], p) for t, p in partitions if remote_of[t] in target_topics]
        where = position.read_from or "unknown"
        say(f"{pair.name}: MM2's position ({where}); bounds of {len(partitions)} replicated partition(s)")
        target_bounds_f = pool.submit(target.partition_bounds, remote)
        source_bounds = source.partition_bounds(partitions)
        bounds_at = dt.datetime.now(dt.UTC)
        retention_f = pool.submit(waiting.read_retention, source, replicated)
        target_bounds = target_bounds_f.result()
        retention = retention_f.result()

    offsets = position.next_offsets or {}
    lag, note = _lag_in_time(pair, source_bounds, offsets if position.known else None, retention, bounds_at, timeout_s)
    position_error = position.reason if position.failed else None
    rows = len(partitions)
    targets = [target_bounds.get((remote_of[t], p)) for t, p in partitions]
    errors = []
    for tp, tb in zip(partitions, targets, strict=True):
        parts = [
            f"source partition: {e}" if (e := _err(source_bounds[tp].error)) else None,
            f"target partition: {e}" if tb is not None and (e := _err(tb.error)) else None,
            f"MM2 position: {position_error}" if position_error else None,
        ]
        errors.append("; ".join(p for p in parts if p) or None)
    table = pa.table(
        {
            "cluster_pair": pa.array([pair.name] * rows, pa.string()),
            "topic": pa.array([t for t, _ in partitions], pa.string()),
            "partition": pa.array([p for _, p in partitions], pa.int32()),
            "remote_topic": pa.array([remote_of[t] for t, _ in partitions], pa.string()),
            "source_earliest": pa.array([source_bounds[tp].earliest for tp in partitions], pa.int64()),
            "source_latest": pa.array([source_bounds[tp].latest for tp in partitions], pa.int64()),
            "target_latest": pa.array([None if tb is None else tb.latest for tb in targets], pa.int64()),
            "position_known": pa.array([position.known] * rows, pa.bool_()),
            "mm2_next_offset": pa.array([offsets.get(tp) for tp in partitions], pa.int64()),
            "error": pa.array(errors, pa.string()),
            **{name: pa.array([lag[tp][name] for tp in partitions], kind) for name, kind in LAG_COLUMNS.items()},
        }
    )
    return ReplicationState(pair=pair, read_at=read_at, partitions=table, position=position, waiting_note=note)


#: The columns ``_lag_in_time`` adds, and their Arrow types (``inspector.schemas.LAG_IN_TIME_FIELDS``).
LAG_COLUMNS = {f.name: f.type for f in arrow_schema(StructType(LAG_IN_TIME_FIELDS))}


def _lag_in_time(
    pair: PairConfig,
    bounds: dict[TP, PartitionBounds],
    offsets: Mapping[TP, int] | None,
    retention: dict[str, waiting.Retention],
    at: dt.datetime,
    timeout_s: float,
) -> tuple[dict[TP, dict[str, object]], str | None]:
    """Per partition, ``LAG_COLUMNS``' values as of ``at`` (when the source's bounds were read): all null when
    MM2's position is unknown (``offsets`` None). Also why the records waiting could not be read, if so."""
    spans = {
        tp: (b.earliest, b.latest)
        for tp, b in bounds.items()
        if b.error is None and b.earliest is not None and b.latest is not None
    }
    found: dict[TP, waiting.WaitingRecord] = {}
    note = None
    if offsets is not None:
        try:
            found = waiting.read_waiting_records(
                pair.source_kafka_config, waiting.waiting_ranges(spans, offsets), timeout_s=timeout_s
            )
        except KafkaClusterError as exc:
            note = f"the records waiting on {pair.source} could not be read: {exc}"
    out: dict[TP, dict[str, object]] = {}
    for tp in bounds:
        lag_records = None if offsets is None else _lag_records(spans.get(tp), offsets.get(tp))
        record, kept = found.get(tp), retention.get(tp[0])
        margin, basis = waiting.retention_margin(lag_records, record, kept, at)
        out[tp] = {
            "replication_lag_seconds": waiting.lag_seconds(lag_records, record, at),
            "lag_timestamp_type": record.timestamp_type if record else None,
            "oldest_waiting_timestamp": _moment(record.timestamp_ms) if record else None,
            "retention_ms": kept.retention_ms if kept else None,
            "retention_ms_source": kept.source if kept else None,
            "retention_margin_seconds": margin,
            "retention_margin_basis": basis,
        }
    return out, note


def _lag_records(span: tuple[int, int] | None, n: int | None) -> int | None:
    """``replication_lag_records``' rule (``inspector.transforms.replication_health``) on the driver."""
    if span is None:
        return None
    earliest, latest = span
    return max(latest - max(earliest if n is None else n, earliest), 0)


def _moment(timestamp_ms: int) -> dt.datetime:
    """A Kafka timestamp as a datetime, to the millisecond (no float rounding)."""
    seconds, millis = divmod(timestamp_ms, 1000)
    return dt.datetime.fromtimestamp(seconds, dt.UTC) + dt.timedelta(milliseconds=millis)
