"""Benchmark ``mm2ctl plan failover`` + ``apply`` at 1,000 groups x 100 partitions against the stock tool.

Run it as ``.venv/bin/python bench/failover_scale.py [--scale 1.0 | --groups N --partitions P]
[--stock-groups 40|all] [--mm2-live] [--stop-mirroring] [--alt-mm2ctl EXE] [--json]`` (see bench/README.md).

It starts a lab (or reuses one) and creates an isolated MM2 flow ``<name>src-><name>dst`` (``lab_control.add_flow``,
every role, offset syncs on the target so the ``--source-unavailable`` plan can read them) that mirrors only
``iso-<name>-…``. It produces keyed records to the flow's topics, lets MM2 replicate them and write offset
syncs, commits the source groups with the admin API (concurrent) and waits until MM2 has checkpointed them.
Without ``--mm2-live`` it then stops the flow's connectors, so nothing moves the target while it measures;
with it, MM2 keeps mirroring and syncing the groups throughout, as in an incident. Then, as a user runs it:

* mm2ctl, ``--repeat`` times (3): the bench groups are deleted on the target (with MM2 live, MM2 starts
  syncing them back at once), then ``plan failover`` (verified translation) + ``apply --auto-approve`` run
  as subprocesses, timed, and every group partition is read back against the plan's ``--export-csv`` rows
  (with MM2 live, after two more of MM2's sync intervals, so a late MM2 write would show). The conservative
  ``--source-unavailable`` plan is timed once (plan only: applying it would do the same writes);
* stock, between those runs (each run is followed by a third of the sample, so both sides see the same
  load): the same CSV split per group, ``ConsumerGroupCommand --reset-offsets --from-file F --execute`` once
  per group, one JVM each, from the lab's Maven jars, on a sample of groups spread evenly over all of them
  (their target groups deleted again first); the per-group mean is extrapolated to every group, and the
  sampled groups are read back and compared with the CSV.

With ``--stop-mirroring`` the plans stop MM2 (apply waits for its catch-up first), so its connectors are
resumed before each run. ``--alt-mm2ctl`` runs another ``mm2ctl`` (an older checkout's) in every round too,
alternated. Each run's progress lines are stamped as they come, for the breakdown printed at the end.

The comparison is end to end: mm2ctl's planning (which reads the syncs and the records it verifies) is on
its side, as the median of its runs; the stock tool is given the already-translated CSV for free.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_lab import loadavg, open_lab, print_figures, say, stock_command
from confluent_kafka import Producer

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.polling import poll_until
from mm2ctl.lab import control as lab_control
from mm2ctl.plans.kafka_records import decoded_syncs
from mm2ctl.plans.serialize import load_plan
from mm2ctl.plans.steps import StepKind

DEFAULT_LAB_DIR = "/tmp/mm2ctl-failover-bench-lab"
TARGET_RATIO = 50.0
TARGET_APPLY_S = 10.0
#: Pause after each partition's share of a round, so MM2 syncs every partition (see ``produce_records``).
SYNC_PACING_S = 0.02
#: The lab's ``sync.group.offsets.interval.seconds`` (``lab.mm2_setup``).
LIVE_SYNC_INTERVAL_S = 1.0

Offsets = dict[str, dict[TP, int]]


# --- the load ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoadSpec:
    name: str
    topics: int
    partitions_per_topic: int
    records_per_partition: int
    groups: int
    positions: int

    @staticmethod
    def for_scale(
        scale: float,
        name: str,
        records: int,
        positions: int,
        *,
        groups: int | None = None,
        partitions: int | None = None,
    ) -> LoadSpec:
        """The shape at ``scale``, or the one ``groups`` x ``partitions`` (over the two topics) give."""
        if partitions is not None and (partitions < 2 or partitions % 2):
            raise SystemExit(f"--partitions {partitions}: an even number, split over the load's two topics")
        return LoadSpec(
            name=name,
            topics=2,
            partitions_per_topic=partitions // 2 if partitions else max(1, round(50 * scale)),
            records_per_partition=records,
            groups=groups if groups else max(10, round(1_000 * scale)),
            positions=positions,
        )

    @property
    def source_topics(self) -> list[str]:
        return [f"iso-{self.name}-t{i}" for i in range(self.topics)]

    @property
    def partitions(self) -> list[TP]:
        return [(t, p) for t in self.source_topics for p in range(self.partitions_per_topic)]

    @property
    def group_names(self) -> list[str]:
        return [f"iso-{self.name}-g{g:05d}" for g in range(self.groups)]

    @property
    def group_partitions(self) -> int:
        return self.groups * len(self.partitions)


def committed_offset(spec: LoadSpec, group: int, partition_index: int) -> int:
    """One of ``positions`` places spread over the partition, the last one its end (a caught-up group).

    A few distinct positions per partition, as consumer groups of a few applications sit in a real
    failover; groups and partitions rotate through them so every position is used on every partition.
    """
    k = (group + partition_index) % spec.positions
    return spec.records_per_partition * (k + 1) // spec.positions


def source_offsets(spec: LoadSpec) -> Offsets:
    return {
        g: {tp: committed_offset(spec, gi, i) for i, tp in enumerate(spec.partitions)}
        for gi, g in enumerate(spec.group_names)
    }


def produce_records(bootstrap: str, spec: LoadSpec) -> int:
    """Keyed records with distinct values, so the verified translation has something to compare.

    Paced: one round per committed position, one partition at a time. MirrorSourceTask keeps at most ten
    offset syncs in flight and, when more are due, only the newest one per partition, so a single burst over
    100 partitions leaves most of them with no sync below the groups' positions (untranslatable).
    """
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True, "compression.type": "lz4"}
    )
    count = 0
    per_round = spec.records_per_partition // spec.positions
    for r in range(spec.positions):
        last = spec.records_per_partition if r == spec.positions - 1 else (r + 1) * per_round
        for topic, p in spec.partitions:
            for i in range(r * per_round, last):
                producer.produce(topic, b"%s/%d/%d" % (topic.encode(), p, i), b"k%d" % (i % 97), partition=p)
                count += 1
            producer.flush(60)
            time.sleep(SYNC_PACING_S)
        time.sleep(1.5)  # the worker's offset flush (1 s) fires the pending syncs
    left = producer.flush(300)
    if left:
        raise RuntimeError(f"{left} record(s) not delivered to {bootstrap}")
    return count


def uncovered_positions(bootstrap: str, topic: str, spec: LoadSpec) -> int:
    """(partition, committed position) pairs with no offset sync at or below them: untranslatable."""
    lowest: dict[TP, int] = {}
    for decoded in decoded_syncs(records.read_partitions({"bootstrap.servers": bootstrap}, topic, [0])):
        if decoded is not None and decoded[1] is not None:
            tp, sync = decoded
            lowest[tp] = min(lowest.get(tp, sync.upstream), sync.upstream)
    wanted = {committed_offset(spec, 0, k) for k in range(spec.positions)}
    return sum(1 for tp in spec.partitions for c in wanted if lowest.get(tp, c + 1) > c)


def commit_offsets(admin: KafkaAdmin, offsets: Offsets) -> int:
    """Commit with the admin API, concurrent (one request per group); returns the partitions that failed."""
    failed = 0
    for results in admin.alter_group_offsets(offsets, concurrency=32).values():
        failed += sum(1 for r in results if r.error is not None)
    return failed


def read_back(admin: KafkaAdmin, groups: list[str]) -> Offsets:
    return {g: r.offsets for g, r in admin.committed_offsets(groups).items()}


def mismatches(expected: Offsets, got: Offsets) -> int:
    """Group partitions whose committed target offset is not the expected one (missing counts too)."""
    bad = 0
    for g, want in expected.items():
        have = got.get(g, {})
        bad += sum(1 for tp, o in want.items() if have.get(tp) != o)
    return bad


def delete_groups(admin: KafkaAdmin, groups: list[str], batch: int = 100) -> None:
    """Delete the target groups (a clean state for the next writer); absent groups are fine."""
    client = admin.client
    for start in range(0, len(groups), batch):
        futures = client.delete_consumer_groups(groups[start : start + batch], request_timeout=60)
        for g, fut in futures.items():
            try:
                fut.result()
            except Exception as exc:  # GROUP_ID_NOT_FOUND is the clean state we want
                if "GROUP_ID_NOT_FOUND" not in str(exc):
                    raise RuntimeError(f"deleting target group {g}: {exc}") from exc


def wait_until(check: Callable[[], bool], what: str, timeout_s: float, interval_s: float = 2.0) -> float:
    t0 = time.monotonic()
    if not poll_until(check, timeout_s=timeout_s, interval_s=interval_s):
        raise SystemExit(f"timed out after {timeout_s:.0f}s waiting for {what}")
    waited = time.monotonic() - t0
    say(f"{what}: after {waited:.1f}s")
    return waited


def _connector_states(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/connectors?expand=status", timeout=30) as resp:
        states: dict[str, Any] = json.loads(resp.read())
    return states


def _put_each(url: str, names: list[str], action: str) -> None:
    for name in names:
        req = urllib.request.Request(f"{url}/connectors/{name}/{action}", method="PUT")
        with urllib.request.urlopen(req, timeout=60) as resp:
            resp.read()


def stop_connectors(url: str, names: list[str]) -> None:
    _put_each(url, names, "stop")

    def stopped() -> bool:
        states = _connector_states(url)
        return all(
            states[n]["status"]["connector"]["state"] == "STOPPED" and not states[n]["status"]["tasks"] for n in names
        )

    wait_until(stopped, f"connectors {names} STOPPED", 120, 0.5)


def prepare(
    info: lab_control.LabInfo, spec: LoadSpec, checkpoint_wait_s: float, *, live: bool = False
) -> tuple[lab_control.LabFlow, dict[str, Any]]:
    """Create the flow and its topics, fill them, commit the groups; wait for MM2; stop it (unless ``live``);
    clean the target."""
    figures: dict[str, Any] = {}
    source = KafkaAdmin.connect({"bootstrap.servers": info.source.bootstrap}, name="primary", timeout_s=120)
    target = KafkaAdmin.connect({"bootstrap.servers": info.target.bootstrap}, name="backup", timeout_s=120)
    t0 = time.monotonic()
    source.create_topics({t: spec.partitions_per_topic for t in spec.source_topics})
    # Offset syncs on the target: the --source-unavailable (conservative) plan can only use syncs it can read.
    flow = lab_control.add_flow(info, spec.name, offset_syncs_location="target")
    say(f"flow {flow.source_alias}->{flow.target_alias} running: {sorted(flow.connectors.values())}")
    figures["records"] = produce_records(info.source.bootstrap, spec)
    say(f"produced {figures['records']:,} records")
    wanted = source_offsets(spec)
    failed = commit_offsets(source, wanted)
    if failed:
        raise SystemExit(f"{failed} source group partition(s) failed to commit")
    say(f"committed {spec.group_partitions:,} source group partitions ({spec.groups} groups)")

    remote = {(f"{flow.source_alias}.{t}", p): spec.records_per_partition for t, p in spec.partitions}
    if info.replication_policy == "identity":
        remote = {(t, p): spec.records_per_partition for t, p in spec.partitions}

    def replicated() -> bool:
        bounds = target.partition_bounds(list(remote))
        return all(b.error is None and b.latest == remote[tp] for tp, b in bounds.items()) and len(bounds) == len(
            remote
        )

    wait_until(replicated, "every record replicated", 600)
    syncs_topic = f"mm2-offset-syncs.{flow.source_alias}.internal"  # on the target, named for the source
    missing = uncovered_positions(info.target.bootstrap, syncs_topic, spec)
    figures["uncovered_positions"] = missing
    if missing:
        raise SystemExit(
            f"{missing} (partition, position) pair(s) have no offset sync at or below them: MM2 "
            "dropped syncs; raise SYNC_PACING_S"
        )
    # MM2's own offset sync to the target follows its checkpoints: once every spread-out group holds every
    # partition there, the checkpoints the --source-unavailable plan needs exist too.
    probes = [spec.group_names[i] for i in sorted({0, spec.groups // 3, 2 * spec.groups // 3, spec.groups - 1})]

    def checkpointed() -> bool:
        got = read_back(target, probes)
        return all(len(got.get(g, {})) == len(spec.partitions) for g in probes)

    wait_until(checkpointed, f"MM2 synced groups {probes} to the target", 900, 3)
    # MM2 syncs target offsets well before it has emitted a checkpoint for every group partition, and the
    # --source-unavailable plan covers only what is checkpointed: give the checkpoints a bounded wait.
    cp_topic = f"{flow.source_alias}.checkpoints.internal"

    def cp_end() -> int:
        return target.partition_bounds([(cp_topic, 0)])[(cp_topic, 0)].latest or 0

    deadline = time.monotonic() + checkpoint_wait_s
    while cp_end() < spec.group_partitions and time.monotonic() < deadline:
        time.sleep(3)
    say(f"{cp_end():,} checkpoint records for {spec.group_partitions:,} group partitions")
    if not live:
        stop_connectors(info.connect_url, sorted(flow.connectors.values()))
    cp_bounds = target.partition_bounds([(cp_topic, 0)])[(cp_topic, 0)]
    figures["checkpoint_records"] = cp_bounds.latest
    synced = read_back(target, spec.group_names)
    figures["mm2_synced_group_partitions"] = sum(len(v) for v in synced.values())
    figures["prepare_seconds"] = round(time.monotonic() - t0, 1)
    say(
        f"prepared in {figures['prepare_seconds']:.1f}s; MM2 had synced {figures['mm2_synced_group_partitions']:,} "
        f"target group partitions, {cp_bounds.latest:,} checkpoint records"
        + ("; MM2 keeps running" if live else "; the flow's connectors are stopped")
    )
    return flow, figures


def clean_target(target: KafkaAdmin, groups: list[str], live: bool) -> None:
    """Delete the groups on the target; without MM2 running, check that none is left."""
    delete_groups(target, groups)
    if not live:
        left = sum(len(v) for v in read_back(target, groups).values())
        if left:
            raise SystemExit(f"{left} target group partition(s) survived the delete")


# --- the measurements -----------------------------------------------------------------------------------


def mm2ctl(
    args: list[str], state: Path, log: Path, phases: list[tuple[float, str]] | None = None, exe: str | None = None
) -> float:
    """Run the CLI as the user does; returns the wall time. A non-zero exit stops the bench.

    Its stderr is read as it comes: each progress line is stamped with the seconds since the process started
    (in the log, and in ``phases`` when given), which is where the breakdown comes from."""
    env = {**os.environ, "MM2CTL_STATE_DIR": str(state)}
    env.pop("MM2CTL_CONNECT_URL", None)
    cmd = [exe or str(Path(sys.executable).with_name("mm2ctl")), *args]
    profile_dir = os.environ.get("FOBENCH_PROFILE_DIR")  # cProfile each mm2ctl run (changes the timings)
    if profile_dir:
        out = Path(profile_dir) / f"{args[0]}-{Path(args[1]).name if len(args) > 1 else ''}-{time.time_ns()}.prof"
        cmd = [sys.executable, "-m", "cProfile", "-o", str(out), *cmd]
    stamped: list[tuple[float, str]] = []
    t0 = time.monotonic()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, bufsize=1) as proc:
        assert proc.stderr is not None and proc.stdout is not None
        out_chunks: list[str] = []
        reader = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()), daemon=True)  # type: ignore[union-attr]
        reader.start()  # stdout drained beside stderr: a full pipe would block the command
        for line in proc.stderr:
            stamped.append((time.monotonic() - t0, line.rstrip("\n")))
        returncode = proc.wait(timeout=7200)
        reader.join()
        stdout = "".join(out_chunks)
    seconds = time.monotonic() - t0
    if phases is not None:
        phases.extend(stamped)
    stderr = "\n".join(f"+{t:7.3f} {line}" for t, line in stamped)
    with open(log, "a", encoding="utf-8") as fh:
        fh.write(f"$ mm2ctl {' '.join(args)}\n{stdout}\n{stderr}\nrc={returncode} {seconds:.2f}s\n")
    if returncode != 0:
        raise SystemExit(
            f"mm2ctl {args[0]} {args[1] if len(args) > 1 else ''} exited {returncode} (log {log}):\n{stderr[-2000:]}"
        )
    say(f"mm2ctl {' '.join(a for a in args[:2])}: {seconds:.1f}s")
    return seconds


def breakdown(stamped: list[tuple[float, str]], end: float) -> list[tuple[float, str]]:
    """Each progress line with the seconds until the next one (the last until ``end``): what the command spent
    after saying it; the first row is the process start to its first line."""
    stamped = [(t, line) for t, line in stamped if line.startswith("mm2ctl: ")]  # the progress lines only
    out: list[tuple[float, str]] = []
    if stamped:
        out.append((round(stamped[0][0], 3), "(process start, imports, until the first line)"))
    for i, (t, line) in enumerate(stamped):
        nxt = stamped[i + 1][0] if i + 1 < len(stamped) else end
        out.append((round(nxt - t, 3), line))
    return out


def read_csv(path: Path) -> Offsets:
    out: Offsets = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for group, topic, partition, offset in csv.reader(fh):
            out.setdefault(group, {})[(topic, int(partition))] = int(offset)
    return out


def plan_args(flow: lab_control.LabFlow, spec: LoadSpec) -> list[str]:
    pair = f"{flow.source_alias}->{flow.target_alias}"
    return ["plan", "failover", "--mm2-config", flow.mm2_config, "--pair", pair, "--groups", f"iso-{spec.name}-g.*"]


def measure_conservative(flow: lab_control.LabFlow, spec: LoadSpec, work: Path) -> dict[str, Any]:
    """``plan failover --source-unavailable`` (plan only), timed once."""
    log = work / "mm2ctl.log"
    seconds = mm2ctl(
        [
            *plan_args(flow, spec),
            "--source-unavailable",
            "--out",
            str(work / "conservative.yaml"),
            "--export-csv",
            str(work / "conservative.csv"),
        ],
        work,
        log,
    )
    conservative = read_csv(work / "conservative.csv")
    rows = sum(len(v) for v in conservative.values())
    return {"plan_conservative_seconds": round(seconds, 2), "conservative_rows": rows}


def resume_connectors(url: str, names: list[str]) -> None:
    """Resume the flow's connectors a ``--stop-mirroring`` apply stopped, and wait until they and their tasks
    run again (MM2 live for the next run)."""
    _put_each(url, names, "resume")

    def running() -> bool:
        states = _connector_states(url)
        return all(
            states[n]["status"]["connector"]["state"] == "RUNNING"
            and states[n]["status"]["tasks"]
            and all(t["state"] == "RUNNING" for t in states[n]["status"]["tasks"])
            for n in names
        )

    wait_until(running, f"connectors {names} RUNNING", 120, 0.5)


def measure_mm2ctl_run(
    info: lab_control.LabInfo,
    flow: lab_control.LabFlow,
    spec: LoadSpec,
    work: Path,
    run: int,
    live: bool,
    extra: list[str],
    *,
    stop_mirroring: bool = False,
    exe: str | None = None,
) -> tuple[dict[str, Any], Offsets]:
    """One end-to-end run: a clean target, ``plan failover`` (verified) + ``apply``, then the read-back. With
    ``stop_mirroring`` the plan stops MM2 (``--stop-mirroring``), so its connectors are resumed first. ``exe``:
    another ``mm2ctl`` executable (``--alt-mm2ctl``) instead of this virtualenv's."""
    target = KafkaAdmin.connect({"bootstrap.servers": info.target.bootstrap}, name="backup", timeout_s=120)
    if stop_mirroring and live:
        resume_connectors(info.connect_url, sorted(flow.connectors.values()))
        time.sleep(2 * LIVE_SYNC_INTERVAL_S)  # MM2 back at work: a sync round or two before the failover
    clean_target(target, spec.group_names, live)
    log = work / "mm2ctl.log"
    stem = f"verified-{run}" + ("-alt" if exe else "")
    plan, exported = work / f"{stem}.yaml", work / f"{stem}.csv"
    fig: dict[str, Any] = {"run": run, "loadavg": loadavg(), "code": "alt" if exe else "this"}
    plan_phases: list[tuple[float, str]] = []
    stop = ["--stop-mirroring", "--connect-url", info.connect_url] if stop_mirroring else []
    plan_cmd = [*plan_args(flow, spec), *stop, "--out", str(plan), "--export-csv", str(exported)]
    fig["plan_seconds"] = round(mm2ctl(plan_cmd, work, log, plan_phases, exe), 2)
    planned = read_csv(exported)
    fig["planned_rows"] = sum(len(v) for v in planned.values())
    fig["write_steps"] = sum(1 for st in load_plan(plan).steps if st.kind is StepKind.GROUP_OFFSETS_WRITE)
    journal = work / f"{stem}.jsonl"
    apply_phases: list[tuple[float, str]] = []
    fig["apply_seconds"] = round(
        mm2ctl(["apply", str(plan), "--auto-approve", "--journal", str(journal), *extra], work, log, apply_phases, exe),
        2,
    )
    fig["plan_breakdown"] = breakdown(plan_phases, fig["plan_seconds"])
    fig["apply_breakdown"] = breakdown(apply_phases, fig["apply_seconds"])
    fig["end_to_end_seconds"] = round(fig["plan_seconds"] + fig["apply_seconds"], 2)
    if live:
        time.sleep(2 * LIVE_SYNC_INTERVAL_S + 1)  # a late MM2 write over ours would show in the read-back
    fig["mismatches"] = mismatches(planned, read_back(target, spec.group_names))
    say(
        f"run {run}: plan {fig['plan_seconds']:.1f}s + apply {fig['apply_seconds']:.1f}s = "
        f"{fig['end_to_end_seconds']:.1f}s; read back: {fig['mismatches']} mismatch(es) of {fig['planned_rows']:,}"
    )
    return fig, planned


def sample(groups: list[str], n: int) -> list[str]:
    """``n`` groups spread evenly from the first to the last."""
    if n >= len(groups):
        return list(groups)
    if n == 1:
        return [groups[0]]
    return [groups[round(i * (len(groups) - 1) / (n - 1))] for i in range(n)]


def measure_stock(
    info: lab_control.LabInfo, planned: Offsets, groups: list[str], work: Path
) -> tuple[list[float], int, int]:
    """The stock tool once per group of ``groups`` (target groups deleted first); returns each run's seconds,
    the group partitions read back wrong, and how many were checked."""
    target = KafkaAdmin.connect({"bootstrap.servers": info.target.bootstrap}, name="backup", timeout_s=120)
    delete_groups(target, groups)
    times: list[float] = []
    log = work / "stock.log"
    for group in groups:
        path = work / f"stock-{group}.csv"
        with open(path, "w", encoding="utf-8", newline="") as fh:
            writer = csv.writer(fh, lineterminator="\n")
            for (topic, p), o in sorted(planned[group].items()):
                writer.writerow((group, topic, p, o))
        reset = ["--reset-offsets", "--from-file", str(path), "--execute"]
        cmd = stock_command(info.kafka_version, ["--bootstrap-server", info.target.bootstrap, "--group", group, *reset])
        t0 = time.monotonic()
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        seconds = time.monotonic() - t0
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"$ {group} rc={proc.returncode} {seconds:.2f}s\n{proc.stdout[-400:]}{proc.stderr[-2000:]}\n")
        if proc.returncode != 0:
            raise SystemExit(f"the stock tool failed for {group} (rc {proc.returncode}; log {log})")
        times.append(seconds)
    say(f"stock: {len(groups)} group(s), mean {statistics.mean(times):.2f}s per group")
    got = read_back(target, groups)
    return times, mismatches({g: planned[g] for g in groups}, got), sum(len(planned[g]) for g in groups)


# --- the command ------------------------------------------------------------------------------------------


def _parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="bench/failover_scale.py", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="fraction of 1,000 groups and of 100 partitions (default 1.0)"
    )
    parser.add_argument("--records", type=int, default=1000, help="records per source partition (1000)")
    parser.add_argument(
        "--positions",
        type=int,
        default=10,
        help="distinct committed positions per partition the groups rotate through (10)",
    )
    parser.add_argument(
        "--stock-groups", default="40", help="groups the stock tool runs for, spread evenly; 'all' for every group (40)"
    )
    parser.add_argument(
        "--checkpoint-wait",
        type=float,
        default=300,
        help="seconds to wait for MM2 to checkpoint every group partition (300)",
    )
    parser.add_argument(
        "--mm2-live",
        action="store_true",
        help="keep the flow's MM2 connectors mirroring and syncing the groups while mm2ctl plans and applies",
    )
    parser.add_argument(
        "--stop-mirroring",
        action="store_true",
        help="plan failover --stop-mirroring: apply waits for MM2's catch-up and stops the flow's connectors "
        "(resumed before each run, so MM2 is live when each starts with --mm2-live)",
    )
    parser.add_argument("--groups", type=int, default=None, help="groups (instead of --scale's 1,000 x scale)")
    parser.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="partitions in all, split over the two topics (instead of --scale's 100 x scale)",
    )
    parser.add_argument(
        "--alt-mm2ctl",
        metavar="EXE",
        help="another mm2ctl executable (an older checkout's) run in every round too, alternated with this one",
    )
    parser.add_argument("--repeat", type=int, default=3, help="mm2ctl plan + apply runs; the median is reported (3)")
    parser.add_argument(
        "--apply-arg", action="append", default=[], help="an extra argument for every mm2ctl apply (repeatable)"
    )
    parser.add_argument("--lab-dir", default=DEFAULT_LAB_DIR, help=f"where to start the lab ({DEFAULT_LAB_DIR})")
    parser.add_argument("--reuse-lab", metavar="DIR", help="use the lab already running in DIR; leave it running")
    parser.add_argument("--keep-lab", action="store_true", help="leave the lab this run started running")
    parser.add_argument("--kafka-version", default=None)
    parser.add_argument("--json", action="store_true", help="print one JSON line instead of the table")
    return parser.parse_args(argv)


def _report(fig: dict[str, Any]) -> list[str]:
    def ok(flag: bool) -> str:
        return "PASS" if flag else "FAIL"

    n, groups = fig["stock_groups_measured"], fig["groups"]
    stock_total = (
        "measured" if fig["stock_total_measured"] else f"EXTRAPOLATED from {n} measured runs x {groups:,} groups"
    )
    mode = "MM2 live (mirroring and syncing the groups)" if fig["mm2_live"] else "no connector running"
    if fig["stop_mirroring"]:
        mode += ", plan failover --stop-mirroring"
    lines = [
        f"mm2ctl failover benchmark  scale={fig['scale']}  flow {fig['pair']}  (Kafka {fig['kafka_version']}, "
        f"{os.cpu_count()} cores)  {mode}",
        f"  load average (1/5/15 min) at start {fig['loadavg_start']}, before measuring "
        f"{fig['loadavg_before_measure']}, at end {fig['loadavg_end']}",
        f"  load: {fig['groups']:,} groups x {fig['partitions']} partitions = {fig['group_partitions']:,} group "
        f"partitions; {fig['records']:,} records; {fig['positions']} committed positions per partition",
        f"  prepare (not measured)        {fig['prepare_seconds']:>9.1f} s",
        f"  mm2ctl plan (conservative)    {fig['plan_conservative_seconds']:>9.2f} s   --source-unavailable, "
        f"{fig['conservative_rows']:,} rows (as many as MM2 checkpointed: {fig['checkpoint_records']:,} "
        "checkpoint records)",
    ]
    for r in fig["runs"]:
        lines.append(
            f"  run {r['run']}: plan {r['plan_seconds']:6.2f} s + apply {r['apply_seconds']:6.2f} s = "
            f"{r['end_to_end_seconds']:6.2f} s  ({r['write_steps']:,} groups written; load {r['loadavg'][0]}); "
            f"read back: {r['mismatches']} mismatch(es) of {r['planned_rows']:,}"
        )
    lines += [
        f"  mm2ctl plan (verified)        {fig['plan_seconds']:>9.2f} s   median of {len(fig['runs'])} runs",
        f"  mm2ctl apply --auto-approve   {fig['apply_seconds']:>9.2f} s   median",
        f"  mm2ctl end to end             {fig['end_to_end_seconds']:>9.2f} s   median; read back: "
        f"{fig['mm2ctl_mismatches']} mismatch(es) in all runs",
        f"  stock per group               {fig['stock_mean_seconds']:>9.2f} s   mean of {n} JVM runs (median "
        f"{fig['stock_median_seconds']:.2f}, min {fig['stock_min_seconds']:.2f}, max {fig['stock_max_seconds']:.2f}); "
        f"read back: {fig['stock_mismatches']} mismatch(es) of {fig['stock_rows_checked']:,}",
        f"  stock total, {groups:,} groups   {fig['stock_total_seconds']:>9.1f} s   ({stock_total})",
        f"  ratio stock / mm2ctl          {fig['ratio']:>9.1f} x",
        f"  targets: >= {TARGET_RATIO:g} x faster end to end: {ok(fig['pass_ratio'])}; apply <= {TARGET_APPLY_S:g} s: "
        f"{ok(fig['pass_apply'])}; every group partition written as planned: {ok(fig['pass_correct'])}",
    ]
    if fig["alt_runs"]:
        for r in fig["alt_runs"]:
            lines.append(
                f"  alt run {r['run']}: plan {r['plan_seconds']:6.2f} s + apply {r['apply_seconds']:6.2f} s = "
                f"{r['end_to_end_seconds']:6.2f} s  (load {r['loadavg'][0]}); read back: {r['mismatches']} mismatch(es)"
            )
        lines.append(
            f"  alt ({fig['alt_mm2ctl']}) medians: plan {fig['alt_plan_seconds']:.2f} s, apply "
            f"{fig['alt_apply_seconds']:.2f} s, end to end {fig['alt_end_to_end_seconds']:.2f} s"
        )
    median_run = sorted(fig["runs"], key=lambda r: r["end_to_end_seconds"])[len(fig["runs"]) // 2]
    for what in ("plan", "apply"):
        lines.append(f"  run {median_run['run']} (the median), {what}: seconds after each progress line")
        lines += [f"    {sec:7.3f}  {line}" for sec, line in median_run[f"{what}_breakdown"]]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    name = "fob" + uuid.uuid4().hex[:6]
    spec = LoadSpec.for_scale(
        args.scale, name, args.records, args.positions, groups=args.groups, partitions=args.partitions
    )
    figures: dict[str, Any] = {
        "scale": args.scale,
        "mm2_live": args.mm2_live,
        "stop_mirroring": args.stop_mirroring,
        "loadavg_start": loadavg(),
        "groups": spec.groups,
        "partitions": len(spec.partitions),
        "group_partitions": spec.group_partitions,
        "positions": spec.positions,
    }
    started_lab: Path | None = None
    work = Path(tempfile.mkdtemp(prefix="mm2ctl-failover-bench-"))
    runs: list[dict[str, Any]] = []
    alt_runs: list[dict[str, Any]] = []
    stock_times: list[float] = []
    stock_bad = stock_checked = 0
    flow: lab_control.LabFlow | None = None
    try:
        info, started_lab = open_lab(args)
        figures["kafka_version"] = info.kafka_version
        say(
            f"load: {spec.groups} groups x {len(spec.partitions)} partitions, {spec.records_per_partition} "
            f"records per partition, flow {name}"
        )
        flow, prep = prepare(info, spec, args.checkpoint_wait, live=args.mm2_live)
        figures.update(prep)
        figures["pair"] = f"{flow.source_alias}->{flow.target_alias}"
        figures["loadavg_before_measure"] = loadavg()
        n = spec.groups if args.stock_groups == "all" else min(int(args.stock_groups), spec.groups)
        stock_groups = sample(spec.group_names, n)
        # mm2ctl runs alternate with thirds of the stock sample, so both see the same load.
        parts = [stock_groups[i :: args.repeat] for i in range(args.repeat)]
        planned: Offsets = {}
        for run in range(1, args.repeat + 1):
            codes: list[str | None] = [None] if not args.alt_mm2ctl else [None, args.alt_mm2ctl]
            for exe in codes if run % 2 else codes[::-1]:  # alternate which code goes first
                fig, got = measure_mm2ctl_run(
                    info,
                    flow,
                    spec,
                    work,
                    run,
                    args.mm2_live,
                    args.apply_arg,
                    stop_mirroring=args.stop_mirroring,
                    exe=exe,
                )
                if exe is None:
                    runs.append(fig)
                    planned = got
                else:
                    alt_runs.append(fig)
            if parts[run - 1]:
                times, bad, checked = measure_stock(info, planned, parts[run - 1], work)
                stock_times += times
                stock_bad += bad
                stock_checked += checked
        figures.update(measure_conservative(flow, spec, work))
        figures["loadavg_end"] = loadavg()
    finally:
        if flow is not None and args.mm2_live and (started_lab is None or args.keep_lab):
            stop_connectors(info.connect_url, sorted(flow.connectors.values()))  # leave a reused lab quiet
        if started_lab is not None and not args.keep_lab:
            say(f"stopping the lab in {started_lab}")
            lab_control.down(started_lab)
    figures["runs"] = runs
    figures["alt_runs"] = alt_runs
    figures["alt_mm2ctl"] = args.alt_mm2ctl
    for key in ("plan_seconds", "apply_seconds", "end_to_end_seconds"):
        figures[key] = round(statistics.median(r[key] for r in runs), 2)
        if alt_runs:
            figures[f"alt_{key}"] = round(statistics.median(r[key] for r in alt_runs), 2)
    figures["planned_rows"] = runs[-1]["planned_rows"]
    figures["mm2ctl_mismatches"] = sum(r["mismatches"] for r in runs + alt_runs)
    figures["stock_groups_measured"] = len(stock_times)
    figures["stock_mean_seconds"] = round(statistics.mean(stock_times), 3)
    figures["stock_median_seconds"] = round(statistics.median(stock_times), 3)
    figures["stock_min_seconds"] = round(min(stock_times), 3)
    figures["stock_max_seconds"] = round(max(stock_times), 3)
    figures["stock_mismatches"] = stock_bad
    figures["stock_rows_checked"] = stock_checked
    figures["stock_total_measured"] = figures["stock_groups_measured"] == spec.groups
    figures["stock_total_seconds"] = round(figures["stock_mean_seconds"] * spec.groups, 1)
    figures["ratio"] = round(figures["stock_total_seconds"] / figures["end_to_end_seconds"], 2)
    figures["pass_ratio"] = figures["ratio"] >= TARGET_RATIO
    figures["pass_apply"] = figures["apply_seconds"] <= TARGET_APPLY_S
    figures["pass_correct"] = figures["mm2ctl_mismatches"] == 0 and all(
        r["planned_rows"] == spec.group_partitions for r in runs
    )
    if figures["pass_correct"]:
        shutil.rmtree(work, ignore_errors=True)
    else:
        say(f"kept the plans, CSVs and logs in {work}")
    print_figures(figures, args.json, _report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
