"""CI's check of the built wheel, run by the Python of a clean virtualenv that has only that wheel installed.

From a folder outside the clone (so nothing resolves from the source folders): ``mm2ctl --help``,
``mm2ctl version``, then ``lab up`` -> a group commits on a mirrored topic -> ``inspect --format csv`` ->
``lab down``. Exits non-zero, with the reason, on the first thing that is not as a user would expect.

``inspect`` runs as on a machine that has only Java and the wheel: ``mvn`` is off ``PATH``, mm2ctl's cache is
empty, and the JVM's home has no ``~/.m2`` (``-Duser.home``), so Spark resolves its Kafka source from Maven
Central itself. It runs on Spark (``--engine spark``: the lab is small enough for the driver engine) three times:
  1. with the JVM's network shut (an HTTP(S) proxy on a closed port) and nothing cached: it must fail, with
     one error line and Ivy's "unresolved dependency" in its log (the shut network is real);
  2. with the network: it resolves the package into the cache, and writes the rows;
  3. with the network shut again: the cache alone serves it, and it writes the same rows.
Then once as a user runs it (the default engine, on the driver), with the network shut and another empty
cache: it needs nothing from the network, writes the same rows, and resolves no Spark package.
The times of 2, 3 and the last are printed.

    python .ci/wheel_smoke.py LAB_DIR
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

MM2CTL = str(Path(sys.executable).with_name("mm2ctl"))


def run(*args: str, ok: tuple[int, ...] = (0,), env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    print(f"$ mm2ctl {' '.join(args)}", flush=True)
    proc = subprocess.run([MM2CTL, *args], capture_output=True, text=True, timeout=900, env=env)
    if proc.returncode not in ok:
        sys.exit(f"mm2ctl {args[0]} exited {proc.returncode}:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc


def commit_a_group(bootstrap: str, topic: str, group: str) -> None:
    """20 records on ``topic``, and ``group`` committed at 10 with no member left: a stopped consumer."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=1)]).values():
        future.result(timeout=30)
    failed: list[str] = []
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(20):
        producer.produce(
            topic,
            key=str(i).encode(),
            value=f"smoke {i}".encode(),
            on_delivery=lambda e, _m: e and failed.append(str(e)),
        )
    if producer.flush(30) or failed:
        sys.exit(f"the smoke records were not all delivered: {failed[:1]}")
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 10)], asynchronous=False)
    finally:
        consumer.close()


def path_without_mvn(folder: Path) -> str:
    """A ``PATH`` of one folder that links every command of this ``PATH`` but ``mvn``."""
    folder.mkdir(parents=True)
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for entry in os.scandir(directory):
            link = folder / entry.name
            if entry.name != "mvn" and not link.exists() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    if shutil.which("mvn", path=str(folder)) is not None:
        sys.exit("mvn is still on the PATH made without it")
    return str(folder)


def java_only_environment(work: Path, *, network: bool, engine: str = "spark", cache: str = "cache") -> dict[str, str]:
    """What a machine with only Java and the wheel gives ``inspect``: no ``mvn``, an empty mm2ctl cache (the folder
    ``cache`` under ``work``), a JVM home without ``~/.m2``; without ``network``, the JVM's HTTP(S) goes to a closed
    port (Ivy's downloads). ``engine``: ``MM2CTL_ENGINE``."""
    options = [f"-Duser.home={work / 'home'}"]
    if not network:
        options += [
            f"-D{scheme}.proxy{key}={value}"
            for scheme in ("http", "https")
            for key, value in (("Host", "127.0.0.1"), ("Port", "9"))
        ]
    env = {k: v for k, v in os.environ.items() if k not in ("MM2CTL_CACHE", "JAVA_TOOL_OPTIONS")}
    env.update(
        {
            "PATH": str(work / "bin"),
            "MM2CTL_CACHE": str(work / cache),
            "MM2CTL_ENGINE": engine,
            "MM2CTL_STATE_DIR": str(work / "state"),
            "JAVA_TOOL_OPTIONS": " ".join(options),
        }
    )
    return env


def inspect_rows(mm2_config: str, group: str, out: Path, env: dict[str, str]) -> tuple[list[dict[str, str]], float]:
    started = time.monotonic()
    run(
        "inspect", "--mm2-config", mm2_config, "--groups", group, "--format", "csv", "--output", str(out), "--quiet",
        ok=(0, 10), env=env,
    )  # fmt: skip
    seconds = time.monotonic() - started
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    if not any(r.get("group") == group for r in rows):
        sys.exit(f"inspect wrote no row for {group}: {rows[:3]}")
    return rows, seconds


def main(lab_dir: str) -> None:
    site = Path(__import__("mm2ctl").__file__).resolve()
    if "site-packages" not in site.parts:
        sys.exit(f"mm2ctl was imported from {site}, not from the installed wheel")
    if "Usage" not in run("--help").stdout:
        sys.exit("mm2ctl --help printed no usage")
    print(run("version").stdout.strip())
    run("lab", "up", "--dir", lab_dir, "--json")
    work = Path(tempfile.mkdtemp(prefix="mm2ctl-java-only-"))
    try:
        info = json.loads(Path(lab_dir, "lab.json").read_text())
        suffix = uuid.uuid4().hex[:8]
        topic, group = f"smoke-{suffix}", f"smoke-group-{suffix}"
        commit_a_group(info["clusters"]["primary"]["bootstrap"], topic, group)
        path_without_mvn(work / "bin")
        (work / "home").mkdir()

        shut = run(
            "inspect", "--mm2-config", info["mm2_config"], "--groups", group, "--format", "csv", "--quiet",
            ok=(1,), env=java_only_environment(work, network=False),
        )  # fmt: skip
        errors = [line for line in shut.stderr.splitlines() if line.startswith("mm2ctl: error:")]
        logs = list((work / "state" / "logs").glob("inspect-*.log"))
        if len(errors) != 1 or len(logs) != 1 or "unresolved dependency" not in logs[0].read_text(errors="replace"):
            sys.exit(f"inspect with the network shut and nothing cached did not fail on the resolution:\n{shut.stderr}")

        first, first_s = inspect_rows(
            info["mm2_config"], group, work / "first.csv", java_only_environment(work, network=True)
        )
        again, again_s = inspect_rows(
            info["mm2_config"], group, work / "again.csv", java_only_environment(work, network=False)
        )
        if [r["status"] for r in again if r["group"] == group] != [r["status"] for r in first if r["group"] == group]:
            sys.exit(f"the offline inspect's rows differ from the first's: {again} != {first}")
        print(f"inspect: {len(first)} row(s) for {group}: {sorted({r['status'] for r in first})}")
        print(
            f"inspect with only Java and the wheel: first (empty cache) {first_s:.1f}s, next (offline) {again_s:.1f}s"
        )
        driver_env = java_only_environment(work, network=False, engine="auto", cache="driver-cache")
        on_driver, driver_s = inspect_rows(info["mm2_config"], group, work / "driver.csv", driver_env)
        if [r["status"] for r in on_driver if r["group"] == group] != [
            r["status"] for r in first if r["group"] == group
        ]:
            sys.exit(f"the driver engine's rows differ from Spark's: {on_driver} != {first}")
        if (work / "driver-cache" / "ivy").exists():
            sys.exit("the driver engine resolved Spark's Kafka source: it should need no Spark")
        print(f"inspect on the driver engine, offline with an empty cache: {driver_s:.1f}s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
        run("lab", "down", "--dir", lab_dir)


if __name__ == "__main__":
    main(sys.argv[1])
