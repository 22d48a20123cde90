"""Read and write raw records of one topic: MM2's internal topics, Connect's offsets topic, test data.

Reading is bounded: a read stops at the end offsets seen when it started, so a topic that keeps growing
(offset syncs under load) still gives a finite, reproducible answer. Compacted topics and transaction
markers leave gaps in offsets; the reader never assumes ``offset + 1`` is the next record.

Reads are ``read_committed``: what a consumer of the topic is given. A record of an aborted transaction stays
in the log, and MirrorMaker 2 copies it to the target as an ordinary record unless its source consumer is
``read_committed`` too; so a reader that compares the two clusters (``PartitionReader(mark_aborted=True)``)
also returns those records, marked ``aborted``. A consumer never reads a transaction marker (one offset each).
"""

from __future__ import annotations

import dataclasses
import heapq
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from confluent_kafka import (
    OFFSET_BEGINNING,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.client_log import librdkafka_log
from mm2ctl.core.security.authorization import is_denial, principal_of, raise_for


@dataclass(frozen=True, slots=True)
class RawRecord:
    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    #: The record belongs to an aborted transaction: a ``read_committed`` consumer never reads it.
    aborted: bool = False
    #: What ``timestamp_ms`` is, as Kafka's Java client numbers it (``TimestampType.id``): 0 the producer's
    #: create time, 1 the broker's log-append time, -1 none.
    timestamp_type: int = 0


def _consumer(config: Mapping[str, str], *, isolation: str = "read_committed") -> Consumer:
    conf: dict[str, Any] = {
        **config,
        # A throwaway group that never commits: reading must leave no trace on the cluster.
        "group.id": f"mm2ctl-reader-{uuid.uuid4().hex[:12]}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
        "isolation.level": isolation,
        "logger": librdkafka_log,
    }
    return Consumer(conf)


def read_partitions(
    config: Mapping[str, str],
    topic: str,
    partitions: Sequence[int] | None = None,
    *,
    start: Mapping[int, int] | None = None,
    end: Mapping[int, int] | None = None,
    timeout_s: float = 60.0,
    isolation: str = "read_committed",
) -> Iterator[RawRecord]:
    """Yield the records of ``topic`` (all partitions, or those given) from ``start`` (default: earliest)
    up to, not including, ``end`` (default: the high watermark when the read began). ``isolation``
    ``read_uncommitted`` also yields the records of aborted (and open) transactions, unmarked."""
    consumer = _consumer(config, isolation=isolation)
    try:
        try:
            md = consumer.list_topics(topic, timeout=timeout_s)
        except KafkaException as exc:
            raise KafkaClusterError(f"reading topic {topic}: {exc}", code=_code(exc)) from exc
        tmd = md.topics.get(topic)
        if tmd is not None and tmd.error is not None and is_denial(tmd.error.name()):
            _denied(config, "DESCRIBE", topic, tmd.error.name())
        if tmd is None or tmd.error is not None:
            raise KafkaClusterError(f"topic {topic} does not exist", code="UNKNOWN_TOPIC_OR_PART")
        parts = sorted(partitions) if partitions is not None else sorted(tmd.partitions)
        ends: dict[int, int] = {}
        for p in parts:
            if end is not None and p in end:
                ends[p] = end[p]
            else:
                ends[p] = _high_watermark(consumer, topic, p, timeout_s)
        assignment = []
        for p in parts:
            first = (start or {}).get(p, OFFSET_BEGINNING)
            assignment.append(TopicPartition(topic, p, first))
        pending = {p for p in parts if ends[p] > (start or {}).get(p, 0)}
        if not pending:
            return
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"reading {topic} timed out with partitions {sorted(pending)} unfinished")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            p, off = msg.partition(), msg.offset()
            if p is None or off is None:
                continue
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    # At EOF the position is the end; a trailing transaction marker is never delivered.
                    if p in pending and off >= ends.get(p, 0):
                        pending.discard(p)
                    continue
                if is_denial(err.name()):
                    _denied(config, "READ", topic, err.name())
                raise KafkaClusterError(f"reading {topic}: {err.str()}", code=err.name())
            if p not in pending:
                continue
            if off >= ends[p]:
                pending.discard(p)
                continue
            ts_type, ts = msg.timestamp()
            yield RawRecord(
                topic=topic,
                partition=p,
                offset=off,
                timestamp_ms=int(ts),
                key=_as_bytes(msg.key()),
                value=_as_bytes(msg.value()),
                headers=_headers(msg.headers()),
                timestamp_type=java_timestamp_type(ts_type),
            )
            if off + 1 >= ends[p]:
                pending.discard(p)
            deadline = time.monotonic() + timeout_s
    finally:
        consumer.close()


def read_ranges(
    config: Mapping[str, str],
    ranges: Mapping[tuple[str, int], tuple[int, int]],
    *,
    isolation: str = "read_committed",
    timeout_s: float = 60.0,
) -> Iterator[RawRecord]:
    """Yield the records of each (topic, partition) with offsets in its ``[start, end)``, every partition
    through one consumer assigned to all of them; ``end`` must not lie past the partition's end."""
    pending = {tp for tp, (start, end) in ranges.items() if end > start}
    if not pending:
        return
    consumer = _consumer(config, isolation=isolation)
    try:
        consumer.assign([TopicPartition(t, p, ranges[(t, p)][0]) for t, p in sorted(pending)])
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"reading {len(pending)} partition(s) timed out, e.g. {min(pending)}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            topic, p, off = msg.topic(), msg.partition(), msg.offset()
            if topic is None or p is None or off is None or (topic, p) not in pending:
                continue
            _start, end = ranges[(topic, p)]
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if off >= end:
                        pending.discard((topic, p))  # a trailing transaction marker is never delivered
                    continue
                if is_denial(err.name()):
                    _denied(config, "READ", topic, err.name())
                raise KafkaClusterError(f"reading {topic}: {err.str()}", code=err.name())
            if off >= end:
                pending.discard((topic, p))
                continue
            ts_type, ts = msg.timestamp()
            yield RawRecord(
                topic,
                p,
                off,
                int(ts),
                _as_bytes(msg.key()),
                _as_bytes(msg.value()),
                _headers(msg.headers()),
                timestamp_type=java_timestamp_type(ts_type),
            )
            if off + 1 >= end:
                pending.discard((topic, p))
            deadline = time.monotonic() + timeout_s
    finally:
        consumer.close()


class PartitionReader:
    """Reads offset ranges of single partitions of one cluster through one consumer, kept open.

    ``read_partitions`` starts a consumer (and a metadata request) per call, which is right for reading a
    topic once. A planner that verifies positions reads a range of each of hundreds of partitions, where that
    start-up was most of the time; this reader re-assigns its one consumer instead. Close it (or use it as
    a context manager) when done.

    With ``mark_aborted`` a read also returns the records of aborted transactions in the range, marked
    ``aborted``: a range whose committed records leave gaps (markers, aborted records, compaction) is read a
    second time ``read_uncommitted``, through a second consumer, and what only that read holds was aborted.
    The committed read reached the range's end first, so no transaction in the range is still open.
    """

    def __init__(self, config: Mapping[str, str], *, timeout_s: float = 60.0, mark_aborted: bool = False) -> None:
        self._config = dict(config)
        self._timeout = timeout_s
        self._mark_aborted = mark_aborted
        self._consumers: dict[str, Consumer] = {}

    def _open(self, isolation: str) -> Consumer:
        consumer = self._consumers.get(isolation)
        if consumer is None:
            # A fetch for the previous partition, parked at its end, would hold the next one back for the
            # broker's whole long-poll wait (500 ms by default): keep that wait short.
            consumer = _consumer({"fetch.wait.max.ms": "10", **self._config}, isolation=isolation)
            self._consumers[isolation] = consumer
        return consumer

    def read(self, topic: str, partition: int, start: int, end: int) -> Iterator[RawRecord]:
        """Yield the records of ``topic``/``partition`` with offsets in ``[start, end)``; ``end`` must not lie
        past the partition's end (the read would wait for records that do not exist)."""
        if end <= start:
            return
        if not self._mark_aborted:
            yield from self._read("read_committed", topic, partition, start, end)
            return
        committed = list(self._read("read_committed", topic, partition, start, end))
        if len(committed) >= end - start:
            yield from committed  # no gap: nothing was aborted
            return
        seen = {r.offset for r in committed}
        aborted = [
            dataclasses.replace(r, aborted=True)
            for r in self._read("read_uncommitted", topic, partition, start, end)
            if r.offset not in seen
        ]
        yield from heapq.merge(committed, aborted, key=lambda r: r.offset)

    def _read(self, isolation: str, topic: str, partition: int, start: int, end: int) -> Iterator[RawRecord]:
        consumer = self._open(isolation)
        consumer.assign([TopicPartition(topic, partition, start)])
        deadline = time.monotonic() + self._timeout
        while True:
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"reading {topic}-{partition} [{start}, {end}) timed out")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            off = msg.offset()
            if msg.topic() != topic or msg.partition() != partition or off is None:
                continue  # left over from the previous assignment
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    if off >= end:
                        return  # a trailing transaction marker is never delivered
                    continue
                raise KafkaClusterError(f"reading {topic}: {err.str()}", code=err.name())
            if off < start:
                continue
            if off >= end:
                return
            ts_type, ts = msg.timestamp()
            yield RawRecord(
                topic=topic,
                partition=partition,
                offset=off,
                timestamp_ms=int(ts),
                key=_as_bytes(msg.key()),
                value=_as_bytes(msg.value()),
                headers=_headers(msg.headers()),
                timestamp_type=java_timestamp_type(ts_type),
            )
            if off + 1 >= end:
                return
            deadline = time.monotonic() + self._timeout

    def close(self) -> None:
        for consumer in self._consumers.values():
            consumer.close()
        self._consumers.clear()

    def __enter__(self) -> PartitionReader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _high_watermark(consumer: Consumer, topic: str, partition: int, timeout_s: float) -> int:
    """The partition's end offset; retries while a new topic's leader is still being elected."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            _low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s)
            return int(high)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            retriable = bool(getattr(err, "retriable", lambda: False)())
            if not retriable or time.monotonic() >= deadline:
                raise KafkaClusterError(f"reading {topic}-{partition}: {exc}", code=_code(exc)) from exc
            time.sleep(0.2)


def produce(
    config: Mapping[str, str],
    topic: str,
    records: Sequence[tuple[bytes | None, bytes | None, int | None]],
    *,
    timeout_s: float = 60.0,
) -> list[tuple[int, int]]:
    """Produce (key, value, partition-or-None) records in order, idempotently; return (partition, offset).

    A ``None`` value is a tombstone. Give the partition explicitly when the key must land where Java's
    partitioner put it: librdkafka's default partitioner hashes differently.
    """
    conf: dict[str, Any] = {**config, "enable.idempotence": True, "linger.ms": 5, "logger": librdkafka_log}
    producer = Producer(conf)
    results: list[tuple[int, int] | None] = [None] * len(records)
    errors: list[str] = []
    codes: list[str] = []

    def on_delivery(idx: int) -> Any:
        def cb(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(f"record {idx}: {err.str()}")
                codes.append(err.name())
            else:
                results[idx] = (msg.partition(), msg.offset())

        return cb

    for i, (key, value, partition) in enumerate(records):
        kwargs: dict[str, Any] = {"key": key, "value": value, "on_delivery": on_delivery(i)}
        if partition is not None:
            kwargs["partition"] = partition
        while True:
            try:
                producer.produce(topic, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
    remaining = producer.flush(timeout_s)
    if remaining:
        raise KafkaClusterError(f"producing to {topic}: {remaining} record(s) not delivered within {timeout_s:.0f}s")
    if errors:
        if is_denial(codes[0]):
            _denied(config, "WRITE", topic, codes[0])
        raise KafkaClusterError(f"producing to {topic} failed: {errors[0]} ({len(errors)} failed)")
    return [r for r in results if r is not None]


def _denied(config: Mapping[str, str], operation: str, topic: str, code: str) -> NoReturn:
    """A denied read or write: the one line naming the principal, the operation and the topic."""
    raise_for(
        code, "", principal=principal_of(config), operation=operation, resource_type="topic", name=topic, cluster=None
    )


def _code(exc: KafkaException) -> str | None:
    err = exc.args[0] if exc.args else None
    return str(err.name()) if err is not None and hasattr(err, "name") else None


def java_timestamp_type(librdkafka_type: int) -> int:
    """librdkafka's timestamp type (``TIMESTAMP_*``: 0 none, 1 create, 2 log-append) as Java's ``TimestampType.id``
    (-1 none, 0 create, 1 log-append), which Spark's Kafka source gives as ``timestampType``."""
    if librdkafka_type == TIMESTAMP_CREATE_TIME:
        return 0
    if librdkafka_type == TIMESTAMP_LOG_APPEND_TIME:
        return 1
    return -1


def _headers(raw: object) -> tuple[tuple[str, bytes | None], ...]:
    """Record headers as (name, bytes) pairs, in order; the client gives a list of tuples or nothing."""
    if not isinstance(raw, list):
        return ()
    return tuple((str(name), _as_bytes(value)) for name, value in raw)


def _as_bytes(value: str | bytes | None) -> bytes | None:
    """confluent-kafka gives bytes for raw records; a str only appears if a deserializer was configured."""
    if value is None or isinstance(value, bytes):
        return value
    return value.encode()
