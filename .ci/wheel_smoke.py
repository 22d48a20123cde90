"""CI's check of the built wheel, run by the Python of a clean virtualenv that has only that wheel installed.

From a folder outside the clone (so nothing resolves from the source folders): ``mm2ctl --help``,
``mm2ctl version``, then ``lab up`` -> a group commits on a mirrored topic -> ``inspect --format csv`` ->
``lab down``. Exits non-zero, with the reason, on the first thing that is not as a user would expect.

    python .ci/wheel_smoke.py LAB_DIR
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

MM2CTL = str(Path(sys.executable).with_name("mm2ctl"))


def run(*args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    print(f"$ mm2ctl {' '.join(args)}", flush=True)
    proc = subprocess.run([MM2CTL, *args], capture_output=True, text=True, timeout=600)
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


def main(lab_dir: str) -> None:
    site = Path(__import__("mm2ctl").__file__).resolve()
    if "site-packages" not in site.parts:
        sys.exit(f"mm2ctl was imported from {site}, not from the installed wheel")
    if "Usage" not in run("--help").stdout:
        sys.exit("mm2ctl --help printed no usage")
    print(run("version").stdout.strip())
    run("lab", "up", "--dir", lab_dir, "--json")
    try:
        info = json.loads(Path(lab_dir, "lab.json").read_text())
        suffix = uuid.uuid4().hex[:8]
        topic, group = f"smoke-{suffix}", f"smoke-group-{suffix}"
        commit_a_group(info["clusters"]["primary"]["bootstrap"], topic, group)
        out = Path(lab_dir, "rows.csv")
        run(
            "inspect",
            "--mm2-config",
            info["mm2_config"],
            "--groups",
            group,
            "--format",
            "csv",
            "--output",
            str(out),
            "--quiet",
            ok=(0, 10),
        )
        with out.open(newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        if not any(r.get("group") == group for r in rows):
            sys.exit(f"inspect wrote no row for {group}: {rows[:3]}")
        print(f"inspect: {len(rows)} row(s) for {group}: {sorted({r['status'] for r in rows})}")
    finally:
        run("lab", "down", "--dir", lab_dir)


if __name__ == "__main__":
    main(sys.argv[1])
