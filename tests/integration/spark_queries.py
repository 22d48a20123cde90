"""The harness of ``test_spark_queries.py``: a topic whose offsets differ between the clusters, records whose
values say which source record they are, Structured Streaming queries on the embedded session whose
``foreachBatch`` sinks record what they processed, and ``plan failover|failback --spark-checkpoint`` + ``apply``.

Facts the tests rely on:

- The topic's first records are deleted before its flow starts, so MM2 copies it from the log start: the copy of
  source offset ``SHIFT[p] + i`` is target offset ``i``. A position that crossed the flow untranslated names
  records that do not exist on the target or the wrong ones, and the content comparison sees it.
- Each value is ``p<partition>-<seq>``, unique in the topic; each record's timestamp is its own
  (``base + 10 * seq``), so the timestamp fallback finds exactly one record per timestamp.
- ``Trigger.AvailableNow`` runs every record present at the start, ``maxOffsetsPerTrigger`` at a time, and stops;
  a sink appends each batch's rows to a JSON-lines file before the batch commits, so a batch run twice would
  show its rows twice.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.spark_checkpoints.read import CheckpointRead, LocalCheckpointFiles, read_checkpoint
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.plans.kafka_records import read_syncs
from mm2ctl.plans.live_state import open_live_state
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

PARTITIONS = (0, 1)
#: Records deleted from the start of each source partition before the flow starts: the source offset of a record
#: is its target offset plus this.
SHIFT = {0: 7, 1: 3}
#: Keys a stateful query counts by: ``k<seq % KEYS>``.
KEYS = 4
#: Records per batch (``maxOffsetsPerTrigger``, over all partitions).
PER_BATCH = 50
QUERY_TIMEOUT_S = 240.0


def value(partition: int, seq: int) -> str:
    return f"p{partition}-{seq:06d}"


def key(seq: int) -> str:
    return f"k{seq % KEYS}"


@dataclass
class Mirrored:
    """A two-partition topic on the lab's source cluster, an isolated flow mirroring it, and what was produced."""

    lab: LabInfo
    flow: LabFlow
    topic: str
    remote: str
    base_ms: int
    #: (key, value) of every record produced after the deleted ones, in order per partition.
    produced: dict[int, list[tuple[str, str]]] = field(default_factory=lambda: {p: [] for p in PARTITIONS})

    @property
    def name(self) -> str:
        return self.flow.source_alias.removesuffix("src")

    @property
    def pair(self) -> str:
        return f"{self.flow.source_alias}->{self.flow.target_alias}"

    @property
    def no_group(self) -> str:
        """A ``--groups`` that matches no group: the plans here move the queries only."""
        return f"iso-{self.name}-nogroup"

    def produce(self, count: int) -> None:
        """``count`` more records on each partition, each with its own timestamp."""
        producer = Producer({"bootstrap.servers": self.lab.source.bootstrap, "enable.idempotence": True})
        for p in PARTITIONS:
            start = len(self.produced[p])
            for seq in range(start, start + count):
                k, v = key(seq), value(p, seq)
                producer.produce(self.topic, key=k.encode(), value=v.encode(), partition=p, timestamp=self._ts(seq))
                self.produced[p].append((k, v))
        assert producer.flush(60) == 0, "records not delivered"

    def _ts(self, seq: int) -> int:
        return self.base_ms + 10 * seq

    def values(self) -> Counter[str]:
        return Counter(v for records in self.produced.values() for _k, v in records)

    def counts(self) -> dict[str, int]:
        return dict(Counter(k for records in self.produced.values() for k, _v in records))

    def wait_copied(self, *, syncs: bool = True) -> None:
        """Until the target holds a copy of every record produced (the target's log end per partition, the
        copy starting at offset 0) and, with ``syncs``, MM2 has written an offset sync of each partition."""
        want = {p: len(self.produced[p]) for p in PARTITIONS}

        def copied() -> bool:
            got = KafkaAdmin.connect(target_conf(self.lab)).partition_bounds([(self.remote, p) for p in PARTITIONS])
            return all(b.error is None and (b.earliest, b.latest) == (0, want[p]) for (_t, p), b in got.items())

        eventually(copied, timeout_s=120, what=f"MM2 copied {self.topic}: {want} records")
        if not syncs:
            return
        live = open_live_state(self.flow.mm2_config)
        pair = live.mm2.pair(self.pair)
        eventually(
            lambda: all(read_syncs(live, pair).get((self.topic, p)) for p in PARTITIONS),
            timeout_s=120,
            what=f"MM2's offset syncs of every partition of {self.topic}",
        )


def mirrored_topic(lab: LabInfo, name: str, *, source_settings: Mapping[str, str] | None = None) -> Mirrored:
    """``iso-<name>-t`` on the source, its first ``SHIFT[p]`` records deleted, then a flow ``name`` mirroring it
    (every role; with ``source_settings``, those of the MirrorSourceConnector, e.g. offset syncs disabled, and no
    checkpoint connector, which refuses to run without offset syncs)."""
    topic = f"iso-{name}-t"
    source = KafkaAdmin.connect(source_conf(lab))
    source.create_topics({topic: len(PARTITIONS)})
    base_ms = int(time.time() * 1000) - 600_000
    producer = Producer({"bootstrap.servers": lab.source.bootstrap, "enable.idempotence": True})
    for p, n in SHIFT.items():
        for i in range(n):
            producer.produce(topic, value=b"deleted-%d" % i, partition=p, timestamp=base_ms - 60_000 + i)
    assert producer.flush(60) == 0, "records not delivered"
    deleted = source.delete_records({(topic, p): n for p, n in SHIFT.items()})
    assert [(r.partition, r.offset, r.error) for r in deleted] == [(p, SHIFT[p], None) for p in PARTITIONS], deleted
    if source_settings:
        flow = lab_core.add_flow(lab, name, roles=("source", "heartbeat"), source_settings=source_settings)
    else:
        flow = lab_core.add_flow(lab, name)
    remote = topic if lab.replication_policy == "identity" else f"{flow.source_alias}.{topic}"
    return Mirrored(lab=lab, flow=flow, topic=topic, remote=remote, base_ms=base_ms)


# --- queries -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One ``availableNow`` run of a query: its checkpoint, its sink file, and the batches it ran with input."""

    checkpoint: Path
    sink: Path
    batches: tuple[int, ...]


def _append(sink: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    with sink.open("a", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, sort_keys=True) + "\n")


def _records_sink(sink: Path) -> Callable[[Any, int], None]:
    def write(frame: Any, batch_id: int) -> None:
        rows = frame.selectExpr("topic", "partition", "offset", "CAST(value AS STRING) AS value").collect()
        _append(sink, ({"batch": batch_id, **row.asDict()} for row in rows))

    return write


def _counts_sink(sink: Path) -> Callable[[Any, int], None]:
    def write(frame: Any, batch_id: int) -> None:
        rows = frame.collect()
        _append(sink, ({"batch": batch_id, **row.asDict()} for row in rows))

    return write


def _kafka_stream(spark: Any, bootstrap: str, topic: str, starting_offsets: str | None) -> Any:
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("maxOffsetsPerTrigger", str(PER_BATCH))
    )
    if starting_offsets is not None:
        reader = reader.option("startingOffsets", starting_offsets)
    else:
        reader = reader.option("startingOffsets", "earliest")
    return reader.load()


def _run(writer: Any, checkpoint: Path, sink: Path) -> Run:
    query = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    try:
        finished = query.awaitTermination(QUERY_TIMEOUT_S)
    finally:
        if query.isActive:
            query.stop()
    assert finished, f"the query on {checkpoint} did not finish within {QUERY_TIMEOUT_S:.0f}s"
    assert query.exception() is None, query.exception()
    batches = tuple(int(p["batchId"]) for p in query.recentProgress if int(p["numInputRows"]) > 0)
    return Run(checkpoint=checkpoint, sink=sink, batches=batches)


def run_records_query(
    spark: Any, bootstrap: str, topic: str, checkpoint: Path, sink: Path, *, starting_offsets: str | None = None
) -> Run:
    """A stateless query on ``topic`` that appends every record it processes (topic, partition, offset, value) to
    ``sink``; from ``startingOffsets`` (the earliest by default) when ``checkpoint`` holds no offsets."""
    frame = _kafka_stream(spark, bootstrap, topic, starting_offsets)
    writer = frame.writeStream.foreachBatch(_records_sink(sink))
    return _run(writer, checkpoint, sink)


def run_counting_query(spark: Any, bootstrap: str, topic: str, checkpoint: Path, sink: Path) -> Run:
    """A stateful query on ``topic``: per key the running count and every value it counted (the aggregation's
    state), in update mode; each batch's updated rows (key, count, values) appended to ``sink``."""
    from pyspark.sql import functions as F

    frame = (
        _kafka_stream(spark, bootstrap, topic, None)
        .selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
        .groupBy("key")
        .agg(F.count("*").alias("count"), F.collect_list("value").alias("values"))
    )
    writer = frame.writeStream.outputMode("update").foreachBatch(_counts_sink(sink))
    return _run(writer, checkpoint, sink)


def sink_rows(*sinks: Path) -> list[dict[str, Any]]:
    """Every row the sinks recorded, in the order they were written (a sink that never ran has no file)."""
    rows: list[dict[str, Any]] = []
    for sink in sinks:
        if sink.exists():
            rows.extend(json.loads(line) for line in sink.read_text(encoding="utf-8").splitlines())
    return rows


def final_counts(*sinks: Path) -> dict[str, dict[str, Any]]:
    """Per key, the last row the counting query wrote (update mode writes a key's row whenever it changes)."""
    return {row["key"]: row for row in sink_rows(*sinks)}


@dataclass(frozen=True)
class Comparison:
    lost: Counter[str]
    twice: Counter[str]  # value -> how many times more than once
    unexpected: Counter[str]

    @property
    def exact(self) -> bool:
        return not (self.lost or self.twice or self.unexpected)


def compare(produced: Counter[str], processed: Iterable[str]) -> Comparison:
    """What was produced against what the queries processed, by value."""
    seen = Counter(processed)
    return Comparison(
        lost=produced - seen,
        twice=Counter({v: n - 1 for v, n in seen.items() if n > 1}),
        unexpected=Counter({v: n for v, n in seen.items() if v not in produced}),
    )


def checkpoint_read(checkpoint: Path) -> CheckpointRead:
    return read_checkpoint(LocalCheckpointFiles(checkpoint))


def next_offsets(rows: Iterable[Mapping[str, Any]], topic: str) -> dict[int, int]:
    """Per partition, one past the highest offset of ``topic`` the rows name: where a query that processed them
    resumes."""
    out: dict[int, int] = {}
    for row in rows:
        if row["topic"] == topic:
            out[row["partition"]] = max(out.get(row["partition"], 0), row["offset"] + 1)
    return out


# --- mm2ctl ----------------------------------------------------------------------------------------------


def plan_failover(
    m: Mirrored, state: Path, checkpoint: Path, *extra: str, plan: Path | None = None
) -> tuple[int, dict[str, Any] | None, str]:
    """``plan failover --spark-checkpoint`` on the flow, no group wanted: (exit code, its JSON or None, stderr)."""
    return _plan("failover", m, state, checkpoint, *extra, plan=plan)


def plan_failback(
    m: Mirrored, state: Path, checkpoint: Path, *extra: str, plan: Path | None = None
) -> tuple[int, dict[str, Any] | None, str]:
    """``plan failback --spark-checkpoint`` on the flow (a query reading the remote topic on the target), no group
    wanted: (exit code, its JSON or None, stderr)."""
    return _plan("failback", m, state, checkpoint, *extra, plan=plan)


def _plan(
    direction: str, m: Mirrored, state: Path, checkpoint: Path, *extra: str, plan: Path | None
) -> tuple[int, dict[str, Any] | None, str]:
    out = plan or state / "plan.yaml"
    proc = mm2ctl(
        "plan", direction, "--pair", m.pair, "--mm2-config", m.flow.mm2_config, "--groups", m.no_group,
        "--spark-checkpoint", str(checkpoint), *extra, "--out", str(out), "--json", state=state,
    )  # fmt: skip
    doc = json.loads(proc.stdout) if proc.stdout.strip() else None
    return proc.returncode, doc, proc.stderr


def apply(plan: Path, state: Path) -> None:
    proc = mm2ctl("apply", str(plan), "--auto-approve", state=state)
    assert proc.returncode == 0, proc.stdout + proc.stderr
