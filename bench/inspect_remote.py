"""A cold ``mm2ctl inspect`` embedded beside the same inspection through ``--remote`` on a warm Connect server.

Run it as ``.venv/bin/python bench/inspect_remote.py --mm2-config LAB/mm2-isobench.properties [--runs N]
[--groups RE] [--json]``, on a lab ``bench/peer_inspect.py --keep-lab`` loaded. It starts a Spark Connect
server with the Kafka source (``mm2ctl.lab.spark_connect``), warms it with one inspection, then alternates the
two commands (embedded, remote, embedded, …), each a new process writing the rows as CSV, and prints each
one's median wall time, their ratio and the load average. Both runs' rows must be the same: a difference
fails the bench.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_lab import loadavg, print_figures, say

from mm2ctl.lab import spark_connect


def _inspect(mm2_config: str, groups: str | None, out: Path, remote: str | None) -> float:
    command = [sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", mm2_config, "--format", "csv"]
    command += [
        "--output",
        str(out),
        *(["--remote", remote] if remote else []),
        *(["--groups", groups] if groups else []),
    ]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if done.returncode not in (0, 10):  # 10: problems found, the lab's load has some
        raise SystemExit(f"inspect exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    return took


def _rows(path: Path) -> list[tuple[str, ...]]:
    """The rows, less the column that depends on the moment of the run."""
    with path.open(newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    drop = header.index("group_checkpoint_age_seconds") if "group_checkpoint_age_seconds" in header else -1
    return sorted(tuple(v for i, v in enumerate(row) if i != drop) for row in body)


def measure(mm2_config: str, groups: str | None, runs: int, work: Path) -> dict[str, Any]:
    say("starting a Spark Connect server with the Kafka source")
    server = spark_connect.start(work / "server")
    try:
        say("warming the server with one inspection")
        _inspect(mm2_config, groups, work / "warm.csv", server.url)
        times: dict[str, list[float]] = {"embedded": [], "remote": []}
        for run in range(runs):
            for mode, remote in (("embedded", None), ("remote", server.url)):
                took = _inspect(mm2_config, groups, work / f"{mode}.csv", remote)
                times[mode].append(round(took, 2))
                say(f"run {run + 1}: {mode} {took:.1f}s (load {loadavg()[0]})")
            if _rows(work / "embedded.csv") != _rows(work / "remote.csv"):
                raise SystemExit("the remote run's rows differ from the embedded run's")
    finally:
        spark_connect.stop(server)
    medians = {mode: round(statistics.median(t), 2) for mode, t in times.items()}
    return {
        "runs": times,
        "medians": medians,
        "remote_over_embedded": round(medians["remote"] / medians["embedded"], 2),
        "loadavg": loadavg(),
    }


def _report(figures: dict[str, Any]) -> list[str]:
    m = figures["medians"]
    return [
        f"cold inspect, embedded: {m['embedded']} s (median of {figures['runs']['embedded']})",
        f"cold inspect, --remote on a warm Connect server: {m['remote']} s (median of {figures['runs']['remote']})",
        f"remote / embedded: {figures['remote_over_embedded']} x; load average {figures['loadavg']}",
    ]


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bench/inspect_remote.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mm2-config", required=True, help="the bench lab's mm2-isobench.properties")
    parser.add_argument("--groups", help="a group regex, as inspect --groups (the 50 k lab's first 100 groups: 5 k)")
    parser.add_argument("--runs", type=int, default=5, help="alternated pairs of runs (5)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="mm2ctl-inspect-remote-") as work:
        print_figures(measure(args.mm2_config, args.groups, args.runs, Path(work)), args.json, _report)


if __name__ == "__main__":
    main(sys.argv[1:])
