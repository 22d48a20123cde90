"""A failover drill per Kafka group type: what MirrorMaker 2 alone loses or delivers again at failover, and what
``mm2ctl plan failover`` + ``apply`` does, for classic, consumer (KIP-848), share (KIP-932) and streams
(KIP-1071) groups, counted by content on real clients.

Facts the drill relies on (Kafka 4.3.1, MirrorMaker 2 of the same release):

- MM2's checkpoint connector lists only classic and consumer groups: with ``sync.group.offsets.enabled`` it
  writes their translated offsets to the target while the target group has no members. Share and streams
  groups it never checkpoints nor syncs (``core.group_admin``).
- A share consumer joining a share group that has no start offset on the target starts at the log end
  (``share.auto.offset.reset`` defaults to ``latest``): whatever the group had not acknowledged is skipped.
- A Kafka Streams application whose group has no committed offsets starts at the earliest offset (Streams'
  own ``auto.offset.reset`` default): it processes everything again.
- A share group's start offset may stay behind what it acknowledged; the records acknowledged past it are
  kept only in the source cluster's share-group state, so on the target they are delivered again. The plan
  counts them in a note (``share group G: ... N record(s) past them were already acknowledged``). On the lab
  the start offset read back lags a whole round of acknowledgements: a group that accepted the first 40
  records of a fresh partition reads 0, and after it accepted the rest, 40; so at these sizes mm2ctl's
  share failover delivers again every record the group had acknowledged, as the plan says.

The drill, on a running lab (Kafka 4.2+, no security), through an MM2 flow of its own (``lab.add_flow``,
every role, so ``sync.group.offsets`` runs), on one two-partition topic whose values name their partition
and sequence number (``p<partition>-<seq>``):

1. ``first`` records per partition are produced. Two groups of each type (``iso-<name>-mm2-<type>``, left
   to MM2, and ``iso-<name>-ctl-<type>``, failed over by mm2ctl) reach the same source state: classic and
   consumer groups read everything there is and commit; a streams application (passthrough) processes
   everything, commits and leaves; a share consumer accepts the first ``accepted[p]`` records of each
   partition with explicit acknowledgement and releases the rest.
2. ``later`` records per partition are produced; MM2 copies everything; MM2's sync of the classic and
   consumer groups' offsets is awaited (until they appear and stop moving, or a deadline).
3. The flow's checkpoint connector is stopped, as at a failover (left running, MM2's group sync can write
   its older translation back over a group's commit on the target). ``mm2ctl plan failover --groups
   'iso-<name>-ctl-.*'`` and ``mm2ctl apply --auto-approve`` run as an operator would type them
   (``python -m mm2ctl``).
4. Every group of both methods resumes on the target with a real client of its type and reads to the end
   (all at once: the consumers on threads, the streams applications in JVMs of their own).
5. ``more`` records per partition are produced on the source (records the groups have not processed, so a
   failback that put them at the log end would lose them); MM2 copies them. ``mm2ctl plan failback`` +
   ``apply`` move the mm2ctl groups back, and each resumes on the source and reads to the end.

LOST counts records the group had not processed before the move that it never gets after it; DELIVERED AGAIN
counts deliveries after the move of records it had already processed (or got twice after it). The goal, for
the mm2ctl rows (failover and failback): nothing lost, nothing delivered again, except for a share group
exactly the records the plan's note counts. MM2 alone's rows are measured, with no goal.

This module never prints: it reports through ``progress`` and returns a ``GroupTypesDrill``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, ShareConsumer

from mm2ctl.connect_client.models import ConnectorStatus
from mm2ctl.core import records
from mm2ctl.core.admin import KafkaAdmin
from mm2ctl.core.client_log import librdkafka_log
from mm2ctl.core.errors import KafkaClusterError, LabError, Mm2ctlError
from mm2ctl.core.group_admin import GROUP_TYPES
from mm2ctl.core.polling import poll_until
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.lab import lab as lab_core
from mm2ctl.lab.lab import LabInfo
from mm2ctl.lab.share_consumer import accept_prefix, read_from_earliest
from mm2ctl.lab.streams_app import start_streams_app

#: The drill's topic has these partitions.
PARTITIONS = (0, 1)
#: How a row's group was moved: left to MirrorMaker 2, mm2ctl's failover, mm2ctl's failback after it.
METHODS = ("mm2", "mm2ctl", "failback")
#: (partition, sequence number): one record of the drill's topic, by content.
Seq = tuple[int, int]

_SHARE_NOTE = re.compile(
    r"share group (?P<group>\S+): MirrorMaker 2 never translates share groups;.*?"
    r"(?P<again>\d+) record\(s\) past them were already acknowledged"
)


@dataclass(frozen=True)
class GroupTypesOptions:
    """How much data and how long to wait. The defaults take about 70 s on the lab (2 cores, busy); mm2ctl's
    plan and apply (four runs of ``python -m mm2ctl``) are half of it."""

    #: Records per partition before the groups stop on the source, after it, and before the failback.
    first: int = 60
    later: int = 40
    more: int = 20
    #: Records the share group accepts per partition on the source (each below ``first``).
    accepted: tuple[int, ...] = (40, 25)
    #: How long MM2 gets to sync the classic and consumer groups' offsets, and how long they must then stay
    #: unchanged (MM2 syncs every second in the lab) to count as synced.
    mm2_sync_timeout_s: float = 60.0
    mm2_sync_stable_s: float = 3.0
    #: How long any one client may take to reach the end of the topic. A share consumer cannot tell where it
    #: is: it stops ``share_idle_s`` after its last delivery (before the end), or ``share_quiet_s`` after it
    #: subscribed when nothing came at all. On the lab a share consumer's first delivery comes about 5 s after
    #: it subscribes (its assignment arrives with the next share-group heartbeat, every 5 s by default), so
    #: ``share_quiet_s`` must be well above that.
    client_timeout_s: float = 90.0
    share_idle_s: float = 10.0
    share_quiet_s: float = 9.0


@dataclass(frozen=True)
class GroupTypeRow:
    """One group type moved one way, counted by content on the cluster it resumed on."""

    group_type: str
    method: str
    group: str
    resumed_on: str
    lost: int
    delivered_again: int
    #: Share groups moved by mm2ctl: the records the plan's note says were acknowledged past the start offset.
    planned_again: int | None = None
    #: The goal (None: measured, no goal) and whether it was met.
    goal: str | None = None
    met: bool | None = None
    note: str = ""


@dataclass(frozen=True)
class GroupTypesDrill:
    pair: str
    topic: str
    remote_topic: str
    partitions: int
    first: int
    later: int
    more: int
    accepted: tuple[int, ...]
    rows: tuple[GroupTypeRow, ...]
    seconds: float
    workdir: str
    notes: tuple[str, ...] = ()

    @property
    def goals_met(self) -> bool:
        return all(r.met is not False for r in self.rows)

    def row(self, group_type: str, method: str) -> GroupTypeRow | None:
        return next((r for r in self.rows if (r.group_type, r.method) == (group_type, method)), None)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["goals_met"] = self.goals_met
        return doc


@dataclass
class _Run:
    """One drill in progress: where it runs and what each group has processed so far."""

    lab: LabInfo
    name: str
    workdir: Path
    progress: Progress
    options: GroupTypesOptions
    pair: str = ""
    mm2_config: str = ""
    connectors: list[str] = field(default_factory=list)
    #: The flow's MirrorCheckpointConnector.
    checkpoint_connector: str = ""
    #: group -> the records it has processed (consumed, acknowledged) so far, on any cluster.
    processed: dict[str, set[Seq]] = field(default_factory=dict)
    produced: int = 0

    @property
    def src(self) -> dict[str, str]:
        return {"bootstrap.servers": self.lab.source.bootstrap}

    @property
    def dst(self) -> dict[str, str]:
        return {"bootstrap.servers": self.lab.target.bootstrap}

    @property
    def topic(self) -> str:
        return f"iso-{self.name}-in"

    @property
    def remote(self) -> str:
        return self.topic if self.lab.replication_policy == "identity" else f"{self.name}src.{self.topic}"

    def group(self, method: str, group_type: str) -> str:
        return f"iso-{self.name}-{'mm2' if method == 'mm2' else 'ctl'}-{group_type}"

    def output(self, label: str) -> str:
        """A streams application's output topic: ``iso-<name>out-…`` is outside this flow's ``iso-<name>-.*``
        and the lab flow's filters, so nothing mirrors it."""
        return f"iso-{self.name}out-{label}"


# ------------------------------------------------------------------------------------------ records


def _produce(conf: Mapping[str, str], topic: str, start: int, count: int) -> None:
    rows = [(b"k", b"p%d-%06d" % (p, i), p) for p in PARTITIONS for i in range(start, start + count)]
    records.produce(conf, topic, rows)


def _seqs(values: Iterable[bytes | None]) -> list[Seq]:
    """The (partition, sequence) each ``p<partition>-<seq>`` value names, in order; other values are skipped."""
    out: list[Seq] = []
    for v in values:
        part, _, seq = (v or b"").partition(b"-")
        if part.startswith(b"p") and part[1:].isdigit() and seq.isdigit():
            out.append((int(part[1:]), int(seq)))
    return out


def _score(everything: set[Seq], processed: set[Seq], got: list[Seq]) -> tuple[int, int]:
    """(lost, delivered again): records of ``everything`` not in ``processed`` that ``got`` lacks; deliveries
    in ``got`` of a processed record, or of one ``got`` already held."""
    seen: set[Seq] = set()
    again = 0
    for s in got:
        if s in processed or s in seen:
            again += 1
        seen.add(s)
    return len(everything - processed - seen), again


def _ends(conf: Mapping[str, str], topic: str) -> dict[int, int | None]:
    """Each partition's end offset (None where the broker gave no answer)."""
    bounds = KafkaAdmin.connect(conf).partition_bounds([(topic, p) for p in PARTITIONS])
    return {p: bounds[(topic, p)].latest for p in PARTITIONS}


def _committed(conf: Mapping[str, str], group: str, topic: str) -> dict[int, int]:
    offsets = KafkaAdmin.connect(conf).committed_offsets([group])[group].offsets
    return {p: o for (t, p), o in offsets.items() if t == topic and o is not None}


# ------------------------------------------------------------------------------------------ clients


def _consume_to_end(
    conf: Mapping[str, str], topic: str, group: str, protocol: str, *, reset: str, timeout_s: float
) -> list[Seq]:
    """A member of a classic or consumer (KIP-848) group, as ``group.protocol=<protocol>`` makes it: subscribe
    to ``topic``, start where the group committed (else at ``reset``), read every partition to its end,
    commit the positions reached, and leave (closing the consumer leaves the group, which then has no members,
    as MM2's offset sync and mm2ctl's plans need)."""
    consumer = Consumer(
        {
            **conf,
            "group.id": group,
            "group.protocol": protocol,
            "auto.offset.reset": reset,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "logger": librdkafka_log,
        }
    )
    got: list[Seq] = []
    at_end: set[int] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while at_end != set(PARTITIONS):
            if time.monotonic() > deadline:
                raise KafkaClusterError(f"{protocol} group {group} reached the end of {topic} only on {sorted(at_end)}")
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err, p = msg.error(), msg.partition()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF and p is not None:
                    at_end.add(p)
                continue
            got.extend(_seqs([msg.value()]))
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        if positions:
            consumer.commit(offsets=positions, asynchronous=False)
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as {protocol} group {group}: {exc}") from exc
    finally:
        consumer.close()
    return got


def _streams_pass(
    run: _Run, on_target: bool, topic: str, outputs: Mapping[str, str], label: str
) -> dict[str, list[Seq]]:
    """Run a passthrough Kafka Streams application per group (group -> its output topic, made here) on
    ``topic``, all at once, until each group's committed offsets reach the topic's end; stop them (they leave
    their groups) and return what each wrote. A group with no committed offsets starts at the earliest."""
    conf = run.dst if on_target else run.src
    bootstrap = run.lab.target.bootstrap if on_target else run.lab.source.bootstrap
    KafkaAdmin.connect(conf).create_topics({out: len(PARTITIONS) for out in outputs.values()})
    end = _ends(conf, topic)
    timeout_s = run.options.client_timeout_s
    with contextlib.ExitStack() as stack:
        for g, out in outputs.items():
            log = run.workdir / f"{g}-{label}.log"
            stack.enter_context(start_streams_app(bootstrap, g, topic, out, log_path=log))
        for g in outputs:

            def done(group: str = g) -> bool:
                return _committed(conf, group, topic) == end

            if not poll_until(done, timeout_s=timeout_s, interval_s=0.5):
                log = run.workdir / f"{g}-{label}.log"
                raise LabError(f"the Kafka Streams app {g} did not commit {topic}'s end {end} (log: {log})")
    return {
        g: _seqs(r.value for r in records.read_partitions(conf, out, list(PARTITIONS))) for g, out in outputs.items()
    }


def _share_pass(run: _Run, conf: Mapping[str, str], group: str, topic: str) -> list[Seq]:
    """A share consumer of ``group`` (explicit acknowledgement) accepts every record delivered, and stops: a
    second after the last record of every partition came; ``share_idle_s`` after the last delivery otherwise;
    ``share_quiet_s`` after joining when nothing came at all (a group whose start offset is the log end gets
    nothing, which is MM2 alone's case; the wait also covers a slow join); at ``client_timeout_s`` in all."""
    o = run.options
    last_offset = {p: (end or 0) - 1 for p, end in _ends(conf, topic).items()}
    settings = {
        **conf,
        "group.id": group,
        "share.acknowledgement.mode": "explicit",
        "log_level": 3,
        "logger": librdkafka_log,
    }
    consumer = ShareConsumer(settings)
    got: list[Seq] = []
    reached: set[int] = set()
    try:
        consumer.subscribe([topic])
        start = last = time.monotonic()
        while True:
            now = time.monotonic()
            wait = o.share_quiet_s if not got else 1.0 if reached == set(PARTITIONS) else o.share_idle_s
            if now - last > wait or now - start > o.client_timeout_s:
                break
            for msg in consumer.poll(0.5):
                p, offset = msg.partition(), msg.offset()
                if msg.error() is not None or p is None:
                    continue
                consumer.acknowledge(msg)
                got.extend(_seqs([msg.value()]))
                last = time.monotonic()
                if offset == last_offset.get(p):
                    reached.add(p)
        consumer.commit_sync()
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as share group {group}: {exc}") from exc
    finally:
        consumer.close()
    return got


def _resume_all(run: _Run, groups: Mapping[str, str], *, on_target: bool, label: str) -> dict[str, list[Seq]]:
    """Every group (group -> type) resumes with a real client of its type, on the target (the remote topic)
    or the source, and reads to the end; what each got (for a streams group: what it wrote). The consumers
    run on threads of their own while the streams applications run, so the share consumer's waits overlap."""
    conf, topic = (run.dst, run.remote) if on_target else (run.src, run.topic)
    timeout_s = run.options.client_timeout_s
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        pending: dict[str, Future[list[Seq]]] = {}
        for g, t in groups.items():
            if t in ("classic", "consumer"):
                pending[g] = pool.submit(_consume_to_end, conf, topic, g, t, reset="latest", timeout_s=timeout_s)
            elif t == "share":
                pending[g] = pool.submit(_share_pass, run, conf, g, topic)
        streams = {
            g: run.output(f"{g.removeprefix(f'iso-{run.name}-')}-{label}") for g, t in groups.items() if t == "streams"
        }
        got = _streams_pass(run, on_target, topic, streams, label)
        got.update({g: f.result() for g, f in pending.items()})
    return got


# ------------------------------------------------------------------------------------------ phases


def _source_state(run: _Run) -> None:
    """Both groups of each type reach the same source state on the ``first`` records of each partition: the
    classic, consumer and share groups on threads of their own while the streams applications run."""
    o = run.options
    accept = dict(zip(PARTITIONS, o.accepted, strict=True))
    run.progress(
        f"classic and consumer groups read everything and commit, streams apps process it and leave, share groups "
        f"accept {accept} records per partition (explicit acknowledgement)"
    )
    with ThreadPoolExecutor(max_workers=6) as pool:
        pending: dict[str, Future[Any]] = {}
        for method in ("mm2", "mm2ctl"):
            for t in ("classic", "consumer"):
                g = run.group(method, t)
                pending[g] = pool.submit(_consume_to_end, run.src, run.topic, g, t, reset="earliest", timeout_s=60)
            g = run.group(method, "share")
            pending[g] = pool.submit(_accept_prefix, run, g, accept)
        streams = {run.group(m, "streams"): run.output(f"{m}-streams-source") for m in ("mm2", "mm2ctl")}
        for g, got in _streams_pass(run, False, run.topic, streams, "source").items():
            run.processed[g] = set(got)
        for g, future in pending.items():
            run.processed[g] = set(future.result())


def _accept_prefix(run: _Run, group: str, accept: Mapping[int, int]) -> set[Seq]:
    """The share group reads from the earliest offset and accepts the first ``accept[p]`` records of each
    partition (offset = sequence number on the drill's fresh topic), releasing the rest."""
    read_from_earliest(run.src, group)
    if accept_prefix(run.src, group, run.topic, accept, timeout_s=run.options.client_timeout_s) != accept:
        raise LabError(f"share group {group} did not accept {dict(accept)}")
    return {(p, s) for p, n in accept.items() for s in range(n)}


def _wait_copied(run: _Run, per_partition: int) -> None:
    run.progress(f"waiting for MM2 to copy {per_partition} records per partition to {run.remote}")
    want = dict.fromkeys(PARTITIONS, per_partition)
    if not poll_until(lambda: _ends(run.dst, run.remote) == want, timeout_s=120, interval_s=0.5):
        raise LabError(f"MM2 did not copy {run.topic} to {run.remote} in 120s: {_ends(run.dst, run.remote)}")


def _wait_mm2_synced(run: _Run, groups: list[str]) -> dict[str, dict[int, int]]:
    """The groups' offsets on the target once MM2's ``sync.group.offsets`` wrote every partition and they
    stayed unchanged for ``mm2_sync_stable_s``; at the deadline, whatever MM2 had written by then."""
    o = run.options
    run.progress(f"waiting up to {o.mm2_sync_timeout_s:.0f}s for MM2 to sync {', '.join(groups)} to the target")
    admin = KafkaAdmin.connect(run.dst)
    last: dict[str, dict[int, int]] = {}
    changed = time.monotonic()
    deadline = changed + o.mm2_sync_timeout_s
    while time.monotonic() < deadline:
        got = admin.committed_offsets(groups)
        now = {
            g: {p: off for (t, p), off in got[g].offsets.items() if t == run.remote and off is not None} for g in groups
        }
        if now != last:
            last, changed = now, time.monotonic()
        elif all(len(v) == len(PARTITIONS) for v in now.values()) and time.monotonic() - changed >= o.mm2_sync_stable_s:
            break
        time.sleep(0.5)
    return last


def _mm2ctl(run: _Run, *args: str) -> subprocess.CompletedProcess[str]:
    """``mm2ctl ARGS`` as an operator types it (``python -m mm2ctl``), its state in the workdir; its output is
    appended to ``mm2ctl.log`` there. Raises ``Mm2ctlError`` on a non-zero exit."""
    env = {**os.environ, "MM2CTL_STATE_DIR": str(run.workdir / "state")}
    env.pop("MM2CTL_CONNECT_URL", None)  # the plan finds the flow's worker itself
    proc = subprocess.run(
        [sys.executable, "-m", "mm2ctl", *args], env=env, text=True, capture_output=True, timeout=600, check=False
    )
    with (run.workdir / "mm2ctl.log").open("a", encoding="utf-8") as log:
        log.write(f"$ mm2ctl {' '.join(args)}\n{proc.stdout}\n{proc.stderr}\nexit {proc.returncode}\n\n")
    if proc.returncode != 0:
        raise Mm2ctlError(f"mm2ctl {' '.join(args[:2])} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


@dataclass(frozen=True)
class _Planned:
    """What a plan said: per group its target offsets and whether it writes them; per share group the records
    its note counts as acknowledged past the start offset."""

    offsets: dict[str, dict[int, int]]
    written: frozenset[str]
    again: dict[str, int]


def _plan_and_apply(run: _Run, kind: str) -> _Planned:
    """``mm2ctl plan <kind>`` for the mm2ctl groups, then ``apply --auto-approve``."""
    run.progress(f"mm2ctl plan {kind} --groups 'iso-{run.name}-ctl-.*', then apply")
    plan = run.workdir / f"{kind}.yaml"
    made = _mm2ctl(
        run, "plan", kind, "--pair", run.pair, "--mm2-config", run.mm2_config,
        "--groups", f"iso-{run.name}-ctl-.*", "--out", str(plan), "--json",
    )  # fmt: skip
    doc = json.loads(made.stdout)
    _mm2ctl(run, "apply", str(plan), "--auto-approve", "--journal", str(run.workdir / f"{kind}.journal.jsonl"))
    offsets: dict[str, dict[int, int]] = {}
    for row in doc["rows"]:
        if row.get("target_offset") is not None:
            offsets.setdefault(row["group"], {})[row["partition"]] = row["target_offset"]
    steps = doc["plan"]["steps"]
    written = frozenset(st["target"]["group"] for st in steps if st["kind"] == "group_offsets_write")
    again = {m["group"]: int(m["again"]) for n in doc["plan"]["notes"] if (m := _SHARE_NOTE.search(n))}
    return _Planned(offsets, written, again)


def _mm2ctl_notes(run: _Run, method: str, planned: _Planned) -> dict[str, str]:
    """What mm2ctl's plan did for each type, as the row's note."""
    notes: dict[str, str] = {}
    for t in GROUP_TYPES:
        g = run.group(method, t)
        at = _offsets_text(planned.offsets.get(g, {})) or "no offset"
        start = "start offsets " if t == "share" else ""
        notes[t] = f"wrote {start}{at}" if g in planned.written else f"{at} already there: nothing written"
        if t == "share":
            where = " on the target" if method == "failback" else ""
            notes[t] += f"; {planned.again.get(g)} acknowledged past them{where}, counted by the plan"
    return notes


def _everything(per_partition: int) -> set[Seq]:
    return {(p, s) for p in PARTITIONS for s in range(per_partition)}


def _offsets_text(offsets: Mapping[int, int]) -> str:
    return ", ".join(f"p{p} {o}" for p, o in sorted(offsets.items()))


def _mm2_notes(run: _Run, synced: Mapping[str, Mapping[int, int]]) -> dict[str, str]:
    """What MM2 alone left on the target for each type, as the row's note."""
    notes = {
        "share": "no start offset on the target: starts at the log end (share.auto.offset.reset=latest)",
        "streams": "no offsets on the target: starts at the earliest offset",
    }
    source = _offsets_text(dict.fromkeys(PARTITIONS, run.options.first))
    for t in ("classic", "consumer"):
        got = synced.get(run.group("mm2", t), {})
        if len(got) == len(PARTITIONS):
            notes[t] = f"synced {_offsets_text(got)} (source: {source})"
        else:
            notes[t] = (
                f"synced {_offsets_text(got) or 'nothing'} in {run.options.mm2_sync_timeout_s:.0f}s "
                f"(source: {source}); the rest starts at the log end (auto.offset.reset=latest)"
            )
    return notes


def _rows(
    run: _Run, method: str, got: Mapping[str, list[Seq]], per_partition: int, planned: _Planned,
    notes: Mapping[str, str],
) -> list[GroupTypeRow]:  # fmt: skip
    """Score each type's group of ``method`` and judge the mm2ctl ones; what each got counts as processed."""
    rows = []
    for t in GROUP_TYPES:
        g = run.group(method, t)
        lost, again = _score(_everything(per_partition), run.processed[g], got[g])
        run.processed[g] |= set(got[g])
        counted = planned.again.get(g) if method != "mm2" else None
        goal: str | None = None
        met: bool | None = None
        if method != "mm2" and t == "share":
            goal, met = "lose nothing; deliver again what the plan counts", lost == 0 and again == counted
        elif method != "mm2":
            goal, met = "lose nothing, deliver nothing again", lost == 0 and again == 0
        note = notes.get(t, "") if met is not False else f"GOAL MISSED ({goal}); {notes.get(t, '')}".rstrip("; ")
        resumed_on = "source" if method == "failback" else "target"
        rows.append(GroupTypeRow(t, method, g, resumed_on, lost, again, counted, goal, met, note))
    return rows


def _failover(run: _Run) -> list[GroupTypeRow]:
    """MM2's sync awaited, mm2ctl's failover of its groups, then every group of both methods resumes on the
    target at once."""
    o = run.options
    synced = _wait_mm2_synced(run, [run.group("mm2", t) for t in ("classic", "consumer")])
    _stop_checkpointing(run)
    planned = _plan_and_apply(run, "failover")
    run.progress("every group resumes on the target and reads to the end")
    groups = {run.group(m, t): t for m in ("mm2", "mm2ctl") for t in GROUP_TYPES}
    got = _resume_all(run, groups, on_target=True, label="target")
    mm2 = _rows(run, "mm2", got, o.first + o.later, planned, _mm2_notes(run, synced))
    return mm2 + _rows(run, "mm2ctl", got, o.first + o.later, planned, _mm2ctl_notes(run, "mm2ctl", planned))


def _stop_checkpointing(run: _Run) -> None:
    """Stop the flow's checkpoint connector, as a failover does: the groups now live on the target. Left running,
    MM2's group-offset sync can write its older translation back over a group's own commit on the target: it
    decides from a snapshot of the target's offsets that it refreshes only now and then, and its scheduler keeps
    syncing while the connector is merely paused. A stopped connector has no tasks, so no scheduler."""
    from mm2ctl.connect_client import build_connect_client

    name = run.checkpoint_connector
    run.progress(f"stopping {name}: the groups fail over")
    with build_connect_client([run.lab.connect_url]) as connect:
        connect.stop(name)
        deadline = time.monotonic() + run.options.client_timeout_s
        while not _stopped(connect.status(name)):
            if time.monotonic() > deadline:
                raise LabError(f"connector {name} did not stop within {run.options.client_timeout_s:.0f}s")
            time.sleep(0.5)


def _stopped(status: ConnectorStatus) -> bool:
    return status.state == "STOPPED" and not status.tasks


def _failback(run: _Run) -> list[GroupTypeRow]:
    """``more`` records on the source, copied by MM2; mm2ctl's failback of its groups; each resumes on the
    source."""
    o = run.options
    total = o.first + o.later + o.more
    _produce(run.src, run.topic, o.first + o.later, o.more)
    _wait_copied(run, total)
    planned = _plan_and_apply(run, "failback")
    run.progress("the mm2ctl groups resume on the source and read to the end")
    groups = {run.group("mm2ctl", t): t for t in GROUP_TYPES}
    got = _resume_all(run, groups, on_target=False, label="failback")
    return _rows(run, "failback", got, total, planned, _mm2ctl_notes(run, "failback", planned))


def _remove_flow(run: _Run) -> None:
    """Delete the drill flow's connectors (its topics keep their unique names)."""
    from mm2ctl.connect_client import build_connect_client

    with build_connect_client([run.lab.connect_url]) as connect:
        for c in run.connectors:
            try:
                connect.delete(c)
            except Mm2ctlError:
                run.progress(f"could not delete connector {c}; delete it by hand")


def _check_lab(lab: LabInfo) -> None:
    version = tuple(int(x) for x in lab.kafka_version.split(".")[:2])
    if version < (4, 2):
        raise LabError(
            f"the group-types drill needs Kafka 4.2+ (share and streams groups); this lab runs {lab.kafka_version}"
        )
    if lab.secured:
        raise LabError("the group-types drill needs a lab without security: its streams app connects in plaintext")


def drill_group_types(
    lab: LabInfo, workdir: Path, progress: Progress | None = None, options: GroupTypesOptions = GroupTypesOptions()
) -> GroupTypesDrill:
    """Run the drill (see the module's docstring) on a running lab through a flow of its own, deleted at the
    end; plans, journals, mm2ctl's output, the streams apps' logs and ``result.json`` stay in ``workdir``."""
    _check_lab(lab)
    if len(options.accepted) != len(PARTITIONS) or not all(0 < n < options.first for n in options.accepted):
        raise LabError(f"accepted must give {len(PARTITIONS)} counts between 1 and first - 1")
    workdir.mkdir(parents=True, exist_ok=True)
    run = _Run(lab, "gt" + uuid.uuid4().hex[:8], workdir, progress or no_progress, options)
    t0 = time.monotonic()
    try:
        KafkaAdmin.connect(run.src).create_topics({run.topic: len(PARTITIONS)})
        run.progress(f"creating MM2 flow {run.name}src->{run.name}dst (every role, sync.group.offsets on)")
        flow = lab_core.add_flow(lab, run.name)
        run.connectors.extend(flow.connectors.values())
        run.checkpoint_connector = flow.connectors["checkpoint"]
        run.pair, run.mm2_config = f"{flow.source_alias}->{flow.target_alias}", flow.mm2_config
        _produce(run.src, run.topic, 0, options.first)
        _source_state(run)
        _produce(run.src, run.topic, options.first, options.later)
        _wait_copied(run, options.first + options.later)
        rows = _failover(run) + _failback(run)
    finally:
        _remove_flow(run)
    result = GroupTypesDrill(
        pair=run.pair, topic=run.topic, remote_topic=run.remote, partitions=len(PARTITIONS), first=options.first,
        later=options.later, more=options.more, accepted=options.accepted, rows=tuple(rows),
        seconds=round(time.monotonic() - t0, 1), workdir=str(workdir),
    )  # fmt: skip
    (workdir / "result.json").write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    return result


# ------------------------------------------------------------------------------------------ table


_COLUMNS = (("mm2", "MM2 alone: lost", 16), ("mm2ctl", "mm2ctl: lost", 15), ("failback", "failback: lost", 17))
_LABELS = {"mm2": "MM2 alone", "mm2ctl": "mm2ctl", "failback": "failback"}


def _summary(rows: list[GroupTypeRow]) -> str:
    """A type's note column: the goals it missed, and the share records the plans count."""
    missed = [_LABELS[r.method] for r in rows if r.met is False]
    counted = [f"{r.planned_again} ({_LABELS[r.method]})" for r in rows if r.planned_again is not None]
    parts = [f"GOAL MISSED: {', '.join(missed)}"] if missed else []
    if counted:
        parts.append(f"acknowledged past the start offset, counted by the plan: {', '.join(counted)}")
    return "; ".join(parts)


def table(result: GroupTypesDrill) -> list[str]:
    """The drill as a plain-text table: one line per group type with what each method lost and delivered
    again, then each row's note (what MM2 left on the target, what mm2ctl's plan wrote) and the goal."""
    lines = [
        f"failover drill per group type on {result.pair}: {result.topic} -> {result.remote_topic}, "
        f"{result.partitions} partitions, {result.first} records each before the groups stopped, "
        f"{result.later} after, {result.more} more before the failback ({result.seconds:.0f}s)",
        "",
        f"{'group type':<12}" + "".join(f"{head:>{width}}{'again':>7}" for _, head, width in _COLUMNS) + "   note",
    ]
    details: list[str] = []
    for t in GROUP_TYPES:
        rows = [r for m, _, _ in _COLUMNS if (r := result.row(t, m)) is not None]
        cells = ""
        for method, _, width in _COLUMNS:
            r = result.row(t, method)
            cells += f"{'-' if r is None else r.lost:>{width}}{'-' if r is None else r.delivered_again:>7}"
        lines.append(f"{t:<12}{cells}   {_summary(rows)}".rstrip())
        for i, r in enumerate(x for x in rows if x.note):
            details.append(f"  {t if i == 0 else '':<10}{_LABELS[r.method]:<11}{r.note}")
    verdict = "met" if result.goals_met else "MISSED"
    return [
        *lines,
        "",
        "notes:",
        *details,
        "",
        f"goal {verdict}: mm2ctl's failover and failback lose nothing and deliver nothing again, but for a share "
        "group's records acknowledged past its start offset, which the plan counts",
    ]
