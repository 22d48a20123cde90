"""The group-types drill's load: numbered records (``p<partition>-<seq>``) on the drill's topic, and the real
clients of each group type that read them: classic and consumer (KIP-848) group members, share consumers
(KIP-932) with explicit acknowledgement, and passthrough Kafka Streams applications (KIP-1071)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, ShareConsumer

from mm2ctl.core.errors import KafkaClusterError, LabError
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.client_log import librdkafka_log
from mm2ctl.core.polling import poll_until
from mm2ctl.drill.group_run import PARTITIONS, GroupTypesRun, Seq
from mm2ctl.lab.share_consumer import accept_prefix, read_from_earliest
from mm2ctl.lab.streams_app import start_streams_app


def produce(conf: Mapping[str, str], topic: str, start: int, count: int) -> None:
    rows = [(b"k", b"p%d-%06d" % (p, i), p) for p in PARTITIONS for i in range(start, start + count)]
    records.produce(conf, topic, rows)


def seqs(values: Iterable[bytes | None]) -> list[Seq]:
    """The (partition, sequence) each ``p<partition>-<seq>`` value names, in order; other values are skipped."""
    out: list[Seq] = []
    for v in values:
        part, _, seq = (v or b"").partition(b"-")
        if part.startswith(b"p") and part[1:].isdigit() and seq.isdigit():
            out.append((int(part[1:]), int(seq)))
    return out


def ends(conf: Mapping[str, str], topic: str) -> dict[int, int | None]:
    """Each partition's end offset (None where the broker gave no answer)."""
    bounds = KafkaAdmin.connect(conf).partition_bounds([(topic, p) for p in PARTITIONS])
    return {p: bounds[(topic, p)].latest for p in PARTITIONS}


def committed_offsets(conf: Mapping[str, str], group: str, topic: str) -> dict[int, int]:
    offsets = KafkaAdmin.connect(conf).committed_offsets([group])[group].offsets
    return {p: o for (t, p), o in offsets.items() if t == topic and o is not None}


def consume_to_end(
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
            got.extend(seqs([msg.value()]))
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        if positions:
            consumer.commit(offsets=positions, asynchronous=False)
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as {protocol} group {group}: {exc}") from exc
    finally:
        consumer.close()
    return got


def streams_pass(
    run: GroupTypesRun, on_target: bool, topic: str, outputs: Mapping[str, str], label: str
) -> dict[str, list[Seq]]:
    """Run a passthrough Kafka Streams application per group (group -> its output topic, made here) on
    ``topic``, all at once, until each group's committed offsets reach the topic's end; stop them (they leave
    their groups) and return what each wrote. A group with no committed offsets starts at the earliest."""
    conf = run.dst if on_target else run.src
    bootstrap = run.lab.target.bootstrap if on_target else run.lab.source.bootstrap
    KafkaAdmin.connect(conf).create_topics({out: len(PARTITIONS) for out in outputs.values()})
    end = ends(conf, topic)
    timeout_s = run.options.client_timeout_s
    with contextlib.ExitStack() as stack:
        for g, out in outputs.items():
            log = run.workdir / f"{g}-{label}.log"
            stack.enter_context(start_streams_app(bootstrap, g, topic, out, log_path=log))
        for g in outputs:

            def done(group: str = g) -> bool:
                return committed_offsets(conf, group, topic) == end

            if not poll_until(done, timeout_s=timeout_s, interval_s=0.5):
                log = run.workdir / f"{g}-{label}.log"
                raise LabError(f"the Kafka Streams app {g} did not commit {topic}'s end {end} (log: {log})")
    return {
        g: seqs(r.value for r in records.read_partitions(conf, out, list(PARTITIONS))) for g, out in outputs.items()
    }


def share_pass(run: GroupTypesRun, conf: Mapping[str, str], group: str, topic: str) -> list[Seq]:
    """A share consumer of ``group`` (explicit acknowledgement) accepts every record delivered, and stops: a
    second after the last record of every partition came; ``share_idle_s`` after the last delivery otherwise;
    ``share_quiet_s`` after joining when nothing came at all (a group whose start offset is the log end gets
    nothing, which is MM2 alone's case; the wait also covers a slow join); at ``client_timeout_s`` in all."""
    o = run.options
    last_offset = {p: (end or 0) - 1 for p, end in ends(conf, topic).items()}
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
                got.extend(seqs([msg.value()]))
                last = time.monotonic()
                if offset == last_offset.get(p):
                    reached.add(p)
        consumer.commit_sync()
    except KafkaException as exc:
        raise KafkaClusterError(f"consuming {topic} as share group {group}: {exc}") from exc
    finally:
        consumer.close()
    return got


def resume_all(run: GroupTypesRun, groups: Mapping[str, str], *, on_target: bool, label: str) -> dict[str, list[Seq]]:
    """Every group (group -> type) resumes with a real client of its type, on the target (the remote topic)
    or the source, and reads to the end; what each got (for a streams group: what it wrote). The consumers
    run on threads of their own while the streams applications run, so the share consumer's waits overlap."""
    conf, topic = (run.dst, run.remote) if on_target else (run.src, run.topic)
    timeout_s = run.options.client_timeout_s
    with ThreadPoolExecutor(max_workers=len(groups)) as pool:
        pending: dict[str, Future[list[Seq]]] = {}
        for g, t in groups.items():
            if t in ("classic", "consumer"):
                pending[g] = pool.submit(consume_to_end, conf, topic, g, t, reset="latest", timeout_s=timeout_s)
            elif t == "share":
                pending[g] = pool.submit(share_pass, run, conf, g, topic)
        streams = {
            g: run.output(f"{g.removeprefix(f'iso-{run.name}-')}-{label}") for g, t in groups.items() if t == "streams"
        }
        got = streams_pass(run, on_target, topic, streams, label)
        got.update({g: f.result() for g, f in pending.items()})
    return got


def source_state(run: GroupTypesRun) -> None:
    """Both groups of each type reach the same source state on the ``first`` records of each partition: the
    classic, consumer and share groups on threads of their own while the streams applications run."""
    o = run.options
    accept = dict(zip(PARTITIONS, o.accepted, strict=True))
    gap = f" but offset {o.released}, which they release" if o.released >= 0 else ""
    run.progress(
        f"classic and consumer groups read everything and commit, streams apps process it and leave, share groups "
        f"accept the first {accept} records per partition{gap} (explicit acknowledgement)"
    )
    with ThreadPoolExecutor(max_workers=6) as pool:
        pending: dict[str, Future[Any]] = {}
        for method in ("mm2", "mm2ctl"):
            for t in ("classic", "consumer"):
                g = run.group(method, t)
                pending[g] = pool.submit(consume_to_end, run.src, run.topic, g, t, reset="earliest", timeout_s=60)
            g = run.group(method, "share")
            pending[g] = pool.submit(_accept_prefix, run, g, accept)
        streams = {run.group(m, "streams"): run.output(f"{m}-streams-source") for m in ("mm2", "mm2ctl")}
        for g, got in streams_pass(run, False, run.topic, streams, "source").items():
            run.processed[g] = set(got)
        for g, future in pending.items():
            run.processed[g] = set(future.result())


def _accept_prefix(run: GroupTypesRun, group: str, accept: Mapping[int, int]) -> set[Seq]:
    """The share group reads from the earliest offset and accepts the first ``accept[p]`` records of each
    partition (offset = sequence number on the drill's fresh topic) but ``released``, releasing the rest."""
    read_from_earliest(run.src, group)
    gap = run.options.released
    release = {p: [gap] for p in accept} if gap >= 0 else {}
    want = {p: n - (1 if gap >= 0 else 0) for p, n in accept.items()}
    got = accept_prefix(run.src, group, run.topic, accept, release=release, timeout_s=run.options.client_timeout_s)
    if got != want:
        raise LabError(f"share group {group} accepted {got}, not {want}")
    return {(p, s) for p, n in accept.items() for s in range(n) if s != gap}


def wait_copied(run: GroupTypesRun, per_partition: int) -> None:
    run.progress(f"waiting for MM2 to copy {per_partition} records per partition to {run.remote}")
    want = dict.fromkeys(PARTITIONS, per_partition)
    if not poll_until(lambda: ends(run.dst, run.remote) == want, timeout_s=120, interval_s=0.5):
        raise LabError(f"MM2 did not copy {run.topic} to {run.remote} in 120s: {ends(run.dst, run.remote)}")
