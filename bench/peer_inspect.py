"""``mm2ctl inspect`` beside Aiven's inspector and the stock ``kafka-consumer-groups``, on the same lab and load.

Run it as ``.venv/bin/python bench/peer_inspect.py --aiven-launcher PATH [--reuse-lab DIR] [--json]`` (see
bench/README.md). Aiven's inspector (``aiven/kafka``, tag ``mm2-offset-sync-inspector-0.1``) is built outside
the project; ``PATH`` is its launcher script. Without it, only mm2ctl and the stock tool run.

Each size is a load of ``bench/inspect_scale.py`` (its bench pair, its loader, its MM2 properties file):

* 5 k group partitions: 100 groups x 50 partitions (10 topics x 5), in a lab this script starts;
* 50 k: the same lab, grown to 1,000 groups (the first 100 keep their offsets);
* 1 M: the lab ``inspect_scale.py --keep-lab`` loaded (1,000 groups x 1,000 partitions), given as
  ``--reuse-lab DIR`` and left as it is.

At every size each round runs each tool once, cold (a new process each time), the order rotating from one
round to the next so a noisy minute on a shared machine does not fall on one tool only:

* ``mm2ctl inspect --mm2-config F --format csv --output FILE`` (every row, as a file), twice: a first run,
  with no saved state (``$MM2CTL_INSPECT_CACHE`` an empty folder), then a repeat run, which starts from the
  decoded internal topics the first one saved, after ``--new-syncs`` new offset syncs (200; as MM2 writes
  them while it copies) — each a new process;
* Aiven's ``--mm2-config F --include-inactive-groups --include-ok-groups --output-path FILE`` (every row; its
  default leaves out idle groups and ok rows), stopped after ``--aiven-timeout`` seconds: it never exits on a
  missing topic or a dead broker;
* at 5 k, ``kafka-consumer-groups --describe --all-groups`` against the source, then the target cluster, one
  JVM each from the lab's Kafka jars: the same admin reads without any analysis (the two JVMs' sum is one run).

At 5 k it then runs ``bench/inspect_warm.py``: the inspection again and again in one live session, as
``mm2ctl exporter`` runs it, and reports the median of the warm runs.

It prints each tool's runs, median and rows, and mm2ctl's median over the others' (--json: one JSON line).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from bench_lab import SyncTrickle, loadavg, open_lab, print_figures, say, stock_command
from inspect_scale import (
    LOAD_FILE,
    MM2_FILE,
    PAIR,
    LoadSpec,
    commit_group_offsets,
    load,
    load_checkpoints,
    write_mm2_properties,
)

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.lab import control as lab_control
from mm2ctl.lab.control import LabInfo

DEFAULT_LAB_DIR = "/tmp/mm2ctl-peer-bench-lab"
#: 10 topics x 5 partitions, as ``inspect_scale.LoadSpec`` lays them out.
PARTITIONS_PER_TOPIC = 5
SMALL_GROUPS = {"5k": 100, "50k": 1_000}
#: Offset syncs per source partition at 5k and 50k (the 1 M load has 10,000).
SMALL_SYNCS_PER_PARTITION = 1_000
#: The targets: mm2ctl's median over the other tool's, at most, for a first run (False) or a repeat run (True).
TARGETS = {
    ("5k", "stock", True): 2.0,
    ("5k", "aiven", True): 2.0,
    ("50k", "aiven", True): 2.0,
    ("1m", "aiven", True): 1.0,
    ("1m", "aiven", False): 1.5,
}
#: The issue's target for a warm inspection at 5 k, in a live session (seconds).
WARM_TARGET_S = 1.0
#: Warm runs at least: the JVM's compiler is still speeding the first few up.
WARM_RUNS = 6


@dataclass
class ToolRuns:
    seconds: list[float] = field(default_factory=list)
    rows: list[int] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    timeouts: int = 0

    @property
    def median(self) -> float | None:
        return round(statistics.median(self.seconds), 2) if self.seconds else None


def _rows_in(path: Path) -> int:
    """Data lines of a CSV file with a header (neither tool quotes a line break into a field here)."""
    if not path.exists():
        return 0
    with path.open("rb") as fh:
        return max(0, sum(1 for line in fh if line.strip()) - 1)


def _run(argv: list[str], *, timeout_s: float, log: Path, env: dict[str, str] | None = None) -> tuple[float, int]:
    """Run ``argv`` in a process group of its own; (seconds, exit code), or (seconds, -1) when it was killed at
    the timeout, with everything it started."""
    with log.open("ab") as out:
        out.write(f"$ {' '.join(argv)}\n".encode())
        out.flush()
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=out, stderr=out, env=env, start_new_session=True)
        try:
            code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = -1
        seconds = time.monotonic() - t0
        out.write(f"exit {code} after {seconds:.2f}s\n".encode())
    return seconds, code


@dataclass(frozen=True)
class Bench:
    info: LabInfo
    mm2_file: Path
    work: Path
    aiven_launcher: str | None
    aiven_timeout_s: float

    new_syncs: int = 200

    def mm2ctl(self, first: ToolRuns, repeat: ToolRuns, engine: str = "auto") -> None:
        """A first run without saved state, then new offset syncs, then a repeat run from the saved state;
        ``--engine engine``."""
        state = self.work / f"inspect-state-{engine}"
        shutil.rmtree(state, ignore_errors=True)
        self._mm2ctl(first, state, f"mm2ctl inspect --engine {engine}, first run", engine)
        if self.new_syncs:
            SyncTrickle(self.mm2_file, tail=20 * self.new_syncs).write(self.new_syncs)
        self._mm2ctl(repeat, state, f"mm2ctl inspect --engine {engine}, repeat run", engine)

    def _mm2ctl(self, runs: ToolRuns, state: Path, what: str, engine: str) -> None:
        out = self.work / "mm2ctl.csv"
        out.unlink(missing_ok=True)
        env = {**os.environ, "MM2CTL_STATE_DIR": str(self.work / "mm2ctl-state"), "MM2CTL_INSPECT_CACHE": str(state)}
        env.pop("MM2CTL_CONNECT_URL", None)
        argv = [str(Path(sys.executable).with_name("mm2ctl")), "inspect", "--mm2-config", str(self.mm2_file)]
        argv += ["--engine", engine]
        seconds, code = _run(
            [*argv, "--format", "csv", "--output", str(out)], timeout_s=7200, log=self.work / "mm2ctl.log", env=env
        )
        if code not in (0, 10):  # 10: problem rows, which the load plants
            raise SystemExit(f"mm2ctl inspect exited {code} (log {self.work / 'mm2ctl.log'})")
        self._record(runs, seconds, code, _rows_in(out), what)

    def aiven(self, runs: ToolRuns) -> None:
        assert self.aiven_launcher is not None
        out = self.work / "aiven.csv"
        out.unlink(missing_ok=True)
        argv = [self.aiven_launcher, "--mm2-config", str(self.mm2_file), "--include-inactive-groups"]
        argv += ["--include-ok-groups", "--output-path", str(out)]
        seconds, code = _run(argv, timeout_s=self.aiven_timeout_s, log=self.work / "aiven.log")
        if code == -1:
            runs.timeouts += 1
            say(f"Aiven's inspector: killed after {self.aiven_timeout_s:.0f}s (log {self.work / 'aiven.log'})")
            return
        self._record(runs, seconds, code, _rows_in(out), "Aiven's inspector")

    def stock(self, runs: ToolRuns) -> None:
        total, rows, codes = 0.0, 0, []
        for cluster in (self.info.source, self.info.target):
            out = self.work / "stock.txt"
            argv = stock_command(
                self.info.kafka_version, ["--bootstrap-server", cluster.bootstrap, "--describe", "--all-groups"]
            )
            with out.open("wb") as fh:
                t0 = time.monotonic()
                proc = subprocess.run(argv, stdout=fh, stderr=subprocess.PIPE, timeout=600, check=False)
                total += time.monotonic() - t0
            codes.append(proc.returncode)
            # One line per group partition, under a header line per group.
            rows += sum(1 for line in out.read_text().splitlines() if line.startswith("iso-bench-"))
        self._record(runs, total, max(codes), rows, "kafka-consumer-groups --describe --all-groups, both clusters")

    @staticmethod
    def _record(runs: ToolRuns, seconds: float, code: int, rows: int, what: str) -> None:
        runs.seconds.append(round(seconds, 2))
        runs.rows.append(rows)
        runs.exit_codes.append(code)
        say(f"{what}: {seconds:.1f}s, {rows:,} rows, exit {code}")


def measure_size(bench: Bench, size: str, runs: int, with_stock: bool, spark_engine: bool) -> dict[str, Any]:
    results = {name: ToolRuns() for name in ("mm2ctl", "mm2ctl_repeat")}
    tools: dict[str, Callable[[], None]] = {"mm2ctl": lambda: bench.mm2ctl(results["mm2ctl"], results["mm2ctl_repeat"])}
    if spark_engine:  # the same inspection forced onto Spark (--engine spark): what a small one cost before
        results["mm2ctl_spark"], results["mm2ctl_spark_repeat"] = ToolRuns(), ToolRuns()
        tools["mm2ctl_spark"] = lambda: bench.mm2ctl(
            results["mm2ctl_spark"], results["mm2ctl_spark_repeat"], engine="spark"
        )
    if bench.aiven_launcher:
        results["aiven"] = ToolRuns()
        tools["aiven"] = lambda: bench.aiven(results["aiven"])
    if with_stock:
        results["stock"] = ToolRuns()
        tools["stock"] = lambda: bench.stock(results["stock"])
    names = list(tools)
    say(f"{size}: {runs} round(s) of {', '.join(names)}; load average {loadavg()}")
    for r in range(runs):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            tools[name]()
    figures: dict[str, Any] = {name: {**asdict(res), "median": res.median} for name, res in results.items()}
    for mine_name in [n for n in results if n.startswith("mm2ctl")]:
        mine = results[mine_name].median
        for other in ("aiven", "stock"):
            theirs = results[other].median if other in results else None
            if mine is None or not theirs:
                continue
            ratio = round(mine / theirs, 2)
            figures[f"{mine_name}_over_{other}"] = ratio
            target = TARGETS.get((size, other, mine_name == "mm2ctl_repeat")) if "spark" not in mine_name else None
            if target is not None:
                figures[f"target_{mine_name}_over_{other}"] = target
                figures[f"pass_{mine_name}_over_{other}"] = ratio <= target
    if size == "5k":
        figures["warm"] = warm(bench, max(runs, WARM_RUNS))
    figures["loadavg_end"] = loadavg()
    return figures


def warm(bench: Bench, runs: int) -> dict[str, Any]:
    """``bench/inspect_warm.py``: the inspection ``runs`` more times in one live session after its first."""
    argv = [sys.executable, str(Path(__file__).with_name("inspect_warm.py")), "--mm2-config", str(bench.mm2_file)]
    proc = subprocess.run([*argv, "--runs", str(runs), "--json"], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"bench/inspect_warm.py exited {proc.returncode}: {proc.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout)
    figures["target"] = WARM_TARGET_S
    figures["pass"] = figures["warm_median"] <= WARM_TARGET_S
    say(f"mm2ctl inspect warm, in one live session: median {figures['warm_median']:.2f}s of {figures['warm_seconds']}")
    return figures


def _small_spec(groups: int, syncs_per_partition: int) -> LoadSpec:
    return LoadSpec(
        topics=10, partitions_per_topic=PARTITIONS_PER_TOPIC, syncs_per_partition=syncs_per_partition, groups=groups
    )


def grow(info: LabInfo, spec: LoadSpec) -> None:
    """Commit the groups of ``spec`` on both clusters and their checkpoints, over a smaller load of the same
    topics: the groups already there get the same offsets again, and a second, equal checkpoint."""
    pair = load_mm2_config(Path(info.dir) / MM2_FILE).pair(PAIR)
    remote_prefix = pair.remote_topic("")
    commit_group_offsets(info.source.bootstrap, spec, None)
    commit_group_offsets(info.target.bootstrap, spec, remote_prefix)
    load_checkpoints(info.target.bootstrap, pair.checkpoints_topic, spec, remote_prefix)
    _record_load(info, spec)


def _record_load(info: LabInfo, spec: LoadSpec) -> None:
    """What the lab holds, where ``inspect_scale.py --skip-load`` reads it (for a lab kept with --keep-lab)."""
    (Path(info.dir) / LOAD_FILE).write_text(json.dumps({"spec": asdict(spec), "figures": {}}) + "\n")


def small_sizes(args: argparse.Namespace, sizes: list[str], work: Path) -> dict[str, Any]:
    """5 k, then 50 k, in a lab of their own."""
    figures: dict[str, Any] = {}
    info, started = open_lab(argparse.Namespace(reuse_lab=None, lab_dir=args.lab_dir, kafka_version=None))
    try:
        mm2_file = Path(info.dir) / MM2_FILE
        write_mm2_properties(mm2_file, info)
        pair = load_mm2_config(mm2_file).pair(PAIR)
        first = sizes[0]
        spec = _small_spec(SMALL_GROUPS[first], args.syncs_per_partition)
        say(f"loading {spec.total_syncs:,} offset syncs and {spec.group_partitions:,} group partitions")
        figures["load"] = load(info, spec, pair)
        _record_load(info, spec)
        bench = Bench(info, mm2_file, work, args.aiven_launcher, args.aiven_timeout, args.new_syncs)
        for size in sizes:
            if SMALL_GROUPS[size] != spec.groups:
                spec = _small_spec(SMALL_GROUPS[size], args.syncs_per_partition)
                say(f"growing the load to {spec.group_partitions:,} group partitions")
                grow(info, spec)
            figures[size] = {
                "spec": asdict(spec),
                "group_partitions": spec.group_partitions,
                "offset_syncs": spec.total_syncs,
                **measure_size(bench, size, args.runs, with_stock=size == "5k", spark_engine=args.spark_engine),
            }
    finally:
        if started is not None and not args.keep_lab:
            say(f"stopping the lab in {started}")
            lab_control.down(started)
    return figures


def million(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """1 M, on the lab ``inspect_scale.py`` loaded and kept (``--reuse-lab``)."""
    info, _ = open_lab(argparse.Namespace(reuse_lab=args.reuse_lab, lab_dir=None, kafka_version=None))
    loaded = json.loads((Path(info.dir) / LOAD_FILE).read_text())
    spec = LoadSpec(**loaded["spec"])
    bench = Bench(info, Path(info.dir) / MM2_FILE, work, args.aiven_launcher, args.aiven_timeout, args.new_syncs)
    return {
        "spec": loaded["spec"],
        "group_partitions": spec.group_partitions,
        "offset_syncs": spec.total_syncs,
        **measure_size(bench, "1m", args.runs, with_stock=False, spark_engine=args.spark_engine),
    }


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/peer_inspect.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--aiven-launcher", metavar="PATH", help="Aiven's inspector's launcher (built outside)")
    parser.add_argument("--aiven-timeout", type=float, default=600.0, metavar="S", help="kill it after S (600)")
    parser.add_argument("--sizes", default=None, help="of 5k,50k,1m (default 5k,50k, and 1m with --reuse-lab)")
    parser.add_argument("--runs", type=int, default=3, help="rounds per size; medians are reported (3)")
    parser.add_argument(
        "--new-syncs", type=int, default=200, help="offset syncs written between mm2ctl's first and repeat run (200)"
    )
    parser.add_argument("--lab-dir", default=DEFAULT_LAB_DIR, help=f"the 5k/50k lab's folder ({DEFAULT_LAB_DIR})")
    parser.add_argument("--keep-lab", action="store_true", help="leave the 5k/50k lab running")
    parser.add_argument("--reuse-lab", metavar="DIR", help="the lab inspect_scale.py loaded (--keep-lab), for 1m")
    parser.add_argument(
        "--syncs-per-partition", type=int, default=SMALL_SYNCS_PER_PARTITION, help="in the 5k/50k load (1,000)"
    )
    parser.add_argument(
        "--spark-engine", action="store_true", help="also run mm2ctl with --engine spark, alternated with the others"
    )
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    args = parser.parse_args(argv)
    sizes = args.sizes.split(",") if args.sizes else ["5k", "50k", *(["1m"] if args.reuse_lab else [])]
    if unknown := [s for s in sizes if s not in ("5k", "50k", "1m")]:
        parser.error(f"unknown size(s) {unknown}: choose of 5k,50k,1m")
    if "1m" in sizes and not args.reuse_lab:
        parser.error("1m needs --reuse-lab DIR: the lab bench/inspect_scale.py --keep-lab loaded")
    if args.aiven_launcher and not os.access(args.aiven_launcher, os.X_OK):
        parser.error(f"{args.aiven_launcher} is not an executable launcher")
    args.sizes = [s for s in ("5k", "50k", "1m") if s in sizes]
    return args


def _report(fig: dict[str, Any]) -> list[str]:
    names = {"mm2ctl": "mm2ctl inspect (cold)", "aiven": "Aiven's inspector", "stock": "kafka-consumer-groups x2"}
    lines = [f"mm2ctl inspect beside its peers, pair {PAIR}, {os.cpu_count()} cores; load average at start "
             f"{fig['loadavg_start']}"]  # fmt: skip
    for size in fig["sizes"]:
        s = fig[size]
        lines.append(f"  {size}: {s['group_partitions']:,} group partitions, {s['offset_syncs']:,} offset syncs")
        for tool, label in names.items():
            if tool in s:
                t = s[tool]
                timeouts = f", {t['timeouts']} timed out" if t["timeouts"] else ""
                median = "n/a" if t["median"] is None else f"{t['median']:.1f} s"
                lines.append(
                    f"    {label:<28} median {median:>8}   runs {t['seconds']}   rows {sorted(set(t['rows']))}"
                    f"{timeouts}"
                )
        if "warm" in s:
            w = s["warm"]
            verdict = "PASS" if w["pass"] else "FAIL"
            label = "mm2ctl inspect (warm session)"
            lines.append(
                f"    {label:<28} median {w['warm_median']:>6.1f} s   runs {w['warm_seconds']}"
                f"   target <= {w['target']:g} s: {verdict}"
            )
        for other in ("aiven", "stock"):
            if f"mm2ctl_over_{other}" in s:
                verdict = ""
                if f"target_mm2ctl_over_{other}" in s:
                    ok = "PASS" if s[f"pass_mm2ctl_over_{other}"] else "FAIL"
                    verdict = f"   target <= {s[f'target_mm2ctl_over_{other}']:g}: {ok}"
                ratio = f"mm2ctl / {names[other]}"
                lines.append(f"    {ratio:<35} {s[f'mm2ctl_over_{other}']:>6.2f} x{verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    figures: dict[str, Any] = {"loadavg_start": loadavg(), "sizes": args.sizes}
    work = Path(tempfile.mkdtemp(prefix="mm2ctl-peer-bench-"))
    say(f"outputs and logs in {work}")
    try:
        small = [s for s in args.sizes if s in SMALL_GROUPS]
        if small:
            figures.update(small_sizes(args, small, work))
        if "1m" in args.sizes:
            figures["1m"] = million(args, work)
    finally:
        for output in work.glob("*.csv"):  # a million rows each; the logs stay
            output.unlink()
    figures["logs"] = str(work)
    print_figures(figures, args.json, _report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
