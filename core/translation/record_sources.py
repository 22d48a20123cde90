"""Kafka as the translation rule reads it: one partition's records as a ``core.translation.rule.RecordSource``, and the
target offset for a record's timestamp as a ``core.translation.timestamp_lookup.OffsetForTime``.

Every caller that proves a position by content (``plan failover``, ``plan failback``, ``inspect --exact``, apply's
writes) reads records the same way: a partition's groups are translated in increasing offset order, so
``KafkaRecords`` reads ahead in chunks and one consumer read serves many groups.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.admin import TP, ItemError, KafkaAdmin
from mm2ctl.core.kafka.records import PartitionReader, RawRecord, read_ranges
from mm2ctl.core.translation.rule import DEFAULT_WINDOW, Bounds, Digested, record_digest

#: Offsets one consumer read fetches ahead of a verification's window (see ``KafkaRecords``).
READ_AHEAD = 5_000


def digested(r: RawRecord) -> Digested:
    """A record as verification compares it: offset, content digest, timestamp, and whether it was aborted."""
    return Digested(r.offset, record_digest(r.timestamp_ms, r.key, r.value, r.headers), r.timestamp_ms, r.aborted)


class KafkaRecords:
    """``core.translation.rule.RecordSource`` over one partition of one cluster, reading ahead in chunks.

    The planner asks for the windows of every group on a partition in increasing offset order, so one consumer
    read of ``chunk`` offsets serves many groups; a request below what is held starts over. Records well below
    the newest request are dropped, so memory stays at about two chunks per partition. ``limit`` is the
    partition's end when planning began: nothing is read past it (a read there would wait for new records).
    ``reader`` is the cluster's one consumer (``core.kafka.records.PartitionReader``), shared by its partitions; on
    the cluster whose records are the originals (the source of a flow) it marks the records of aborted
    transactions (``mark_aborted``), which MM2 may have copied as ordinary records.
    """

    def __init__(
        self, reader: PartitionReader, topic: str, partition: int, limit: int, chunk: int = READ_AHEAD
    ) -> None:
        self._reader, self._topic, self._partition = reader, topic, partition
        self._limit, self._chunk = limit, chunk
        self._lo = self._hi = 0  # the records held cover offsets [lo, hi)
        self._recs: list[Digested] = []
        self._offsets: list[int] = []

    def read(self, start: int, end: int) -> list[Digested]:
        end = min(end, self._limit)
        if end <= start:
            return []
        if start < self._lo or start > self._hi:
            # A verification asks for the records after ``c``, then for the one before it: begin a window early.
            self._lo = self._hi = max(0, start - DEFAULT_WINDOW) if start > self._hi else start
            self._recs, self._offsets = [], []
        if end > self._hi:
            stop = min(self._limit, max(end, self._hi + self._chunk))
            for r in self._reader.read(self._topic, self._partition, self._hi, stop):
                self._recs.append(digested(r))
                self._offsets.append(r.offset)
            self._hi = stop
            keep_from = bisect.bisect_left(self._offsets, start - self._chunk)
            if keep_from:
                del self._recs[:keep_from], self._offsets[:keep_from]
                self._lo = start - self._chunk
        i, j = bisect.bisect_left(self._offsets, start), bisect.bisect_left(self._offsets, end)
        return self._recs[i:j]


def last_record_offset(reader: PartitionReader, topic: str, partition: int, bounds: Bounds) -> int | None:
    """Offset of the partition's last readable record (the end may be a transaction marker); None when the
    partition holds none."""
    got = KafkaRecords(reader, topic, partition, bounds.end).read(
        max(bounds.start, bounds.end - DEFAULT_WINDOW), bounds.end
    )
    return got[-1].offset if got else None


def last_record_offsets(config: Mapping[str, str], bounds: Mapping[TP, Bounds]) -> dict[TP, int | None]:
    """``last_record_offset`` of every partition in ``bounds`` (read committed), through one consumer assigned
    to all of them (``core.kafka.records.read_ranges``): one fetch round for the lot instead of one per partition.
    Each partition is read over the same window before its end as ``last_record_offset`` reads."""
    last: dict[TP, int | None] = dict.fromkeys(bounds)
    ranges = {tp: (max(b.start, b.end - DEFAULT_WINDOW), b.end) for tp, b in bounds.items()}
    for r in read_ranges(config, ranges):
        last[(r.topic, r.partition)] = r.offset  # in offset order within a partition: the last one wins
    return last


class OffsetsForTimes:
    """``core.translation.timestamp_lookup.OffsetForTime`` over one partition: ListOffsets by timestamp, one call
    each."""

    def __init__(self, admin: KafkaAdmin, topic: str, partition: int) -> None:
        self._admin, self._tp = admin, (topic, partition)

    def __call__(self, timestamp_ms: int) -> int | None:
        got = self._admin.offsets_for_times({self._tp: timestamp_ms})[self._tp]
        if isinstance(got, ItemError):
            raise KafkaClusterError(
                f"looking up the offset of timestamp {timestamp_ms} in {self._tp[0]}/{self._tp[1]}: {got.message}"
            )
        return got
