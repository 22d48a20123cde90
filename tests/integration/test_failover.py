"""``mm2ctl plan failover`` / apply / rollback against the real lab, driving the CLI as a subprocess.

Each test runs its own isolated, source-only MM2 flow (``lab.add_flow``): no checkpoint connector, so MM2's
own ``sync.group.offsets`` never writes the target groups these tests inspect.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.lab.jars import kafka_classpath
from tests.integration.support import eventually, source_conf, target_conf, uniq
from tests.integration.test_remediate import mm2ctl
from tests.reference_codecs import decode_offset_sync

pytestmark = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def _name(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:6]


def _pair(flow: LabFlow) -> str:
    return f"{flow.source_alias}->{flow.target_alias}"


def _remote(lab: LabInfo, flow: LabFlow, topic: str) -> str:
    return topic if lab.replication_policy == "identity" else f"{flow.source_alias}.{topic}"


def _target_end(lab: LabInfo, topic: str, partition: int = 0) -> int:
    b = KafkaAdmin.connect(target_conf(lab)).partition_bounds([(topic, partition)])[(topic, partition)]
    return b.latest if b.latest is not None and b.error is None else -1


def _plan(lab: LabInfo, flow: LabFlow, out: Path, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return mm2ctl(
        "plan",
        "failover",
        "--pair",
        _pair(flow),
        "--mm2-config",
        flow.mm2_config,
        "--out",
        str(out),
        *extra,
        state=state,
    )


def _group_offsets(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    return KafkaAdmin.connect({"bootstrap.servers": bootstrap}).committed_offsets([group])[group].offsets


def _commit_source(lab: LabInfo, group: str, topic: str, offsets: dict[int, int]) -> None:
    res = KafkaAdmin.connect(source_conf(lab)).alter_group_offsets({group: {(topic, p): o for p, o in offsets.items()}})
    assert all(r.error is None for r in res[group]), res


def _syncs(lab: LabInfo, flow: LabFlow, topic: str) -> list[tuple[int, int]]:
    out = []
    for r in records.read_partitions(source_conf(lab), f"mm2-offset-syncs.{flow.target_alias}.internal", [0]):
        s = decode_offset_sync(r.key, r.value)
        if s.topic == topic:
            out.append((s.upstream_offset, s.downstream_offset))
    return sorted(set(out))


class ActiveConsumer:
    """A consumer that has joined ``group`` on the target (so the group has a member) until closed."""

    def __init__(self, lab: LabInfo, group: str, topic: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": lab.target.bootstrap,
                "group.id": group,
                "enable.auto.commit": False,
                "auto.offset.reset": "latest",
            }
        )
        self.consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not self.consumer.assignment() and time.monotonic() < deadline:
            self.consumer.poll(0.2)
        assert self.consumer.assignment(), "the consumer never joined"

    def close(self) -> None:
        self.consumer.close()


def test_verified_translation_detects_transaction_gaps_csv_apply_rollback(lab: LabInfo, state_dir: Path) -> None:
    """Single-record transactions put a commit marker after every source record, so source offsets advance by
    two per record and the target's by one. Produced in one burst before MM2 starts, MM2 coalesces the syncs
    it would write at each gap, so ``downstream + (c - upstream)`` points too far: the plan must detect it,
    search, and land on the exact record."""
    name = _name("fotx")
    topic = f"iso-{name}-tx"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    n = 400
    producer = Producer({"bootstrap.servers": lab.source.bootstrap, "transactional.id": uniq("tx")})
    producer.init_transactions()
    for i in range(n):
        producer.begin_transaction()
        producer.produce(topic, key=b"k%d" % i, value=b"seq-%d" % i, partition=0, headers=[("h", b"%d" % i)])
        producer.commit_transaction()
    flow = lab_core.add_flow(lab, name, roles=("source",))
    remote = _remote(lab, flow, topic)
    eventually(lambda: _target_end(lab, remote) >= n, timeout_s=120, what="the burst replicated")

    src = [r.offset for r in records.read_partitions(source_conf(lab), topic, [0])]
    dst_values = [r.value for r in records.read_partitions(target_conf(lab), remote, [0])]
    assert len(src) == n and dst_values == [b"seq-%d" % i for i in range(n)]  # dense copy, same order
    src_end = src[-1] + 2
    syncs = _syncs(lab, flow, topic)
    assert syncs, "MM2 wrote no offset sync"

    def delta(c: int) -> int | None:
        below = [s for s in syncs if s[0] <= c]
        return None if not below else below[-1][1] + (c - below[-1][0])

    # Groups at record offsets where the unverified delta is wrong, on a marker, and caught up.
    wrong = [i for i in range(n) if delta(src[i]) is not None and delta(src[i]) != i]
    assert wrong, f"MM2 wrote a sync at every gap ({len(syncs)} syncs); the burst did not coalesce them"
    cases = {
        f"iso-{name}-g-wrong": (wrong[len(wrong) // 2], src[wrong[len(wrong) // 2]]),
        f"iso-{name}-g-marker": (n // 2 + 1, src[n // 2] + 1),
        f"iso-{name}-g-end": (n, src_end),
    }
    for group, (_truth, c) in cases.items():
        _commit_source(lab, group, topic, {0: c})

    plan, csv_path = state_dir / "failover.yaml", state_dir / "offsets.csv"
    r = _plan(lab, flow, plan, state_dir, "--groups", f"iso-{name}-g-.*", "--export-csv", str(csv_path), "--json")
    assert r.returncode == 0, r.stderr
    # Progress on stderr (a pipe: plain lines, no bar): the one source partition's groups translated.
    assert "mm2ctl: partitions translated: 0/1" in r.stderr.splitlines(), r.stderr
    assert "mm2ctl: partitions translated: 1/1" in r.stderr.splitlines(), r.stderr
    rows = {row["group"]: row for row in json.loads(r.stdout)["rows"]}
    for group, (truth, c) in cases.items():
        row = rows[group]
        assert row["source_offset"] == c
        assert row["target_offset"] == truth, row
        assert row["method"] in ("verified_delta", "verified_search"), row
    w = rows[f"iso-{name}-g-wrong"]
    assert w["method"] == "verified_search" and w["delta_candidate"] != w["target_offset"]

    # The stock tool reads the exported CSV and plans the very same offsets (dry run: it changes nothing).
    groups = sorted(cases)
    args = [
        "java",
        "-cp",
        kafka_classpath(lab.kafka_version),
        "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
        "--bootstrap-server",
        lab.target.bootstrap,
        "--reset-offsets",
        "--from-file",
        str(csv_path),
        "--dry-run",
    ]
    for g in groups:
        args += ["--group", g]
    stock = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert stock.returncode == 0, stock.stdout + stock.stderr
    seen = {}
    for line in stock.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in cases and parts[2].isdigit():
            seen[parts[0]] = (parts[1], int(parts[2]), int(parts[3]))
    assert seen == {g: (remote, 0, cases[g][0]) for g in groups}, stock.stdout

    journal = state_dir / "j.jsonl"
    applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
    assert applied.returncode == 0, applied.stderr
    steps = len(json.loads(r.stdout)["plan"]["steps"])
    assert f"mm2ctl: steps applied: 0/{steps}" in applied.stderr.splitlines(), applied.stderr
    assert f"mm2ctl: steps applied: {steps}/{steps}" in applied.stderr.splitlines(), applied.stderr
    for group, (truth, _c) in cases.items():
        assert _group_offsets(lab.target.bootstrap, group) == {(remote, 0): truth}
    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert re.search(r"^mm2ctl: steps rolled back: (\d+)/\1$", rb.stderr, re.M), rb.stderr
    for group in cases:  # none of them existed on the target before: rollback deletes them
        assert _group_offsets(lab.target.bootstrap, group) == {}


def test_every_precondition_refusal_and_rollback_to_previous_offsets(lab: LabInfo, state_dir: Path) -> None:
    name = _name("fopre")
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%d" % i, 0) for i in range(30)])
    flow = lab_core.add_flow(lab, name, roles=("source",))
    remote = _remote(lab, flow, topic)
    eventually(lambda: _target_end(lab, remote) >= 30, timeout_s=120, what="replication")
    g = {k: f"iso-{name}-{k}" for k in ("rewind", "active", "changed", "late", "range")}
    for group in g.values():
        _commit_source(lab, group, topic, {0: 20})
    tadmin = KafkaAdmin.connect(target_conf(lab))

    # A rewind: the target group is already ahead. Refused without --allow-rewind, exit 8.
    tadmin.alter_group_offsets({g["rewind"]: {(remote, 0): 25}})
    out = state_dir / "p.yaml"
    r = _plan(lab, flow, out, state_dir, "--groups", g["rewind"])
    assert r.returncode == 8 and "rewind" in r.stderr and "--allow-rewind" in r.stderr, r.stderr
    r = _plan(lab, flow, out, state_dir, "--groups", g["rewind"], "--allow-rewind")
    assert r.returncode == 0, r.stderr
    journal = state_dir / "rw.jsonl"
    assert mm2ctl("apply", str(out), "--auto-approve", "--journal", str(journal), state=state_dir).returncode == 0
    assert _group_offsets(lab.target.bootstrap, g["rewind"]) == {(remote, 0): 20}
    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert _group_offsets(lab.target.bootstrap, g["rewind"]) == {(remote, 0): 25}  # restored, not deleted

    # An active group on the target: refused at plan time.
    c = ActiveConsumer(lab, g["active"], remote)
    try:
        r = _plan(lab, flow, out, state_dir, "--groups", g["active"])
        assert r.returncode == 8 and "active member" in r.stderr, r.stderr
    finally:
        c.close()

    # ... and at apply time, when consumers start after the plan was made (dry run and apply alike).
    late = state_dir / "late.yaml"
    assert _plan(lab, flow, late, state_dir, "--groups", g["late"]).returncode == 0
    c = ActiveConsumer(lab, g["late"], remote)
    try:
        dry = mm2ctl("apply", str(late), "--dry-run", state=state_dir)
        assert dry.returncode == 8 and "member" in dry.stderr, dry.stderr
        r = mm2ctl("apply", str(late), "--auto-approve", state=state_dir)
        assert r.returncode == 8 and "member" in r.stderr, r.stderr
    finally:
        c.close()

    # A target offset that changed since the plan, beyond the planned position: refused.
    changed = state_dir / "changed.yaml"
    assert _plan(lab, flow, changed, state_dir, "--groups", g["changed"]).returncode == 0
    tadmin.alter_group_offsets({g["changed"]: {(remote, 0): 25}})
    r = mm2ctl("apply", str(changed), "--auto-approve", state=state_dir)
    assert r.returncode == 8 and "changed" in r.stderr, r.stderr
    assert _group_offsets(lab.target.bootstrap, g["changed"]) == {(remote, 0): 25}
    # Moved forward to at most the planned position, the group inactive: what MM2's own group-offset sync
    # does, so the plan is written over it, and rollback restores what apply found.
    assert _plan(lab, flow, changed, state_dir, "--groups", g["changed"], "--allow-rewind").returncode == 0
    tadmin.alter_group_offsets({g["changed"]: {(remote, 0): 21}})  # lower than the plan saw, but below 25
    r = mm2ctl("apply", str(changed), "--auto-approve", state=state_dir)
    assert r.returncode == 8 and "changed" in r.stderr, r.stderr  # backwards from what the plan saw
    fwd = state_dir / "forward.yaml"
    tadmin.alter_group_offsets({g["changed"]: {(remote, 0): 3}})
    assert _plan(lab, flow, fwd, state_dir, "--groups", g["changed"]).returncode == 0
    tadmin.alter_group_offsets({g["changed"]: {(remote, 0): 15}})
    journal = state_dir / "forward.jsonl"
    r = mm2ctl("apply", str(fwd), "--auto-approve", "--journal", str(journal), state=state_dir)
    assert r.returncode == 0 and "moved forward since planning" in r.stderr, r.stderr
    assert _group_offsets(lab.target.bootstrap, g["changed"]) == {(remote, 0): 20}
    assert mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir).returncode == 0
    assert _group_offsets(lab.target.bootstrap, g["changed"]) == {(remote, 0): 15}

    # Out of range: the target partition lost the planned position (retention, truncation) after planning.
    ranged = state_dir / "range.yaml"
    assert _plan(lab, flow, ranged, state_dir, "--groups", g["range"]).returncode == 0
    (res,) = tadmin.delete_records({(remote, 0): 25})
    assert res.error is None
    r = mm2ctl("apply", str(ranged), "--auto-approve", state=state_dir)
    assert r.returncode == 8 and "outside" in r.stderr, r.stderr
    assert _group_offsets(lab.target.bootstrap, g["range"]) == {}
    # Planning now refuses too: 20 is below the target's earliest offset.
    r = _plan(lab, flow, ranged, state_dir, "--groups", g["range"])
    assert r.returncode == 8 and "outside" in r.stderr, r.stderr


def _connector_state(lab: LabInfo, name: str) -> str:
    import requests

    return str(requests.get(f"{lab.connect_url}/connectors/{name}/status", timeout=10).json()["connector"]["state"])


def test_stop_mirroring_waits_stops_writes_and_rollback_resumes(lab: LabInfo, state_dir: Path) -> None:
    from tests.integration.support import consume_and_commit

    name = _name("fostop")
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%d" % i, 0) for i in range(50)])
    flow = lab_core.add_flow(lab, name)  # every role: the checkpoint connector emits checkpoints
    remote = _remote(lab, flow, topic)
    group = f"iso-{name}-g"
    assert consume_and_commit(lab.source.bootstrap, topic, group, 20) == 20
    eventually(lambda: _target_end(lab, remote) >= 50, timeout_s=120, what="replication")

    # The source is down: positions from MM2's checkpoints, and the plan names only the target cluster.
    down = state_dir / "down.yaml"
    r = eventually(
        lambda: (lambda p: p if p.returncode == 0 else None)(
            _plan(
                lab, flow, down, state_dir, "--groups", group, "--from", "checkpoints", "--source-unavailable", "--json"
            )
        ),
        timeout_s=90,
        interval_s=2,
        what="a checkpoint of the group",
    )
    doc = json.loads(r.stdout)
    assert list(doc["plan"]["clusters"]) == [flow.target_alias]
    assert [row["method"] for row in doc["rows"]] == ["checkpoint"]

    plan = state_dir / "stop.yaml"
    r = _plan(
        lab, flow, plan, state_dir, "--groups", group, "--stop-mirroring", "--connect-url", lab.connect_url, "--json"
    )
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    kinds = [s["kind"] for s in doc["plan"]["steps"]]
    assert kinds.count("connector_stop") == len(flow.connectors)
    if "group_offsets_write" in kinds:  # MM2's own offset sync may already have put the group at 20
        assert kinds[0] == "wait_for_catch_up" and kinds[-2:] == ["group_offsets_write", "group_offsets_verify"]
    print("failover steps:", kinds)
    (row,) = doc["rows"]
    assert row["target_offset"] == 20 and row["method"].startswith("verified")
    journal = state_dir / "j.jsonl"
    applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
    assert applied.returncode == 0, applied.stderr
    assert all(_connector_state(lab, c) == "STOPPED" for c in flow.connectors.values())
    assert _group_offsets(lab.target.bootstrap, group) == {(remote, 0): 20}
    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert all(_connector_state(lab, c) == "RUNNING" for c in flow.connectors.values())
