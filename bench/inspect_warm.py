"""``mm2ctl inspect`` warm: the inspection run again and again in one live Spark session, as the exporter runs it.

Run it as ``.venv/bin/python bench/inspect_warm.py --mm2-config FILE [--runs N] [--new-syncs K] [--json]``.
One process builds the session (embedded, as ``mm2ctl exporter`` does) and runs ``Exporter.run_once`` (the
inspection, then its metrics) ``N + 1`` times, one after the other; the first run is the cold one and is
reported apart. With ``--new-syncs K``, K offset syncs are written before each warm run, spread over the
pair's partitions, each continuing its partition's newest sync by one record on both sides (what MM2 writes
as it copies), so every warm run reads and folds in new records. With ``--commits M``, M group partitions get
a new committed offset before each warm run too (``bench_lab.CommitTrickle``), as a live setup's consumers
commit; ``--classify-everything`` classifies every group again at each run (the baseline: a live session that
keeps no rows). It prints each run's seconds and the median of the warm ones, and where the last warm run's time
went, by the progress steps the inspection reports. ``bench/peer_inspect.py`` runs it at 5 k.
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

from bench_lab import CommitTrickle, loadavg, say
from confluent_kafka import Producer

from mm2ctl.core.config.mm2_config import MM2Config, load_mm2_config
from mm2ctl.core.kafka.codecs import encode_offset_sync_key, encode_offset_sync_value
from mm2ctl.inspector.exporter import Exporter
from mm2ctl.inspector.inspection import Inspector
from mm2ctl.inspector.kept import changed_groups
from mm2ctl.inspector.opening import SparkPlace, open_inspection
from mm2ctl.inspector.output.prometheus import InspectionCollector
from mm2ctl.inspector.selection import InspectOptions, Selection


class _Steps(logging.Handler):
    def __init__(self, record: Callable[[str], None]) -> None:
        super().__init__(logging.INFO)
        self._record = record

    def emit(self, record: logging.LogRecord) -> None:
        self._record(record.getMessage())


def write_new_syncs(config: MM2Config, inspector: Inspector, count: int) -> None:
    """``count`` syncs, round-robin over each pair's partitions, each one record past its partition's newest."""
    for pair in inspector.pairs:
        newest = {tp: n for tp, n in inspector.kept(pair.name).newest.items() if n.is_sync}
        if not newest:
            continue
        producer = Producer(dict(config.kafka_config(pair.offset_syncs_cluster, pair.name)))
        partitions = sorted(newest)
        step = dict.fromkeys(partitions, 0)
        for i in range(count):
            tp = partitions[i % len(partitions)]
            step[tp] += 1
            n = newest[tp]
            assert n.upstream is not None and n.downstream is not None
            value = encode_offset_sync_value(n.upstream + step[tp], n.downstream + step[tp])
            producer.produce(pair.offset_syncs_topic, key=encode_offset_sync_key(*tp), value=value, partition=0)
        producer.flush()


def measure(mm2_config: Path, runs: int, groups: str | None, new_syncs: int, commits: int) -> dict[str, Any]:
    config = load_mm2_config(mm2_config)
    committer = CommitTrickle(mm2_config, groups) if commits else None
    options = InspectOptions(selection=Selection(groups=groups), state_cache=False)  # its first run is cold
    jvm_log = Path(tempfile.mkstemp(prefix="mm2ctl-warm-", suffix=".log")[1])
    with open_inspection(config, options, SparkPlace(), live=True, jvm_log=jvm_log) as inspector:
        steps: list[tuple[float, str]] = []
        started = time.monotonic()
        exporter = Exporter(inspector, interval_s=3600.0, collector=InspectionCollector())
        steps_log = logging.getLogger("mm2ctl.exporter")  # the exporter logs each step it is told
        steps_log.setLevel(logging.INFO)
        steps_log.propagate = False
        steps_log.addHandler(_Steps(lambda m: steps.append((time.monotonic() - started, m))))
        seconds: list[float] = []
        for run in range(runs + 1):
            if run and new_syncs:
                write_new_syncs(config, inspector, new_syncs)
            if run and committer is not None:
                committer.write(commits)
            steps.clear()
            started = time.monotonic()
            if not exporter.run_once():
                raise SystemExit(f"run {run}: the inspection failed")
            seconds.append(round(time.monotonic() - started, 3))
            say(f"run {run}: {seconds[-1]:.2f}s")
        last = [(round(t, 2), m) for t, m in steps]
    return {
        "cold_seconds": seconds[0],
        "warm_seconds": seconds[1:],
        "warm_median": round(statistics.median(seconds[1:]), 2),
        "new_syncs_per_run": new_syncs,
        "commits_per_run": commits,
        "last_run_steps": last,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/inspect_warm.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--mm2-config", required=True, type=Path)
    parser.add_argument("--runs", type=int, default=5, help="warm runs after the first (5)")
    parser.add_argument("--groups", help="a group regex, as inspect --groups")
    parser.add_argument("--new-syncs", type=int, default=0, help="offset syncs written before each warm run (0)")
    parser.add_argument("--commits", type=int, default=0, help="group offsets committed before each warm run (0)")
    parser.add_argument(
        "--classify-everything",
        action="store_true",
        help="classify every group at each run, as before a live session kept its rows (the baseline)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.classify_everything:
        changed_groups.MERGE_AT_MOST = -1.0
    figures = {
        "loadavg_start": loadavg(),
        **measure(args.mm2_config, args.runs, args.groups, args.new_syncs, args.commits),
        "loadavg_end": loadavg(),
    }
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
