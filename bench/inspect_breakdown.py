"""Where one cold ``mm2ctl inspect`` process spends its time, from process start to its last row.

Run it as ``.venv/bin/python bench/inspect_breakdown.py --reuse-lab DIR [--runs N] [--format csv|parquet]
[--json] [--timeline]`` on a lab holding a load of ``bench/inspect_scale.py`` (its bench pair and its MM2
properties file, ``mm2-isobench.properties`` in the lab folder): the 1 M lab ``inspect_scale.py --keep-lab``
leaves, or the 5 k/50 k lab ``peer_inspect.py --keep-lab`` leaves.

Each run starts ``mm2ctl inspect --mm2-config F --format csv --output FILE [--groups REGEX]`` (``--format
parquet``: a folder) as a new process, with Spark's event log on (uncompressed, in a temporary folder) and a
state folder of its own. It stamps every progress line the process prints on stderr with the seconds since it
was started, and after it exited reads the event log: when the SparkContext started, and every stage's
submission and completion time, executor run and CPU time, and the plan nodes its SQL metrics belong to. The
phases, in seconds of wall-clock time from process start:

1. *Python start and imports*: process start to its first progress line (``reaching the clusters``); then
   *reaching the clusters*, the driver's first admin connection to each cluster, to ``starting Spark``.
2. *JVM and Spark start-up*: ``starting Spark`` to the next progress line, split by the event log at the
   SparkContext's start (before it: the JVM's launch and Py4J's gateway) and at its last start-up event (its
   executor's and block manager's registration); after that, the session's own set-up. When Spark starts on
   a thread of its own while the admin reads run (the next line comes before the context is up), the phase
   ends at that last start-up event and overlaps phase 3, which then also holds the session's set-up and
   the main thread's wait for it; the table says so.
3. *admin reads on the driver*: ``reading admin state`` to ``reading … with Spark`` (MM2's position, the
   groups' state and offsets, topic bounds, on both clusters).
4. *plan building on the driver*: ``reading … with Spark`` to the first Spark stage (the Arrow tables turned
   into DataFrames, the permission checks, the plan, Spark's analysis and optimization).
5. *classification (Spark jobs)*: the first stage to the ``replication health`` line (for ``--format
   parquet`` the rows are written by this job).
6. *replication health*: ``replication health`` to the next progress line; this also holds the command's
   problem counts over the rows.
7. *output*: ``writing the rows`` (parquet: ``wrote …``) to process exit, the shutdown of Spark and the JVM
   (after the last progress line) shown apart.

Each phase lists the Spark stages submitted in it, grouped by what they run. Spark pipelines operators into
one stage, so a group is named for the stage's leading operator, and each stage's operators are listed:

* *Kafka read: offset syncs / checkpoints*: a stage with a scan of Spark's Kafka source, its decoding, and
  the shuffle write after it (which topic is told from the plan above the scan: the syncs are matched on
  their raw keys and numbered ``_part``, the checkpoints are decoded into groups);
* *sort of the syncs*: the shuffle read and sort by ``_part``, with the translation window and the
  broadcast joins of the admin tables pipelined after it;
* *window passes*: other stages with a window (the checkpoints' newest per partition, the per-group pass
  that classifies), with their joins pipelined;
* *driver tables (admin state)*: the Arrow tables of the admin reads, scanned into broadcasts or a shuffle
  (a stage that only reads a shuffle is named for the stage that wrote it);
* *cached rows*, *rows read back from the output*, *joins*, *aggregation*, *sort (output order)*: stages
  of only that kind; otherwise the stage's call site;
* *(no stage running)*: the rest of the phase, when the driver plans, schedules, re-plans (adaptive
  execution) or waits, for instance for the observed metrics after the job.

Per group: stages, wall time (the union of its stages' intervals; stages of one group may run at once),
and the sums of executor run time, CPU time and GC time over its tasks (tasks run on every core at once,
so these may exceed the wall time). ``--runs N`` (3) runs N processes one after the other and reports each
figure's median; the stage list is that of the run with the median total. The load average is printed at
the start and the end. The event log itself costs a little (it is written while the job runs).
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
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench_lab import loadavg, say
from inspect_scale import MM2_FILE, PAIR  # the sibling script (bench/ is on sys.path when run)

from mm2ctl.lab import control as lab_control

#: mm2ctl's exit codes that end a run normally (10: problem rows, which the load plants).
OK_EXIT_CODES = (0, 10)
PREFIX = "mm2ctl: "

# Progress lines of ``mm2ctl inspect`` (``cli/inspect_cmd.py``, ``inspector/job.py``), without the prefix.
REACH = re.compile(r"^reaching the clusters$")
SPARK = re.compile(r"^starting Spark$")
ADMIN = re.compile(r": reading admin state$")
READ = re.compile(r": reading .+ with Spark$")
HEALTH = re.compile(r"^replication health$")
WRITE = re.compile(r"^(writing the rows|wrote )")
#: A first run that makes Spark's class archive saves it before its last line (``inspector.spark.class_archive``).
ARCHIVE = re.compile(r"^saving Spark's classes")
INSPECTED = re.compile(r"^(\d+) group partition\(s\) inspected")
#: Task counts the progress reporter prints while the classifying job runs: not a phase boundary.
TASK_COUNT = re.compile(r"^Spark tasks: \d+/\d+$")

#: The phases, in order: key, label, and whether a sub-row (indented, not part of the total's sum).
PHASES: list[tuple[str, str, bool]] = [
    ("python", "1 Python start and imports", False),
    ("reach", "  reaching the clusters", False),
    ("spark", "2 JVM and Spark start-up", False),
    ("spark.jvm", "    JVM launch -> SparkContext start", True),
    ("spark.context", "    SparkContext start -> its executor is up", True),
    ("spark.session", "    -> session ready (the next line)", True),
    ("admin", "3 admin reads on the driver", False),
    ("plan", "4 plan building on the driver", False),
    ("classify", "5 classification (Spark jobs)", False),
    ("health", "6 replication health", False),
    ("output", "7 output", False),
    ("output.exit", "    after the last line (Spark, JVM exit)", True),
]

# What a stage runs (``stage_group``).
SYNCS, CHECKPOINTS, NEWEST = "Kafka read: offset syncs", "Kafka read: checkpoints", "Kafka read: newest syncs"
SORT_SYNCS = "sort of the syncs (+ translation window, joins)"
WINDOWS = "window passes (+ joins, classification)"
JOINS, AGGREGATION, CACHED, SORT = "joins", "aggregation", "cached rows", "sort (output order)"
WRITES = "write"
READ_BACK = "rows read back from the output"
DRIVER_TABLES = "driver tables (admin state)"
#: The part of a phase when none of its stages ran: the driver planning, scheduling, re-planning (adaptive
#: execution) or waiting, for instance for Spark's observed metrics after the job.
IDLE = "(no stage running)"
SHUFFLE_READ = "shuffle read"

#: Columns only the translation's offset-sync frame has: the raw key it is matched on, the partition number.
SYNC_COLUMNS = re.compile(r"(?<![A-Za-z0-9_])(_k_key|_part)#")
JOIN_NODES = ("SortMergeJoin", "BroadcastHashJoin", "ShuffledHashJoin", "BroadcastNestedLoopJoin")
WRITE_NODES = ("WriteFiles", "Execute InsertIntoHadoopFsRelationCommand")
#: Exchange metrics a stage reading a shuffle reports (the others are the writing stage's).
SHUFFLE_READ_METRICS = frozenset(
    {
        "records read",
        "local blocks read",
        "remote blocks read",
        "local bytes read",
        "remote bytes read",
        "remote bytes read to disk",
        "fetch wait time",
        "remote reqs duration",
    }
)
#: Plan nodes left out of a stage's operator list: wrappers, not work.
WRAPPERS = frozenset({"WholeStageCodegen", "InputAdapter", "AdaptiveSparkPlan"})


@dataclass(frozen=True)
class Line:
    """A line of the process's stderr and when it came, in seconds since process start; ``progress``: one of
    mm2ctl's progress lines (not, say, a Python warning)."""

    t: float
    text: str
    progress: bool = True


@dataclass
class Node:
    """A physical plan node, as Spark's event log describes it, and the node above it."""

    name: str
    text: str
    parent: Node | None = None


@dataclass
class Stage:
    stage_id: int
    name: str
    tasks: int
    start: float
    end: float
    run_s: float
    cpu_s: float
    gc_s: float
    sort_s: float
    shuffle_write_s: float
    operators: str
    group: str
    phase: str = ""

    @property
    def wall(self) -> float:
        return self.end - self.start


@dataclass
class Group:
    stages: int = 0
    wall_s: float = 0.0
    run_s: float = 0.0
    cpu_s: float = 0.0
    gc_s: float = 0.0
    first_start: float = 0.0


@dataclass
class Phase:
    start: float | None
    end: float | None

    @property
    def seconds(self) -> float | None:
        return None if self.start is None or self.end is None else round(self.end - self.start, 2)


@dataclass
class SparkStart:
    """From the event log, in seconds since process start: the SparkContext's start (its construction), and
    its last start-up event (its executor's and block manager's registration, late in its construction)."""

    context_start: float | None = None
    context_up: float | None = None


@dataclass
class RunFigures:
    exit_code: int
    total_s: float
    rows: int | None
    spark: SparkStart
    spark_overlaps_admin: bool
    saved_class_archive: bool
    phases: dict[str, Phase]
    groups: dict[str, dict[str, Group]]
    stages: list[Stage]
    lines: list[Line] = field(default_factory=list)


# ----- running one process


def _spark_conf(event_dir: Path) -> list[str]:
    conf = {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file://{event_dir}",
        "spark.eventLog.compress": "false",
    }
    return [arg for key, value in conf.items() for arg in ("--spark-conf", f"{key}={value}")]


def run_inspect(mm2_file: Path, fmt: str, work: Path, groups: str | None) -> tuple[float, list[Line], int, float]:
    """One cold ``mm2ctl inspect``: its start (epoch seconds), stamped progress lines, exit code, seconds."""
    events = work / "events"
    events.mkdir()
    output = work / ("rows.csv" if fmt == "csv" else "rows.parquet")
    env = {**os.environ, "MM2CTL_STATE_DIR": str(work / "state")}
    env.pop("MM2CTL_CONNECT_URL", None)
    argv = [str(Path(sys.executable).with_name("mm2ctl")), "inspect", "--mm2-config", str(mm2_file)]
    argv += ["--format", fmt, "--output", str(output), *_spark_conf(events)]
    argv += ["--groups", groups] if groups else []
    t0 = time.time()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr is not None
    lines = [
        Line(round(time.time() - t0, 3), raw.rstrip("\n").removeprefix(PREFIX), raw.startswith(PREFIX))
        for raw in proc.stderr
    ]
    code = proc.wait()
    seconds = time.time() - t0
    if code not in OK_EXIT_CODES:
        tail = "\n".join(line.text for line in lines[-5:])
        raise SystemExit(f"mm2ctl inspect exited {code} after {seconds:.1f}s:\n{tail}")
    return t0, lines, code, seconds


# ----- reading Spark's event log


def event_files(event_dir: Path) -> list[Path]:
    """The event log's files in order: Spark 4 rolls it into ``eventlog_v2_*/events_N_*``."""
    rolled = list(event_dir.glob("eventlog_v2_*/events_*"))
    if rolled:
        return sorted(rolled, key=lambda p: int(p.name.split("_")[1]))
    return sorted(p for p in event_dir.iterdir() if p.is_file() and not p.name.startswith("."))


def read_events(event_dir: Path) -> Iterator[dict[str, Any]]:
    files = event_files(event_dir)
    if not files:
        raise SystemExit(f"no Spark event log in {event_dir}")
    for path in files:
        with path.open(encoding="utf-8") as fh:
            for raw in fh:
                if raw.strip():
                    yield json.loads(raw)


def _walk_plan(info: dict[str, Any], parent: Node | None, metrics: dict[int, tuple[Node, str]]) -> None:
    node = Node(info["nodeName"], info.get("simpleString", ""), parent)
    for metric in info.get("metrics", []):
        metrics.setdefault(int(metric["accumulatorId"]), (node, metric["name"]))
    for child in info.get("children", []):
        _walk_plan(child, node, metrics)


def _is_kafka_scan(node: Node) -> bool:
    return node.name.startswith(("BatchScan", "Scan")) and "kafka" in f"{node.name} {node.text}".lower()


def _stage_local_ancestors(node: Node) -> Iterator[Node]:
    """The nodes above ``node`` up to the exchange that ends its stage."""
    above = node.parent
    while above is not None and not above.name.endswith(("Exchange", "QueryStage")):
        yield above
        above = above.parent


def kafka_topic_of(scan: Node) -> str:
    """Which of MM2's topics a Kafka scan reads, told from what is done with its records in the same stage
    (the plan does not name the topic): the offset syncs of the translation are matched on their raw keys
    and numbered ``_part``; the checkpoints are decoded into groups; replication health aggregates the syncs
    by raw key to their newest."""
    above = " ".join(n.text for n in _stage_local_ancestors(scan))
    if SYNC_COLUMNS.search(above):
        return SYNCS
    if re.search(r"\bgroup#", above):
        return CHECKPOINTS
    if "HashAggregate" in above:
        return NEWEST
    return "Kafka read"


def _operators(nodes: list[tuple[Node, str]]) -> Counter[str]:
    seen: dict[tuple[int, str], str] = {}
    for node, metric in nodes:
        name = node.name.split(" (")[0]
        if name in WRAPPERS:
            continue
        if name == "Exchange":
            name = "shuffle read" if metric in SHUFFLE_READ_METRICS else "shuffle write"
        elif _is_kafka_scan(node):
            name = "Kafka scan"
        seen[(id(node), name)] = name
    return Counter(seen.values())


def stage_group(nodes: list[tuple[Node, str]], call_site: str) -> str:
    """What a stage runs, from the plan nodes its SQL metrics belong to (see the module docstring)."""
    plain = [node for node, _metric in nodes]
    names = {node.name.split(" (")[0] for node in plain}
    scans = [node for node in plain if _is_kafka_scan(node)]
    writes = any(name.startswith(WRITE_NODES) for name in names)
    if scans:
        return kafka_topic_of(scans[0])
    if any(node.name == "Sort" and node.text.startswith("Sort [_part#") for node in plain):
        return SORT_SYNCS
    if "Window" in names:
        return WINDOWS + (" + write" if writes else "")
    for test, group in (
        (writes, WRITES),
        (any(name.startswith(("Scan parquet", "FileScan")) for name in names), READ_BACK),
        ("InMemoryTableScan" in names, CACHED),
        (bool(names & set(JOIN_NODES)), JOINS),
        ("HashAggregate" in names or "ObjectHashAggregate" in names, AGGREGATION),
        ("Sort" in names, SORT),
        ("LocalTableScan" in names, DRIVER_TABLES),
    ):
        if test:
            return group
    if names == {"Exchange"}:
        return SHUFFLE_READ  # read_event_log names it for the stage that wrote the shuffle
    return call_site.split(" at ")[0] or "other"


def _accumulable(stage_info: dict[str, Any], name: str) -> float:
    for acc in stage_info.get("Accumulables", []):
        if acc.get("Name") == name:
            return float(acc.get("Value") or 0)
    return 0.0


def _metric_sum(nodes: list[tuple[Node, str, float]], node_name: str, metric: str) -> float:
    return sum(value for node, name, value in nodes if node.name == node_name and name == metric)


def stage_nodes(info: dict[str, Any], metrics: dict[int, tuple[Node, str]]) -> list[tuple[Node, str, float]]:
    """The plan nodes whose SQL metrics the stage updated, with each metric's name and value."""
    nodes = []
    for acc in info.get("Accumulables", []):
        known = metrics.get(int(acc["ID"]))
        if known is not None:
            nodes.append((known[0], known[1], float(acc.get("Value") or 0)))
    return nodes


def make_stage(info: dict[str, Any], nodes: list[tuple[Node, str, float]], t0: float) -> Stage:
    pairs = [(node, metric) for node, metric, _value in nodes]
    ops = _operators(pairs)
    return Stage(
        stage_id=int(info["Stage ID"]),
        name=info.get("Stage Name", ""),
        tasks=int(info.get("Number of Tasks", 0)),
        start=round(info.get("Submission Time", 0) / 1000 - t0, 3),
        end=round(info.get("Completion Time", 0) / 1000 - t0, 3),
        run_s=_accumulable(info, "internal.metrics.executorRunTime") / 1000,
        cpu_s=_accumulable(info, "internal.metrics.executorCpuTime") / 1e9,
        gc_s=_accumulable(info, "internal.metrics.jvmGCTime") / 1000,
        sort_s=_metric_sum(nodes, "Sort", "sort time") / 1000,
        shuffle_write_s=_accumulable(info, "internal.metrics.shuffle.write.writeTime") / 1e9,
        operators=", ".join(f"{n}x{c}" if c > 1 else n for n, c in sorted(ops.items())),
        group=stage_group(pairs, info.get("Stage Name", "")),
    )


def read_event_log(event_dir: Path, t0: float) -> tuple[SparkStart, list[Stage]]:
    """The SparkContext's start and every completed stage, in seconds since process start (``t0``, epoch)."""
    metrics: dict[int, tuple[Node, str]] = {}
    start = SparkStart()
    completed: list[dict[str, Any]] = []
    for event in read_events(event_dir):
        kind = event["Event"]
        if kind == "SparkListenerApplicationStart":
            start.context_start = round(event["Timestamp"] / 1000 - t0, 3)
        elif kind in ("SparkListenerExecutorAdded", "SparkListenerBlockManagerAdded") and not completed:
            start.context_up = max(start.context_up or 0.0, round(event["Timestamp"] / 1000 - t0, 3))
        elif kind.endswith(("SQLExecutionStart", "SQLAdaptiveExecutionUpdate")):
            _walk_plan(event["sparkPlanInfo"], None, metrics)
        elif kind == "SparkListenerStageCompleted":
            completed.append(event["Stage Info"])
    # Every plan is known before any stage is mapped; stages are taken in the order they completed, so the
    # stage that wrote a shuffle is named before a stage that only reads it (and takes its name).
    writers: dict[int, str] = {}  # id() of an Exchange node: the group of the stage that wrote it
    stages = []
    for info in completed:
        if "Completion Time" not in info:
            continue
        nodes = stage_nodes(info, metrics)
        stage = make_stage(info, nodes, t0)
        exchanges = [(node, metric) for node, metric, _value in nodes if node.name == "Exchange"]
        if stage.group == SHUFFLE_READ:
            read = [id(node) for node, metric in exchanges if metric in SHUFFLE_READ_METRICS]
            stage.group = next((writers[n] for n in read if n in writers), SHUFFLE_READ)
        for node, metric in exchanges:
            if metric not in SHUFFLE_READ_METRICS:
                writers.setdefault(id(node), stage.group)
        stages.append(stage)
    return start, sorted(stages, key=lambda s: (s.start, s.stage_id))


# ----- phases


def _first(lines: list[Line], pattern: re.Pattern[str], after: float = -1.0) -> Line | None:
    return next((x for x in lines if x.progress and x.t >= after and pattern.search(x.text)), None)


def _next_after(lines: list[Line], line: Line | None) -> Line | None:
    """The progress line after ``line``, skipping task counts."""
    if line is None:
        return None
    later = lines[lines.index(line) + 1 :]
    return next((x for x in later if x.progress and not TASK_COUNT.match(x.text)), None)


def _t(line: Line | None) -> float | None:
    return None if line is None else line.t


def spark_in_background(lines: list[Line], spark: SparkStart) -> bool:
    """Whether the line after ``starting Spark`` came before the SparkContext was up: Spark started on a
    thread while the main one went on (to the admin reads)."""
    after = _next_after(lines, _first(lines, SPARK))
    up = spark.context_up or spark.context_start
    return after is not None and up is not None and after.t < up


def phases_of(lines: list[Line], spark: SparkStart, stages: list[Stage], total: float) -> dict[str, Phase]:
    reach, starting, admin = _first(lines, REACH), _first(lines, SPARK), _first(lines, ADMIN)
    read, health = _first(lines, READ), _first(lines, HEALTH)
    write = _first(lines, WRITE, after=health.t if health else -1.0)
    after_spark = _next_after(lines, starting)
    background = spark_in_background(lines, spark)
    # In the background, Spark's end is the context's last start-up event: the session's own set-up after it,
    # and the main thread's wait for it, fall in phase 3, which ends once Spark's reads are planned.
    spark_end = (spark.context_up or spark.context_start) if background else _t(after_spark)
    first_stage = next((s.start for s in stages if read is None or s.start >= read.t), None)
    progress = [x for x in lines if x.progress]
    return {
        "python": Phase(0.0, _t(progress[0]) if progress else None),
        "reach": Phase(_t(reach), _t(starting) if reach else None),
        "spark": Phase(_t(starting), spark_end),
        "spark.jvm": Phase(_t(starting), spark.context_start),
        "spark.context": Phase(spark.context_start, spark.context_up),
        "spark.session": Phase(spark.context_up, None if background else _t(after_spark)),
        "admin": Phase(_t(admin), _t(read)),
        "plan": Phase(_t(read), first_stage),
        "classify": Phase(first_stage, _t(health)),
        "health": Phase(_t(health), _t(_next_after(lines, health))),
        "output": Phase(_t(write), total),
        "output.exit": Phase(_t(progress[-1]) if progress else None, total),
    }


def _phase_of(stage: Stage, phases: dict[str, Phase]) -> str:
    """The top-level phase a stage was submitted in (the last to start before it)."""
    best, best_start = "", -1.0
    for key, phase in phases.items():
        if "." in key or phase.start is None:
            continue
        if best_start <= phase.start <= stage.start:
            best, best_start = key, phase.start
    return best


def _union_seconds(intervals: list[tuple[float, float]]) -> float:
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def group_stages(stages: list[Stage], phases: dict[str, Phase]) -> dict[str, dict[str, Group]]:
    """Per phase, per group: the stages' count, wall time (union), and sums of executor times; and the time
    of the phase when none of its stages ran (``IDLE``)."""
    out: dict[str, dict[str, Group]] = {}
    for stage in stages:
        group = out.setdefault(stage.phase, {}).setdefault(stage.group, Group(first_start=stage.start))
        group.stages += 1
        group.run_s += stage.run_s
        group.cpu_s += stage.cpu_s
        group.gc_s += stage.gc_s
    for phase, groups in out.items():
        for name, group in groups.items():
            mine = [(s.start, s.end) for s in stages if s.phase == phase and s.group == name]
            group.wall_s = _union_seconds(mine)
        start, end = phases[phase].start, phases[phase].end
        if start is not None and end is not None:
            busy = [(max(s.start, start), min(s.end, end)) for s in stages if s.phase == phase]
            idle = end - start - _union_seconds([(a, b) for a, b in busy if b > a])
            groups[IDLE] = Group(wall_s=max(0.0, idle), first_start=end)  # listed last
    return out


def measure_run(mm2_file: Path, fmt: str, groups: str | None = None) -> RunFigures:
    with tempfile.TemporaryDirectory(prefix="mm2ctl-breakdown-") as tmp:
        t0, lines, code, total = run_inspect(mm2_file, fmt, Path(tmp), groups)
        spark, stages = read_event_log(Path(tmp) / "events", t0)
    phases = phases_of(lines, spark, stages, total)
    for stage in stages:
        stage.phase = _phase_of(stage, phases)
    done = next((m for x in reversed(lines) if x.progress and (m := INSPECTED.search(x.text))), None)
    return RunFigures(
        exit_code=code,
        total_s=round(total, 2),
        rows=int(done.group(1)) if done else None,
        spark=spark,
        spark_overlaps_admin=spark_in_background(lines, spark),
        saved_class_archive=_first(lines, ARCHIVE) is not None,
        phases=phases,
        groups=group_stages(stages, phases),
        stages=stages,
        lines=lines,
    )


# ----- medians and report


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 2) if present else None


def median_phases(runs: list[RunFigures]) -> dict[str, dict[str, float | None]]:
    return {
        key: {
            "start": _median([r.phases[key].start for r in runs]),
            "end": _median([r.phases[key].end for r in runs]),
            "seconds": _median([r.phases[key].seconds for r in runs]),
        }
        for key, _label, _sub in PHASES
    }


def median_groups(runs: list[RunFigures]) -> dict[str, dict[str, dict[str, float | None]]]:
    """Per phase and group, the median of each figure over the runs (a run without the group counts as 0)."""
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for phase, _label, _sub in PHASES:
        names: list[str] = []
        for run in runs:
            ordered = sorted(run.groups.get(phase, {}).items(), key=lambda kv: kv[1].first_start)
            names += [name for name, _g in ordered if name not in names]
        for name in names:
            groups = [run.groups.get(phase, {}).get(name, Group()) for run in runs]
            out.setdefault(phase, {})[name] = {
                key: _median([float(getattr(g, key)) for g in groups])
                for key in ("stages", "wall_s", "run_s", "cpu_s", "gc_s")
            }
    return out


def _f(value: float | None, width: int = 7) -> str:
    return f"{'n/a':>{width}}" if value is None else f"{value:>{width}.2f}"


def report(figures: dict[str, Any], typical: RunFigures) -> list[str]:
    phases, groups = figures["phases"], figures["groups"]
    lines = [
        f"mm2ctl inspect --format {figures['format']}, one cold process per run: where the time goes; pair {PAIR}",
        f"lab {figures['lab']}; {figures['rows']} group partitions; {figures['runs']} run(s), medians; "
        f"{os.cpu_count()} cores; load average at start {figures['loadavg_start']}, at end {figures['loadavg_end']}",
        f"{'phase (seconds from process start)':<46}{'from':>7}{'to':>7}{'seconds':>9}",
    ]
    for key, label, _sub in PHASES:
        p = phases[key]
        lines.append(f"{label:<46}{_f(p['start'])}{_f(p['end'])}{_f(p['seconds'], 9)}")
        if key in groups:
            lines.append(
                f"{'':<8}{'stages of this phase, by kind':<48}{'stages':>7}{'wall':>7}{'run':>9}{'cpu':>7}{'gc':>6}"
            )
            for name, g in groups[key].items():
                stages = f"{g['stages']:.0f}" if g["stages"] else ""
                lines.append(
                    f"{'':<8}{name[:48]:<48}{stages:>7}{_f(g['wall_s'])}{_f(g['run_s'], 9)}"
                    f"{_f(g['cpu_s'])}{_f(g['gc_s'], 6)}"
                )
    lines.append(f"{'':<8}(wall: the union of the group's stages; groups whose stages ran at once overlap)")
    top = sum(phases[k]["seconds"] or 0.0 for k, _label, sub in PHASES if not sub)
    lines.append(f"{'total (process start to exit)':<60}{_f(figures['total_s'], 9)}")
    lines.append(f"{'  total minus the phases above (medians need not add up)':<60}{_f(figures['total_s'] - top, 9)}")
    if figures["spark_overlaps_admin"]:
        lines.append(
            "note: Spark started in the background: phase 2 (to its context's start-up) overlaps phase 3, which "
            "also holds the session's set-up and the wait for it; the phases sum to more than the total"
        )
    if figures["saved_class_archive"]:
        lines.append("note: a run saved Spark's class archive (a first run): its output phase includes that")
    lines.append("")
    lines.append(f"stages of the run with the median total ({typical.total_s:.2f} s); seconds from process start")
    lines.append(f"{'stage':>5} {'phase':<9}{'start':>7}{'end':>7}{'wall':>6}{'tasks':>6}{'run':>7}{'cpu':>7}"
                 f"{'gc':>6}{'sort':>6}{'shw':>6}  kind: operators")  # fmt: skip
    for s in typical.stages:
        lines.append(
            f"{s.stage_id:>5} {s.phase:<9}{s.start:>7.2f}{s.end:>7.2f}{s.wall:>6.2f}{s.tasks:>6}{s.run_s:>7.2f}"
            f"{s.cpu_s:>7.2f}{s.gc_s:>6.2f}{s.sort_s:>6.2f}{s.shuffle_write_s:>6.2f}  {s.group}: {s.operators}"
        )
    lines.append(
        "(run, cpu, gc: summed over a stage's tasks; sort: its Sort nodes' sort time; shw: shuffle write time)"
    )
    return lines


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/inspect_breakdown.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse-lab", metavar="DIR", required=True, help="a lab holding an inspect_scale load")
    parser.add_argument("--runs", type=int, default=3, help="processes, one after the other; medians (3)")
    parser.add_argument("--format", choices=["csv", "parquet"], default="csv", help="what mm2ctl writes (csv)")
    parser.add_argument("--groups", metavar="REGEX", help="inspect these groups only (inspect --groups)")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    parser.add_argument("--timeline", action="store_true", help="also print each run's stamped progress lines")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    info = lab_control.read_lab(Path(args.reuse_lab))
    mm2_file = Path(info.dir) / MM2_FILE
    if not mm2_file.exists():
        raise SystemExit(f"{mm2_file} is missing: load the lab with bench/inspect_scale.py or peer_inspect.py")
    figures: dict[str, Any] = {"lab": info.dir, "format": args.format, "runs": args.runs, "loadavg_start": loadavg()}
    say(f"{args.runs} cold run(s) of mm2ctl inspect --format {args.format} on {mm2_file}; load {loadavg()}")
    runs: list[RunFigures] = []
    for n in range(args.runs):
        run = measure_run(mm2_file, args.format, args.groups)
        runs.append(run)
        say(f"run {n + 1}: {run.total_s:.1f}s, {run.rows} group partitions, exit {run.exit_code}; load {loadavg()}")
    typical = sorted(runs, key=lambda r: r.total_s)[(len(runs) - 1) // 2]
    figures.update(
        loadavg_end=loadavg(),
        rows=typical.rows,
        total_s=_median([r.total_s for r in runs]),
        spark_overlaps_admin=any(r.spark_overlaps_admin for r in runs),
        saved_class_archive=any(r.saved_class_archive for r in runs),
        phases=median_phases(runs),
        groups=median_groups(runs),
    )
    if args.json:
        figures["each_run"] = [asdict(r) for r in runs]
        print(json.dumps(figures, sort_keys=True))
        return 0
    for n, run in enumerate(runs if args.timeline else []):
        print(f"run {n + 1}: progress lines, seconds from process start")
        print("\n".join(f"{line.t:8.2f}  {line.text}" for line in run.lines))
    print("\n".join(report(figures, typical)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
