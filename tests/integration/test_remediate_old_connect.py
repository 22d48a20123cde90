"""The tombstone method on Kafka 3.4.1, whose Connect has no stop and no offsets endpoints: the connector is
deleted, its offsets tombstoned byte-exactly in ``connect-offsets``, and re-created from the plan's config."""

from __future__ import annotations

from pathlib import Path

import pytest
import requests

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.connect_offsets_topic import latest_offsets
from mm2ctl.inspector.reads.mm2_position import read_position
from mm2ctl.lab.control import LabInfo
from mm2ctl.remediate.journal import Journal
from tests.integration.faulty_apply import Faults
from tests.integration.support import eventually, target_conf
from tests.integration.test_remediate import make_flow, mm2ctl

pytestmark = [pytest.mark.integration, pytest.mark.lab(version="3.4.1")]


def _stored(lab: LabInfo, connector: str) -> dict[tuple[int, bytes], bytes | None]:
    return {(s.partition, s.key): s.value for s in latest_offsets(target_conf(lab), "connect-offsets", connector)}


def _remote_count(lab: LabInfo, topic: str) -> int:
    return sum(1 for _ in records.read_partitions(target_conf(lab), topic))


def test_tombstones_with_delete_and_recreate_then_rollback(lab: LabInfo, tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    flow, topic = make_flow(lab, "oldtomb", topic_records=10, rest=False)
    connector = flow.connectors["source"]
    remote = f"{flow.source_alias}.{topic}"
    done = b'{"offset":4}'
    before = eventually(
        lambda: (s := _stored(lab, connector)) and len(s) == 2 and all(v == done for v in s.values()) and s,
        timeout_s=90,
        what="stored offsets",
    )
    assert _remote_count(lab, remote) == 10
    # inspect reads MM2's position from connect-offsets here: this worker has no offsets API.
    config = load_mm2_config(flow.mm2_config)
    with build_connect_client([lab.connect_url]) as connect:
        position = read_position(config, config.pair(f"{flow.source_alias}->{flow.target_alias}"), connect)
    assert position.read_from == f"{connector}'s records in connect-offsets on {flow.target_alias}", position
    assert position.next_offsets == {(topic, 0): 5, (topic, 1): 5}

    plan = state_dir / "p.yaml"
    r = mm2ctl(
        "plan",
        "reset-connector-offsets",
        "--pair",
        f"{flow.source_alias}->{flow.target_alias}",
        "--mm2-config",
        flow.mm2_config,
        "--connect-url",
        lab.connect_url,
        "--out",
        str(plan),
        state=state_dir,
    )
    assert r.returncode == 0, r.stderr
    kinds = [line.split()[1] for line in r.stdout.splitlines() if line.strip()[:2].strip().rstrip(".").isdigit()]
    assert kinds == ["connector_delete", "connect_offsets_tombstone", "connector_create"], r.stdout

    journal = state_dir / "j.jsonl"
    crashed = mm2ctl(
        "apply",
        str(plan),
        "--auto-approve",
        "--journal",
        str(journal),
        faults=Faults(kill_after_step=1),
        state=state_dir,
    )
    assert crashed.returncode == -9
    # Byte-exact keys on the right partitions: the newest record of every key is now a tombstone.
    assert all(v is None for v in _stored(lab, connector).values())
    assert requests.get(f"{lab.connect_url}/connectors/{connector}/status", timeout=10).status_code == 404

    res = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
    assert res.returncode == 0, res.stderr
    # The re-created connector found no offsets and replicated everything again.
    eventually(lambda: _remote_count(lab, remote) == 20, timeout_s=90, what="re-replication after the reset")
    with Journal.open(journal) as j:
        assert j.state.apply_status == "succeeded"

    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert _stored(lab, connector) == before
    status = requests.get(f"{lab.connect_url}/connectors/{connector}/status", timeout=10).json()
    assert status["connector"]["state"] == "RUNNING"
