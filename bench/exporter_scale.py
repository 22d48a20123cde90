"""Measure ``mm2ctl exporter``'s memory and CPU on the bench load of ``bench/inspect_scale.py``.

Run it on a lab that benchmark loaded and kept (``inspect_scale.py --keep-lab``, or ``peer_inspect.py
--keep-lab`` for 5 k)::

    .venv/bin/python bench/exporter_scale.py --lab-dir /tmp/mm2ctl-bench-lab --runs 3 --json
    .venv/bin/python bench/exporter_scale.py --lab-dir /tmp/mm2ctl-peer-bench-lab --runs 100 --interval 60 \
        --trickle 200 --json

With ``--trickle K``, K new offset syncs are written after each completed inspection, spread over the pair's
partitions, each continuing its partition's newest sync (``bench_lab.SyncTrickle``): the exporter's later
runs then fold new records in, as they do beside a running MM2. From ``--from-run`` on (10), it reports the
cores the exporter kept busy on average (CPU seconds of both processes over wall time) and how the resident
memory of both, together, moved between that run and the last (``rss_change_percent``). With ``--commits M``,
M group partitions of the inspected groups get a new committed offset after each run too (``bench_lab.CommitTrickle``),
as the consumers of a live setup commit between two inspections.

It starts ``mm2ctl exporter`` on the bench pair (MM2's position from the dedicated-mode offsets topic the load
wrote), waits for ``--runs`` complete inspections (watching ``mm2ctl_inspection_last_success_timestamp_seconds``
on ``/metrics``), sampling every second the resident memory (``VmRSS``) and the CPU time (``utime + stime``) of
the exporter's Python process and of its Spark JVM. Then it sends SIGTERM and times the stop. Reported: each
run's duration (the exporter's own gauge), the peak and the after-run RSS of both processes, the CPU seconds
each run cost and the cores that kept busy, and the stop.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_lab import CommitTrickle, SyncTrickle, loadavg, say
from prometheus_client.parser import text_string_to_metric_families

from mm2ctl.lab.process import free_port

MM2_FILE = "mm2-isobench.properties"
TICKS = os.sysconf("SC_CLK_TCK")


def _status_kib(pid: int, field: str) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def _cpu_seconds(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def _jvm_of(pid: int) -> int | None:
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return None
    for child in children:
        if "java" in Path(f"/proc/{child}/cmdline").read_text(errors="replace"):
            return int(child)
    return None


def _gauges(url: str) -> dict[str, float]:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {s.name: s.value for family in text_string_to_metric_families(text) for s in family.samples if not s.labels}


def measure(args: argparse.Namespace) -> dict[str, Any]:
    mm2 = Path(args.lab_dir) / MM2_FILE
    if not mm2.exists():
        raise SystemExit(f"no bench load in {args.lab_dir}: run bench/inspect_scale.py --keep-lab first")
    port = free_port()
    state = tempfile.mkdtemp(prefix="mm2ctl-exporter-bench-")
    command = [
        sys.executable, "-m", "mm2ctl", "exporter", "--mm2-config", str(mm2),
        "--listen", f"127.0.0.1:{port}", "--interval", str(args.interval),
        *(["--groups", args.groups] if args.groups else []),
    ]  # fmt: skip
    trickle = SyncTrickle(mm2) if args.trickle else None
    commits = CommitTrickle(mm2, args.groups) if args.commits else None
    say(" ".join(command))
    started = time.monotonic()
    proc = subprocess.Popen(command, env={**os.environ, "MM2CTL_STATE_DIR": state}, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}/metrics"
    samples: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    last_success = None
    jvm = None
    try:
        while len(runs) < args.runs:
            if proc.poll() is not None:
                raise SystemExit(f"the exporter exited: {proc.stderr.read() if proc.stderr else ''}")
            jvm = jvm or _jvm_of(proc.pid)
            now = time.monotonic() - started
            sample = {
                "t": round(now, 1),
                "py_rss_mib": (_status_kib(proc.pid, "VmRSS") or 0) / 1024,
                "jvm_rss_mib": (_status_kib(jvm, "VmRSS") or 0) / 1024 if jvm else 0,
                "cpu_s": (_cpu_seconds(proc.pid) or 0) + ((_cpu_seconds(jvm) or 0) if jvm else 0),
            }
            samples.append(sample)
            gauges = _gauges(url)
            success = gauges.get("mm2ctl_inspection_last_success_timestamp_seconds")
            if success is not None and success != last_success:
                last_success = success
                runs.append(
                    {
                        "finished_at_s": sample["t"],
                        "duration_s": round(gauges["mm2ctl_inspection_duration_seconds"], 1),
                        "cpu_s_total": round(sample["cpu_s"], 1),
                        "py_rss_mib": round(sample["py_rss_mib"], 1),
                        "jvm_rss_mib": round(sample["jvm_rss_mib"], 1),
                        "errors_total": gauges.get("mm2ctl_inspection_errors_total"),
                    }
                )
                say(f"run {len(runs)}: {runs[-1]}")
                if trickle is not None:
                    trickle.write(args.trickle)
                if commits is not None:
                    commits.write(args.commits)
            time.sleep(1.0)
        peaks = {"py_hwm_mib": (_status_kib(proc.pid, "VmHWM") or 0) / 1024}
        if jvm:
            peaks["jvm_hwm_mib"] = (_status_kib(jvm, "VmHWM") or 0) / 1024
    finally:
        t0 = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=300)
        stop_s = time.monotonic() - t0
        jvm_left = jvm is not None and Path(f"/proc/{jvm}").exists()
    per_run_cpu = [runs[0]["cpu_s_total"]] + [
        round(b["cpu_s_total"] - a["cpu_s_total"], 1) for a, b in itertools.pairwise(runs)
    ]
    start, end = runs[min(args.from_run, len(runs)) - 1], runs[-1]
    window_s = end["finished_at_s"] - start["finished_at_s"]
    rss_start = start["py_rss_mib"] + start["jvm_rss_mib"]
    rss_end = end["py_rss_mib"] + end["jvm_rss_mib"]
    return {
        "interval_s": args.interval,
        "trickle_syncs_per_run": args.trickle,
        "commits_per_run": args.commits,
        "from_run": args.from_run,
        "cores_busy_average": round((end["cpu_s_total"] - start["cpu_s_total"]) / window_s, 3) if window_s else None,
        "rss_total_mib_from_run": round(rss_start, 1),
        "rss_total_mib_last_run": round(rss_end, 1),
        "rss_change_percent": round(100 * (rss_end - rss_start) / rss_start, 1),
        "rss_total_mib_per_run": [round(r["py_rss_mib"] + r["jvm_rss_mib"], 1) for r in runs],
        "runs": runs,
        "run_seconds_median": statistics.median(r["duration_s"] for r in runs),
        "cpu_seconds_per_run": per_run_cpu,
        "cpu_seconds_per_warm_run_median": statistics.median(per_run_cpu[1:]) if len(per_run_cpu) > 1 else None,
        "cores_busy_per_run": [round(c / r["duration_s"], 2) for c, r in zip(per_run_cpu, runs, strict=True)],
        "peak_py_rss_mib": round(peaks["py_hwm_mib"], 1),
        "peak_jvm_rss_mib": round(peaks.get("jvm_hwm_mib", 0), 1),
        "max_sampled_py_rss_mib": round(max(s["py_rss_mib"] for s in samples), 1),
        "max_sampled_jvm_rss_mib": round(max(s["jvm_rss_mib"] for s in samples), 1),
        "after_run_rss_mib": [(r["py_rss_mib"], r["jvm_rss_mib"]) for r in runs],
        "sigterm_to_exit_s": round(stop_s, 1),
        "exit_code": code,
        "jvm_left_behind": jvm_left,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/exporter_scale.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--lab-dir", default="/tmp/mm2ctl-bench-lab", help="a lab inspect_scale.py loaded and kept")
    parser.add_argument("--groups", help="a group regex, as the exporter's --groups (the 50 k lab's first 100: 5 k)")
    parser.add_argument("--runs", type=int, default=3, help="complete inspections to wait for (default 3)")
    parser.add_argument("--interval", type=float, default=60.0, help="the exporter's --interval (default 60)")
    parser.add_argument("--trickle", type=int, default=0, help="offset syncs written after each run (0)")
    parser.add_argument("--commits", type=int, default=0, help="group offsets committed after each run (0)")
    parser.add_argument("--from-run", type=int, default=10, help="the run the averages start at (10)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    figures = {"loadavg_start": loadavg(), **measure(args), "loadavg_end": loadavg()}
    print(json.dumps(figures, sort_keys=True) if args.json else json.dumps(figures, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
