"""MM2's lag in time: the oldest source record MM2 has not copied on each partition, its age, and how long
retention leaves before it deletes that record.

The record waiting is the first one at or after MM2's next offset ``n`` (the source's earliest when retention
deleted past ``n``, or when MM2 stored no position). Its timestamp is what the topic records
(``message.timestamp.type``): the producer's ``CreateTime`` or the broker's ``LogAppendTime``, and the row says
which. Retention compares the same timestamps (a segment is deleted once its newest record is older than
``retention.ms``), so the margin and the deletion agree on what "old" means; a segment is only deleted as a
whole and at the broker's retention check, so the record is lost no sooner than the margin says.

Every lagging partition of a pair is read through one consumer assigned to all of them
(``core.kafka.records.read_ranges``), a few offsets from ``n``: a transaction marker takes an offset and is never
delivered. The read is ``read_uncommitted``: an open transaction would hold a ``read_committed`` consumer at
the last stable offset, and MM2's own consumer copies aborted records unless told otherwise.

``retention.bytes`` binds when the partition's newest bytes reach it before the record's time is up. The
partition's size is not read; the estimate takes the waiting record's size (key, value, headers, uncompressed)
as every waiting record's, and the rate at which the records after it arrived as the rate to come: the
record is deleted once ``retention.bytes`` of newer records sit behind it. A compressed topic's records take
less room on disk, so the estimate errs early. A margin from it is marked ``retention.bytes (estimate)``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.admin import TP, ConfigValue, ItemError, KafkaAdmin
from mm2ctl.core.kafka.records import RawRecord, read_ranges

#: Offsets read from MM2's position to find the record waiting (transaction markers take an offset each).
PROBE_OFFSETS = 16
#: What one fetch asks of each partition (a larger first batch still comes whole).
FETCH_BYTES_PER_PARTITION = 64 * 1024
#: Bytes a record takes in a batch beside its key, value and headers (its length, attributes, deltas).
RECORD_OVERHEAD_BYTES = 16
#: Margin bases, as the rows name them.
BY_TIME = "retention.ms"
BY_BYTES = "retention.bytes (estimate)"
_TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}


@dataclass(frozen=True, slots=True)
class WaitingRecord:
    """The oldest record MM2 has not copied: its offset, timestamp, what the timestamp is, its size."""

    offset: int
    timestamp_ms: int
    timestamp_type: str | None
    size_bytes: int


@dataclass(frozen=True, slots=True)
class Retention:
    """A topic's effective retention: ``retention_ms`` None is unlimited (-1), ``retention_bytes`` None too;
    ``source`` says where ``retention.ms`` comes from (``topic``, ``broker`` or ``default``)."""

    retention_ms: int | None
    source: str
    retention_bytes: int | None
    compacted: bool


def waiting_ranges(
    bounds: Mapping[TP, tuple[int | None, int | None]], next_offsets: Mapping[TP, int]
) -> dict[TP, tuple[int, int]]:
    """The offsets to read for each partition with records waiting: from where MM2 copies next (never below
    the earliest) a few offsets on, never past the end. ``bounds`` is ``(earliest, latest)``; a partition
    with no stored position starts at its earliest, as MM2 does."""
    ranges: dict[TP, tuple[int, int]] = {}
    for tp, (earliest, latest) in bounds.items():
        if earliest is None or latest is None:
            continue
        start = max(next_offsets.get(tp, earliest), earliest)
        if start < latest:
            ranges[tp] = (start, min(latest, start + PROBE_OFFSETS))
    return ranges


def waiting_record(r: RawRecord) -> WaitingRecord:
    headers = sum(len(name) + len(value or b"") for name, value in r.headers)
    size = len(r.key or b"") + len(r.value or b"") + headers + RECORD_OVERHEAD_BYTES
    return WaitingRecord(r.offset, r.timestamp_ms, _TIMESTAMP_TYPES.get(r.timestamp_type), size)


def read_waiting_records(
    config: Mapping[str, str], ranges: Mapping[TP, tuple[int, int]], *, timeout_s: float = 60.0
) -> dict[TP, WaitingRecord]:
    """The first record of each range, all partitions through one consumer. Raises ``KafkaClusterError``."""
    found: dict[TP, WaitingRecord] = {}
    # A few offsets of each partition are wanted: fetch a small slice of each, not the default megabyte.
    small = {**config, "max.partition.fetch.bytes": str(FETCH_BYTES_PER_PARTITION)}
    for r in read_ranges(small, ranges, isolation="read_uncommitted", timeout_s=timeout_s):
        if r.timestamp_type >= 0:  # a record without a timestamp (-1: an old message format) says nothing
            found.setdefault((r.topic, r.partition), waiting_record(r))
    return found


def retention_of(configs: Mapping[str, ConfigValue]) -> Retention:
    """A topic's ``Retention`` from its effective configs (``KafkaAdmin.topic_config_sources``)."""
    ms = configs.get("retention.ms")
    size = configs.get("retention.bytes")
    policy = {p.strip() for p in configs["cleanup.policy"].value.split(",")} if "cleanup.policy" in configs else set()
    return Retention(
        retention_ms=_limit(ms.value) if ms else None,
        source=ms.source if ms else "default",
        retention_bytes=_limit(size.value) if size else None,
        compacted="delete" not in policy and "compact" in policy,
    )


def read_retention(admin: KafkaAdmin, topics: Sequence[str]) -> dict[str, Retention]:
    """Each topic's ``Retention``; a topic whose configs could not be described is left out."""
    try:
        described = admin.topic_config_sources(topics)
    except KafkaClusterError:
        return {}
    return {t: retention_of(c) for t, c in described.items() if not isinstance(c, ItemError)}


def _limit(value: str) -> int | None:
    """A retention limit; a negative one (-1) is none."""
    n = int(value)
    return n if n >= 0 else None


def lag_seconds(lag_records: int | None, waiting: WaitingRecord | None, at: dt.datetime) -> float | None:
    """The age at ``at`` of the record waiting, at least 0; 0 when nothing waits; None when unknown."""
    if lag_records is None:
        return None
    if lag_records == 0:
        return 0.0
    if waiting is None:
        return None
    return max(_epoch_ms(at) - waiting.timestamp_ms, 0) / 1000.0


def retention_margin(
    lag_records: int | None, waiting: WaitingRecord | None, retention: Retention | None, at: dt.datetime
) -> tuple[float | None, str | None]:
    """Seconds from ``at`` until retention may delete the record waiting, at least 0, and the basis
    (``BY_TIME`` or ``BY_BYTES``); (None, None) when nothing waits, the topic is compacted, its retention or
    the record is unknown, or retention is unlimited."""
    if not lag_records or waiting is None or retention is None or retention.compacted:
        return None, None
    margins: list[tuple[float, str]] = []
    if retention.retention_ms is not None:
        left = (waiting.timestamp_ms + retention.retention_ms - _epoch_ms(at)) / 1000.0
        margins.append((max(left, 0.0), BY_TIME))
    age = lag_seconds(lag_records, waiting, at)
    if retention.retention_bytes is not None and age:
        behind = lag_records * waiting.size_bytes  # the bytes written since the record, at its size each
        margins.append((max(age * (retention.retention_bytes / behind - 1.0), 0.0), BY_BYTES))
    if not margins:
        return None, None
    return min(margins)


def _epoch_ms(at: dt.datetime) -> int:
    return int(at.timestamp() * 1000)
