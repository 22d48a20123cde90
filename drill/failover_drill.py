"""The failover drill a DR plan asks every team to run: count what a consumer loses or reads twice when it
moves from the source to the target, for each way of choosing its target position, on the same data.

Why a drill and not a unit test: MM2 translates offsets from sparse syncs that it writes under load, at
transaction markers and after retention, so the honest answer comes only from a real MirrorMaker 2 copying a
real, awkward log. The source is made awkward on purpose, so offset *numbers* differ between clusters:

- **Retention ate the head.** ``head`` records per partition are produced and the first ``deleted`` of them
  are removed with DeleteRecords *before* the MM2 flow exists, so MM2 starts copying at the source's log
  start and the target's offsets begin at 0 while the source's begin at ``deleted``.
- **Transactions.** While MM2 runs, a transactional producer writes small transactions (1 to 3 records per
  partition); every commit marker takes a source offset that MM2 does not replicate, so the source advances
  faster than the target.
- **Aborted transactions** (``DrillOptions.aborted_transactions``): every other transaction of a partition is
  aborted. Its records stay in the source log, no consumer of the source reads them, and MM2 copies them to
  the target as ordinary records unless its source consumer reads committed records only. Each partition's
  commit point is moved to just before an aborted transaction, where a position that counts offsets resumes
  on those copies.

Every record carries its partition's sequence number (``seq=N`` in the value, ``seq`` header). A group
consumes part of the stream on the source, commits, and leaves. Producers keep going for a while (MM2 lags
behind), then stop (a planned migration). The strategies then put the group on the target:

- (a) ``raw``: the committed source offset *number* copied as is (replication without translation);
- (b) ``mm2``: what MM2's own ``sync.group.offsets`` wrote on the target;
- (c) ``conservative``: ``mm2ctl plan failover --source-unavailable`` (the one rule, docs/design.md,
  "Translation", from syncs and checkpoints only), planned with the source's address replaced by a closed port
  to prove it needs nothing from it;
- (d) ``verified``: ``mm2ctl plan failover --stop-mirroring`` (verified exact translation), which also waits
  for MM2 to catch up and stops the flow's connectors;
- (e) ``failback``: the round trip. A copy of the group starts on the target where (d) put it, consumes more
  there, and ``mm2ctl plan failback`` moves it back to the source;
- (f) ``timestamp``: the offset syncs of partition 0 are truncated (only on a flow the drill owns), and a
  copy of the group is failed over with ``--fallback timestamp``: that partition has no sync at all;
- (g) ``behind``: MM2's copy is throttled (a client quota on its producer; only on the lab), and once the
  traffic stops a burst of larger numbered records is produced, which MM2 copies only slowly; a copy of the
  group committed in the middle of the burst is planned with ``--stop-mirroring`` then, the throttle is
  lifted, and apply waits for MM2, stops it, translates the rows it had not copied and writes. The flow's
  connectors are resumed afterwards, so (b) and (d) see MM2 as before.

(c) and (d) are planned and applied for real on the group itself and read back, (e), (f) and (g) on copies of
it (``<group>.drill-e``, ``<group>.drill-f``, ``<group>.drill-g``); each strategy's offsets are then committed
to a copy of the group (``<group>.drill-<strategy>``), and a real consumer resumes from the committed positions
(``auto.offset.reset=latest``, Kafka's default) and reads to the end: on the target, or for (e) on the source.
LOST are sequence numbers at or after the commit point it never sees; DUPLICATED are sequence numbers before
the commit point it reads again; ABORTED are records of aborted transactions (their copies) it reads before its
first record at or after the commit point: what its position made it read, which no consumer of the source
ever saw. Copies MM2 made of transactions aborted later lie further on, where every consumer of the target
reads them whatever its position; the drill notes them. The commit point is the group's on the source, for
(e) the copy's on the target after it consumed more there, for (g) the copy's in the middle of the burst.

This module never prints: it reports through ``progress`` and returns a ``DrillResult``.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_STORED,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

from mm2ctl.core import records
from mm2ctl.core.admin import TP, KafkaAdmin
from mm2ctl.core.client_log import librdkafka_log
from mm2ctl.core.config import PairConfig, load_mm2_config
from mm2ctl.core.errors import ConfigError, KafkaClusterError, Mm2ctlError
from mm2ctl.core.polling import poll_until
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.drill.sync_truncation import truncate_partition_syncs
from mm2ctl.inspector.mm2_position import read_position
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.kafka_records import normalize_each, read_sync_histories
from mm2ctl.plans.live_state import LiveState, open_live_state
from mm2ctl.plans.planners.context import PlanBuilder
from mm2ctl.plans.planners.failback import FailbackOptions, plan_failback
from mm2ctl.plans.planners.failover import FailoverOptions, FailoverReport, Source, plan_failover, read_checkpoints
from mm2ctl.plans.planners.mm2_connectors import ALL_ROLES, find_pair_connectors
from mm2ctl.plans.positions import Fallback
from mm2ctl.plans.serialize import write_plan_file
from mm2ctl.plans.translation import Sync
from mm2ctl.remediate import engine

if TYPE_CHECKING:
    from mm2ctl.lab.lab import LabInfo

#: A planner run on a fresh builder: the plan and its per-row report.
PlanFunction = Callable[[PlanBuilder], tuple[Plan, FailoverReport]]


#: A port nothing listens on: the source's address in the ``--source-unavailable`` plan's config copy.
UNREACHABLE_BOOTSTRAP = "127.0.0.1:1"


class Strategy(StrEnum):
    RAW = "a"
    MM2 = "b"
    CONSERVATIVE = "c"
    VERIFIED = "d"
    FAILBACK = "e"
    TIMESTAMP = "f"
    BEHIND = "g"


LABELS = {
    Strategy.RAW: "raw source offset copied",
    Strategy.MM2: "MM2 sync.group.offsets",
    Strategy.CONSERVATIVE: "mm2ctl conservative (--source-unavailable)",
    Strategy.VERIFIED: "mm2ctl verified (plan failover)",
    Strategy.FAILBACK: "mm2ctl failback after (d) (plan failback)",
    Strategy.TIMESTAMP: "mm2ctl timestamp (syncs of p0 truncated)",
    Strategy.BEHIND: "mm2ctl --stop-mirroring, MM2 throttled behind",
}

#: Strategies whose offsets are on the source cluster: a consumer resumes there (the others resume on the target).
ON_SOURCE = frozenset({Strategy.FAILBACK})


@dataclass(frozen=True)
class DrillOptions:
    """How much data and for how long. The defaults take about 40 s on a 2-core machine."""

    partitions: int = 3
    #: Records per partition produced before MM2 exists, and how many of them retention "deleted".
    head: int = 150
    deleted: int = 60
    #: Records per second (all partitions) of the transactional producer while MM2 runs.
    rate: float = 150.0
    #: Seconds of transactional traffic before the group commits, and after it (MM2 lags behind).
    before_commit_s: float = 4.0
    after_commit_s: float = 4.0
    #: How long MM2 gets to catch up and checkpoint the group before the failover.
    settle_timeout_s: float = 120.0
    #: Abort every other transaction of a partition, and commit the group just before an aborted one.
    aborted_transactions: bool = False
    #: (g): MM2's copy throttled to this many bytes a second on the target while the traffic runs (only where
    #: the drill can set a client quota: the lab).
    #: Far below the burst's rate (MM2 copies a few percent of it), not so low that the broker, which delays a
    #: throttled client in proportion to how far it went over, keeps MM2 waiting long after the quota is lifted.
    behind_bytes_per_s: int = 3_000
    #: (g): numbered records of about 130 bytes per partition produced at once after the traffic, MM2 throttled;
    #: (g)'s copy of the group commits in the middle of them.
    behind_records: int = 1_500


@dataclass(frozen=True)
class DrillTarget:
    """The MM2 flow the drill runs through, once it exists (the lab creates one after the head is deleted)."""

    mm2_config: str
    pair: str
    connect_url: str
    topic: str
    group: str
    #: Stop the pair's connectors in (d) (``--stop-mirroring``). The lab's own drill flow always does.
    stop_mirroring: bool = True
    #: The drill owns the flow, so (f) may truncate one partition's offset syncs (``drill.sync_truncation``).
    owns_flow: bool = False
    #: Throttle MM2's copy to a rate in bytes a second, or lift it (None): (g) runs only where this is given.
    throttle: Callable[[int | None], None] | None = None


#: Called after the source topic has lost its head, before any consumer runs; returns the flow to drill.
FlowFactory = Callable[[], DrillTarget]


@dataclass(frozen=True)
class PartitionOutcome:
    partition: int
    source_committed: int
    commit_seq: int
    produced: int
    target_offset: int | None
    lost: int
    duplicated: int
    #: Source offsets between the newest offset sync at or below the commit point and the next one (or the
    #: partition's end): the sync interval MM2 actually left there. None when no sync covers the point.
    sync_interval: int | None = None
    #: Records of aborted transactions (MM2's copies) read before the first record at the commit point.
    aborted: int = 0


@dataclass(frozen=True)
class StrategyOutcome:
    strategy: Strategy
    label: str
    partitions: tuple[PartitionOutcome, ...]
    #: A one-line statement of the goal (None: measured, no goal) and whether it was met.
    goal: str | None
    met: bool | None
    detail: str = ""

    @property
    def lost(self) -> int:
        return sum(p.lost for p in self.partitions)

    @property
    def duplicated(self) -> int:
        return sum(p.duplicated for p in self.partitions)

    @property
    def aborted(self) -> int:
        return sum(p.aborted for p in self.partitions)


@dataclass(frozen=True)
class DrillResult:
    replication_policy: str
    pair: str
    topic: str
    remote_topic: str
    group: str
    partitions: int
    records: int
    deleted_before_mirroring: int
    transactions: int
    offset_lag_max: int
    strategies: tuple[StrategyOutcome, ...]
    seconds: float
    notes: tuple[str, ...] = ()
    #: Aborted transactions and their records (the aborted-transactions load), and how many of those records
    #: MM2 copied to the target.
    aborted_transactions: int = 0
    aborted_records: int = 0
    aborted_copied: int = 0

    @property
    def goals_met(self) -> bool:
        return all(s.met is not False for s in self.strategies)

    def outcome(self, strategy: Strategy) -> StrategyOutcome:
        return next(s for s in self.strategies if s.strategy is strategy)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["goals_met"] = self.goals_met
        for s, out in zip(self.strategies, doc["strategies"], strict=True):
            out["strategy"] = s.strategy.value
            out["lost"], out["duplicated"], out["aborted"] = s.lost, s.duplicated, s.aborted
        return doc


# ------------------------------------------------------------------------------------------- data


def _value(partition: int, seq: int, pad: int = 0) -> bytes:
    return b"drill p=%d %sseq=%d" % (partition, b"x" * pad + b" " if pad else b"", seq)


def _aborted_value(partition: int, n: int) -> bytes:
    """A record of an aborted transaction: numbered apart from the sequence, which counts committed records."""
    return b"drill p=%d aborted=%d" % (partition, n)


def _seq_of(value: bytes | None) -> int | None:
    if not value or not value.startswith(b"drill ") or b"seq=" not in value:
        return None
    try:
        return int(value.rsplit(b"seq=", 1)[1])
    except (IndexError, ValueError):
        return None


def _is_aborted_record(value: bytes | None) -> bool:
    return value is not None and value.startswith(b"drill ") and b" aborted=" in value


#: What a consumer read, in order: a sequence number, or ``ABORTED`` for a record of an aborted transaction.
ABORTED = -1


class _SequenceProducer:
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


def _consume_part_and_commit(
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


def _read_seqs(conf: Mapping[str, str], topic: str, partitions: int) -> dict[int, list[tuple[int, int]]]:
    """(offset, seq) per partition, everything readable now."""
    out: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
    for r in records.read_partitions(conf, topic, list(range(partitions))):
        seq = _seq_of(r.value)
        if seq is not None:
            out[r.partition].append((r.offset, seq))
    return out


def _resume_and_read(
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
            seq = ABORTED if _is_aborted_record(msg.value()) else _seq_of(msg.value())
            if p is not None and seq is not None:
                seen[p].append(seq)
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as {group}: {exc}") from exc
    finally:
        consumer.close()
    return seen


# ------------------------------------------------------------------------------------------ scoring


def score(
    strategy: Strategy,
    *,
    committed: Mapping[int, int],
    source_log: Mapping[int, Sequence[tuple[int, int]]],
    produced: Sequence[int],
    target_offsets: Mapping[int, int | None],
    seen: Mapping[int, Sequence[int]],
    offset_lag_max: int,
    sync_intervals: Mapping[int, int | None] | None = None,
    detail: str = "",
) -> StrategyOutcome:
    """Lost, duplicated and aborted records per partition for one strategy, and whether its goal was met.

    The commit point of a partition is the sequence number of the first source record at or after the
    committed offset (the offset may name a transaction marker), or everything produced when none is left.
    ``seen`` holds ``ABORTED`` for each record of an aborted transaction read: those read before the first
    record at or after the commit point count as ``aborted``.
    """
    parts = []
    for p in sorted(committed):
        c = committed[p]
        commit_seq = next((seq for off, seq in source_log[p] if off >= c), produced[p])
        read = list(seen.get(p, ()))
        first = next((i for i, x in enumerate(read) if x >= commit_seq), len(read))
        aborted = sum(1 for x in read[:first] if x == ABORTED)
        got = [x for x in read if x != ABORTED]
        after = [s for s in got if s >= commit_seq]
        lost = len(set(range(commit_seq, produced[p])) - set(after))
        duplicated = sum(1 for s in got if s < commit_seq) + (len(after) - len(set(after)))
        interval = (sync_intervals or {}).get(p)
        parts.append(
            PartitionOutcome(p, c, commit_seq, produced[p], target_offsets.get(p), lost, duplicated, interval, aborted)
        )
    goal: str | None = None
    met: bool | None = None
    if strategy in (Strategy.VERIFIED, Strategy.FAILBACK, Strategy.TIMESTAMP, Strategy.BEHIND):
        goal = "lost 0, duplicated 0, aborted 0"
        met = all(x.lost == 0 and x.duplicated == 0 and x.aborted == 0 for x in parts)
    elif strategy is Strategy.CONSERVATIVE:
        # The conservative rule resumes just after the newest sync at or below the commit point, so it can
        # replay at most the sync interval MM2 left there (records, and copies of aborted ones); MM2 aims to
        # keep that within offset.lag.max.
        goal = "lost 0, duplicated + aborted <= one sync interval per partition"
        met = all(
            x.lost == 0 and x.sync_interval is not None and x.duplicated + x.aborted <= x.sync_interval for x in parts
        )
    return StrategyOutcome(strategy, LABELS[strategy], tuple(parts), goal, met, detail)


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


def _aborted_flags(conf: Mapping[str, str], topic: str, partitions: int) -> dict[int, list[bool]]:
    """Per partition, each data record in offset order: was it aborted? (It is only in a read_uncommitted read.)"""
    admin = KafkaAdmin.connect(conf)
    ends = {p: b.latest or 0 for (_t, p), b in admin.partition_bounds([(topic, p) for p in range(partitions)]).items()}
    committed = {(r.partition, r.offset) for r in records.read_partitions(conf, topic, end=ends)}
    out: dict[int, list[bool]] = {p: [] for p in range(partitions)}
    for r in records.read_partitions(conf, topic, end=ends, isolation="read_uncommitted"):
        out[r.partition].append((r.partition, r.offset) not in committed)
    return out


def sync_intervals(
    syncs: Mapping[tuple[str, int], Sequence[Sync]],
    topic: str,
    committed: Mapping[int, int],
    source_end: Mapping[int, int],
    resume: Mapping[int, int] | None = None,
) -> dict[int, int | None]:
    """Per partition, the sync interval around the commit point: from the newest sync with upstream <= the
    committed offset to the upstream of the first sync at or after the record the group reads next (``resume``,
    its offset; else the first sync past the committed offset), or, past the last sync, the source partition's
    end. A sync between the two names a record of an aborted transaction MM2 copied: the replay a rule that
    never skips allows runs on to the next committed record's copy."""
    out: dict[int, int | None] = {}
    for p, c in committed.items():
        ups = sorted(s.upstream for s in syncs.get((topic, p), ()))
        below = [u for u in ups if u <= c]
        nxt = max(c + 1, (resume or {}).get(p, c + 1))
        above = [u for u in ups if u >= nxt]
        if not below:
            out[p] = None
            continue
        end = above[0] if above else max(c, source_end.get(p, c))
        out[p] = end - below[-1]
    return out


def upstream_decreases(
    written: Mapping[tuple[str, int], Sequence[Sync | None]], topic: str
) -> dict[int, tuple[Sync, Sync]]:
    """Per partition of ``topic``, the first pair of syncs (in write order) whose upstream offset decreases:
    where MM2's own OffsetSyncStore forgets every earlier sync of the partition."""
    out: dict[int, tuple[Sync, Sync]] = {}
    for (t, p), history in written.items():
        if t != topic:
            continue
        syncs = [s for s in history if s is not None]
        pair = next(((a, b) for a, b in itertools.pairwise(syncs) if b.upstream < a.upstream), None)
        if pair is not None:
            out[p] = pair
    return out


# ------------------------------------------------------------------------------------------ running


def _unreachable_source_config(mm2_config: str, source_alias: str, workdir: Path) -> str:
    """A copy of the MM2 properties file whose source bootstrap is a closed port (the key set last wins,
    as in Java's Properties), so the --source-unavailable plan provably reads nothing from the source."""
    text = Path(mm2_config).read_text(encoding="utf-8")
    path = workdir / "source-unavailable.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the copy may hold the file's secrets
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(
            text.rstrip("\n") + "\n\n# mm2ctl drill: the source is unavailable\n"
            f"{source_alias}.bootstrap.servers = {UNREACHABLE_BOOTSTRAP}\n"
        )
    return str(path)


def _plan_and_apply(
    live: LiveState,
    plan: PlanFunction,
    workdir: Path,
    name: str,
    progress: Progress,
    before_apply: Callable[[], None] = lambda: None,
) -> tuple[dict[TP, int | None], str]:
    """Plan and apply one mm2ctl strategy for real; the planned offsets and the methods used."""
    b = PlanBuilder(live, PlanKind.FAILOVER)
    made, report = plan(b)
    plan_path = workdir / f"{name}.yaml"
    write_plan_file(made, plan_path)
    before_apply()
    if made.steps:
        engine.apply_plan(
            made,
            live,
            journal_path=workdir / f"{name}.journal.jsonl",
            plan_path=str(plan_path),
            progress=progress,
            state_dir=workdir,
            allow_untranslatable=True,  # the drill measures what an untranslatable partition costs
        )
    methods: dict[str, int] = {}
    for r in report.rows:
        key = "untranslatable" if r.method is None else r.method.value
        methods[key] = methods.get(key, 0) + 1
    detail = ", ".join(f"{k}={v}" for k, v in sorted(methods.items()))
    return {(r.target_topic, r.partition): r.target_offset for r in report.rows}, detail


def _fail_over_behind(
    live: LiveState,
    flow: PairConfig,
    target: DrillTarget,
    group: str,
    topic: str,
    committed: Mapping[int, int],
    workdir: Path,
    progress: Progress,
) -> str:
    """(g): a copy of the group, committed at the group's commit point, planned with ``--stop-mirroring``
    while MM2 is throttled behind it, then applied once the throttle is lifted (apply waits for MM2, stops
    it, translates what it had not copied, writes). The flow's connectors run again afterwards."""
    assert target.throttle is not None
    copy = f"{group}.drill-{Strategy.BEHIND.value}"
    _commit(live.admin(flow.source), copy, {(topic, p): c for p, c in committed.items()}, "(g)")
    position = read_position(live.mm2, flow, live.connect)
    starts = live.admin(flow.source).partition_bounds([(topic, p) for p in committed])
    copied = {p: (position.next_offsets or {}).get((topic, p), starts[(topic, p)].earliest or 0) for p in committed}
    behind = {p: c - copied[p] for p, c in committed.items() if position.known}
    progress(f"(g) MM2 is behind the commit point by {behind} source offsets: plan failover --stop-mirroring")
    opts = FailoverOptions(pair=target.pair, groups=re.escape(copy), topics=re.escape(topic), stop_mirroring=True)
    throttle = target.throttle
    _planned, methods = _plan_and_apply(
        live, _failover(progress, opts), workdir, "behind", progress, before_apply=lambda: throttle(None)
    )
    client = live.require_connect()
    for name in find_pair_connectors(live, flow.source, flow.target, ALL_ROLES).values():
        client.resume(name)
        client.wait_for_state(name, ["RUNNING"], timeout=120, poll_interval=0.25)
    lag = {p: n for p, n in behind.items() if n > 0}
    said = f"MM2 behind the commit point at planning by {lag}" if lag else "MM2 was not behind at planning"
    return f"{said}; {methods}"


def _failover(progress: Progress, opts: FailoverOptions) -> PlanFunction:
    return lambda b: plan_failover(b, opts, progress=progress)


def _commit(admin: KafkaAdmin, group: str, offsets: Mapping[TP, int], what: str) -> None:
    res = admin.alter_group_offsets({group: dict(offsets)})[group]
    bad = [r for r in res if r.error is not None]
    if bad:
        raise KafkaClusterError(f"committing {what} offsets to {group}: {bad[0].error}")


def run_drill(
    source_conf: Mapping[str, str],
    make_flow: FlowFactory,
    *,
    topic: str,
    group: str,
    options: DrillOptions = DrillOptions(),
    workdir: Path | None = None,
    progress: Progress = no_progress,
) -> DrillResult:
    """Run the whole drill on ``topic`` (created here, on the source) and ``group``; see the module docstring.

    ``make_flow`` is called once the source topic has lost its head, so MM2 starts mirroring after
    retention, as it would in production; it returns the flow to drill through.
    """
    t0 = time.monotonic()
    o = options
    if not 0 <= o.deleted < o.head:
        raise ConfigError(f"the drill deletes {o.deleted} of {o.head} head records: need 0 <= deleted < head")
    own_dir = workdir is None
    wd = Path(tempfile.mkdtemp(prefix="mm2ctl-drill-")) if workdir is None else workdir
    wd.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []

    src_admin = KafkaAdmin.connect(source_conf, name="source")
    src_admin.create_topics({topic: o.partitions})
    producer = _SequenceProducer(source_conf, topic, o.partitions, aborting=o.aborted_transactions)
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

    target = make_flow()
    mm2 = load_mm2_config(target.mm2_config)
    flow: PairConfig = mm2.pair(target.pair)
    if not flow.replicates_topic(topic) or not flow.group_filter.matches(group):
        raise ConfigError(
            f"{target.pair} in {target.mm2_config} does not mirror topic {topic} and group "
            f"{group}: choose names its topics/groups filters accept"
        )
    remote = flow.remote_topic(topic)
    live = open_live_state(target.mm2_config, connect_urls=[target.connect_url])
    dst_conf = live.kafka_config(flow.target)
    dst_admin = live.admin(flow.target)

    if target.throttle is not None:
        progress(f"(g) throttling MM2's copy to {o.behind_bytes_per_s} bytes/s on the target")
        target.throttle(o.behind_bytes_per_s)
    progress(f"transactional traffic at {o.rate:g} records/s while MM2 mirrors {topic} -> {remote}")
    producer.start(o.rate)
    time.sleep(o.before_commit_s)
    # A different share of each partition (50%, 60%, 70%, ...), so commit points land in different places.
    want = {p: max(1, int((producer.next_seq[p] - o.deleted) * (0.5 + 0.1 * (p % 3)))) for p in range(o.partitions)}
    if o.aborted_transactions:
        # Just before an aborted transaction: where a position that counts offsets resumes on its copies.
        flags = _aborted_flags(source_conf, topic, o.partitions)
        want = {p: commit_before_aborted(flags[p], n) for p, n in want.items()}
    progress(f"group {group} consumes {sum(want.values())} records on the source, commits and stops")
    try:
        _consume_part_and_commit(source_conf, topic, group, want)
        time.sleep(o.after_commit_s)
    finally:
        producer.stop()
    if target.throttle is not None:
        progress(f"(g) {o.behind_records} more records per partition at once, MM2 throttled")
        producer.head(o.behind_records, pad=100)
    produced = list(producer.next_seq)
    aborted_note = f" ({producer.aborted_transactions} aborted)" if o.aborted_transactions else ""
    progress(f"producers stopped: {sum(produced)} records, {producer.transactions} transactions{aborted_note}")

    committed_tp = src_admin.committed_offsets([group])[group].offsets
    committed = {p: committed_tp[(topic, p)] for p in range(o.partitions) if (topic, p) in committed_tp}
    source_log = _read_seqs(source_conf, topic, o.partitions)
    # MM2 copies the records of aborted transactions too, unless its source consumer reads committed ones only.
    copied_aborted = producer.aborted_records if flow.copies_aborted_records else [0] * o.partitions
    expected = {p: len(source_log[p]) + copied_aborted[p] for p in range(o.partitions)}

    def caught_up() -> bool:
        b = dst_admin.partition_bounds([(remote, p) for p in range(o.partitions)])
        return all(
            v.error is None and v.latest is not None and v.earliest is not None and v.latest - v.earliest >= expected[p]
            for (_t, p), v in b.items()
        )

    behind_detail = None
    commit_points: dict[Strategy, Mapping[int, int]] = {}
    if target.throttle is not None:
        # (g)'s copy of the group stops in the middle of the burst, which MM2 is far from having copied.
        commit_points[Strategy.BEHIND] = {p: source_log[p][-(o.behind_records // 2)][0] for p in committed}
        behind_detail = _fail_over_behind(
            live, flow, target, group, topic, commit_points[Strategy.BEHIND], wd, progress
        )
        copy_g = f"{group}.drill-{Strategy.BEHIND.value}"
        written_g = dst_admin.committed_offsets([copy_g])[copy_g].offsets
    progress("waiting for MM2 to copy every record")
    if not poll_until(caught_up, timeout_s=o.settle_timeout_s, interval_s=0.5):
        notes.append(f"MM2 had not copied every record of {topic} within {o.settle_timeout_s:g}s")

    def mm2_synced() -> bool:
        cps = read_checkpoints(live, flow).get(group, {})
        got = dst_admin.committed_offsets([group])[group].offsets
        return all(
            cps.get((remote, p), (-1, -1))[0] == c and got.get((remote, p)) == cps[(remote, p)][1]
            for p, c in committed.items()
        )

    progress("waiting for MM2 to checkpoint the group and sync its offsets to the target")
    if not poll_until(mm2_synced, timeout_s=o.settle_timeout_s, interval_s=1.0):
        notes.append(
            "MM2 had not checkpointed and synced every partition of the group at the source commit "
            f"point within {o.settle_timeout_s:g}s; (b) is what it had written by then"
        )
    mm2_written = dst_admin.committed_offsets([group])[group].offsets
    offsets: dict[Strategy, dict[int, int | None]] = {
        Strategy.RAW: {p: c for p, c in committed.items()},
        Strategy.MM2: {p: mm2_written.get((remote, p)) for p in committed},
    }
    details: dict[Strategy, str] = {
        Strategy.RAW: "no translation",
        Strategy.MM2: "read from the target group before the failover",
    }
    if behind_detail is not None:
        offsets[Strategy.BEHIND] = {p: written_g.get((remote, p)) for p in committed}
        details[Strategy.BEHIND] = behind_detail

    progress("(d) plan failover --stop-mirroring (verified), apply")
    _planned_d, details[Strategy.VERIFIED] = _plan_and_apply(
        live,
        _failover(
            progress,
            FailoverOptions(
                pair=target.pair,
                groups=re.escape(group),
                topics=re.escape(topic),
                stop_mirroring=target.stop_mirroring,
                allow_rewind=True,
            ),
        ),
        wd,
        "verified",
        progress,
    )
    after_d = dst_admin.committed_offsets([group])[group].offsets
    offsets[Strategy.VERIFIED] = {p: after_d.get((remote, p)) for p in committed}

    progress("(c) plan failover --source-unavailable (conservative) with the source unreachable, apply")
    down_cfg = _unreachable_source_config(target.mm2_config, flow.source, wd)
    down_live = open_live_state(down_cfg, connect_urls=[target.connect_url])
    source_choice = Source.SYNCS
    if flow.offset_syncs_cluster == flow.source:
        source_choice = Source.CHECKPOINTS
        notes.append(
            "the offset syncs live on the source, so (c) uses --from checkpoints (MM2's own "
            "conservative translations) instead of the syncs"
        )
    _planned_c, details[Strategy.CONSERVATIVE] = _plan_and_apply(
        down_live,
        _failover(
            progress,
            FailoverOptions(
                pair=target.pair,
                groups=re.escape(group),
                topics=re.escape(topic),
                source=source_choice,
                source_unavailable=True,
                allow_rewind=True,
            ),
        ),
        wd,
        "conservative",
        progress,
    )
    after_c = dst_admin.committed_offsets([group])[group].offsets
    offsets[Strategy.CONSERVATIVE] = {p: after_c.get((remote, p)) for p in committed}

    # (e) The round trip: a copy of the group resumes on the target where (d) put it, consumes more there,
    # and is failed back. Its commit point is where it stopped on the target.
    target_log = _read_seqs(dst_conf, remote, o.partitions)
    copy_e = f"{group}.drill-{Strategy.FAILBACK.value}"
    e_committed: dict[int, int] = {}
    if flow.group_filter.matches(copy_e):
        progress("(e) a copy of the group consumes more on the target from (d)'s position, plan failback, apply")
        start_e = {p: off for p, off in offsets[Strategy.VERIFIED].items() if off is not None}
        _commit(dst_admin, copy_e, {(remote, p): off for p, off in start_e.items()}, "(e)")
        more = {p: sum(1 for off, _ in target_log[p] if off >= start) // 2 for p, start in start_e.items()}
        _consume_part_and_commit(dst_conf, remote, copy_e, {p: n for p, n in more.items() if n}, from_committed=True)
        on_target = dst_admin.committed_offsets([copy_e])[copy_e].offsets
        e_committed = {p: on_target[(remote, p)] for p in start_e if (remote, p) in on_target}
        commit_points[Strategy.FAILBACK] = e_committed
        failback = FailbackOptions(pair=target.pair, groups=re.escape(copy_e), topics=re.escape(topic))
        _planned_e, details[Strategy.FAILBACK] = _plan_and_apply(
            live, lambda b: plan_failback(b, failback, progress=progress), wd, "failback", progress
        )
        back = src_admin.committed_offsets([copy_e])[copy_e].offsets
        offsets[Strategy.FAILBACK] = {p: back.get((topic, p)) for p in e_committed}
    else:
        notes.append(f"(e) not run: {target.pair}'s group filter does not take the copy {copy_e}")

    source_end = {p: (source_log[p][-1][0] + 1 if source_log[p] else 0) for p in committed}
    written = read_sync_histories(live, flow)
    resume = {p: next((off for off, _seq in source_log[p] if off >= c), c) for p, c in committed.items()}
    intervals = sync_intervals(normalize_each(written), topic, committed, source_end, resume)
    for p, (a, b) in sorted(upstream_decreases(written, topic).items()):
        notes.append(
            f"the syncs of p{p} go back upstream ({a.upstream}->{a.downstream}, then {b.upstream}->{b.downstream}: "
            "written out of order, or copied again after a restart); MM2's OffsetSyncStore drops a partition's "
            "history there, mm2ctl keeps every sync that agrees with the others"
        )
    wide = {p: i for p, i in intervals.items() if i is not None and i > flow.offset_lag_max}
    if wide:
        notes.append(
            f"MM2 left sync intervals wider than offset.lag.max={flow.offset_lag_max} at the commit point: {wide}"
        )

    # (f) Partition 0 loses its offset syncs (truncated), so no sync lies at or below the commit point there;
    # a copy of the group committed at the source commit point fails over with the timestamp fallback.
    copy_f = f"{group}.drill-{Strategy.TIMESTAMP.value}"
    if target.owns_flow and flow.group_filter.matches(copy_f):
        progress("(f) truncating p0's offset syncs; a copy of the group fails over with --fallback timestamp, apply")
        truncate_partition_syncs(live, flow, topic, 0)
        _commit(src_admin, copy_f, {(topic, p): c for p, c in committed.items()}, "(f)")
        timestamp = FailoverOptions(
            pair=target.pair, groups=re.escape(copy_f), topics=re.escape(topic), fallback=Fallback.TIMESTAMP
        )
        _planned_f, details[Strategy.TIMESTAMP] = _plan_and_apply(
            live, _failover(progress, timestamp), wd, "timestamp", progress
        )
        after_f = dst_admin.committed_offsets([copy_f])[copy_f].offsets
        offsets[Strategy.TIMESTAMP] = {p: after_f.get((remote, p)) for p in committed}
    else:
        notes.append("(f) not run: it truncates offset syncs, so it runs only on a flow the drill creates (the lab)")

    aborted_copied = 0
    if o.aborted_transactions:
        aborted_copied = sum(
            _is_aborted_record(r.value) for r in records.read_partitions(dst_conf, remote, list(range(o.partitions)))
        )
        if aborted_copied:
            notes.append(
                f"MM2 copied {aborted_copied} record(s) of aborted transactions to {remote} as ordinary records (its "
                "source consumer reads uncommitted records): a consumer of the target reads those after its commit "
                "point whatever its position; source.consumer.isolation.level=read_committed on the flow stops it"
            )
    outcomes = []
    for strategy in Strategy:
        if strategy not in offsets:
            continue
        copy = f"{group}.drill-{strategy.value}"
        on_source = strategy in ON_SOURCE
        cluster, conf, read_topic = (src_admin, source_conf, topic) if on_source else (dst_admin, dst_conf, remote)
        wanted = {(read_topic, p): off for p, off in offsets[strategy].items() if off is not None}
        if wanted:
            _commit(cluster, copy, wanted, f"({strategy.value})")
        progress(f"({strategy.value}) resuming a consumer on the {'source' if on_source else 'target'} from {copy}")
        seen = _resume_and_read(conf, read_topic, copy, o.partitions)
        outcomes.append(
            score(
                strategy,
                committed=commit_points.get(strategy, committed),
                source_log=target_log if on_source else source_log,
                produced=produced,
                target_offsets=offsets[strategy],
                seen=seen,
                offset_lag_max=flow.offset_lag_max,
                sync_intervals=intervals,
                detail=details[strategy],
            )
        )
    if own_dir:
        for f in wd.glob("*.properties"):
            f.unlink()
    return DrillResult(
        replication_policy="identity" if flow.replication_policy.is_identity else "default",
        pair=target.pair,
        topic=topic,
        remote_topic=remote,
        group=group,
        partitions=o.partitions,
        records=sum(produced),
        deleted_before_mirroring=o.deleted * o.partitions,
        transactions=producer.transactions,
        offset_lag_max=flow.offset_lag_max,
        strategies=tuple(outcomes),
        seconds=round(time.monotonic() - t0, 1),
        notes=tuple(notes),
        aborted_transactions=producer.aborted_transactions,
        aborted_records=sum(producer.aborted_records),
        aborted_copied=aborted_copied,
    )


__all__ = [
    "DrillOptions",
    "DrillResult",
    "DrillTarget",
    "Strategy",
    "StrategyOutcome",
    "run_drill",
    "score",
]


# --------------------------------------------------------------------------------------------- lab


def drill_on_lab(
    info: LabInfo,
    *,
    replication_policy: str,
    options: DrillOptions = DrillOptions(),
    keep: bool = False,
    workdir: Path | None = None,
    progress: Progress = no_progress,
) -> DrillResult:
    """The drill on a running lab, through an isolated flow of its own (``lab.add_flow``), so the lab's
    ``mm2-primary-backup-*`` connectors are never touched.

    The flow keeps its offset syncs on the *target* (the layout a DR setup should use: the syncs survive
    the source), so (c) plans from the syncs with the source unreachable. Its connectors are deleted at the
    end unless ``keep``; the topics keep their unique names.
    """
    from mm2ctl.connect_client import build_connect_client
    from mm2ctl.lab import lab as lab_core
    from mm2ctl.lab.quotas import set_producer_quota, task_producer_client_id

    name = "drill" + uuid.uuid4().hex[:8]
    topic, group = f"iso-{name}-seq", f"iso-{name}-app"
    created: list[str] = []
    throttled: list[str] = []

    def make_flow() -> DrillTarget:
        progress(f"creating MM2 flow {name}src->{name}dst ({replication_policy} policy, syncs on the target)")
        flow = lab_core.add_flow(info, name, replication_policy=replication_policy, offset_syncs_location="target")
        created.extend(flow.connectors.values())
        producer_id = task_producer_client_id(flow.connectors["source"])
        throttled.append(producer_id)
        return DrillTarget(
            mm2_config=flow.mm2_config,
            pair=f"{flow.source_alias}->{flow.target_alias}",
            connect_url=info.connect_url,
            topic=topic,
            group=group,
            stop_mirroring=True,
            owns_flow=True,
            throttle=lambda rate: set_producer_quota(info, producer_id, rate),
        )

    try:
        return run_drill(
            {"bootstrap.servers": info.source.bootstrap},
            make_flow,
            topic=topic,
            group=group,
            options=options,
            workdir=workdir,
            progress=progress,
        )
    finally:
        for producer_id in throttled:  # a failed drill may leave MM2 throttled: lift it (no-op when lifted)
            with contextlib.suppress(Mm2ctlError):
                set_producer_quota(info, producer_id, None)
        if not keep and created:
            with build_connect_client([info.connect_url]) as connect:
                for c in created:
                    try:
                        connect.delete(c)
                    except Mm2ctlError:
                        progress(f"could not delete connector {c}; delete it by hand")


def drill_on_clusters(
    mm2_config: str,
    pair: str,
    connect_url: str,
    *,
    name_prefix: str = "mm2ctl-drill",
    stop_mirroring: bool = False,
    options: DrillOptions = DrillOptions(),
    workdir: Path | None = None,
    progress: Progress = no_progress,
) -> DrillResult:
    """The drill on given clusters and an MM2 flow that already runs: it must mirror ``<prefix>-<id>`` and
    group ``<prefix>-<id>-app``. MM2 discovers the topic after its head is deleted (within
    ``refresh.topics.interval.seconds``, so the retention effect shows only if that is longer than the few
    seconds the head takes). The pair's connectors are stopped in (d) only with ``stop_mirroring``.
    """
    mm2 = load_mm2_config(mm2_config)
    flow = mm2.pair(pair)
    topic = f"{name_prefix}-{uuid.uuid4().hex[:8]}"
    group = f"{topic}-app"
    if not flow.replicates_topic(topic) or not flow.group_filter.matches(group):
        raise ConfigError(
            f"{pair} in {mm2_config} does not mirror topic {topic} or group {group}: pass a "
            "--name-prefix its topics and groups filters accept"
        )
    target = DrillTarget(
        mm2_config=mm2_config,
        pair=pair,
        connect_url=connect_url,
        topic=topic,
        group=group,
        stop_mirroring=stop_mirroring,
    )
    return run_drill(
        mm2.kafka_config(flow.source),
        lambda: target,
        topic=topic,
        group=group,
        options=options,
        workdir=workdir,
        progress=progress,
    )
