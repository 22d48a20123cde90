"""What seeing every group type costs: ``core.kafka.group_admin`` (the Java AdminClient on a JVM of its own per batch of
calls) beside librdkafka's listing, which sees only classic and consumer groups.

Run it as ``.venv/bin/python bench/group_types.py [--reuse-lab DIR | --lab-dir DIR] [--share-groups N]
[--rounds R] [--json]``. It makes ``N`` share groups on the lab's source (each a real share consumer that
accepts part of a topic), then runs, alternately, ``R`` times each:

* ``librdkafka``: ``KafkaAdmin.list_groups`` (in this process; the share groups are not in its answer);
* ``jvm-list``: ``GroupAdmin.list_groups``: a JVM started, the listing, the JVM gone;
* ``jvm-read``: one JVM run of the listing, the share groups described and their start offsets and lags read;
* ``jvm-bare``: ``java -version`` with the same options, the floor of any JVM run.

It prints the medians of wall time with the load average.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable
from typing import Any

from bench_lab import loadavg, open_lab, print_figures, say

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GroupAdmin
from mm2ctl.lab import control as lab_control
from mm2ctl.lab.share_consumer import accept_prefix, read_from_earliest


def _share_groups(conf: dict[str, str], count: int) -> list[str]:
    topic = f"bench-share-{int(time.time())}"
    KafkaAdmin.connect(conf).create_topics({topic: 2})
    records.produce(conf, topic, [(b"k", b"v" * 50, p) for p in (0, 1) for _ in range(100)])
    groups = [f"{topic}-g{i}" for i in range(count)]
    for i, g in enumerate(groups):
        read_from_earliest(conf, g)
        accept_prefix(conf, g, topic, {0: 10 + i % 50, 1: 5})
        say(f"share group {i + 1}/{count}")
    return groups


def _timed(fn: Callable[[], Any]) -> float:
    started = time.monotonic()
    fn()
    return time.monotonic() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reuse-lab")
    ap.add_argument("--lab-dir", default="/tmp/mm2ctl-bench-group-types")
    ap.add_argument("--kafka-version")
    ap.add_argument("--share-groups", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--keep-lab", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    info, started = open_lab(args)
    try:
        conf = {"bootstrap.servers": info.source.bootstrap}
        groups = _share_groups(conf, args.share_groups)
        rdk, jvm = KafkaAdmin.connect(conf), GroupAdmin(conf, "primary")
        share = dict.fromkeys(groups, "share")

        def read() -> None:
            rows = jvm._run([("list",), ("describe-share", *groups), ("share-offsets", *groups)])
            assert sum(r[0] == "offset" for r in rows) == 2 * len(groups)

        ways: dict[str, Callable[[], Any]] = {
            "librdkafka": rdk.list_groups,
            "jvm-list": jvm.list_groups,
            "jvm-read": read,
            "jvm-bare": lambda: subprocess.run(["java", "-XX:TieredStopAtLevel=1", "-version"], capture_output=True),
        }
        assert set(share) <= {g.group for g in jvm.list_groups()}
        times: dict[str, list[float]] = {w: [] for w in ways}
        for r in range(args.rounds):
            for w, fn in ways.items():
                times[w].append(_timed(fn))
            say(f"round {r + 1}/{args.rounds}")
        figures = {
            "share_groups": len(groups),
            "rounds": args.rounds,
            "median_s": {w: round(statistics.median(t), 3) for w, t in times.items()},
            "loadavg": loadavg(),
        }
    finally:
        if started is not None and not args.keep_lab:
            lab_control.down(started)

    def report(f: dict[str, Any]) -> list[str]:
        lines = [f"{f['share_groups']} share groups, {f['rounds']} alternated rounds, load {f['loadavg']}"]
        lines += [f"  {w:<11} {s:6.3f} s (median)" for w, s in f["median_s"].items()]
        return lines

    print_figures(figures, args.json, report)


if __name__ == "__main__":
    main()
