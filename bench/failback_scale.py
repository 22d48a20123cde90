"""Benchmark ``mm2ctl plan failback`` + ``apply`` at 100 groups x 10 partitions.

Run it as ``.venv/bin/python bench/failback_scale.py [--groups 100] [--partitions 10] [--json]`` (see
bench/README.md).

It starts a lab (or reuses one) and creates an isolated MM2 flow ``<name>src-><name>dst`` (``lab_control.add_flow``,
the source connector only, offset syncs on the target) mirroring one topic of ``--partitions`` partitions,
filled with single-record transactions (a commit marker after every record, so the source's offsets advance
by two per record and the target's by one). Once MM2 copied everything, the flow is stopped, the groups
commit on the source, and ``plan failover`` + ``apply`` move them to the target (not timed). Then each group
"consumes more" on the target: its offsets move forward there (admin API). Timed, as a user runs them, as
subprocesses: ``plan failback`` and ``apply --auto-approve``. Every group partition is then read back on the
source and checked by content: the record at the written offset is the record at the group's offset on the
target (or both are at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from bench_lab import loadavg, open_lab, say
from confluent_kafka import Producer

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.polling import poll_until
from mm2ctl.lab import control as lab_control

DEFAULT_LAB_DIR = "/tmp/mm2ctl-failback-bench-lab"


def _cli(state: Path, *args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    env = {**os.environ, "MM2CTL_STATE_DIR": str(state)}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "mm2ctl", *args], capture_output=True, text=True, env=env)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"mm2ctl {' '.join(args[:2])} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return seconds, proc


def _values(conf: dict[str, str], topic: str, partitions: int) -> dict[int, dict[int, bytes | None]]:
    """offset -> value of every record, per partition (the end offset maps to None)."""
    out: dict[int, dict[int, bytes | None]] = {p: {} for p in range(partitions)}
    for r in records.read_partitions(conf, topic, list(range(partitions))):
        out[r.partition][r.offset] = r.value
    return out


def _next_value(log: dict[int, bytes | None], offset: int) -> bytes | None:
    return next((log[o] for o in sorted(log) if o >= offset), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=10)
    parser.add_argument("--records", type=int, default=2_000, help="records per partition")
    parser.add_argument("--lab-dir", default=DEFAULT_LAB_DIR)
    parser.add_argument("--reuse-lab")
    parser.add_argument("--keep-lab", action="store_true")
    parser.add_argument("--kafka-version")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    info, started = open_lab(args)
    state = Path(tempfile.mkdtemp(prefix="mm2ctl-failback-bench-"))
    load_start = loadavg()
    try:
        name = "fbb" + uuid.uuid4().hex[:6]
        flow = lab_control.add_flow(info, name, roles=("source",), offset_syncs_location="target")
        pair = f"{flow.source_alias}->{flow.target_alias}"
        topic, remote = f"iso-{name}-t", f"{flow.source_alias}.iso-{name}-t"
        src, dst = {"bootstrap.servers": info.source.bootstrap}, {"bootstrap.servers": info.target.bootstrap}
        a, b = KafkaAdmin.connect(src), KafkaAdmin.connect(dst)
        a.create_topics({topic: args.partitions})
        say(f"producing {args.records} single-record transactions to each of {args.partitions} partitions")
        producer = Producer({**src, "transactional.id": f"bench-{name}", "linger.ms": 5})
        producer.init_transactions()
        for i in range(args.records):
            producer.begin_transaction()
            for p in range(args.partitions):
                producer.produce(topic, key=b"k%d" % i, value=b"%s p%d #%d" % (name.encode(), p, i), partition=p)
            producer.commit_transaction()
        tps = [(remote, p) for p in range(args.partitions)]

        def copied() -> bool:
            got = b.partition_bounds(tps)
            return all(x.error is None and (x.latest or 0) >= args.records for x in got.values())

        say("waiting for MM2 to copy everything")
        if not poll_until(copied, timeout_s=600, interval_s=1.0):
            raise SystemExit("MM2 did not copy the topic within 600 s")
        with build_connect_client([info.connect_url]) as connect:
            for connector in flow.connectors.values():
                connect.stop(connector)
        groups = [f"iso-{name}-g{g:04d}" for g in range(args.groups)]
        for g_index, group in enumerate(groups):
            offsets = {(topic, p): 2 * ((37 * g_index + 101 * p) % args.records) for p in range(args.partitions)}
            a.alter_group_offsets({group: offsets})
        say(f"plan failover + apply of {args.groups} groups x {args.partitions} partitions (not timed)")
        _cli(state, "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "-o", str(state / "fo.yaml"))
        _cli(state, "apply", "--auto-approve", str(state / "fo.yaml"))
        say("each group consumes more on the target")
        on_b_before = b.committed_offsets(groups)
        moved = {}
        for g_index, group in enumerate(groups):
            now = on_b_before[group].offsets
            step = {tp: 1 + (g_index * 7 + tp[1] * 13) % 300 for tp in now}
            moved[group] = {tp: min(args.records, off + step[tp]) for tp, off in now.items()}
        b.alter_group_offsets(moved)

        say("timed: plan failback")
        plan_s, plan = _cli(
            state, "plan", "failback", "--pair", pair, "--mm2-config", flow.mm2_config, "-o", str(state / "fb.yaml")
        )
        say(f"plan failback: {plan_s:.1f} s; timed: apply")
        apply_s, _ = _cli(state, "apply", "--auto-approve", str(state / "fb.yaml"))
        say(f"apply: {apply_s:.1f} s; checking every group partition by content")
        methods = plan.stdout.split("note: translation methods: ", 1)[1].splitlines()[0]
        a_log, b_log = _values(src, topic, args.partitions), _values(dst, remote, args.partitions)
        on_a = a.committed_offsets(groups)
        mismatches = 0
        for group in groups:
            for (_remote, p), b_off in moved[group].items():
                a_off = on_a[group].offsets.get((topic, p))
                if a_off is None or _next_value(a_log[p], a_off) != _next_value(b_log[p], b_off):
                    mismatches += 1
        result = {
            "groups": args.groups,
            "partitions": args.partitions,
            "group_partitions": args.groups * args.partitions,
            "records_per_partition": args.records,
            "plan_failback_seconds": round(plan_s, 1),
            "apply_seconds": round(apply_s, 1),
            "methods": methods,
            "content_mismatches": mismatches,
            "loadavg_start": load_start,
            "loadavg_end": loadavg(),
        }
    finally:
        if started is not None and not args.keep_lab:
            say("stopping the lab")
            lab_control.down(started)
    if args.json:
        print(json.dumps(result))
    else:
        for k, v in result.items():
            print(f"{k:<24} {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
