"""``mm2ctl inspect`` warm: the inspection run again and again in one live Spark session, as the exporter runs it.

Run it as ``.venv/bin/python bench/inspect_warm.py --mm2-config FILE [--runs N] [--groups REGEX] [--json]``.
One process builds the session (embedded, as ``mm2ctl exporter`` does) and runs ``Exporter.run_once`` (the
inspection, then its metrics) ``N + 1`` times, one after the other; the first run is the cold one and is
reported apart. It prints each run's seconds and the median of the warm ones, and where the last warm run's
time went, by the progress steps the inspection reports. ``bench/peer_inspect.py`` runs it at 5 k.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_lab import loadavg, say

from mm2ctl.core.config import load_mm2_config
from mm2ctl.inspector.selection import Selection
from mm2ctl.inspector.exporter import Exporter
from mm2ctl.inspector.job import InspectOptions
from mm2ctl.inspector.prometheus_output import InspectionCollector
from mm2ctl.inspector.session import build_session, stop_session


class _Steps(logging.Handler):
    def __init__(self, record: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self._record = record

    def emit(self, record: logging.LogRecord) -> None:
        self._record(record.getMessage())


def measure(mm2_config: Path, runs: int, groups: str | None) -> dict[str, Any]:
    spark = build_session(None, None, jvm_log=Path(tempfile.mkstemp(prefix="mm2ctl-warm-", suffix=".log")[1]))
    try:
        steps: list[tuple[float, str]] = []
        started = time.monotonic()
        exporter = Exporter(
            spark,
            load_mm2_config(mm2_config),
            InspectOptions(selection=Selection(groups=groups)),
            connect=None,
            interval_s=3600.0,
            collector=InspectionCollector(),
        )
        steps_log = logging.getLogger("mm2ctl.exporter")  # the exporter logs each step it is told
        steps_log.setLevel(logging.INFO)
        steps_log.propagate = False
        steps_log.addHandler(_Steps(lambda m: steps.append((time.monotonic() - started, m))))
        seconds: list[float] = []
        for run in range(runs + 1):
            steps.clear()
            started = time.monotonic()
            if not exporter.run_once():
                raise SystemExit(f"run {run}: the inspection failed")
            seconds.append(round(time.monotonic() - started, 3))
            say(f"run {run}: {seconds[-1]:.2f}s")
        last = [(round(t, 2), m) for t, m in steps]
    finally:
        stop_session(spark)
    return {
        "cold_seconds": seconds[0],
        "warm_seconds": seconds[1:],
        "warm_median": round(statistics.median(seconds[1:]), 2),
        "last_run_steps": last,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/inspect_warm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mm2-config", required=True, type=Path)
    parser.add_argument("--runs", type=int, default=5, help="warm runs after the first (5)")
    parser.add_argument("--groups", help="a group regex, as inspect --groups")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    figures = {"loadavg_start": loadavg(), **measure(args.mm2_config, args.runs, args.groups), "loadavg_end": loadavg()}
    if args.json:
        print(json.dumps(figures))
    else:
        print(f"first run (cold session) {figures['cold_seconds']:.2f} s; warm runs {figures['warm_seconds']}")
        print(f"warm median {figures['warm_median']:.2f} s; the last run's steps (seconds from its start):")
        for at, message in figures["last_run_steps"]:
            print(f"  {at:6.2f}  {message}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
