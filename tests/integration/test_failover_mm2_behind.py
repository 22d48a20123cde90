"""A failover while MirrorMaker 2 lags thousands of records behind the source: its producer on the target is
throttled with a client quota (``lab.quotas``), so MM2 keeps running and copying, only slowly.

- ``--stop-mirroring``: the plan defers the rows MM2 has not copied up to; apply waits until MM2 has copied
  every partition the groups have offsets on (one of them gets no write), stops it, translates the deferred
  rows, and writes. Every source record is then on the target, and each group resumes exactly after what it
  read, by content; a group at the log end, and one on an empty partition, go to the target's log end.
- Without it, the plan refuses (exit 21) unless ``--accept-cautious``; MM2's own sync then moves a target
  group past that cautious plan before apply, and apply writes no group at all, naming the one that moved.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import requests

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.kafka.records import read_partitions
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.lab.quotas import set_producer_quota, task_producer_client_id
from mm2ctl.remediate.journal import read_journal
from tests.integration.faulty_apply import Faults
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration

HEAD, TAIL = 300, 3_000  # records copied before the throttle, and produced while MM2 is throttled
#: MM2's copy rate on the target while throttled: about 60 records of ~130 bytes a second.
THROTTLE_BYTES_PER_S = 8_000


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def _value(seq: int) -> bytes:
    return b"seq=%06d " % seq + b"x" * 100


def _seq(value: bytes | None) -> int:
    assert value is not None
    return int(value[4:10])


def _mm2_next(lab: LabInfo, connector: str, topic: str, partition: int) -> int:
    """MM2's next source offset to copy, from its stored position (0: nothing stored yet)."""
    body = requests.get(f"{lab.connect_url}/connectors/{connector}/offsets", timeout=10).json()
    for o in body.get("offsets", []):
        if o["partition"].get("topic") == topic and o["partition"].get("partition") == partition:
            return int(o["offset"]["offset"]) + 1
    return 0


def _lagging_flow(lab: LabInfo, name: str) -> tuple[LabFlow, str, str]:
    """A flow whose topic has partition 0 (``HEAD`` records copied, then ``TAIL`` produced with MM2
    throttled), partition 1 (50 records, copied) and partition 2 (empty)."""
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 3})
    flow = lab_core.add_flow(lab, name)  # every role; MM2 syncs group offsets every second
    remote = f"{flow.source_alias}.{topic}" if lab.replication_policy != "identity" else topic
    records.produce(source_conf(lab), topic, [(b"k%d" % i, _value(i), 0) for i in range(HEAD)])
    records.produce(source_conf(lab), topic, [(b"k%d" % i, _value(i), 1) for i in range(50)])
    tadmin = KafkaAdmin.connect(target_conf(lab))
    eventually(
        lambda: [tadmin.partition_bounds([(remote, p)])[(remote, p)].latest for p in (0, 1)] == [HEAD, 50],
        timeout_s=120,
        what="the head copied",
    )
    client = task_producer_client_id(flow.connectors["source"])
    set_producer_quota(lab, client, THROTTLE_BYTES_PER_S)
    records.produce(source_conf(lab), topic, [(b"k%d" % i, _value(i), 0) for i in range(HEAD, HEAD + TAIL)])
    return flow, topic, remote


def _set_connector(lab: LabInfo, connector: str, action: str, state: str) -> None:
    """``PUT /connectors/<c>/<action>`` (pause, resume), then wait until the connector reports ``state``."""
    requests.put(f"{lab.connect_url}/connectors/{connector}/{action}", timeout=10).raise_for_status()
    eventually(
        lambda: (
            requests.get(f"{lab.connect_url}/connectors/{connector}/status", timeout=10).json()["connector"]["state"]
            == state
        ),
        what=f"{connector} {state}",
    )


def _connector_state(lab: LabInfo, connector: str) -> str:
    return str(
        requests.get(f"{lab.connect_url}/connectors/{connector}/status", timeout=10).json()["connector"]["state"]
    )


def _target_offsets(lab: LabInfo, groups: list[str]) -> dict[str, dict[TP, int]]:
    got = KafkaAdmin.connect(target_conf(lab)).committed_offsets(groups)
    return {g: r.offsets for g, r in got.items()}


def _seq_at(lab: LabInfo, topic: str, partition: int, offset: int) -> int:
    """The sequence number of the first record at or after ``offset`` on the target."""
    for rec in read_partitions(target_conf(lab), topic, [partition], start={partition: offset}):
        return _seq(rec.value)
    raise AssertionError(f"no record at or after {topic}/{partition}@{offset}")


def test_stop_mirroring_copies_everything_then_translates(lab: LabInfo, state_dir: Path) -> None:
    name = "behind" + uuid.uuid4().hex[:6]
    flow, topic, remote = _lagging_flow(lab, name)
    client = task_producer_client_id(flow.connectors["source"])
    mid, end = f"iso-{name}-mid", f"iso-{name}-end"
    pair = f"{flow.source_alias}->{flow.target_alias}"
    try:
        source = KafkaAdmin.connect(source_conf(lab))
        source.alter_group_offsets(
            {
                mid: {(topic, 0): 1_800, (topic, 1): 50, (topic, 2): 0},
                end: {(topic, 0): HEAD + TAIL, (topic, 1): 20},
            }
        )
        eventually(
            lambda: _mm2_next(lab, flow.connectors["source"], topic, 0) > HEAD,
            timeout_s=60,
            what="MM2 copying, throttled",
        )
        at = _mm2_next(lab, flow.connectors["source"], topic, 0)
        assert at < 1_800 - 500, "MM2 is not behind the groups"
        print(f"\nMM2 had copied {at} of {HEAD + TAIL} records of p0 before planning")

        refused = mm2ctl(
            "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*",
            "--connect-url", lab.connect_url, "--out", str(state_dir / "no-stop.yaml"), state=state_dir,
        )  # fmt: skip
        assert refused.returncode == 21, refused.stderr
        assert "MM2 has not copied up to the position" in refused.stderr and mid in refused.stderr

        plan = state_dir / "failover.yaml"
        r = mm2ctl(
            "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*",
            "--stop-mirroring", "--connect-url", lab.connect_url, "--out", str(plan), "--json", state=state_dir,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        methods = {(row["group"], row["partition"]): row["method"] for row in doc["rows"]}
        assert methods[(mid, 0)] == methods[(end, 0)] == "after_catch_up", methods
        assert methods[(mid, 1)] == methods[(mid, 2)] == "log_end", methods  # copied to its end; empty
        steps = doc["plan"]["steps"]
        kinds = [s["kind"] for s in steps]
        wait = steps[kinds.index("wait_for_catch_up")]
        # Partition 2 gets no write of its own need (empty), yet the wait covers every partition read.
        assert {(t["topic"], t["partition"]) for t in wait["payload"]["targets"]} == {(topic, p) for p in range(3)}
        translate = kinds.index("group_offsets_translate")
        assert kinds.index("wait_for_catch_up") < kinds.index("connector_stop") < translate
        assert translate < kinds.index("group_offsets_write")

        shown = mm2ctl("show", str(plan), state=state_dir)
        assert shown.returncode == 0 and "MM2 had not copied up to" in shown.stdout, shown.stdout

        journal = state_dir / "j.jsonl"
        applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
        assert applied.returncode == 0, applied.stderr
        print("\n".join(ln for ln in applied.stderr.splitlines() if "MM2 caught up" in ln or "translated" in ln))
        j = read_journal(journal)
        assert j.apply_status == "succeeded"
        order = list(j.completed_steps)
        waited, stopped = kinds.index("wait_for_catch_up"), [i for i, k in enumerate(kinds) if k == "connector_stop"]
        assert all(order.index(waited) < order.index(i) for i in stopped)  # nothing stopped before the catch-up
        translated = {
            (g, p): (o, m)
            for g, _t, p, o, m in j.steps[translate].after["rows"]  # type: ignore[index]
        }
        assert {m for _o, m in translated.values()} <= {"verified_delta", "verified_search", "log_end"}, translated

        # Every source record is on the target, once and in order.
        copied = [_seq(rec.value) for rec in read_partitions(target_conf(lab), remote, [0])]
        assert copied == list(range(HEAD + TAIL))
        got = _target_offsets(lab, [mid, end])
        assert got[end][(remote, 0)] == HEAD + TAIL and got[mid][(remote, 1)] == 50 and got[mid][(remote, 2)] == 0
        assert _seq_at(lab, remote, 0, got[mid][(remote, 0)]) == 1_800  # resumes exactly where it stopped
        assert _seq_at(lab, remote, 1, got[end][(remote, 1)]) == 20
    finally:
        set_producer_quota(lab, client, None)


def test_mm2_moving_a_group_after_planning_refuses_every_write(lab: LabInfo, state_dir: Path) -> None:
    name = "moved" + uuid.uuid4().hex[:6]
    flow, topic, remote = _lagging_flow(lab, name)
    client = task_producer_client_id(flow.connectors["source"])
    early, late = f"iso-{name}-a-early", f"iso-{name}-b-late"  # planned and written in this order
    pair = f"{flow.source_alias}->{flow.target_alias}"
    checkpoint = flow.connectors["checkpoint"]
    throttled = True
    try:
        # MM2's sync is held until the plan is made, so the plan writes both groups: otherwise MM2 may have
        # written the late group's cautious answer, the plan's own, first, and the plan would leave it alone.
        _set_connector(lab, checkpoint, "pause", "PAUSED")
        committed = {early: {(topic, 1): 20}, late: {(topic, 0): HEAD + TAIL}}
        KafkaAdmin.connect(source_conf(lab)).alter_group_offsets(committed)
        plan = state_dir / "cautious.yaml"
        r = mm2ctl(
            "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*",
            "--connect-url", lab.connect_url, "--accept-cautious", "--out", str(plan), "--json", state=state_dir,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        assert any("--accept-cautious" in n and "replays at most" in n for n in doc["plan"]["notes"])
        planned = {(row["group"], row["partition"]): row["target_offset"] for row in doc["rows"]}
        written = {s["target"]["group"] for s in doc["plan"]["steps"] if s["kind"] == "group_offsets_write"}
        assert written == {early, late}

        # MM2 catches up and its own sync moves the late group, at the log end, past the cautious plan. (A
        # group short of the log end might keep its translation: MM2 keeps only some of its older syncs.)
        _set_connector(lab, checkpoint, "resume", "RUNNING")
        set_producer_quota(lab, client, None)
        throttled = False
        eventually(
            lambda: _target_offsets(lab, [late])[late].get((remote, 0), 0) > planned[(late, 0)],
            timeout_s=180,
            what="MM2's sync moving the group past the plan",
        )
        before = _target_offsets(lab, [early, late])
        journal = state_dir / "j.jsonl"
        applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
        assert applied.returncode == 8, applied.stderr
        print(f"\n{applied.stderr}")
        assert late in applied.stderr and "none was written" in applied.stderr, applied.stderr
        assert "changed from" in applied.stderr
        j = read_journal(journal)
        assert not any(rec.kind == "group_offsets_write" for rec in j.steps.values())  # no write even started
        after = _target_offsets(lab, [early, late])
        assert after[early] == before[early]  # the early group, first in the plan, was not written either
    finally:
        if throttled:
            set_producer_quota(lab, client, None)


@pytest.mark.extended
def test_a_plan_translated_after_the_catch_up_resumes_from_its_journal_then_rolls_back(
    lab: LabInfo, state_dir: Path
) -> None:
    """Apply killed right after the translation that follows the catch-up: ``apply --resume`` writes the
    answers that translation journaled (the group resumes exactly after what it read), and rollback then
    deletes the group it created and puts the connectors the plan stopped back as they were."""
    name = "behindrr" + uuid.uuid4().hex[:6]
    flow, topic, remote = _lagging_flow(lab, name)
    client = task_producer_client_id(flow.connectors["source"])
    mid = f"iso-{name}-mid"
    pair = f"{flow.source_alias}->{flow.target_alias}"
    try:
        _set_connector(lab, flow.connectors["checkpoint"], "pause", "PAUSED")  # MM2 writes no group meanwhile
        KafkaAdmin.connect(source_conf(lab)).alter_group_offsets({mid: {(topic, 0): 1_800, (topic, 1): 50}})
        plan, journal = state_dir / "failover.yaml", state_dir / "j.jsonl"
        r = mm2ctl(
            "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", mid,
            "--stop-mirroring", "--connect-url", lab.connect_url, "--out", str(plan), "--json", state=state_dir,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        kinds = [s["kind"] for s in json.loads(r.stdout)["plan"]["steps"]]
        translate, write = kinds.index("group_offsets_translate"), kinds.index("group_offsets_write")
        crashed = mm2ctl(
            "apply", str(plan), "--auto-approve", "--journal", str(journal),
            faults=Faults(kill_after_step=translate), state=state_dir,
        )  # fmt: skip
        assert crashed.returncode == -9, crashed.stderr
        j = read_journal(journal)
        assert translate in j.completed_steps and write not in j.completed_steps
        answers = {(g, p): o for g, _t, p, o, _m in j.steps[translate].after["rows"]}  # type: ignore[index]

        resumed = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
        assert resumed.returncode == 0, resumed.stderr
        got = _target_offsets(lab, [mid])[mid]
        assert got[(remote, 0)] == answers[(mid, 0)] and _seq_at(lab, remote, 0, got[(remote, 0)]) == 1_800
        assert read_journal(journal).apply_status == "succeeded"

        undone = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
        assert undone.returncode == 0, undone.stderr
        j = read_journal(journal)
        assert j.rollback_status == "succeeded" and write in j.rolled_back_steps, j.rollback_steps
        assert j.rollback_steps[write].outcome == "group_deleted", j.rollback_steps[write]
        states = {role: _connector_state(lab, flow.connectors[role]) for role in ("source", "checkpoint")}
        assert states == {"source": "RUNNING", "checkpoint": "PAUSED"}, states  # as before the apply
    finally:
        set_producer_quota(lab, client, None)
