"""Apply meets faults on the real lab: the target broker killed in the middle of a failover apply, the Connect
worker killed in the middle of a reset-mm2 apply, a Connect call answering 409 past the retry budget.

Each fault ends apply with exit 11 and a journal that names the step; once the fault clears, ``apply
--resume`` completes, the state read back from Kafka and Connect is what an uninterrupted apply leaves, and
rollback from that journal restores the state from before the apply.

These tests kill the lab's processes, so they run on a lab of their own (``own="faults"``). The apply is held
at a chosen step (``faulty_apply``'s ``--pause-before-step``): its before-state is journaled, its request not
sent yet; the test breaks the lab meanwhile, then lets it go on.
"""

from __future__ import annotations

import csv
import os
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.remediate.journal import read_journal
from tests.integration.faulty_apply import Faults, paused_marker
from tests.integration.outages import ConflictProxy, connectors_running, kill, restart
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import make_flow, mm2ctl, offsets, plan_reset, snapshot, state, syncs

pytestmark = [pytest.mark.integration, pytest.mark.extended, pytest.mark.lab(own="faults")]


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@pytest.fixture
def healthy(lab: LabInfo) -> LabInfo:
    """The faults lab with both brokers and the Connect worker answering (an earlier test broke them)."""
    eventually(lambda: lab_core.status(Path(lab.dir)).connect_alive, timeout_s=60, what="the Connect worker")
    eventually(lambda: all(c.reachable for c in lab_core.status(Path(lab.dir)).clusters), timeout_s=60, what="brokers")
    return lab


def applied_until_fault(
    plan: Path, journal: Path, state_dir: Path, pause_at: int, fault: Callable[[], object], *extra: str
) -> tuple[int, str]:
    """Apply ``plan``, held before step ``pause_at``; run ``fault`` there, then let it go on. Its output goes
    to a file (a pipe nobody reads while the apply is held would fill up and stall it)."""
    env = {**os.environ, "MM2CTL_STATE_DIR": str(state_dir)}
    env.pop("MM2CTL_CONNECT_URL", None)
    log = state_dir / f"{journal.stem}.apply.log"
    marker = paused_marker(journal)
    program = Faults(pause_before_step=pause_at).command()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [*program, "apply", str(plan), "--auto-approve", "--journal", str(journal), *extra],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            deadline = time.monotonic() + 180
            while not marker.exists():
                assert proc.poll() is None, f"apply ended before step {pause_at}: {log.read_text()[-3000:]}"
                assert time.monotonic() < deadline, f"apply never reached step {pause_at}"
                time.sleep(0.05)
            fault()
        finally:
            marker.unlink(missing_ok=True)
            proc.wait(timeout=300)
    return proc.returncode, log.read_text()


# ----------------------------------------------------------------------------------------- the target broker


def _read_csv(path: Path) -> dict[str, dict[TP, int]]:
    out: dict[str, dict[TP, int]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        for group, topic, partition, offset in csv.reader(fh):
            out.setdefault(group, {})[(topic, int(partition))] = int(offset)
    return out


def _target_groups(lab: LabInfo, groups: list[str]) -> dict[str, dict[TP, int]]:
    got = KafkaAdmin.connect(target_conf(lab)).committed_offsets(groups)
    return {g: r.offsets for g, r in got.items()}


def test_target_broker_killed_mid_failover_apply(healthy: LabInfo, state_dir: Path) -> None:
    lab = healthy
    name = "fobrk" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 4})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%d" % i, i % 4) for i in range(200)])
    flow = lab_core.add_flow(lab, name, roles=("source",))  # no checkpoint connector: nothing else writes
    remote = f"{flow.source_alias}.{topic}"
    tadmin = KafkaAdmin.connect(target_conf(lab))

    def replicated() -> bool:
        bounds = tadmin.partition_bounds([(remote, p) for p in range(4)])
        return all(b.error is None and b.latest == 50 for b in bounds.values())

    eventually(replicated, timeout_s=120, what="replication")
    # 300 groups: the apply writes them in two batches (``BATCH_GROUPS``); the broker dies before the second.
    groups = [f"iso-{name}-g{i:03d}" for i in range(300)]
    source = KafkaAdmin.connect(source_conf(lab))
    failed = source.alter_group_offsets({g: {(topic, p): 10 + i % 30 for p in range(4)} for i, g in enumerate(groups)})
    assert not [r for rs in failed.values() for r in rs if r.error is not None]
    before = {g: {(remote, p): 3 for p in range(4)} for g in groups[240:260]}  # 20 groups had older offsets
    tadmin.alter_group_offsets(before)

    plan, exported = state_dir / "failover.yaml", state_dir / "offsets.csv"
    r = mm2ctl(
        "plan", "failover", "--pair", f"{flow.source_alias}->{flow.target_alias}", "--mm2-config", flow.mm2_config,
        "--groups", f"iso-{name}-g.*", "--out", str(plan), "--export-csv", str(exported), state=state_dir,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    planned = _read_csv(exported)
    assert len(planned) == 300

    journal = state_dir / "j.jsonl"
    killed: list[object] = []
    # Every write of the second batch in flight at once: they all wait out one request timeout (30 s).
    rc, err = applied_until_fault(
        plan, journal, state_dir, 250, lambda: killed.append(kill(lab, "backup")), "--parallelism", "64"
    )
    assert rc == 11, err
    assert "step 250 (group_offsets_write) failed" in err and "mm2ctl apply --resume" in err, err
    j = read_journal(journal)
    assert j.completed_steps == tuple(range(250)) and j.stopped_at == 250
    assert j.failed_steps == tuple(range(250, 300)) and j.in_progress_steps == ()

    restart(lab, killed[0])  # type: ignore[arg-type]
    resumed = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert read_journal(journal).apply_status == "succeeded"
    assert _target_groups(lab, groups) == planned  # what an uninterrupted apply writes, every group partition

    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert _target_groups(lab, groups) == {g: before.get(g, {}) for g in groups}


# ----------------------------------------------------------------------------------------- the Connect worker


def test_connect_worker_killed_mid_reset_mm2_apply(healthy: LabInfo, state_dir: Path) -> None:
    lab = healthy
    flow, _topic = make_flow(lab, "rmkill" + uuid.uuid4().hex[:6])
    before, before_syncs = snapshot(lab, flow), syncs(lab, flow)
    plan = state_dir / "reset.yaml"
    plan_reset(lab, flow, plan, state_dir)  # 0 stop, 1 back up, 2 truncate, 3 delete offsets, 4 resume
    journal = state_dir / "j.jsonl"
    killed: list[object] = []
    rc, err = applied_until_fault(plan, journal, state_dir, 3, lambda: killed.append(kill(lab, "connect")))
    assert rc == 11, err
    assert "step 3 (connect_offsets_delete) failed" in err and "no Connect worker answered" in err, err
    j = read_journal(journal)
    assert j.completed_steps == (0, 1, 2) and j.failed_steps == (3,) and j.stopped_at == 3

    restart(lab, killed[0])  # type: ignore[arg-type]
    eventually(lambda: state(lab, flow) == "STOPPED", timeout_s=120, what="the connector back, still STOPPED")
    resumed = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
    assert resumed.returncode == 0, resumed.stderr
    assert read_journal(journal).apply_status == "succeeded"
    # What an uninterrupted reset leaves: running, offset syncs truncated, offsets re-established by MM2.
    assert state(lab, flow) == "RUNNING"
    syncs_topic = f"mm2-offset-syncs.{flow.target_alias}.internal"
    low = KafkaAdmin.connect(source_conf(lab)).partition_bounds([(syncs_topic, 0)])[(syncs_topic, 0)]
    assert low.earliest is not None and low.earliest >= len(before_syncs)
    eventually(lambda: offsets(lab, flow) == before["offsets"], timeout_s=90, what="re-replication")

    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert snapshot(lab, flow) == before
    assert syncs(lab, flow)[-len(before_syncs) :] == before_syncs  # re-produced, at new offsets
    eventually(lambda: connectors_running(lab.connect_url, [flow.connectors["source"]]), timeout_s=60, what="running")


# ----------------------------------------------------------------------------------------- 409 past the budget


def test_connect_409_past_the_retry_budget(healthy: LabInfo, state_dir: Path) -> None:
    from mm2ctl.connect_client.transport import RetryPolicy

    lab = healthy
    flow, _topic = make_flow(lab, "rm409" + uuid.uuid4().hex[:6])
    before = snapshot(lab, flow)
    with ConflictProxy(lab.connect_url) as proxy:
        plan = state_dir / "reset.yaml"
        r = mm2ctl(
            "plan", "reset-connector-offsets", "--connector", flow.connectors["source"], "--mm2-config",
            flow.mm2_config, "--connect-url", proxy.url, "--out", str(plan), state=state_dir,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr  # 0 stop, 1 delete offsets, 2 resume
        proxy.answer_409("DELETE", rf"/connectors/{flow.connectors['source']}/offsets")
        journal = state_dir / "j.jsonl"
        a = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
        assert a.returncode == 11, a.stderr
        assert "step 1 (connect_offsets_delete) failed" in a.stderr and "stale configuration" in a.stderr
        assert proxy.conflicts_sent == RetryPolicy().max_attempts
        j = read_journal(journal)
        assert j.completed_steps == (0,) and j.failed_steps == (1,) and j.stopped_at == 1
        assert state(lab, flow) == "STOPPED" and offsets(lab, flow) == before["offsets"]

        proxy.heal()
        resumed = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
        assert resumed.returncode == 0, resumed.stderr
        assert state(lab, flow) == "RUNNING"
        eventually(lambda: offsets(lab, flow) == before["offsets"], timeout_s=90, what="re-replication")

        rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
        assert rb.returncode == 0, rb.stderr
        assert snapshot(lab, flow) == before
