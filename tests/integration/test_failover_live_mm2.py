"""A failover planned and applied while MirrorMaker 2 keeps running and syncs 1,000 groups' offsets.

The flow runs every MM2 role, with ``sync.group.offsets`` every second. Its checkpoint connector is stopped
while the groups are committed and the plan is made, so the plan sees none of them on the target; it is
resumed before apply, and MM2 writes its own translation of the groups while apply runs. MM2's values are
at or below the plan's, so they neither make the plan stale nor fail a write: apply writes the plan over
them and the read-backs hold it against MM2's next sync rounds. ``--stop-mirroring`` instead stops the
checkpoint connector after the catch-up wait, before the first write.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import requests

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.remediate.journal import read_journal
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration

GROUPS = 1_000


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def _connector(lab: LabInfo, name: str, action: str, state: str) -> None:
    requests.put(f"{lab.connect_url}/connectors/{name}/{action}", timeout=30).raise_for_status()

    def reached() -> bool:
        body = requests.get(f"{lab.connect_url}/connectors/{name}/status", timeout=10).json()
        return bool(body["connector"]["state"] == state)

    eventually(reached, timeout_s=60, what=f"{name} {state}")


def _target(lab: LabInfo, groups: list[str]) -> dict[str, dict[TP, int]]:
    got = KafkaAdmin.connect(target_conf(lab)).committed_offsets(groups)
    return {g: r.offsets for g, r in got.items()}


def _watch_a_full_sync_round(lab: LabInfo, name: str, topic: str, remote: str) -> None:
    """Return once MM2 has run a whole group-offset sync round that began after this call.

    MM2 syncs groups in rounds, one at a time on one scheduler thread, each from the checkpoints it had when it
    began. A witness group committed now shows on the target in some round; a second one, committed only once
    the first shows, cannot be in that round, so when it shows the first round is over."""
    source = KafkaAdmin.connect(source_conf(lab))
    target = KafkaAdmin.connect(target_conf(lab))
    for witness in (f"iso-{name}-w1", f"iso-{name}-w2"):
        committed = source.alter_group_offsets({witness: {(topic, 0): 50}})
        assert not [r for rs in committed.values() for r in rs if r.error is not None]

        def synced(group: str = witness) -> bool:
            return (remote, 0) in target.committed_offsets([group])[group].offsets

        eventually(synced, timeout_s=90, what=f"MM2 syncing {witness}")


def test_apply_while_mm2_syncs_1000_groups(lab: LabInfo, state_dir: Path) -> None:
    name = "folive" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 2})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%d" % i, i % 2) for i in range(200)])
    flow = lab_core.add_flow(lab, name)  # every role; the checkpoint connector syncs group offsets every second
    remote = f"{flow.source_alias}.{topic}" if lab.replication_policy != "identity" else topic
    checkpoint = flow.connectors["checkpoint"]
    groups = [f"iso-{name}-g{i:04d}" for i in range(GROUPS)]
    pair = f"{flow.source_alias}->{flow.target_alias}"
    try:
        _connector(lab, checkpoint, "stop", "STOPPED")
        source = KafkaAdmin.connect(source_conf(lab))
        positions = {g: {(topic, p): 20 + i % 70 for p in (0, 1)} for i, g in enumerate(groups)}
        committed = source.alter_group_offsets(positions)
        assert not [r for rs in committed.values() for r in rs if r.error is not None]
        tadmin = KafkaAdmin.connect(target_conf(lab))
        eventually(
            lambda: all(b.latest == 100 for b in tadmin.partition_bounds([(remote, 0), (remote, 1)]).values()),
            timeout_s=120,
            what="replication",
        )

        plan = state_dir / "failover.yaml"
        r = mm2ctl(
            "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-g.*",
            "--out", str(plan), "--json", state=state_dir,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        doc = json.loads(r.stdout)
        planned: dict[str, dict[TP, int]] = {g: {} for g in groups}
        for row in doc["rows"]:
            planned[row["group"]][(row["target_topic"], row["partition"])] = row["target_offset"]
        steps = doc["plan"]["steps"]
        writes = [s for s in steps if s["kind"] == "group_offsets_write"]
        assert len(writes) == GROUPS and all(r["before_offset"] is None for s in writes for r in s["payload"]["rows"])
        # MM2 syncs this flow's groups every second: each read-back watches its group 2 x 1 s + 2 s.
        assert {s["payload"]["settle_seconds"] for s in steps if s["kind"] == "group_offsets_verify"} == {4.0}

        _connector(lab, checkpoint, "resume", "RUNNING")
        eventually(lambda: any(_target(lab, groups[:50]).values()), timeout_s=90, what="MM2 syncing the groups")

        # --stop-mirroring (not applied here): the checkpoint connector stops after the wait, before any write.
        stop_plan = state_dir / "stop.yaml"
        r = mm2ctl(
            "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-g.*",
            "--stop-mirroring", "--connect-url", lab.connect_url, "--out", str(stop_plan), "--json", state=state_dir,
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        stop_steps = json.loads(r.stdout)["plan"]["steps"]
        kinds = [(s["kind"], s["target"].get("connector")) for s in stop_steps]
        first_write = next(i for i, (k, _) in enumerate(kinds) if k == "group_offsets_write")
        assert kinds[0][0] == "wait_for_catch_up"
        assert ("connector_stop", checkpoint) in kinds[1:first_write]
        assert {s["payload"]["settle_seconds"] for s in stop_steps if s["kind"] == "group_offsets_verify"} == {0.0}

        journal = state_dir / "j.jsonl"
        applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
        assert applied.returncode == 0, applied.stderr
        assert "moved forward since planning" in applied.stderr, applied.stderr
        j = read_journal(journal)
        assert j.apply_status == "succeeded"
        moved_by_mm2 = [i for i in range(GROUPS) if j.steps[i].before["offsets"]]  # type: ignore[index]
        assert moved_by_mm2, "MM2 wrote none of the groups between planning and apply"
        assert _target(lab, groups) == planned
        _watch_a_full_sync_round(lab, name, topic, remote)
        assert _target(lab, groups) == planned, "an MM2 sync round after apply moved a group off the plan"
        print(f"MM2 had synced {len(moved_by_mm2)} of {GROUPS} groups after planning; apply wrote the plan over them")
    finally:
        for connector in flow.connectors.values():  # leave no flow syncing 1,000 groups in the shared lab
            requests.put(f"{lab.connect_url}/connectors/{connector}/stop", timeout=30)
