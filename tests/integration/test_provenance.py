"""Every offset ``apply`` writes names its plan and method in the commit's metadata (no leader epoch), and
``rollback`` tells mm2ctl's write from a commit made since, even one at the same offset."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration


def test_writes_carry_their_plan_and_rollback_refuses_a_later_commit_at_the_same_offset(
    lab: LabInfo, tmp_path: Path
) -> None:
    name = "prov" + uuid.uuid4().hex[:6]
    topic, group = f"iso-{name}-t", f"iso-{name}-g"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    flow = lab_core.add_flow(lab, name, roles=("source",))  # no checkpoints: MM2 never writes the group
    remote = f"{flow.source_alias}.{topic}"
    records.produce(source_conf(lab), topic, [(b"k", b"v%d" % i, 0) for i in range(100)])
    target = KafkaAdmin.connect(target_conf(lab))
    eventually(lambda: target.partition_bounds([(remote, 0)])[(remote, 0)].latest == 100, what="MM2 copied")
    KafkaAdmin.connect(source_conf(lab)).alter_group_offsets({group: {(topic, 0): 40}})

    plan, journal = tmp_path / "plan.yaml", tmp_path / "j.jsonl"
    pair = f"{flow.source_alias}->{flow.target_alias}"
    r = mm2ctl(
        "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", group, "--out", str(plan),
        "--json", state=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    plan_id = json.loads(r.stdout)["plan"]["plan_id"]
    applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=tmp_path)
    assert applied.returncode == 0, applied.stderr
    assert target.commit_metadata(group) == {(remote, 0): f"mm2ctl:{plan_id}:verified_delta"}

    # A consumer that read nothing new commits the same offset: its metadata is its own.
    written = target.committed_offsets([group])[group].offsets
    target.alter_group_offsets({group: written})
    refused = mm2ctl("rollback", str(journal), "--auto-approve", state=tmp_path)
    assert refused.returncode == 8, refused.stderr
    assert "committed again since the apply wrote them, not by mm2ctl" in refused.stderr
    assert target.committed_offsets([group])[group].offsets == written  # nothing rolled back
