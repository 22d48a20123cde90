"""The first ``mm2ctl inspect`` on a machine with only Java and the wheel, and the one after it.

Run it as ``.venv/bin/python bench/inspect_first_run.py [--rounds N] [--reuse-lab DIR] [--json]``.
Each round gives ``inspect`` an empty mm2ctl cache and a JVM home without ``~/.m2`` (``-Duser.home``), with
``mvn`` left off ``PATH``: the first run has Spark resolve its Kafka source from Maven Central into the cache's
Ivy home (and writes the class archive); the second run of the round starts from that cache with the JVM's
network shut (an HTTP(S) proxy on a closed port), as an offline machine would. Both inspect one group on the
lab. It prints each round's two times and their medians, and the time of the Ivy resolution alone as the
first run's log reports it (``resolve … ms``).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from bench_lab import loadavg, open_lab, print_figures, say
from confluent_kafka import Consumer, TopicPartition

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_control

_RESOLVE = re.compile(r"resolution report :: resolve (\d+)ms :: artifacts dl (\d+)ms")


def _path_without_mvn(folder: Path) -> str:
    folder.mkdir(parents=True)
    for directory in os.environ["PATH"].split(os.pathsep):
        if os.path.isdir(directory):
            for entry in os.scandir(directory):
                link = folder / entry.name
                if entry.name != "mvn" and not link.exists() and os.access(entry.path, os.X_OK):
                    link.symlink_to(entry.path)
    return str(folder)


def _environment(work: Path, path: str, *, network: bool) -> dict[str, str]:
    options = [f"-Duser.home={work / 'home'}"]
    if not network:
        options += [f"-D{s}.proxy{k}={v}" for s in ("http", "https") for k, v in (("Host", "127.0.0.1"), ("Port", "9"))]
    env = {k: v for k, v in os.environ.items() if k not in ("MM2CTL_CACHE", "JAVA_TOOL_OPTIONS")}
    env.update(
        {
            "PATH": path,
            "MM2CTL_CACHE": str(work / "cache"),
            "MM2CTL_STATE_DIR": str(work / "state"),
            "JAVA_TOOL_OPTIONS": " ".join(options),
        }
    )
    return env


def _inspect(mm2_config: str, group: str, env: dict[str, str]) -> float:
    mm2ctl = str(Path(sys.executable).with_name("mm2ctl"))
    started = time.monotonic()
    proc = subprocess.run(
        [mm2ctl, "inspect", "--mm2-config", mm2_config, "--groups", group, "--format", "json", "--quiet"],
        capture_output=True, text=True, timeout=900, env=env, check=False,
    )  # fmt: skip
    seconds = time.monotonic() - started
    if proc.returncode not in (0, 10) or group not in proc.stdout:
        raise SystemExit(f"inspect exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return seconds


def _one_group(bootstrap: str) -> str:
    topic, group = f"first-run-{uuid.uuid4().hex[:8]}", f"first-run-group-{uuid.uuid4().hex[:8]}"
    KafkaAdmin.connect({"bootstrap.servers": bootstrap}).create_topics({topic: 1})
    records.produce({"bootstrap.servers": bootstrap}, topic, [(None, b"x", 0)] * 20)
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 10)], asynchronous=False)
    finally:
        consumer.close()
    return group


def measure(mm2_config: str, bootstrap: str, rounds: int) -> dict[str, Any]:
    import pyspark

    group = _one_group(bootstrap)
    first: list[float] = []
    second: list[float] = []
    resolve_ms: list[int] = []
    for round_ in range(rounds):
        with tempfile.TemporaryDirectory(prefix="mm2ctl-first-run-") as folder:
            work = Path(folder)
            (work / "home").mkdir()
            path = _path_without_mvn(work / "bin")
            first.append(_inspect(mm2_config, group, _environment(work, path, network=True)))
            log = next((work / "state" / "logs").glob("inspect-*.log")).read_text(errors="replace")
            if found := _RESOLVE.search(log):
                resolve_ms.append(int(found[1]) + int(found[2]))
            second.append(_inspect(mm2_config, group, _environment(work, path, network=False)))
        say(f"round {round_ + 1}: first {first[-1]:.1f}s, second (offline) {second[-1]:.1f}s; load {loadavg()}")
    return {
        "pyspark": pyspark.__version__,
        "rounds": rounds,
        "first_seconds": [round(s, 1) for s in first],
        "second_seconds": [round(s, 1) for s in second],
        "first_median_seconds": round(statistics.median(first), 1),
        "second_median_seconds": round(statistics.median(second), 1),
        "first_resolution_ms": resolve_ms,
        "loadavg_after": loadavg(),
    }


def _report(figures: dict[str, Any]) -> list[str]:
    return [
        f"pyspark {figures['pyspark']}, {figures['rounds']} round(s), each with an empty cache and no ~/.m2:",
        f"  first inspect (Spark resolves its Kafka source, the class archive is written): "
        f"median {figures['first_median_seconds']}s {figures['first_seconds']}",
        f"  second inspect (offline, from the cache): median {figures['second_median_seconds']}s "
        f"{figures['second_seconds']}",
        f"  Ivy's resolution and download in the first run: {figures['first_resolution_ms']} ms",
        f"  load average after: {figures['loadavg_after']}",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reuse-lab", help="a running lab's folder")
    parser.add_argument("--lab-dir", default="/tmp/mm2ctl-bench-first-run")
    parser.add_argument("--kafka-version")
    parser.add_argument("--keep-lab", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    info, started = open_lab(args)
    try:
        figures = measure(info.mm2_config, info.source.bootstrap, args.rounds)
    finally:
        if started is not None and not args.keep_lab:
            lab_control.down(started)
    print_figures(figures, args.json, _report)


if __name__ == "__main__":
    main()
