"""Measure ``mm2ctl exporter``'s cycle under live traffic, on a real MM2 flow, as a user runs it.

A lab (new in ``--lab-dir``, or ``--reuse-lab``) gets an isolated flow whose connectors keep mirroring
(``failover_scale.prepare``: ``--groups`` x ``--partitions`` group partitions, the groups spread over each
partition). Then, for the whole measurement, a producer writes about ``--rate`` records a second spread over every
source partition, and ``--committers`` groups commit a few records further every ``--commit-every`` seconds: MM2
copies, syncs and checkpoints as it would in production. ``mm2ctl exporter --interval`` runs on the flow (MM2's
position from the lab's Connect worker) until
``--runs`` inspections completed; the cycle (the exporter's own ``mm2ctl_inspection_duration_seconds``), the CPU
seconds of each cycle, and the resident memory of the exporter's Python process, its Spark JVM and any other JVM
it started are read after each one. ``--alt-mm2ctl`` names another build's ``mm2ctl`` (a checkout with a
virtualenv of its own): the two alternate, ``--rounds`` times each, on the same lab and traffic, the order
swapping each round. Medians of the cycles from ``--from-run``.

    .venv/bin/python bench/exporter_live.py --groups 100 --partitions 50 --runs 20 --from-run 6 --interval 10 \
        --rounds 2 --alt-mm2ctl /tmp/wt-base/.venv/bin/mm2ctl --json
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench_lab import loadavg, open_lab, say
from confluent_kafka import Producer
from exporter_scale import _cpu_seconds, _gauges, _status_kib
from failover_scale import LoadSpec, prepare

from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_control
from mm2ctl.lab.process import free_port


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid``, by the kernel's children lists."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            children = [int(c) for t in Path(f"/proc/{p}/task").iterdir() for c in (t / "children").read_text().split()]
        except OSError:
            continue
        found += children
        todo += children
    return found


class Traffic:
    """Records produced about ``rate`` a second over ``partitions``, and ``committers`` groups committing a few
    records further every ``every`` seconds, until ``stop``."""

    def __init__(self, bootstrap: str, spec: LoadSpec, rate: float, committers: int, every: float) -> None:
        self._bootstrap, self._spec, self._rate = bootstrap, spec, rate
        self._committers, self._every = committers, every
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._produce, self._commit)]
        self.produced = 0
        self.commits = 0

    def __enter__(self) -> Traffic:
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=30)

    def _produce(self) -> None:
        producer = Producer({"bootstrap.servers": self._bootstrap, "linger.ms": 50})
        partitions, turn = self._spec.partitions, 0
        while not self._stop.is_set():
            started = time.monotonic()
            for _ in range(max(1, round(self._rate))):
                topic, p = partitions[turn % len(partitions)]
                producer.produce(topic, b"live/%d" % turn, b"k%d" % (turn % 97), partition=p)
                turn += 1
            producer.poll(0)
            self.produced = turn
            self._stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))
        producer.flush(30)

    def _commit(self) -> None:
        admin = KafkaAdmin.connect({"bootstrap.servers": self._bootstrap}, name="primary")
        groups = self._spec.group_names[: self._committers]
        while not self._stop.wait(self._every):
            committed = admin.committed_offsets(groups)
            ends = {tp: int(b.latest or 0) for tp, b in admin.partition_bounds(self._spec.partitions).items()}
            moved = {
                g: {tp: min(ends[tp], off + 5) for tp, off in committed[g].offsets.items()}
                for g in groups
                if committed[g].error is None
            }
            admin.alter_group_offsets(moved, concurrency=8)
            self.commits += 1


def _jobs(ui: str) -> list[dict[str, Any]]:
    """The Spark jobs the exporter's driver ran so far (its UI's REST API), oldest first."""
    try:
        with urllib.request.urlopen(f"{ui}/api/v1/applications", timeout=5) as r:
            app = json.load(r)[0]["id"]
        with urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/jobs", timeout=5) as r:
            return sorted(json.load(r), key=lambda j: j["jobId"])
    except (OSError, IndexError, KeyError, ValueError):
        return []


def _job_seconds(job: dict[str, Any]) -> float:
    fmt = "%Y-%m-%dT%H:%M:%S.%f%Z"
    try:
        start = dt.datetime.strptime(job["submissionTime"].replace("GMT", "UTC"), fmt)
        end = dt.datetime.strptime(job["completionTime"].replace("GMT", "UTC"), fmt)
    except (KeyError, ValueError):
        return 0.0
    return (end - start).total_seconds()


def run_exporter(mm2ctl: str, mm2_config: str, connect_url: str, args: argparse.Namespace) -> dict[str, Any]:
    """One exporter on the flow until ``--runs`` inspections completed; its cycles, CPU, memory and, with
    ``--jobs``, the Spark jobs of each cycle (counted from its driver's UI)."""
    port, ui_port = free_port(), free_port()
    state = tempfile.mkdtemp(prefix="mm2ctl-exporter-live-")
    command = [mm2ctl, "exporter", "--mm2-config", mm2_config, "--listen", f"127.0.0.1:{port}",
               "--interval", str(args.interval)]  # fmt: skip
    if args.jobs:
        command += ["--spark-conf", "spark.ui.enabled=true", "--spark-conf", f"spark.ui.port={ui_port}"]
    env = {**os.environ, "MM2CTL_STATE_DIR": state, "MM2CTL_INSPECT_CACHE": state, "MM2CTL_CONNECT_URL": connect_url}
    say(" ".join(command))
    proc = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    url, runs, last, seen = f"http://127.0.0.1:{port}/metrics", [], None, -1
    try:
        while len(runs) < args.runs:
            if proc.poll() is not None:
                raise SystemExit(f"the exporter {mm2ctl} exited with {proc.returncode}")
            gauges = _gauges(url)
            success = gauges.get("mm2ctl_inspection_last_success_timestamp_seconds")
            if success is not None and success != last:
                last = success
                below = _descendants(proc.pid)
                jvms = {p: (_status_kib(p, "VmRSS") or 0) / 1024 for p in below}
                runs.append(
                    {
                        "duration_s": round(gauges["mm2ctl_inspection_duration_seconds"], 2),
                        "cpu_s_total": round(sum(_cpu_seconds(p) or 0 for p in [proc.pid, *below]), 1),
                        "py_rss_mib": round((_status_kib(proc.pid, "VmRSS") or 0) / 1024, 1),
                        "children_rss_mib": round(sum(jvms.values()), 1),
                        "children": len(jvms),
                        "errors_total": gauges.get("mm2ctl_inspection_errors_total"),
                    }
                )
                if args.jobs:
                    jobs = [j for j in _jobs(f"http://127.0.0.1:{ui_port}") if j["jobId"] > seen]
                    seen = max([seen, *(j["jobId"] for j in jobs)])
                    runs[-1]["spark_jobs"] = len(jobs)
                    runs[-1]["spark_job_s"] = round(sum(_job_seconds(j) for j in jobs), 2)
                    runs[-1]["spark_job_names"] = [j.get("name", "") for j in jobs]
                shown = {k: v for k, v in runs[-1].items() if k != "spark_job_names"}
                say(f"{Path(mm2ctl).parent.parent.parent.name} run {len(runs)}: {shown}")
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=300)
    warm = runs[args.from_run - 1 :]
    cpu = [b["cpu_s_total"] - a["cpu_s_total"] for a, b in itertools.pairwise(runs)][args.from_run - 2 :]
    return {
        "cycle_s_median": statistics.median(r["duration_s"] for r in warm),
        "spark_jobs_per_cycle_median": statistics.median(r.get("spark_jobs", 0) for r in warm),
        "spark_job_s_per_cycle_median": statistics.median(r.get("spark_job_s", 0) for r in warm),
        "cpu_s_per_cycle_median": round(statistics.median(cpu), 2) if cpu else None,
        "rss_total_mib_last": round(runs[-1]["py_rss_mib"] + runs[-1]["children_rss_mib"], 1),
        "rss_total_mib_max": round(max(r["py_rss_mib"] + r["children_rss_mib"] for r in warm), 1),
        "runs": runs,
    }


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=50, help="source partitions, over two topics (even)")
    parser.add_argument("--records", type=int, default=400, help="records per partition before the traffic")
    parser.add_argument("--rate", type=float, default=20.0, help="records a second over every partition (20)")
    parser.add_argument("--committers", type=int, default=10, help="groups that keep committing (10)")
    parser.add_argument("--commit-every", type=float, default=3.0, help="seconds between their commits (3)")
    parser.add_argument("--interval", type=float, default=10.0, help="the exporter's --interval (10)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--from-run", type=int, default=6, help="the first cycle counted in the medians (6)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--mm2ctl", default=str(Path(sys.executable).parent / "mm2ctl"))
    parser.add_argument("--alt-mm2ctl", help="another build's mm2ctl, alternated with --mm2ctl")
    parser.add_argument("--lab-dir", default="/tmp/mm2ctl-exporter-live-lab")
    parser.add_argument("--reuse-lab")
    parser.add_argument("--kafka-version")
    parser.add_argument("--keep-lab", action="store_true")
    parser.add_argument("--jobs", action="store_true", help="count each cycle's Spark jobs (the driver's UI on)")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    info, started = open_lab(args)
    figures: dict[str, Any] = {"loadavg_start": loadavg(), "builds": {}}
    try:
        spec = LoadSpec.for_scale(
            1.0, f"live{os.getpid()}", args.records, 4, groups=args.groups, partitions=args.partitions
        )
        flow, figures["prepare"] = prepare(info, spec, 120, live=True)
        builds = [args.mm2ctl] + ([args.alt_mm2ctl] if args.alt_mm2ctl else [])
        with Traffic(info.source.bootstrap, spec, args.rate, args.committers, args.commit_every) as traffic:
            for r in range(args.rounds):
                for build in builds if r % 2 == 0 else builds[::-1]:
                    figures["builds"].setdefault(build, []).append(
                        run_exporter(build, flow.mm2_config, info.connect_url, args)
                    )
            figures["produced"], figures["commit_rounds"] = traffic.produced, traffic.commits
        figures["loadavg_end"] = loadavg()
        for build, rounds in figures["builds"].items():
            cycles = [c["cycle_s_median"] for c in rounds]
            say(f"{build}: cycle medians {cycles}, rss {[c['rss_total_mib_last'] for c in rounds]} MiB")
    finally:
        if started is not None and not args.keep_lab:
            lab_control.down(started)
    print(
        json.dumps(figures, indent=2)
        if args.json
        else json.dumps({b: [c["cycle_s_median"] for c in r] for b, r in figures["builds"].items()})
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
