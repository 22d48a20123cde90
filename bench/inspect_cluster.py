"""Which parts of the inspection run on a cluster's executors, and which stay on the driver.

Run it as ``.venv/bin/python bench/inspect_cluster.py [--scale 0.1] [--json]`` (see bench/README.md).

It loads ``bench/inspect_scale.py``'s bench pair into a lab (or reuses a loaded one), starts a Spark standalone
cluster on loopback (``mm2ctl.lab.spark_cluster``: a master and ``--workers`` workers of one core), and
submits the job module to it in client deploy mode with Spark's event log on. From the driver's progress
lines (timed as they arrive) and the event log it splits the run's wall time into:

* driver start-up: the process start to the SparkContext's start (JVM, Python, Spark);
* the driver alone: the admin-state reads, building the plan, and every gap between Spark jobs;
* Spark jobs: their wall time, and the executors' task time per kind of stage: reading MM2's topics (the
  Kafka source), the admin state's tables (handed over as Arrow by the driver), the shuffle, sort, window
  passes and joins, and the Parquet output.

The embedded ``local[*]`` run (``mm2ctl inspect --format parquet``) on the same load is timed beside it,
unless ``--no-embedded``. On one machine the cluster cannot be faster: the executors share its cores with
the driver; the point is where the work runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench_lab import loadavg, open_lab, print_figures, say
from inspect_scale import LOAD_FILE, MM2_FILE, PAIR, LoadSpec, load, write_mm2_properties

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.inspector import job
from mm2ctl.inspector.spark.packages import submit_arguments
from mm2ctl.lab import control as lab_control
from mm2ctl.lab import spark_cluster as cluster_core

DEFAULT_LAB_DIR = "/tmp/mm2ctl-cluster-bench-lab"
#: How the job's progress lines start (``job.main`` prints them to stderr).
PROGRESS_LINES = (PAIR, "translating", "classifying", "replication health")


def stage_kind(stage: dict[str, Any]) -> str:
    """What a stage does, from the operators its RDDs were built for (their scope names)."""
    scopes = set()
    for rdd in stage.get("RDD Info", []):
        scope = rdd.get("Scope")
        if scope:
            scopes.add(json.loads(scope).get("name", ""))
    text = " ".join(scopes)
    if "WriteFiles" in text:
        return "output (Parquet write)"
    if "KafkaTable" in text:
        return "MM2's topics read (Kafka source) and their shuffle write"
    if "Scan parquet" in text or "InMemoryTableScan" in text:
        return "summary and partition rows (read back, cached)"
    if "Window" in text or "AQEShuffleRead" in text or "SortMergeJoin" in text:
        return "shuffle read, sort, window passes, joins"
    if "LocalTableScan" in text or "ExistingRDD" in text:
        return "admin state tables (from the driver), broadcast or shuffled"
    return "other: " + ", ".join(sorted(s for s in scopes if s))[:80]


def split(events: list[dict[str, Any]], started_epoch_ms: float, ended_epoch_ms: float) -> dict[str, Any]:
    """The run's wall time split between the driver alone and Spark jobs, and the executors' task time."""
    app_start = next(e["Timestamp"] for e in events if e["Event"] == "SparkListenerApplicationStart")
    jobs: dict[int, list[float]] = {}
    for e in events:
        if e["Event"] == "SparkListenerJobStart":
            jobs[e["Job ID"]] = [e["Submission Time"], e["Submission Time"]]
        elif e["Event"] == "SparkListenerJobEnd":
            jobs[e["Job ID"]][1] = e["Completion Time"]
    intervals = sorted(jobs.values())
    busy, merged_end, first_job = 0.0, 0.0, intervals[0][0] if intervals else ended_epoch_ms
    for start, end in intervals:
        if start > merged_end:
            busy += end - start
            merged_end = end
        elif end > merged_end:
            busy += end - merged_end
            merged_end = end
    kinds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    tasks_per_executor: Counter[str] = Counter()
    stage_kinds: dict[tuple[int, int], str] = {}
    for e in events:
        if e["Event"] == "SparkListenerStageCompleted":
            info = e["Stage Info"]
            kind = stage_kind(info)
            stage_kinds[(info["Stage ID"], info["Stage Attempt ID"])] = kind
            kinds[kind]["stages"] += 1
            kinds[kind]["stage_wall_seconds"] += (info["Completion Time"] - info["Submission Time"]) / 1000
    for e in events:
        if e["Event"] != "SparkListenerTaskEnd" or e["Task End Reason"]["Reason"] != "Success":
            continue
        kind = stage_kinds.get((e["Stage ID"], e["Stage Attempt ID"]), "unknown")
        metrics = e.get("Task Metrics") or {}
        tasks_per_executor[e["Task Info"]["Executor ID"]] += 1
        k = kinds[kind]
        k["tasks"] += 1
        k["executor_run_seconds"] += metrics.get("Executor Run Time", 0) / 1000
        k["executor_cpu_seconds"] += metrics.get("Executor CPU Time", 0) / 1e9
        k["input_records"] += (metrics.get("Input Metrics") or {}).get("Records Read", 0)
        k["shuffle_written_mib"] += (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0) / 2**20
        k["output_records"] += (metrics.get("Output Metrics") or {}).get("Records Written", 0)
    wall = (ended_epoch_ms - started_epoch_ms) / 1000
    startup = (app_start - started_epoch_ms) / 1000
    return {
        "wall_seconds": round(wall, 2),
        "driver_startup_seconds": round(startup, 2),
        "driver_before_first_job_seconds": round((first_job - app_start) / 1000, 2),
        "spark_jobs": len(jobs),
        "spark_jobs_running_seconds": round(busy / 1000, 2),
        "driver_alone_seconds": round(wall - startup - busy / 1000, 2),
        "tasks_per_executor": dict(tasks_per_executor),
        "stage_kinds": {k: {m: round(v, 2) for m, v in sorted(v.items())} for k, v in sorted(kinds.items())},
    }


def submit(cluster: cluster_core.SparkCluster, mm2_file: Path, work: Path) -> dict[str, Any]:
    """Submit the job; its progress lines timed as they arrive, and the event log's split."""
    events = work / "events"
    events.mkdir()
    command = cluster_core.submit_command(
        cluster,
        str(Path(job.__file__)),
        ["--mm2-config", str(mm2_file), "--format", "parquet", "--output", str(work / "cluster-rows")],
        options=submit_arguments(),
        conf={
            "spark.ui.enabled": "false",
            "spark.scheduler.minRegisteredResourcesRatio": "1.0",
            "spark.executor.memory": cluster.memory_per_worker,
            "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false",
        },
    )
    lines: list[tuple[float, str]] = []
    log = (work / "spark-submit.log").open("w")
    started_epoch, t0 = time.time() * 1000, time.monotonic()
    # spark-submit passes the Python driver's output on to its own stdout; Spark logs to stderr. Both are read.
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=cluster_core.submit_environment()
    )

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append((time.monotonic() - t0, line.rstrip("\n")))
            log.write(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    code = proc.wait(timeout=3600)
    ended_epoch = time.time() * 1000
    reader.join(timeout=10)
    log.close()
    if code not in (0, 10):
        raise SystemExit(f"spark-submit exited {code} (log {work / 'spark-submit.log'})")
    # The job's own progress lines, among Spark's log lines.
    progress = [(round(t, 2), text) for t, text in lines if text.startswith(PROGRESS_LINES)]
    event_log = next(f for f in events.iterdir() if f.is_file())
    events_list = [json.loads(line) for line in event_log.read_text().splitlines() if line.strip()]
    figures = split(events_list, started_epoch, ended_epoch)
    figures["progress"] = progress
    figures["admin_state_seconds"] = _admin_state_seconds(progress)
    figures["exit_code"] = code
    return figures


def _admin_state_seconds(progress: list[tuple[float, str]]) -> float | None:
    """From "reading admin state" to the first "… with Spark" line: the driver's admin reads."""
    start = next((t for t, text in progress if text.endswith("reading admin state")), None)
    end = next((t for t, text in progress if text.endswith("with Spark")), None)
    return None if start is None or end is None else round(end - start, 2)


def embedded(mm2_file: Path, work: Path) -> dict[str, Any]:
    env = {**os.environ, "MM2CTL_STATE_DIR": str(work / "state")}
    argv = [str(Path(sys.executable).with_name("mm2ctl")), "inspect", "--mm2-config", str(mm2_file)]
    t0 = time.monotonic()
    proc = subprocess.run(
        [*argv, "--format", "parquet", "--output", str(work / "embedded-rows")],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
        check=False,
    )
    seconds = time.monotonic() - t0
    if proc.returncode not in (0, 10):
        raise SystemExit(f"mm2ctl inspect exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return {"wall_seconds": round(seconds, 2), "exit_code": proc.returncode}


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/inspect_cluster.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=0.1, help="inspect_scale.py's load scale (0.1)")
    parser.add_argument("--lab-dir", default=DEFAULT_LAB_DIR, help=f"where to start the lab ({DEFAULT_LAB_DIR})")
    parser.add_argument("--reuse-lab", metavar="DIR", help="use the lab already running in DIR; leave it running")
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab this run started running")
    parser.add_argument("--skip-load", action="store_true", help="the lab already holds a bench load (--reuse-lab)")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--workers", type=int, default=2, help="workers of one core each (2)")
    parser.add_argument("--worker-memory", default="1g", help="each worker's, and its executor's, memory (1g)")
    parser.add_argument("--no-embedded", action="store_true", help="do not time the embedded local[*] run")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    return parser.parse_args(argv)


def _report(fig: dict[str, Any]) -> list[str]:
    c = fig["cluster"]
    lines = [
        f"mm2ctl inspect on a Spark standalone cluster ({fig['workers']} workers x 1 core, {fig['worker_memory']}),"
        f" client deploy mode; {fig['group_partitions']:,} group partitions, {fig['offset_syncs']:,} offset syncs",
        f"  load average at start {fig['loadavg_start']}, at end {fig['loadavg_end']}",
        f"  spark-submit wall                {c['wall_seconds']:>7.1f} s",
        f"    driver start-up (JVM, Spark)   {c['driver_startup_seconds']:>7.1f} s",
        f"    driver alone                   {c['driver_alone_seconds']:>7.1f} s   (admin state "
        f"{c['admin_state_seconds']} s; {c['driver_before_first_job_seconds']} s before the first job)",
        f"    Spark jobs running             {c['spark_jobs_running_seconds']:>7.1f} s   ({c['spark_jobs']} jobs;"
        f" tasks per executor {c['tasks_per_executor']})",
        "  executors' task time by kind of stage:",
    ]
    for kind, m in c["stage_kinds"].items():
        lines.append(
            f"    {kind:<40} {m.get('executor_run_seconds', 0):>7.1f} s run, {m.get('executor_cpu_seconds', 0):>6.1f}"
            f" s CPU, {int(m.get('tasks', 0)):>4} tasks, {int(m.get('stages', 0)):>3} stages,"
            f" {int(m.get('input_records', 0)):,} records in, {m.get('shuffle_written_mib', 0):.1f} MiB shuffled"
        )
    if "embedded" in fig:
        lines.append(f"  embedded local[*] (mm2ctl inspect --format parquet) {fig['embedded']['wall_seconds']:.1f} s")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    figures: dict[str, Any] = {"loadavg_start": loadavg(), "workers": args.workers, "worker_memory": args.worker_memory}
    work = Path(tempfile.mkdtemp(prefix="mm2ctl-cluster-bench-"))
    started_lab: Path | None = None
    cluster: cluster_core.SparkCluster | None = None
    try:
        info, started_lab = open_lab(args)
        mm2_file = Path(info.dir) / MM2_FILE
        if args.skip_load:
            spec = LoadSpec(**json.loads((Path(info.dir) / LOAD_FILE).read_text())["spec"])
        else:
            spec = LoadSpec.for_scale(args.scale)
            write_mm2_properties(mm2_file, info)
            say(f"loading {spec.total_syncs:,} offset syncs and {spec.group_partitions:,} group partitions")
            figures["load"] = load(info, spec, load_mm2_config(mm2_file).pair(PAIR))
            (Path(info.dir) / LOAD_FILE).write_text(json.dumps({"spec": asdict(spec), "figures": {}}) + "\n")
        figures.update({"group_partitions": spec.group_partitions, "offset_syncs": spec.total_syncs})
        say(f"starting a Spark standalone cluster in {work / 'cluster'}")
        cluster = cluster_core.start(
            work / "cluster", workers=args.workers, cores_per_worker=1, memory_per_worker=args.worker_memory
        )
        say("spark-submit to the cluster")
        figures["cluster"] = submit(cluster, mm2_file, work)
        cluster_core.stop(cluster)
        cluster = None
        if not args.no_embedded:
            say("mm2ctl inspect, embedded local[*]")
            figures["embedded"] = embedded(mm2_file, work)
        figures["loadavg_end"] = loadavg()
    finally:
        if cluster is not None:
            cluster_core.stop(cluster)
        if started_lab is not None and not args.keep_lab:
            say(f"stopping the lab in {started_lab}")
            lab_control.down(started_lab)
        shutil.rmtree(work / "cluster-rows", ignore_errors=True)
        shutil.rmtree(work / "embedded-rows", ignore_errors=True)
    figures["logs"] = str(work)
    print_figures(figures, args.json, _report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
