"""``inspect`` and ``plan failover`` give the same translated offset for every group partition of the same
state: the one rule of ``core.translation.rule`` (inspect, and ``plan failover --source-unavailable``), and the
position proven by reading records (``inspect --exact``, and ``plan failover``). Each runs Spark twice over,
so each runs under one replication policy (the policies only rename the topics here; the failback and drill
tests cover both).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.codecs import (
    encode_checkpoint_key,
    encode_checkpoint_value,
    encode_offset_sync_key,
    encode_offset_sync_value,
)
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from tests.integration.support import source_conf, target_conf
from tests.integration.test_failback import _mirror
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def _inspect(mm2_config: str, state: Path, *extra: str) -> dict[tuple[str, int], dict[str, object]]:
    proc = mm2ctl("inspect", "--mm2-config", mm2_config, "--format", "json", "--quiet", *extra, state=state)
    assert proc.returncode in (0, 10), proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return {(str(r["group"]), int(r["partition"])): r for r in rows}


def _planned(proc_stdout: str) -> dict[tuple[str, int], int | None]:
    doc = json.loads(proc_stdout)
    return {(r["group"], r["partition"]): r["target_offset"] for r in doc["rows"]}


@pytest.mark.parametrize("policy", ["default"])
def test_out_of_order_syncs_translate_the_same_in_inspect_and_plan_failover(
    lab: LabInfo, policy: str, state_dir: Path, tmp_path: Path
) -> None:
    """Partition 0: the syncs 100->50, 254->159, 252->158, written in that order, and groups committed at 120
    and 253: MM2's own store forgets 100->50 at the out-of-order pair, the one rule keeps all three.
    Partition 1 holds two mappings (the source was recreated: upstream starts again at 0, appended to the same
    target), so inspect finds it tangled in its first pass and translates it again from the current mapping.
    Written by hand, on a flow with no connectors, so nothing else moves."""
    name = "ag" + uuid.uuid4().hex[:8]
    flow = lab_core.add_flow(lab, name, replication_policy=policy, offset_syncs_location="target", roles=())
    src = flow.source_alias
    topic = f"iso-{name}-t"
    remote = topic if policy == "identity" else f"{src}.{topic}"
    a, b = KafkaAdmin.connect(source_conf(lab)), KafkaAdmin.connect(target_conf(lab))
    a.create_topics({topic: 2})
    b.create_topics({remote: 2, f"mm2-offset-syncs.{src}.internal": 1, f"{src}.checkpoints.internal": 1})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%d" % i, i % 2) for i in range(600)])
    records.produce(target_conf(lab), remote, [(b"k%d" % i, b"v%d" % i, i % 2) for i in range(400)])
    p0, p1 = encode_offset_sync_key(topic, 0), encode_offset_sync_key(topic, 1)
    written = [(p0, 100, 50), (p1, 0, 0), (p1, 50, 50), (p0, 254, 159), (p1, 0, 100), (p0, 252, 158), (p1, 30, 130)]
    syncs = [(key, encode_offset_sync_value(u, d), 0) for key, u, d in written]
    records.produce(target_conf(lab), f"mm2-offset-syncs.{src}.internal", syncs)
    groups = {f"iso-{name}-low": 120, f"iso-{name}-high": 253}
    positions = {(g, p): c if p == 0 else c // 4 for g, c in groups.items() for p in (0, 1)}
    checkpoints = [
        (encode_checkpoint_key(g, remote, p), encode_checkpoint_value(c, 0), 0) for (g, p), c in positions.items()
    ]  # MM2's own translations are not what is compared: only the committed offsets they carry
    records.produce(target_conf(lab), f"{src}.checkpoints.internal", checkpoints)
    for g in groups:
        a.alter_group_offsets({g: {(topic, p): positions[(g, p)] for p in (0, 1)}})

    rows = _inspect(flow.mm2_config, state_dir)
    translated = {key: rows[key]["translated_offset"] for key in positions}
    low, high = f"iso-{name}-low", f"iso-{name}-high"
    # p1: the current mapping is 0->100, 30->130 only (the group at 30 is exact, at 63 it is 30->130 + 1).
    assert translated == {(low, 0): 51, (high, 0): 159, (low, 1): 130, (high, 1): 131}
    assert rows[(low, 1)]["sync_count"] == 2
    plan = mm2ctl(
        "plan", "failover", "--pair", f"{src}->{flow.target_alias}", "--mm2-config", flow.mm2_config,
        "--source-unavailable", "--json", "--out", str(tmp_path / "p.yaml"), state=state_dir,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    assert _planned(plan.stdout) == translated


@pytest.mark.parametrize("policy", ["identity"])
def test_inspect_exact_positions_are_what_plan_failover_writes(
    lab: LabInfo, policy: str, state_dir: Path, tmp_path: Path
) -> None:
    """A real MM2 copy of a log with a transaction marker after every record: ``inspect --exact`` reads the
    records for every translation that is not exact, and lands where ``plan failover`` (verified, or by
    timestamp) does, with true replay and skip counts."""
    m = _mirror(lab, policy, partitions=2, n=150)
    name = m.flow.source_alias[:-3]
    committed = {f"iso-{name}-g{i}": {0: 7 + 37 * i, 1: 300 - 41 * i} for i in range(4)}
    for g, offsets in committed.items():
        m.a.alter_group_offsets({g: {(m.topic, p): o for p, o in offsets.items()}})
    plan = m.plan("failover", tmp_path / "p.yaml", state_dir, "--json")
    assert plan.returncode == 0, plan.stderr
    planned = _planned(plan.stdout)
    rows = _inspect(m.flow.mm2_config, state_dir, "--exact")
    assert {k: r["translated_offset"] for k, r in rows.items()} == planned
    for r in rows.values():
        assert r["translation_method"] in (
            "offset_sync_exact",
            "verified_delta",
            "verified_search",
            "timestamp_verified",
        )
        assert r["target_offset"] is None and r["replay_if_failover_now"] is None  # no target offset: nothing to count
