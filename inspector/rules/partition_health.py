"""Replication health per source partition, as an Arrow function the driver runs (its inputs, a row per
replicated source partition and its newest offset sync, are read on the driver, so no Spark job runs for it).

The group-partition rows say whether each consumer group would resume at the right place on the target. These
say whether MM2 itself keeps up: one row per replicated source partition, from MM2's stored position (the
next upstream offset it copies, ``inspector.reads.mm2_position``), the partition's bounds on both clusters, and the
partition's newest offset sync. Definitions (docs/design.md, "MM2's position"), with ``n`` MM2's next offset to copy and
``[earliest, latest)`` the source partition:

``replication_lag_records``    ``latest - max(n, earliest)``, at least 0: records waiting to be copied. Records
                               retention deleted are not waiting any more, so they are not lag; with no
                               stored position (MM2 copied nothing yet) it is ``latest - earliest``.
``records_lost_to_retention``  ``earliest - n`` when positive: records deleted before MM2 copied them. MM2
                               resumes at the source's earliest offset, so they never reach the target.
``source_reset``               ``n > latest``: MM2's position is beyond the source's end, the topic was
                               recreated or truncated under MM2.

Statuses, first match wins (``inspector.statuses.PartitionStatus``):

1. ``error``             a lookup for the row failed (the source or target bounds, or reading MM2's position
                         through the way it was given); see ``error``.
2. ``position_unknown``  there was no way to read MM2's position (no ``--connect-url``, no dedicated-mode
                         offsets topic): the position fields are empty. Not a problem.
3. ``source_reset``      as above.
4. ``lost_records``      records were lost to retention.
5. ``not_started``       MM2 has stored no position for a partition that holds records.
6. ``lagging``           more than ``lag_threshold`` records wait to be copied, or the oldest of them is more
                         than ``lag_seconds_threshold`` seconds old (``replication_lag_seconds``); the message
                         names both figures.
7. ``replicating``       none of the above.

The stored position trails what MM2 has copied by up to one offset flush (``offset.flush.interval.ms``,
60 s by default), so a partition that takes many records a second shows that much lag while MM2 keeps up:
set ``lag_threshold`` above one flush interval's traffic. In time, the record at the stored position was
copied at most one flush interval before the position was stored, so a healthy MM2 shows at most about one
interval: the default ``lag_seconds_threshold`` (``selection.DEFAULT_LAG_SECONDS_THRESHOLD``) is twice the
default interval.

The lag in time and the retention margin (``replication_lag_seconds``, ``retention_margin_seconds``, from
the record waiting at MM2's position: ``inspector.reads.waiting_records``) come computed from the driver and
pass through.
"""

from __future__ import annotations

import datetime as dt
from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.inspector.rules.columns import and_, case, greatest, lookup, micros, or_, scalar, try_subtract
from mm2ctl.inspector.schemas import PARTITION_HEALTH_SCHEMA, arrow_schema
from mm2ctl.inspector.statuses import OK_PARTITION_STATUSES, PARTITION_MESSAGES, PartitionStatus

_KEY = ["cluster_pair", "topic", "partition"]
_SYNC_COLUMNS = ["newest_sync_upstream", "newest_sync_downstream", "newest_sync_timestamp"]
NO_BOUNDS = "source partition: no bounds"
#: The lag in time and the retention margins: computed on the driver before (``inspector.reads.waiting_records``).
_LAG_IN_TIME = PARTITION_HEALTH_SCHEMA.fieldNames()[PARTITION_HEALTH_SCHEMA.fieldNames().index("error") + 1 :]


def partition_health(
    partitions: pa.Table,
    syncs: pa.Table,
    *,
    lag_threshold: int,
    lag_seconds_threshold: float,
    as_of: dt.datetime,
) -> pa.Table:
    """One status per replicated source partition of ``partitions`` (``schemas.REPLICATED_PARTITIONS_SCHEMA``),
    with its newest offset sync from ``syncs`` (``schemas.NEWEST_SYNCS_SCHEMA``). Output:
    ``schemas.PARTITION_HEALTH_SCHEMA``, ordered by pair, topic and partition."""
    col = _with_newest_syncs(partitions, syncs)
    n = len(col["topic"])
    earliest, latest, stored_at = col["source_earliest"], col["source_latest"], col["mm2_next_offset"]
    known = and_(col["position_known"], pc.is_valid(earliest), pc.is_valid(latest))
    stored = pc.is_valid(stored_at)
    known_stored = and_(known, stored)
    longs = pa.nulls(n, pa.int64())
    lag = case(
        [
            (known_stored, greatest(try_subtract(latest, greatest(stored_at, earliest)), 0)),
            (known, greatest(try_subtract(latest, earliest), 0)),
        ],
        longs,
    )
    lost = case(
        [(known_stored, greatest(try_subtract(earliest, stored_at), 0)), (known, scalar(0, n, pa.int64()))], longs
    )
    reset = case(
        [(known_stored, pc.greater(stored_at, latest)), (known, scalar(False, n, pa.bool_()))], pa.nulls(n, pa.bool_())
    )
    no_bounds = or_(pc.is_null(earliest), pc.is_null(latest))
    code = {s: scalar(s.value, n, pa.string()) for s in PartitionStatus}
    status = case(
        [
            (or_(pc.is_valid(col["error"]), no_bounds), code[PartitionStatus.ERROR]),
            (pc.invert(col["position_known"]), code[PartitionStatus.POSITION_UNKNOWN]),
            (reset, code[PartitionStatus.SOURCE_RESET]),
            (pc.greater(lost, 0), code[PartitionStatus.LOST_RECORDS]),
            (and_(pc.invert(stored), pc.greater(latest, earliest)), code[PartitionStatus.NOT_STARTED]),
            (
                or_(pc.greater(lag, lag_threshold), pc.greater(col["replication_lag_seconds"], lag_seconds_threshold)),
                code[PartitionStatus.LAGGING],
            ),
        ],
        code[PartitionStatus.REPLICATING],
    )
    lagging = pc.equal(status, PartitionStatus.LAGGING.value)
    messages = {s.value: m for s, m in PARTITION_MESSAGES.items()}
    out = {
        **{c: col[c] for c in ("cluster_pair", "topic", "partition", "remote_topic", "source_earliest")},
        **{c: col[c] for c in ("source_latest", "target_latest", "mm2_next_offset")},
        "replication_lag_records": lag,
        "records_lost_to_retention": lost,
        "source_reset": reset,
        **{c: col[c] for c in _SYNC_COLUMNS},
        "offset_sync_age_seconds": age_seconds_column(col["newest_sync_timestamp"], as_of),
        "status": status,
        "is_ok": pc.is_in(status, value_set=pa.array(sorted(s.value for s in OK_PARTITION_STATUSES))),
        "message": case(
            [(lagging, _lagging_messages(lag, col["replication_lag_seconds"], lag_threshold, lag_seconds_threshold))],
            lookup(status, messages),
        ),
        "error": pc.coalesce(
            col["error"], case([(no_bounds, scalar(NO_BOUNDS, n, pa.string()))], pa.nulls(n, pa.string()))
        ),
        **{c: col[c] for c in _LAG_IN_TIME},
    }
    table = pa.table(out).cast(arrow_schema(PARTITION_HEALTH_SCHEMA))
    return table.sort_by([(c, "ascending", "at_start") for c in _KEY])


def _with_newest_syncs(partitions: pa.Table, syncs: pa.Table) -> dict[str, pa.Array]:
    """``partitions``' columns, and for each row its partition's newest sync (null where it has none)."""
    index = {key: i for i, key in enumerate(zip(*(syncs.column(c).to_pylist() for c in _KEY), strict=True))}
    keys = zip(*(partitions.column(c).to_pylist() for c in _KEY), strict=True)
    at = pa.array([index.get(k) for k in keys], pa.int64())
    col = {name: partitions.column(name).combine_chunks() for name in partitions.column_names}
    for name in _SYNC_COLUMNS:
        col[name] = syncs.column(name).combine_chunks().take(at)
    return col


def age_seconds_of(timestamp_micros: int | None, as_of: dt.datetime) -> float | None:
    """Seconds from a timestamp (in microseconds) to ``as_of``, at least 0 (a record written after the admin read
    is fresh); None without a timestamp."""
    if timestamp_micros is None:
        return None
    return float(max(micros(as_of) - timestamp_micros, 0)) / 1e6


def age_seconds_column(timestamps: pa.Array | pa.ChunkedArray, as_of: dt.datetime) -> pa.Array:
    """Seconds from each timestamp to ``as_of``, at least 0; null without a timestamp (``age_seconds_of``)."""
    written = np.asarray(pc.cast(timestamps, pa.int64()).fill_null(0), np.int64)
    ages = np.maximum(micros(as_of) - written, 0).astype(np.float64) / 1e6
    return pa.array(ages, pa.float64(), mask=np.asarray(pc.is_null(timestamps), bool))


def _lagging_messages(lag: pa.Array, seconds: pa.Array, lag_threshold: int, lag_seconds_threshold: float) -> pa.Array:
    """A lagging partition's message, naming its records and seconds and both thresholds."""
    limits = f"lagging above {lag_threshold:,} records or {lag_seconds_threshold:g} s"
    texts = [
        None if records is None else f"Lagging: {records:,} records wait to be copied, the oldest {_age(s)} ({limits})."
        for records, s in zip(lag.to_pylist(), seconds.to_pylist(), strict=True)
    ]
    return pa.array(texts, pa.string())


def _age(seconds: float | None) -> str:
    """``%.1f s old``, rounded half up as Java's formatter rounds the double's exact value."""
    if seconds is None:
        return "of unknown age"
    return f"{Decimal(seconds).quantize(Decimal('0.1'), rounding=ROUND_HALF_UP)} s old"
