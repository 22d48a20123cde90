"""The failover drill's load: numbered records on the source (a head, then small transactions, some of them
aborted), the application that consumes part of them and commits there, and the consumer that resumes from a
committed position and reads to the end.

Every committed record carries its partition's sequence number (``seq=N`` in the value, ``seq`` header); a
record of an aborted transaction is numbered apart (``aborted=N``), so content alone tells them apart on
either cluster.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Mapping, Sequence

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_STORED,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.client_log import librdkafka_log
from mm2ctl.core.progress import Progress
from mm2ctl.drill.context import DrillContext, DrillOptions


def _value(partition: int, seq: int, pad: int = 0) -> bytes:
    return b"drill p=%d %sseq=%d" % (partition, b"x" * pad + b" " if pad else b"", seq)


def _aborted_value(partition: int, n: int) -> bytes:
    """A record of an aborted transaction: numbered apart from the sequence, which counts committed records."""
    return b"drill p=%d aborted=%d" % (partition, n)


def seq_of(value: bytes | None) -> int | None:
    if not value or not value.startswith(b"drill ") or b"seq=" not in value:
        return None
    try:
        return int(value.rsplit(b"seq=", 1)[1])
    except (IndexError, ValueError):
        return None


def is_aborted_record(value: bytes | None) -> bool:
    return value is not None and value.startswith(b"drill ") and b" aborted=" in value


#: What a consumer read, in order: a sequence number, or ``ABORTED`` for a record of an aborted transaction.
ABORTED = -1


class SequenceProducer:
    """Numbered, keyed records per partition: a plain head, then small transactions on a background thread."""

    def __init__(self, conf: Mapping[str, str], topic: str, partitions: int, *, aborting: bool = False) -> None:
        self.conf, self.topic, self.partitions = dict(conf), topic, partitions
        self.aborting = aborting
        self.next_seq = [0] * partitions
        self.transactions = 0
        self.aborted_transactions = 0
        self.aborted_records = [0] * partitions
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def head(self, count: int, pad: int = 0) -> None:
        rows: list[tuple[bytes | None, bytes | None, int | None]] = []
        for p in range(self.partitions):
            for _ in range(count):
                rows.append((b"k%d-%d" % (p, self.next_seq[p]), _value(p, self.next_seq[p], pad), p))
                self.next_seq[p] += 1
        records.produce(self.conf, self.topic, rows)

    def start(self, rate: float) -> None:
        self._thread = threading.Thread(target=self._run, args=(rate,), name="drill-producer", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the producers (the planned migration's first step); raise what the thread failed with."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=60)
        if self._error is not None:
            raise KafkaClusterError(f"the drill's transactional producer failed: {self._error}") from self._error

    def _run(self, rate: float) -> None:
        try:
            producer = Producer(
                {
                    **self.conf,
                    "transactional.id": f"mm2ctl-drill-{uuid.uuid4().hex[:10]}",
                    "linger.ms": 2,
                    "logger": librdkafka_log,
                }
            )
            producer.init_transactions(30)
            i = 0
            while not self._stop.is_set():
                p = i % self.partitions
                n = 1 + (i // self.partitions) % 3  # 1, 2 or 3 records: markers fall at uneven distances
                aborting = self.aborting and (i // self.partitions) % 2 == 1
                producer.begin_transaction()
                for _ in range(n):
                    if aborting:
                        k = self.aborted_records[p]
                        producer.produce(self.topic, key=b"a%d-%d" % (p, k), value=_aborted_value(p, k), partition=p)
                        self.aborted_records[p] += 1
                        continue
                    seq = self.next_seq[p]
                    producer.produce(
                        self.topic,
                        key=b"k%d-%d" % (p, seq),
                        value=_value(p, seq),
                        partition=p,
                        headers=[("seq", b"%d" % seq)],
                    )
                    self.next_seq[p] += 1
                if aborting:
                    producer.flush(30)  # aborting drops what is still queued: the records must be in the log
                    producer.abort_transaction(30)
                    self.aborted_transactions += 1
                else:
                    producer.commit_transaction(30)
                self.transactions += 1
                i += 1
                time.sleep(n / rate)
        except BaseException as exc:  # reported by stop(); a dead producer must not hang the drill
            self._error = exc


def consume_part_and_commit(
    conf: Mapping[str, str],
    topic: str,
    group: str,
    want: Mapping[int, int],
    timeout_s: float = 60.0,
    *,
    from_committed: bool = False,
) -> None:
    """The application on the source: read ``want[p]`` records of each partition from the start (or, with
    ``from_committed``, from where the group is), commit the position after the last one read (it may name a
    transaction marker), leave.

    Partitions are assigned, not subscribed, so every partition gets a commit point of its own; the group
    has no members afterwards, which MM2's ``sync.group.offsets`` needs.
    """
    consumer = Consumer(
        {
            **conf,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "logger": librdkafka_log,
        }
    )
    seen = dict.fromkeys(want, 0)
    last: dict[int, int] = {}
    try:
        start = OFFSET_STORED if from_committed else OFFSET_BEGINNING
        consumer.assign([TopicPartition(topic, p, start) for p in want])
        deadline = time.monotonic() + timeout_s
        while any(seen[p] < want[p] for p in want):
            if time.monotonic() > deadline:
                raise KafkaClusterError(
                    f"the drill's source consumer read only {seen} of {dict(want)} records of {topic}"
                )
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            p, off = msg.partition(), msg.offset()
            if p is None or off is None or seen[p] >= want[p]:
                continue
            seen[p] += 1
            last[p] = off
            if seen[p] == want[p]:
                consumer.pause([TopicPartition(topic, p)])
        consumer.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in last.items()], asynchronous=False)
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as {group}: {exc}") from exc
    finally:
        consumer.close()


def read_seqs(conf: Mapping[str, str], topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    """(offset, seq) per partition, everything readable now."""
    out: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
    for r in records.read_partitions(conf, topic, list(range(partitions))):
        seq = seq_of(r.value)
        if seq is not None:
            out[r.partition].append((r.offset, seq))
    return out


def resume_and_read(
    conf: Mapping[str, str], topic: str, group: str, partitions: int, timeout_s: float = 60.0
) -> dict[int, list[int]]:
    """The application on the target: start where ``group`` committed (Kafka's default reset, ``latest``,
    where it has no valid offset) and read every partition to its end, ``read_committed``; the sequence
    numbers it sees, ``ABORTED`` for each copy of a record of an aborted transaction."""
    consumer = Consumer(
        {
            **conf,
            "group.id": group,
            "auto.offset.reset": "latest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
            "logger": librdkafka_log,
        }
    )
    seen: dict[int, list[int]] = {p: [] for p in range(partitions)}
    pending = set(range(partitions))
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_STORED) for p in range(partitions)])
        deadline = time.monotonic() + timeout_s
        while pending:
            if time.monotonic() > deadline:
                raise KafkaClusterError(
                    f"the drill's target consumer did not reach the end of {topic} (partitions {sorted(pending)})"
                )
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            p = msg.partition()
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF and p is not None:
                    pending.discard(p)
                continue
            seq = ABORTED if is_aborted_record(msg.value()) else seq_of(msg.value())
            if p is not None and seq is not None:
                seen[p].append(seq)
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as {group}: {exc}") from exc
    finally:
        consumer.close()
    return seen


def commit_before_aborted(log: Sequence[bool], want: int) -> int:
    """How many records a consumer reading from the log start takes so that the next record after its last
    one is a record of an aborted transaction: the smallest count at or after ``want``, else ``want``.
    ``log`` says, per data record in offset order, whether it was aborted."""
    taken = 0
    for i, aborted in enumerate(log):
        if aborted:
            continue
        taken += 1
        if taken >= want and i + 1 < len(log) and log[i + 1]:
            return taken
    return want


def aborted_flags(conf: Mapping[str, str], topic: str, partitions: int) -> dict[int, list[bool]]:
    """Per partition, each data record in offset order: was it aborted? (It is only in a read_uncommitted read.)"""
    admin = KafkaAdmin.connect(conf)
    ends = {p: b.latest or 0 for (_t, p), b in admin.partition_bounds([(topic, p) for p in range(partitions)]).items()}
    committed = {(r.partition, r.offset) for r in records.read_partitions(conf, topic, end=ends)}
    out: dict[int, list[bool]] = {p: [] for p in range(partitions)}
    for r in records.read_partitions(conf, topic, end=ends, isolation="read_uncommitted"):
        out[r.partition].append((r.partition, r.offset) not in committed)
    return out


def produce_head(
    source_conf: Mapping[str, str], topic: str, o: DrillOptions, progress: Progress
) -> tuple[KafkaAdmin, SequenceProducer]:
    """Create ``topic`` on the source, produce its head and delete the first ``deleted`` records of each
    partition (retention before mirroring); the source's admin client and the producer, which goes on."""
    src_admin = KafkaAdmin.connect(source_conf, name="source")
    src_admin.create_topics({topic: o.partitions})
    producer = SequenceProducer(source_conf, topic, o.partitions, aborting=o.aborted_transactions)
    progress(
        f"producing {o.head} numbered records per partition to {topic}, then deleting the first "
        f"{o.deleted} (retention before mirroring)"
    )
    producer.head(o.head)
    if o.deleted:
        res = src_admin.delete_records({(topic, p): o.deleted for p in range(o.partitions)})
        bad = [r for r in res if r.error is not None]
        if bad:
            raise KafkaClusterError(f"delete-records on {topic}: {bad[0].error}")
    return src_admin, producer


def traffic_then_commit(ctx: DrillContext, producer: SequenceProducer) -> list[int]:
    """Transactional traffic while MM2 mirrors; the group consumes part of each partition on the source,
    commits and leaves; the traffic goes on for a while, then stops (for (g), MM2 throttled, then a burst of
    larger records). Returns the records produced per partition."""
    o, topic, group, progress = ctx.options, ctx.topic, ctx.group, ctx.progress
    if ctx.target.throttle is not None:
        progress(f"(g) throttling MM2's copy to {o.behind_bytes_per_s} bytes/s on the target")
        ctx.target.throttle(o.behind_bytes_per_s)
    progress(f"transactional traffic at {o.rate:g} records/s while MM2 mirrors {topic} -> {ctx.remote}")
    producer.start(o.rate)
    time.sleep(o.before_commit_s)
    # A different share of each partition (50%, 60%, 70%, ...), so commit points land in different places.
    want = {p: max(1, int((producer.next_seq[p] - o.deleted) * (0.5 + 0.1 * (p % 3)))) for p in range(o.partitions)}
    if o.aborted_transactions:
        # Just before an aborted transaction: where a position that counts offsets resumes on its copies.
        flags = aborted_flags(ctx.source_conf, topic, o.partitions)
        want = {p: commit_before_aborted(flags[p], n) for p, n in want.items()}
    progress(f"group {group} consumes {sum(want.values())} records on the source, commits and stops")
    try:
        consume_part_and_commit(ctx.source_conf, topic, group, want)
        time.sleep(o.after_commit_s)
    finally:
        producer.stop()
    if ctx.target.throttle is not None:
        progress(f"(g) {o.behind_records} more records per partition at once, MM2 throttled")
        producer.head(o.behind_records, pad=100)
    produced = list(producer.next_seq)
    aborted_note = f" ({producer.aborted_transactions} aborted)" if o.aborted_transactions else ""
    progress(f"producers stopped: {sum(produced)} records, {producer.transactions} transactions{aborted_note}")
    return produced
