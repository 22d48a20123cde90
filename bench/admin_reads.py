"""The committed-offset reads of an inspection, each way ``inspector.reads.committed_offsets`` can read them, on a
loaded lab.

Run it as ``.venv/bin/python bench/admin_reads.py --reuse-lab DIR [--rounds N] [--json]`` on a lab holding a load
of ``bench/inspect_scale.py`` (its bench pair, ``mm2-isobench.properties`` in the lab folder). Three parts, each
chosen with ``--part`` (all three by default):

* ``breakdown``: where the reads' time went before they were columns, in one process, on the source's million
  offsets: the confluent-kafka calls alone (every answer's ``TopicPartition`` objects made, nothing else), the
  admin facade's dict per group as it was made until then, the per-offset loop ``collect_pair_state`` ran over
  those dicts (MM2's topic filter and the ``--topics`` regex per offset, a sort per group, a Python list per
  column) and the Arrow table built from those lists; then the librdkafka path as it is now (flat lists per
  group, and those as ``read_columns``'s Arrow table). For each, the CPU time of every thread of the process by
  name (``rdk:main`` is librdkafka's thread that handles the answers, ``rdk:bg`` the one where confluent-kafka
  makes their Python objects, ``python`` this process's own threads);
* ``reads``: ``--rounds`` rounds (3), each running every way once as a new process, the order rotating between
  rounds: ``facade`` (the facade's dicts, the fetch the inspection used before), ``lean`` (``read_columns``
  through librdkafka), ``jvm`` (``read_columns`` in a JVM started by PySpark's gateway launcher with the embedded
  session's settings, Spark's Kafka source among its packages, as the inspection's driver JVM is, but no
  SparkContext; its start is timed apart, and its first read, which compiles
  ``CommittedOffsets.java`` with Janino and loads the Kafka client's classes, apart from a second), and
  ``collect_pair_state`` whole each way (``state-librdkafka``, ``state-jvm``). Each reads the source's groups
  and then the same groups on the target. Per way: the medians of wall time, this process's CPU time, the JVM's
  and each broker's (``/proc/<pid>/stat``);
* ``inspect``: ``--rounds`` cold ``mm2ctl inspect --format csv`` processes each way, alternately: as shipped
  (the committed offsets read in the driver JVM once its gateway is up) and with ``SessionStart.gateway``
  answering None (read through librdkafka while the JVM starts); per way the medians of the wall time, of the
  admin reads (``reading admin state`` to ``reading … with Spark``) and of the process tree's CPU time; each
  run's progress lines, stamped with the seconds since its start, are in the ``--json`` output. With
  ``--compare-venv VENV``, a third way, ``other``: the ``mm2ctl`` of another version's virtualenv (a git worktree
  of it, as README's "Comparing two versions" makes), in the same rotation; and in ``reads``, that version's
  ``collect_pair_state`` (``state-other``).

The machine may be shared: the load average is printed with every figure, and CPU times move less with the load
than wall times do.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_lab import loadavg, print_figures, say

PAIR = "isobenchsrc->isobenchdst"
MM2_FILE = "mm2-isobench.properties"
TICK = os.sysconf("SC_CLK_TCK")
WAYS = ("facade", "lean", "jvm", "state-librdkafka", "state-jvm")


def cpu_seconds(pid: int | str) -> float:
    """User and system CPU seconds of a process (all its threads; not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class ThreadCpu:
    """CPU seconds per thread name of this process over a block, sampled every 0.1 s, so that threads ending
    inside the block (librdkafka's, when a client is destroyed) still count up to their last sample."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str, float]] = {}
        self.by_name: dict[str, float] = {}
        self._stop = threading.Event()

    def _sample(self) -> None:
        for tid in os.listdir("/proc/self/task"):
            try:
                name = Path(f"/proc/self/task/{tid}/comm").read_text().strip()
                fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            self.seen[tid] = (name, (int(fields[11]) + int(fields[12])) / TICK)

    def __enter__(self) -> ThreadCpu:
        self._sample()
        self._base = dict(self.seen)
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        totals: dict[str, float] = defaultdict(float)
        for tid, (name, seconds) in self.seen.items():
            totals[name] += seconds - self._base.get(tid, (name, 0.0))[1]
        self.by_name = {k: round(v, 2) for k, v in sorted(totals.items()) if v >= 0.01}


def _setup(lab_dir: Path) -> tuple[Any, Any, list[str], dict[str, int]]:
    from mm2ctl.core.config.mm2_config import load_mm2_config
    from mm2ctl.core.kafka.admin import KafkaAdmin

    config = load_mm2_config(lab_dir / MM2_FILE)
    pair = config.pair(PAIR)
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=60)
    groups = [g.group for g in source.list_groups() if pair.group_filter.matches(g.group)]
    lab = json.loads((lab_dir / "lab.json").read_text())
    brokers = {alias: int(c["pid"]) for alias, c in lab["clusters"].items()}
    return config, pair, groups, brokers


# ----- the breakdown of the reads before they were columns


def breakdown(lab_dir: Path) -> dict[str, Any]:
    import pyarrow as pa
    from confluent_kafka import ConsumerGroupTopicPartitions

    from mm2ctl.core.kafka.admin import GroupOffsets, ItemError, KafkaAdmin, _drain
    from mm2ctl.inspector.reads.committed_offsets import read_columns
    from mm2ctl.inspector.selection import Selection

    _, pair, groups, _ = _setup(lab_dir)
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=60)
    parts: dict[str, Any] = {}

    def part(name: str, fn: Callable[[], Any]) -> Any:
        with ThreadCpu() as threads:
            t0, c0 = time.monotonic(), time.process_time()
            value = fn()
            wall, cpu = time.monotonic() - t0, time.process_time() - c0
        parts[name] = {"wall": round(wall, 2), "cpu": round(cpu, 2), "threads": threads.by_name}
        say(f"breakdown: {name}: {wall:.2f}s wall, {cpu:.2f}s CPU {threads.by_name}")
        return value

    def fetch(collect: Callable[[str, Any], Any]) -> dict[str, Any]:
        client = source.client

        def submit(group: str) -> Any:
            return client.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)], request_timeout=60)[group]

        return dict(zip(groups, _drain(groups, submit, collect, 64), strict=True))

    def dict_of(_group: str, future: Any) -> GroupOffsets:
        """The facade's collect until the offsets came as columns: a tuple key and a dict entry per offset."""
        tps = future.result().topic_partitions
        offsets = {(tp.topic, tp.partition): int(tp.offset) for tp in tps if tp.offset >= 0}
        errs = [tp for tp in tps if tp.error is not None]
        return GroupOffsets(_group, offsets, ItemError(errs[0].error.name(), "") if errs else None)

    part("confluent-kafka calls, answers' objects only", lambda: fetch(lambda _g, f: len(f.result().topic_partitions)))
    committed = part("the facade's dict per group", lambda: fetch(dict_of))

    def per_offset_loop() -> dict[str, list[Any]]:
        """The loop collect_pair_state ran over each group's dict until the offsets came as columns."""
        selection = Selection()
        rows: dict[str, list[Any]] = {k: [] for k in ("group", "topic", "partition", "committed_offset", "error")}
        for group in groups:
            offsets = committed[group]
            kept = [
                (tp, off)
                for tp, off in offsets.offsets.items()
                if pair.replicates_topic(tp[0]) and selection.topic_ok(tp[0])
            ]
            for (topic, partition), off in sorted(kept):
                rows["group"].append(group)
                rows["topic"].append(topic)
                rows["partition"].append(partition)
                rows["committed_offset"].append(off)
                rows["error"].append(None)
        return rows

    rows = part("the per-offset loop over the dicts", per_offset_loop)
    part(
        "Arrow table from the loop's lists",
        lambda: pa.table(
            {
                "cluster_pair": pa.array([PAIR] * len(rows["group"]), pa.string()),
                "group": pa.array(rows["group"], pa.string()),
                "topic": pa.array(rows["topic"], pa.string()),
                "partition": pa.array(rows["partition"], pa.int32()),
                "committed_offset": pa.array(rows["committed_offset"], pa.int64()),
                "error": pa.array(rows["error"], pa.string()),
            }
        ),
    )
    part("now: flat lists per group (KafkaAdmin.committed_offset_lists)", lambda: source.committed_offset_lists(groups))
    part("now: read_columns through librdkafka (Arrow)", lambda: read_columns(source, groups))
    return {"offsets": len(rows["group"]), "parts": parts}


# ----- each way, one process


def _launch_jvm() -> Any:
    """A driver JVM as the embedded session launches it (its settings, Spark's Kafka source among its
    packages), up to its py4j gateway: no SparkContext is started in it."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    from mm2ctl.inspector.spark import packages
    from mm2ctl.inspector.spark.session import DEFAULT_MASTER, embedded_settings

    settings = embedded_settings(DEFAULT_MASTER, {}, log_to_file=False)
    with packages.resolution_lock(settings):
        return launch_gateway(SparkConf().setMaster(DEFAULT_MASTER).setAll(list(settings.items())))


def one_way(lab_dir: Path, way: str) -> dict[str, Any]:
    """Read the source's groups and then the same groups on the target ``way``; this process's figures."""
    from mm2ctl.core.kafka.admin import KafkaAdmin
    from mm2ctl.inspector.reads.committed_offsets import JvmAdmin, read_columns
    from mm2ctl.inspector.reads.pair_admin import collect_pair_state
    from mm2ctl.inspector.selection import Selection

    config, pair, groups, brokers = _setup(lab_dir)
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=60)
    target = KafkaAdmin.connect(pair.target_kafka_config, name=pair.target, timeout_s=60)
    out: dict[str, Any] = {"way": way, "loadavg": loadavg()}
    gateway, jvm_pid = None, None
    if way in ("jvm", "state-jvm"):
        t0 = time.monotonic()
        gateway = _launch_jvm()
        jvm_pid = int(gateway.jvm.java.lang.ProcessHandle.current().pid())
        out["jvm_start_seconds"] = round(time.monotonic() - t0, 2)

    @contextmanager
    def measured(key: str) -> Iterator[None]:
        b0 = {alias: cpu_seconds(pid) for alias, pid in brokers.items()}
        j0 = cpu_seconds(jvm_pid) if jvm_pid else 0.0
        t0, c0 = time.monotonic(), time.process_time()
        yield
        figures = {"wall": round(time.monotonic() - t0, 2), "python_cpu": round(time.process_time() - c0, 2)}
        if jvm_pid:
            figures["jvm_cpu"] = round(cpu_seconds(jvm_pid) - j0, 2)
        figures["broker_cpu"] = round(sum(cpu_seconds(pid) - b0[alias] for alias, pid in brokers.items()), 2)
        out[key] = figures

    def both(read: Callable[[Any, list[str], str], int]) -> None:
        rows = read(source, groups, pair.source)
        rows += read(target, groups, pair.target)
        out["rows"] = rows

    if way == "facade":
        with measured("read"):
            both(lambda admin, gs, _alias: sum(len(r.offsets) for r in admin.committed_offsets(gs).values()))
    elif way == "lean":
        with measured("read"):
            both(lambda admin, gs, _alias: read_columns(admin, gs).table.num_rows)
    elif way == "jvm":

        def in_jvm(admin: Any, gs: list[str], alias: str) -> int:
            got = read_columns(admin, gs, jvm=JvmAdmin(gateway, config.client_settings(alias, pair.name), alias))
            assert got.read_through == "jvm", got.read_through
            return int(got.table.num_rows)

        with measured("read"):
            both(in_jvm)
        with measured("read_again"):
            both(in_jvm)
    else:
        with measured("read"):
            state = collect_pair_state(config, pair, Selection(), driver_jvm=lambda: gateway)
        out["rows"] = state.source_group_offsets.num_rows + state.target_group_offsets.num_rows
    return out


def _run_way(lab_dir: Path, way: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, __file__, "--reuse-lab", str(lab_dir), "--one", way],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{way} failed:\n{proc.stderr[-3000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    say(f"reads: {way}: {json.dumps({k: v for k, v in figures.items() if k != 'way'})}")
    return figures


#: ``collect_pair_state`` as another version has it, timed in that version's virtualenv (``--compare-venv``).
_OTHER_STATE = """
import json, os, sys, time
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.inspector.reads.pair_admin import collect_pair_state
from mm2ctl.inspector.selection import Selection
config = load_mm2_config(sys.argv[1])
pair = config.pair(sys.argv[2])
t0, c0 = time.monotonic(), time.process_time()
state = collect_pair_state(config, pair, Selection())
wall, cpu = time.monotonic() - t0, time.process_time() - c0
rows = state.source_group_offsets.num_rows + state.target_group_offsets.num_rows
print(json.dumps({"wall": round(wall, 2), "python_cpu": round(cpu, 2), "rows": rows}))
"""


def _run_other_state(lab_dir: Path, other: Path) -> dict[str, Any]:
    _, _, _, brokers = _setup(lab_dir)
    load = loadavg()
    b0 = {alias: cpu_seconds(pid) for alias, pid in brokers.items()}
    proc = subprocess.run(
        [str(other / "bin" / "python"), "-c", _OTHER_STATE, str(lab_dir / MM2_FILE), PAIR],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"state-other failed:\n{proc.stderr[-3000:]}")
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    broker_cpu = round(sum(cpu_seconds(pid) - b0[alias] for alias, pid in brokers.items()), 2)
    rows = got.pop("rows")
    figures = {"way": "state-other", "loadavg": load, "rows": rows, "read": {**got, "broker_cpu": broker_cpu}}
    say(f"reads: state-other: {json.dumps({k: v for k, v in figures.items() if k != 'way'})}")
    return figures


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def reads(lab_dir: Path, rounds: int, other: Path | None = None) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ways = [*WAYS, "state-other"] if other else list(WAYS)
    for r in range(rounds):
        for way in ways[r % len(ways) :] + ways[: r % len(ways)]:
            if way == "state-other":
                assert other is not None
                runs[way].append(_run_other_state(lab_dir, other))
            else:
                runs[way].append(_run_way(lab_dir, way))
    medians: dict[str, Any] = {}
    for way, figures in runs.items():
        m: dict[str, Any] = {"rows": figures[0]["rows"], "loadavg": [f["loadavg"][0] for f in figures]}
        for key in ("read", "read_again"):
            if key in figures[0]:
                m[key] = {k: _median([f[key][k] for f in figures]) for k in figures[0][key]}
        if "jvm_start_seconds" in figures[0]:
            m["jvm_start_seconds"] = _median([f["jvm_start_seconds"] for f in figures])
        medians[way] = m
    return {"medians": medians, "runs": runs}


# ----- cold mm2ctl inspect, each way

#: Run the CLI with ``SessionStart.gateway`` answering None: the committed offsets go through librdkafka.
_WITHOUT_JVM = (
    "import sys; import mm2ctl.inspector.spark.session as s; s.SessionStart.gateway = lambda self: None; "
    "from mm2ctl.cli.main import main; sys.argv[0] = 'mm2ctl'; sys.exit(main())"
)
ADMIN = re.compile(r"reading admin state")
PROGRESS = "mm2ctl: "
TASKS = re.compile(r"Spark tasks: ")
READ = re.compile(r"with Spark$")


def _tree(pid: int) -> Iterator[int]:
    """``pid`` and its descendants, as they are now."""
    yield pid
    try:
        children = [int(c) for t in Path(f"/proc/{pid}/task").iterdir() for c in (t / "children").read_text().split()]
    except OSError:
        return
    for child in children:
        yield from _tree(child)


class TreeCpu:
    """The CPU seconds of a process and all its descendants (the Spark JVM among them), sampled every 0.2 s;
    each process counts up to its last sample (the JVM is not waited for, so its exit is not seen)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.last: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(0.2):
            for pid in _tree(self.pid):
                try:
                    self.last[pid] = cpu_seconds(pid)
                except OSError:
                    continue

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return sum(self.last.values())


def inspect_once(lab_dir: Path, way: str, other: Path | None = None) -> dict[str, Any]:
    """One cold ``mm2ctl inspect``: ``jvm`` as shipped, ``librdkafka`` without the driver JVM's gateway, or
    ``other``: the ``mm2ctl`` of another version's virtualenv (``--compare-venv``)."""
    with tempfile.TemporaryDirectory(prefix="mm2ctl-admin-reads-") as work:
        args = ["inspect", "--mm2-config", str(lab_dir / MM2_FILE), "--format", "csv", "--output", f"{work}/rows.csv"]
        if way == "jvm":
            argv = [str(Path(sys.executable).with_name("mm2ctl")), *args]
        elif way == "librdkafka":
            argv = [sys.executable, "-c", _WITHOUT_JVM, *args]
        else:
            assert other is not None
            argv = [str(other / "bin" / "mm2ctl"), *args]
        env = {**os.environ, "MM2CTL_STATE_DIR": f"{work}/state"}
        env.pop("MM2CTL_CONNECT_URL", None)
        start_load = loadavg()
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
        tree = TreeCpu(proc.pid)
        assert proc.stderr is not None
        stamps: dict[str, float] = {}
        tail: list[str] = []
        timeline: list[tuple[float, str]] = []
        for line in proc.stderr:
            now = time.monotonic() - t0
            tail = [*tail[-4:], line]
            if line.startswith(PROGRESS) and not TASKS.search(line):
                timeline.append((round(now, 2), line.strip().removeprefix(PROGRESS)))
            if ADMIN.search(line):
                stamps.setdefault("admin", now)
            if READ.search(line.strip()):
                stamps.setdefault("read", now)
        code = proc.wait()
        wall = time.monotonic() - t0
        cpu = tree.stop()
    if code not in (0, 10):
        raise SystemExit(f"mm2ctl inspect exited {code}:\n{''.join(tail)}")
    return {
        "through": way,
        "wall": round(wall, 2),
        "admin_reads": round(stamps.get("read", wall) - stamps.get("admin", 0.0), 2),
        "cpu": round(cpu, 2),
        "loadavg": start_load,
        "timeline": timeline,
    }


def inspect_runs(lab_dir: Path, rounds: int, other: Path | None = None) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ways = ["jvm", "librdkafka"] + (["other"] if other else [])
    for r in range(rounds):
        for way in ways[r % len(ways) :] + ways[: r % len(ways)]:
            got = inspect_once(lab_dir, way, other)
            say(f"inspect: {json.dumps({k: v for k, v in got.items() if k != 'timeline'})}")
            runs[got["through"]].append(got)
    medians = {
        way: {k: _median([f[k] for f in figures]) for k in ("wall", "admin_reads", "cpu")}
        for way, figures in runs.items()
    }
    return {"medians": medians, "runs": runs}


# ----- the command


def _report(fig: dict[str, Any]) -> list[str]:
    lines = [f"load average: start {fig['loadavg_start']}, end {fig.get('loadavg_end')}"]
    if "breakdown" in fig:
        lines.append(f"\nbreakdown, the source's {fig['breakdown']['offsets']:,} offsets (s):")
        lines.append(f"  {'part':<52} {'wall':>6} {'CPU':>6}  CPU by thread")
        for name, p in fig["breakdown"]["parts"].items():
            lines.append(f"  {name:<52} {p['wall']:>6.2f} {p['cpu']:>6.2f}  {p['threads']}")
    if "reads" in fig:
        lines.append("\nreads, source then target, medians (s):")
        lines.append(f"  {'way':<18} {'wall':>6} {'python':>7} {'JVM':>6} {'brokers':>8}  rows")
        for way, m in fig["reads"]["medians"].items():
            for key in ("read", "read_again"):
                if key in m:
                    r = m[key]
                    label = way if key == "read" else f"{way}, again"
                    lines.append(
                        f"  {label:<18} {r['wall']:>6.2f} {r['python_cpu']:>7.2f} {r.get('jvm_cpu', 0.0):>6.2f} "
                        f"{r['broker_cpu']:>8.2f}  {m['rows']:,}"
                    )
            if "jvm_start_seconds" in m:
                lines.append(f"  {'':<18} (JVM start {m['jvm_start_seconds']:.2f} s, not counted above)")
    if "inspect" in fig:
        lines.append("\ncold mm2ctl inspect, medians (s):")
        lines.append(f"  {'committed offsets':<18} {'wall':>6} {'admin reads':>12} {'CPU':>6}")
        for way, m in fig["inspect"]["medians"].items():
            lines.append(f"  {way:<18} {m['wall']:>6.1f} {m['admin_reads']:>12.1f} {m['cpu']:>6.1f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/admin_reads.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse-lab", metavar="DIR", required=True, help="a lab holding an inspect_scale load")
    parser.add_argument("--part", action="append", choices=["breakdown", "reads", "inspect"], help="(all three)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of alternated runs (3)")
    parser.add_argument(
        "--compare-venv",
        metavar="VENV",
        type=Path,
        help="inspect: also run the mm2ctl of another version's virtualenv (a git worktree's .venv), alternately",
    )
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    parser.add_argument("--one", choices=WAYS, help=argparse.SUPPRESS)  # one way, in a process of its own
    args = parser.parse_args(argv)
    lab_dir = Path(args.reuse_lab)
    if args.one:
        print(json.dumps(one_way(lab_dir, args.one)))
        return 0
    parts = args.part or ["breakdown", "reads", "inspect"]
    figures: dict[str, Any] = {"loadavg_start": loadavg()}
    if "breakdown" in parts:
        figures["breakdown"] = breakdown(lab_dir)
    if "reads" in parts:
        figures["reads"] = reads(lab_dir, args.rounds, args.compare_venv)
    if "inspect" in parts:
        figures["inspect"] = inspect_runs(lab_dir, args.rounds, args.compare_venv)
        if args.compare_venv:
            figures["inspect"]["other"] = str(args.compare_venv)
    figures["loadavg_end"] = loadavg()
    print_figures(figures, args.json, _report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
