"""Benchmark ``mm2ctl inspect`` at scale against a real lab, and compare it with the floor it cannot beat.

Run it as ``.venv/bin/python bench/inspect_scale.py [--scale 1.0] [--json]`` (see bench/README.md).

It starts a lab (or reuses one), loads a bench MM2 pair ``isobenchsrc->isobenchdst`` whose names start with
``iso-bench`` so the lab's own ``primary->backup`` flow ignores them, and then measures, in one process:

* Spark start-up: session build plus a first trivial job;
* the floor: merely reading the same inputs — Spark's Kafka source over the offset-syncs and checkpoints
  topics (forced with a count) and the admin-state collection (``collect_pair_state``) for the pair;
* end to end: a cold inspection (``inspector.inspection.Inspector``) writing the rows as Parquet, as
  ``--format parquet`` does,
  with the replication-health rows of every source partition computed in the same run;
* peak memory of the Python driver and of Spark's JVM.

At ``--scale 1`` the load is 10 topics x 100 partitions (1,000 source partitions, 10,000 records each, and
the same on the remote topics), 10,000 offset syncs per partition (10 million), 1,000 groups committed on
every partition on the source (1 million group partitions, admin API) and on the target for 98% of the
groups, with a few percent of the target offsets deliberately ahead or behind, and one checkpoint per target
group partition. No MM2 connector runs for the bench pair, so the state stays put while it is measured; MM2's
position is loaded as dedicated-mode MM2 stores it (``mm2-offsets.<source>.internal`` on the target): every
partition 20 records behind its end, and 1 % of them far enough behind to be ``lagging``.

The offset-syncs and checkpoints topics are created with ``cleanup.policy=delete`` and infinite retention:
MM2 makes them compacted, but a compacted topic may be cleaned while the bench runs, and "every sync still
in the topic, before the cleaner ran" is the worst case the inspector must handle, so that is what is loaded.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import multiprocessing
import os
import resource
import shutil
import struct
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench_lab import loadavg, open_lab, print_figures, say
from confluent_kafka import Producer

from mm2ctl.core.config.mm2_config import MM2Config, PairConfig, load_mm2_config
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.codecs import encode_checkpoint_key, encode_checkpoint_value, encode_offset_sync_key
from mm2ctl.inspector.inspection import InspectOptions, Inspector, preflight
from mm2ctl.inspector.reads.kafka_read import read_topic, tasks_for
from mm2ctl.inspector.reads.pair_admin import collect_pair_state
from mm2ctl.inspector.selection import Selection
from mm2ctl.inspector.spark.session import build_session
from mm2ctl.lab import control as lab_control
from mm2ctl.lab.mm2_setup import POLICY_CLASSES

SOURCE_ALIAS = "isobenchsrc"
TARGET_ALIAS = "isobenchdst"
PAIR = f"{SOURCE_ALIAS}->{TARGET_ALIAS}"
TOPIC_PREFIX = "iso-bench-t"
GROUP_PREFIX = "iso-bench-g"
LOAD_FILE = "bench-load.json"
MM2_FILE = "mm2-isobench.properties"
DEFAULT_LAB_DIR = "/tmp/mm2ctl-bench-lab"

#: Spark tasks of the floor's topic reads: as many as the inspection's read of ten million records uses.
READ_TASKS = tasks_for(10_000_000)
#: Offset-syncs and checkpoints topics as they are before the log cleaner ran: nothing is ever removed.
INTERNAL_TOPIC_CONFIG = {"cleanup.policy": "delete", "retention.ms": "-1", "retention.bytes": "-1"}
DATA_TOPIC_CONFIG = {"retention.ms": "-1", "retention.bytes": "-1"}

#: Records the source partitions hold after their newest sync (MM2 syncs trail the log end a little).
TAIL_RECORDS = 20
#: Every this many upstream offsets, one is a transaction marker: MM2 does not replicate it and writes no sync
#: for it, so the target falls one offset further behind (downstream offsets run a little below upstream ones).
DRIFT_EVERY = 1000

_OFFSET_SYNC_VALUE = struct.Struct(">qq")

Say = Callable[[str], None]


# --- the load ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadSpec:
    topics: int
    partitions_per_topic: int
    syncs_per_partition: int
    groups: int

    @staticmethod
    def for_scale(scale: float) -> LoadSpec:
        return LoadSpec(
            topics=10,
            partitions_per_topic=max(1, round(100 * scale)),
            syncs_per_partition=max(10, round(10_000 * scale)),
            groups=max(10, round(1_000 * scale)),
        )

    @property
    def source_topics(self) -> list[str]:
        return [f"{TOPIC_PREFIX}{i}" for i in range(self.topics)]

    @property
    def partitions(self) -> list[tuple[str, int]]:
        return [(t, p) for t in self.source_topics for p in range(self.partitions_per_topic)]

    @property
    def group_names(self) -> list[str]:
        return [f"{GROUP_PREFIX}{g:05d}" for g in range(self.groups)]

    @property
    def source_records(self) -> int:
        """Records per source partition: one sync per upstream offset, then a short unsynced tail."""
        return self.syncs_per_partition + TAIL_RECORDS

    @property
    def sync_upstreams(self) -> range:
        """Every upstream offset the load writes a sync for (one per record, none for a marker)."""
        return range(self.syncs_per_partition)

    @property
    def last_sync_upstream(self) -> int:
        last = self.syncs_per_partition - 1
        return last - 1 if is_marker(last) else last

    @property
    def target_records(self) -> int:
        """Records per remote partition: everything the source holds, minus the drift."""
        return downstream(self.last_sync_upstream) + 1 + TAIL_RECORDS

    @property
    def total_syncs(self) -> int:
        synced = sum(1 for u in self.sync_upstreams if not is_marker(u))
        return synced * len(self.partitions)

    @property
    def group_partitions(self) -> int:
        return self.groups * len(self.partitions)


def is_marker(upstream: int) -> bool:
    """Whether the source record at ``upstream`` is a transaction marker (never replicated, never synced)."""
    return upstream % DRIFT_EVERY == DRIFT_EVERY - 1


def downstream(upstream: int) -> int:
    """Where the record at ``upstream`` (not a marker) lands on the target: each earlier marker is one less.
    Distinct records land at distinct offsets, as MM2 copies them."""
    return upstream - upstream // DRIFT_EVERY


def translate(spec: LoadSpec, committed: int) -> int:
    """The translation rule (docs/design.md, "Translation") against the loaded syncs (one per upstream offset 0..last):
    the reference answer."""
    upstream = min(committed, spec.last_sync_upstream)
    if is_marker(upstream):
        upstream -= 1  # the newest sync at or below it
    return downstream(upstream) if upstream == committed else downstream(upstream) + 1


def committed_offset(spec: LoadSpec, group: int, partition_index: int) -> int:
    """A deterministic spread over the upper half of the source partition, up to its latest offset."""
    span = spec.source_records // 2 + 1
    return spec.source_records - (group * 7919 + partition_index * 104729) % span


def group_without_target(group: int) -> bool:
    """2% of the groups were never synced to the target: no target offsets and no checkpoints."""
    return group % 50 == 49


def target_offset(spec: LoadSpec, group: int, partition_index: int, committed: int) -> int:
    """Mostly the translation; 2% ahead (messages would be skipped), 2% behind beyond the stale slack."""
    translated = translate(spec, committed)
    bucket = (group * 31 + partition_index * 17) % 100
    if bucket < 2:
        return translated + 3
    if bucket < 4:
        slack = 100 + max(0, spec.last_sync_upstream - committed)
        return max(0, translated - slack - 50)
    return translated


def expected_statuses(spec: LoadSpec) -> dict[str, int]:
    """What the classification should find, computed by the rules above (a sanity check, not a test)."""
    counts = {"ahead": 0, "behind": 0, "no_target": 0}
    for g in range(spec.groups):
        if group_without_target(g):
            counts["no_target"] += len(spec.partitions)
            continue
        for i in range(len(spec.partitions)):
            bucket = (g * 31 + i * 17) % 100
            if bucket < 2:
                counts["ahead"] += 1
            elif bucket < 4:
                counts["behind"] += 1
    return counts


def _producer(bootstrap: str) -> Producer:
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 50,
            "compression.type": "lz4",
            "enable.idempotence": True,
            "batch.num.messages": 1_000_000,
            "batch.size": 1_000_000,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
        }
    )


def _produce_all(bootstrap: str, records: Iterator[tuple[str, int, bytes | None, bytes | None]]) -> int:
    producer = _producer(bootstrap)
    count = 0
    for topic, partition, key, value in records:
        while True:
            try:
                producer.produce(topic, value, key, partition=partition)
                break
            except BufferError:
                producer.poll(0.05)
        count += 1
        if count % 100_000 == 0:
            producer.poll(0)
    left = producer.flush(300)
    if left:
        raise RuntimeError(f"{left} record(s) not delivered to {bootstrap}")
    return count


def load_data_records(bootstrap: str, partitions: list[tuple[str, int]], per_partition: int) -> int:
    """Small, keyless records (the inspector only needs the partitions' offsets)."""

    def records() -> Iterator[tuple[str, int, bytes | None, bytes | None]]:
        for topic, partition in partitions:
            for _ in range(per_partition):
                yield topic, partition, None, b"x"

    return _produce_all(bootstrap, records())


def load_offset_syncs(bootstrap: str, topic: str, spec: LoadSpec) -> int:
    """One sync per upstream offset and partition, interleaved across partitions the way MM2 writes them."""
    keys = [encode_offset_sync_key(t, p) for t, p in spec.partitions]
    pack = _OFFSET_SYNC_VALUE.pack

    def records() -> Iterator[tuple[str, int, bytes | None, bytes | None]]:
        for upstream in spec.sync_upstreams:
            if is_marker(upstream):
                continue
            value = pack(upstream, downstream(upstream))
            for key in keys:
                yield topic, 0, key, value

    return _produce_all(bootstrap, records())


def load_checkpoints(bootstrap: str, topic: str, spec: LoadSpec, remote_prefix: str) -> int:
    """What MM2's checkpoint connector would have emitted: the translation of every synced group partition."""

    def records() -> Iterator[tuple[str, int, bytes | None, bytes | None]]:
        for g, group in enumerate(spec.group_names):
            if group_without_target(g):
                continue
            for i, (t, p) in enumerate(spec.partitions):
                c = committed_offset(spec, g, i)
                key = encode_checkpoint_key(group, remote_prefix + t, p)
                yield topic, 0, key, encode_checkpoint_value(c, translate(spec, c), "")

    return _produce_all(bootstrap, records())


def stored_position(spec: LoadSpec, partition_index: int) -> int:
    """MirrorSourceConnector's stored offset (the last upstream offset it copied) for a bench partition."""
    return 0 if partition_index % 100 == 0 else spec.last_sync_upstream


def load_positions(bootstrap: str, topic: str, spec: LoadSpec) -> int:
    """MM2's position, as dedicated-mode MM2 stores it: Connect's JSON key and offset per source partition."""

    def records() -> Iterator[tuple[str, int, bytes | None, bytes | None]]:
        for i, (t, p) in enumerate(spec.partitions):
            key = json.dumps(["MirrorSourceConnector", {"cluster": SOURCE_ALIAS, "partition": p, "topic": t}])
            value = json.dumps({"offset": stored_position(spec, i)})
            yield topic, 0, key.encode(), value.encode()

    return _produce_all(bootstrap, records())


def commit_group_offsets(bootstrap: str, spec: LoadSpec, remote_prefix: str | None) -> tuple[int, int]:
    """Set every group's committed offsets with the admin API (concurrent, one group per request).

    ``remote_prefix`` None: the source offsets; otherwise the target offsets under the remote topic names.
    Returns (partitions committed, partitions that failed).
    """
    admin = KafkaAdmin.connect({"bootstrap.servers": bootstrap}, name="bench", timeout_s=120)
    committed = failed = 0
    chunk = 50
    names = spec.group_names
    for start in range(0, spec.groups, chunk):
        offsets: dict[str, dict[tuple[str, int], int]] = {}
        for g in range(start, min(start + chunk, spec.groups)):
            if remote_prefix is not None and group_without_target(g):
                continue
            wanted: dict[tuple[str, int], int] = {}
            for i, (t, p) in enumerate(spec.partitions):
                c = committed_offset(spec, g, i)
                if remote_prefix is None:
                    wanted[(t, p)] = c
                else:
                    wanted[(remote_prefix + t, p)] = target_offset(spec, g, i, c)
            offsets[names[g]] = wanted
        for results in admin.alter_group_offsets(offsets, concurrency=16).values():
            for r in results:
                if r.error is None:
                    committed += 1
                else:
                    failed += 1
    return committed, failed


def write_mm2_properties(path: Path, info: lab_control.LabInfo) -> None:
    """The bench pair as a MirrorMaker 2 properties file; no connector runs for it."""
    s, t = SOURCE_ALIAS, TARGET_ALIAS
    path.write_text(
        f"""# The mm2ctl bench pair (bench/inspect_scale.py). No connector runs it: the bench loads its state.
clusters = {s}, {t}
{s}.bootstrap.servers = {info.source.bootstrap}
{t}.bootstrap.servers = {info.target.bootstrap}
{s}->{t}.enabled = true
{t}->{s}.enabled = false
replication.policy.class = {POLICY_CLASSES["default"]}
offset-syncs.topic.location = source
topics = iso-bench-.*
groups = iso-bench-.*
emit.checkpoints.enabled = true
# 1 s, as the lab runs MM2: a checkpoint younger than two intervals proves MM2 is keeping up, and the
# loaded checkpoints are older than that when measured, so the offsets set behind classify as stale syncs.
emit.checkpoints.interval.seconds = 1
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
offset.lag.max = 100
replication.factor = 1
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
"""
    )


def load(info: lab_control.LabInfo, spec: LoadSpec, pair: PairConfig) -> dict[str, Any]:
    """Create the bench topics and fill them, then commit the groups' offsets on both clusters."""
    source = KafkaAdmin.connect({"bootstrap.servers": info.source.bootstrap}, name="primary", timeout_s=120)
    target = KafkaAdmin.connect({"bootstrap.servers": info.target.bootstrap}, name="backup", timeout_s=120)
    existing = set(source.list_topics())
    if pair.offset_syncs_topic in existing:
        raise SystemExit(f"{pair.offset_syncs_topic} already exists in this lab: pass --skip-load, or use a new lab")
    remote_prefix = pair.remote_topic("")
    source.create_topics({t: spec.partitions_per_topic for t in spec.source_topics}, config=DATA_TOPIC_CONFIG)
    source.create_topics({pair.offset_syncs_topic: 1}, config=INTERNAL_TOPIC_CONFIG)
    target.create_topics(
        {pair.remote_topic(t): spec.partitions_per_topic for t in spec.source_topics}, config=DATA_TOPIC_CONFIG
    )
    target.create_topics({pair.checkpoints_topic: 1}, config=INTERNAL_TOPIC_CONFIG)
    target.create_topics({pair.dedicated_offsets_topic: 1})
    load_positions(info.target.bootstrap, pair.dedicated_offsets_topic, spec)
    remote_partitions = [(remote_prefix + t, p) for t, p in spec.partitions]

    timings: dict[str, float] = {}
    t0 = time.monotonic()
    # Separate processes: producing is CPU-bound in the client, and the admin calls are independent of it.
    with cf.ProcessPoolExecutor(max_workers=3, mp_context=multiprocessing.get_context("spawn")) as pool:
        jobs = {
            "source records": pool.submit(
                load_data_records, info.source.bootstrap, spec.partitions, spec.source_records
            ),
            "target records": pool.submit(
                load_data_records, info.target.bootstrap, remote_partitions, spec.target_records
            ),
            "offset syncs": pool.submit(load_offset_syncs, info.source.bootstrap, pair.offset_syncs_topic, spec),
            "source group offsets": pool.submit(commit_group_offsets, info.source.bootstrap, spec, None),
            "target group offsets": pool.submit(commit_group_offsets, info.target.bootstrap, spec, remote_prefix),
            "checkpoints": pool.submit(
                load_checkpoints, info.target.bootstrap, pair.checkpoints_topic, spec, remote_prefix
            ),
        }
        start = {name: time.monotonic() for name in jobs}
        results: dict[str, Any] = {}
        for fut in cf.as_completed(jobs.values()):
            name = next(n for n, f in jobs.items() if f is fut)
            results[name] = fut.result()
            timings[name] = round(time.monotonic() - start[name], 1)
            say(f"load: {name} done in {timings[name]:.1f}s: {results[name]}")
    load_s = time.monotonic() - t0

    # Verify what landed, so a lost batch cannot silently shrink the bench.
    syncs_end = source.partition_bounds([(pair.offset_syncs_topic, 0)])[(pair.offset_syncs_topic, 0)].latest
    cps_end = target.partition_bounds([(pair.checkpoints_topic, 0)])[(pair.checkpoints_topic, 0)].latest
    bad_source = [b for b in source.partition_bounds(spec.partitions).values() if b.latest != spec.source_records]
    bad_target = [b for b in target.partition_bounds(remote_partitions).values() if b.latest != spec.target_records]
    problems = []
    if syncs_end != spec.total_syncs:
        problems.append(f"offset-syncs topic ends at {syncs_end}, expected {spec.total_syncs}")
    if bad_source or bad_target:
        problems.append(f"{len(bad_source)} source / {len(bad_target)} target partitions have unexpected sizes")
    for name in ("source group offsets", "target group offsets"):
        if results[name][1]:
            problems.append(f"{results[name][1]} {name} failed")
    if problems:
        raise SystemExit("load incomplete: " + "; ".join(problems))
    return {
        "load_seconds": round(load_s, 1),
        "load_steps_seconds": timings,
        "offset_syncs": syncs_end,
        "checkpoints": cps_end,
        "source_group_offsets": results["source group offsets"][0],
        "target_group_offsets": results["target group offsets"][0],
        "source_records": spec.source_records * len(spec.partitions),
        "target_records": spec.target_records * len(spec.partitions),
    }


# --- the measurements -----------------------------------------------------------------------------------


def reset_peak_rss() -> bool:
    """Reset this process's VmHWM (Linux ``clear_refs`` 5), so the peak covers the measured phases only."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def vm_hwm_mib(pid: int | str) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def timed(what: str, fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.monotonic()
    value = fn()
    seconds = time.monotonic() - t0
    say(f"{what}: {seconds:.1f}s")
    return seconds, value


def measure_floor(spark: Any, config: MM2Config, pair: PairConfig, tasks: int) -> dict[str, float]:
    """Read the job's inputs and nothing else: both internal topics through Spark, and the admin state."""

    def count(alias: str, topic: str) -> int:
        settings = config.client_settings(alias, pair.name)
        return int(read_topic(spark, settings, topic, cluster_pair=pair.name, min_partitions=tasks).count())

    syncs_s, syncs = timed(
        "floor: Spark read of the offset-syncs topic",
        lambda: count(pair.offset_syncs_cluster, pair.offset_syncs_topic),
    )
    cps_s, cps = timed("floor: Spark read of the checkpoints topic", lambda: count(pair.target, pair.checkpoints_topic))
    admin_s, state = timed("floor: admin state", lambda: collect_pair_state(config, pair, Selection()))
    return {
        "floor_seconds": round(syncs_s + cps_s + admin_s, 2),
        "floor_offset_syncs_read_seconds": round(syncs_s, 2),
        "floor_checkpoints_read_seconds": round(cps_s, 2),
        "floor_admin_state_seconds": round(admin_s, 2),
        "floor_offset_syncs_records": syncs,
        "floor_checkpoint_records": cps,
        "floor_group_partitions": state.group_partitions,
    }


def measure(info: lab_control.LabInfo, args: argparse.Namespace, spec: LoadSpec, out_dir: Path) -> dict[str, Any]:
    config = load_mm2_config(Path(info.dir) / MM2_FILE)
    pair = config.pair(PAIR)
    figures: dict[str, Any] = {}
    peak_reset = reset_peak_rss()

    t0 = time.monotonic()
    conf = dict(kv.split("=", 1) for kv in args.spark_conf)
    spark = build_session(args.spark_master, conf)
    spark.range(1).count()
    figures["spark_startup_seconds"] = round(time.monotonic() - t0, 2)
    say(f"Spark start-up: {figures['spark_startup_seconds']:.1f}s")
    jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())  # type: ignore[attr-defined]
    options = InspectOptions(pairs=(PAIR,), state_cache=False)  # a cold run: nothing saved by an earlier one
    checked = preflight(config, options)

    def end_to_end() -> Any:
        # A new inspector each time: every run is a cold one, reading the internal topics in full.
        inspector = Inspector(spark, config, options, checked)
        result = inspector.run(progress=lambda m: say(f"  inspect: {m}"))
        result.rows.write("parquet", str(out_dir / "rows.parquet"))
        result.close()
        inspector.close()
        return result

    # Floor and end to end alternate, so a noisy minute on the shared machine hits both alike; the fastest
    # run of each is kept and every run is reported.
    floors, e2e_runs = [], []
    for _ in range(args.repeat):
        floors.append(measure_floor(spark, config, pair, READ_TASKS))
        e2e_once, result = timed("end to end: the inspection + Parquet", end_to_end)
        e2e_runs.append(round(e2e_once, 2))
    if args.floor_twice:
        floors.append(measure_floor(spark, config, pair, READ_TASKS))
    floor = min(floors, key=lambda f: f["floor_seconds"])
    figures.update(floor)
    e2e_s = min(e2e_runs)
    if len(floors) > 1:
        figures["floor_seconds_runs"] = [f["floor_seconds"] for f in floors]
    if len(e2e_runs) > 1:
        figures["end_to_end_seconds_runs"] = e2e_runs

    rows = result.group_partitions
    statuses = {s.status: s.partitions for s in result.summary.statuses}
    partition_statuses: dict[str, int] = {}
    for status in result.partitions.column("status").to_pylist():
        partition_statuses[status] = partition_statuses.get(status, 0) + 1
    figures.update(
        {
            "end_to_end_seconds": round(e2e_s, 2),
            "rows": rows,
            "rows_per_second": round(rows / e2e_s),
            "statuses": statuses,
            "replicated_partitions": sum(partition_statuses.values()),
            "replicated_partition_statuses": partition_statuses,
            "position_read_from": [p.read_from or p.reason for p in result.positions],
            "notes": [n.message for n in result.notes],
            "driver_peak_rss_mib": vm_hwm_mib("self") if peak_reset else None,
            "driver_max_rss_mib_process": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "jvm_peak_rss_mib": vm_hwm_mib(jvm_pid),
            "spark_master": spark.sparkContext.master,
            "spark_driver_memory": spark.sparkContext.getConf().get("spark.driver.memory", "1g"),
        }
    )
    spark.stop()
    budget = 2 * figures["floor_seconds"] + figures["spark_startup_seconds"]
    figures["target_end_to_end_budget_seconds"] = round(budget, 2)
    figures["end_to_end_over_floor"] = round(e2e_s / figures["floor_seconds"], 2)
    figures["pass_end_to_end_vs_floor"] = e2e_s <= budget
    # "1 million group partitions in under 3 minutes", scaled to the rows this run had.
    per_million = e2e_s * 1_000_000 / max(rows, 1)
    figures["end_to_end_seconds_per_million_rows"] = round(per_million, 1)
    figures["pass_million_under_3_minutes"] = per_million < 180 and rows >= 1_000_000
    return figures


# --- the command ------------------------------------------------------------------------------------------


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/inspect_scale.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the full load (default 1.0)")
    parser.add_argument("--lab-dir", default=DEFAULT_LAB_DIR, help=f"where to start the lab ({DEFAULT_LAB_DIR})")
    parser.add_argument("--reuse-lab", metavar="DIR", help="use the lab already running in DIR; leave it running")
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab this run started running")
    parser.add_argument("--skip-load", action="store_true", help="the lab already holds a bench load (--reuse-lab)")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--spark-master", default=None, help="default local[*]")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="K=V")
    parser.add_argument(
        "--floor-twice", action="store_true", help="measure the floor again after the job and keep the faster"
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="measure the floor and end to end N times, alternately, and keep the fastest of each (default 1)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    return parser.parse_args(argv)


def _report(fig: dict[str, Any]) -> list[str]:
    def ok(flag: bool) -> str:
        return "PASS" if flag else "FAIL"

    load = fig.get("load") or {}
    lines = [
        f"mm2ctl inspect benchmark  scale={fig['scale']}  pair {PAIR}  ({fig['spark_master']}, "
        f"driver memory {fig['spark_driver_memory']}, {os.cpu_count()} cores)",
        f"  load average (1/5/15 min) at start {fig['loadavg_start']}, after load {fig['loadavg_after_load']}, "
        f"at end {fig['loadavg_end']}",
        f"  loaded: {fig['offset_syncs']:,} offset syncs, {fig['group_partitions']:,} group partitions "
        f"({fig['groups']:,} groups x {fig['source_partitions']:,} partitions)",
    ]
    if load:
        lines.append(
            f"  load time                    {load['load_seconds']:>8.1f} s   (not part of the target) "
            f"{load['load_steps_seconds']}"
        )
    lines += [
        f"  Spark start-up               {fig['spark_startup_seconds']:>8.1f} s   (session + first job)",
        f"  floor                        {fig['floor_seconds']:>8.1f} s   = offset-syncs read "
        f"{fig['floor_offset_syncs_read_seconds']:.1f} + checkpoints read {fig['floor_checkpoints_read_seconds']:.1f}"
        f" + admin state {fig['floor_admin_state_seconds']:.1f}"
        + (f"; runs {fig['floor_seconds_runs']}" if "floor_seconds_runs" in fig else ""),
        f"  end to end                   {fig['end_to_end_seconds']:>8.1f} s   (the inspection + Parquet"
        + (f"; runs {fig['end_to_end_seconds_runs']}" if "end_to_end_seconds_runs" in fig else "")
        + ")",
        f"  rows                         {fig['rows']:>8,}     {fig['rows_per_second']:,} rows/s",
        f"  peak RSS: Python driver {fig['driver_peak_rss_mib']} MiB (process lifetime "
        f"{fig['driver_max_rss_mib_process']} MiB), Spark JVM {fig['jvm_peak_rss_mib']} MiB",
        f"  statuses: {fig['statuses']}",
        f"  replicated partitions: {fig['replicated_partitions']:,} {fig['replicated_partition_statuses']} "
        f"(MM2's position: {'; '.join(fig['position_read_from'])})",
        f"  target: end to end <= 2 x floor + start-up = {fig['target_end_to_end_budget_seconds']:.1f} s: "
        f"{ok(fig['pass_end_to_end_vs_floor'])} (end to end / floor = {fig['end_to_end_over_floor']})",
        f"  target: 1M group partitions in under 180 s: {ok(fig['pass_million_under_3_minutes'])} "
        f"({fig['end_to_end_seconds_per_million_rows']:.1f} s per million rows"
        + ("" if fig["rows"] >= 1_000_000 else f"; only {fig['rows']:,} rows at this scale")
        + ")",
    ]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    if args.repeat < 1:
        print("bench/inspect_scale.py: --repeat must be at least 1", file=sys.stderr)
        return 2
    spec = LoadSpec.for_scale(args.scale)
    figures: dict[str, Any] = {"scale": args.scale, "loadavg_start": loadavg()}
    started_lab: Path | None = None
    out_dir = Path(tempfile.mkdtemp(prefix="mm2ctl-bench-out-"))
    try:
        info, started_lab = open_lab(args)
        load_file = Path(info.dir) / LOAD_FILE
        if args.skip_load:
            loaded = json.loads(load_file.read_text())
            spec = LoadSpec(**loaded["spec"])
            figures["load"] = loaded["figures"]
            say(f"using the load already in the lab: {loaded['spec']}")
        else:
            write_mm2_properties(Path(info.dir) / MM2_FILE, info)
            pair = load_mm2_config(Path(info.dir) / MM2_FILE).pair(PAIR)
            say(
                f"loading {spec.total_syncs:,} offset syncs and {spec.group_partitions:,} group partitions "
                f"({spec.groups} groups x {len(spec.partitions)} partitions)"
            )
            figures["load"] = load(info, spec, pair)
            load_file.write_text(json.dumps({"spec": asdict(spec), "figures": figures["load"]}) + "\n")
        figures["loadavg_after_load"] = loadavg()
        figures.update(
            {
                "offset_syncs": spec.total_syncs,
                "groups": spec.groups,
                "source_partitions": len(spec.partitions),
                "group_partitions": spec.group_partitions,
                "expected_problems": expected_statuses(spec),
            }
        )
        figures.update(measure(info, args, spec, out_dir))
        figures["loadavg_end"] = loadavg()
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
        if started_lab is not None and not args.keep_lab:
            say(f"stopping the lab in {started_lab}")
            lab_control.down(started_lab)
    print_figures(figures, args.json, _report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
