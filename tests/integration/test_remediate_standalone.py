"""The remediations applied one by one (not as reset-mm2), against the real lab, driving ``mm2ctl``.

One isolated flow per test (``lab.add_flow``); effects are read back from Connect's REST API and Kafka,
never from mm2ctl's own output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from tests.integration.faulty_apply import Faults
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import make_flow, mm2ctl, offsets, syncs
from tests.reference_codecs import decode_offset_sync

pytestmark = pytest.mark.integration


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def status(lab: LabInfo, connector: str) -> dict[str, Any]:
    body: dict[str, Any] = requests.get(f"{lab.connect_url}/connectors/{connector}/status", timeout=10).json()
    return body


def conn_state(lab: LabInfo, connector: str) -> str:
    return str(status(lab, connector)["connector"]["state"])


def plan_and_apply(
    lab: LabInfo, flow: LabFlow, state_dir: Path, name: str, *plan_args: str, faults: Faults | None = None
) -> tuple[Path, Path, Any]:
    """``mm2ctl plan …`` then ``apply --auto-approve`` (under ``faults``, if any); returns (plan, journal, apply
    result)."""
    plan, journal = state_dir / f"{name}.yaml", state_dir / f"{name}.jsonl"
    r = mm2ctl(
        "plan",
        *plan_args,
        "--mm2-config",
        flow.mm2_config,
        "--connect-url",
        lab.connect_url,
        "--out",
        str(plan),
        state=state_dir,
    )
    assert r.returncode == 0, r.stderr
    a = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), faults=faults, state=state_dir)
    return plan, journal, a


def rollback(journal: Path, state_dir: Path) -> None:
    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr


def plan_steps(plan: Path) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = yaml.safe_load(plan.read_text())["steps"]
    return steps


def end_offset(conf: dict[str, str], topic: str, partition: int) -> int:
    bounds = KafkaAdmin.connect(conf).partition_bounds([(topic, partition)])[(topic, partition)]
    assert bounds.latest is not None
    return bounds.latest


def values(conf: dict[str, str], topic: str, partition: int, start: int, end: int) -> list[bytes | None]:
    return [
        r.value
        for r in records.read_partitions(conf, topic, [partition], start={partition: start}, end={partition: end})
    ]


# --------------------------------------------------------------------------------------------- connectors


def test_connectors_stop_pause_resume_restart_and_rollback(lab: LabInfo, state_dir: Path) -> None:
    flow = lab_core.add_flow(lab, "sacon", roles=("source", "heartbeat"))
    src, hb = flow.connectors["source"], flow.connectors["heartbeat"]
    pair = f"{flow.source_alias}->{flow.target_alias}"

    # stop by --pair/--role: each step waits, so the state is there the moment apply returns.
    plan, j_stop, a = plan_and_apply(
        lab, flow, state_dir, "stop", "connectors", "stop", "--pair", pair, "--role", "source,heartbeat"
    )
    assert a.returncode == 0, a.stderr
    assert [s["kind"] for s in plan_steps(plan)] == ["connector_stop", "connector_stop"]
    for name in (src, hb):
        st = status(lab, name)
        assert st["connector"]["state"] == "STOPPED" and st["tasks"] == []  # a stopped connector has no tasks

    # resume one by --connector; the other stays stopped.
    _, j_resume, a = plan_and_apply(lab, flow, state_dir, "resume", "connectors", "resume", "--connector", src)
    assert a.returncode == 0, a.stderr
    st = status(lab, src)
    assert st["connector"]["state"] == "RUNNING" and conn_state(lab, hb) == "STOPPED"
    rollback(j_resume, state_dir)  # back to what that apply found: STOPPED
    assert conn_state(lab, src) == "STOPPED"
    rollback(j_stop, state_dir)
    assert conn_state(lab, src) == "RUNNING" and conn_state(lab, hb) == "RUNNING"

    # pause both by --connector, and the no-op plan when there is nothing to change.
    _, j_pause, a = plan_and_apply(
        lab, flow, state_dir, "pause", "connectors", "pause", "--connector", src, "--connector", hb
    )
    assert a.returncode == 0, a.stderr
    assert conn_state(lab, src) == "PAUSED" and conn_state(lab, hb) == "PAUSED"
    again = mm2ctl(
        "plan",
        "connectors",
        "pause",
        "--pair",
        pair,
        "--mm2-config",
        flow.mm2_config,
        "--connect-url",
        lab.connect_url,
        "--out",
        str(state_dir / "noop.yaml"),
        "--detailed-exitcode",
        state=state_dir,
    )
    assert again.returncode == 0 and "nothing to do" in again.stdout
    # A paused MirrorSourceConnector replicates nothing; once rolled back to RUNNING it catches up.
    topic = "iso-sacon-orders"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    records.produce(source_conf(lab), topic, [(b"k", b"while-paused", 0)])
    rollback(j_pause, state_dir)
    assert conn_state(lab, src) == "RUNNING" and conn_state(lab, hb) == "RUNNING"
    remote = f"{flow.source_alias}.{topic}"
    eventually(
        lambda: (
            remote in KafkaAdmin.connect(target_conf(lab)).list_topics()
            and end_offset(target_conf(lab), remote, 0) == 1
        ),
        timeout_s=60,
        what="replication after resume",
    )

    # restart by --pair: tasks are restarted and RUNNING again; rollback has nothing to undo.
    before_tasks = status(lab, src)["tasks"]
    assert before_tasks
    plan, j_restart, a = plan_and_apply(
        lab, flow, state_dir, "restart", "connectors", "restart", "--pair", pair, "--role", "source"
    )
    assert a.returncode == 0, a.stderr
    assert [s["kind"] for s in plan_steps(plan)] == ["connector_restart"]
    st = status(lab, src)
    assert st["connector"]["state"] == "RUNNING" and all(t["state"] == "RUNNING" for t in st["tasks"])
    rb = mm2ctl("rollback", str(j_restart), "--auto-approve", state=state_dir)
    assert rb.returncode == 0 and "nothing_to_undo" in rb.stdout


# ----------------------------------------------------------------------------------- truncate-offset-syncs


def test_truncate_offset_syncs_standalone(lab: LabInfo, state_dir: Path) -> None:
    flow, _topic = make_flow(lab, "satrunc")
    src = flow.connectors["source"]
    pair = f"{flow.source_alias}->{flow.target_alias}"
    syncs_topic = f"mm2-offset-syncs.{flow.target_alias}.internal"

    # Refused while MirrorSourceConnector runs: it would keep writing syncs.
    refused = mm2ctl(
        "plan",
        "truncate-offset-syncs",
        "--pair",
        pair,
        "--mm2-config",
        flow.mm2_config,
        "--connect-url",
        lab.connect_url,
        "--out",
        str(state_dir / "refused.yaml"),
        state=state_dir,
    )
    assert refused.returncode == 7, refused.stderr
    assert f"{src} is RUNNING" in refused.stderr and "needs it STOPPED" in refused.stderr
    assert not (state_dir / "refused.yaml").exists()

    _, _, a = plan_and_apply(lab, flow, state_dir, "stop", "connectors", "stop", "--pair", pair, "--role", "source")
    assert a.returncode == 0, a.stderr
    before = syncs(lab, flow)
    end_at_plan = end_offset(source_conf(lab), syncs_topic, 0)
    assert before and end_at_plan >= len(before)

    # Crash after the backup, let MM2 run again, resume: the truncate step's own precondition refuses.
    plan, journal, a = plan_and_apply(
        lab,
        flow,
        state_dir,
        "trunc",
        "truncate-offset-syncs",
        "--pair",
        pair,
        faults=Faults(kill_after_step=0),
    )
    assert a.returncode == -9
    steps = plan_steps(plan)
    assert [s["kind"] for s in steps] == ["offset_syncs_backup", "offset_syncs_truncate"]
    assert steps[1]["payload"]["before_offset"] == end_at_plan
    backup = journal.parent / f"{journal.stem}.{steps[0]['payload']['backup_file']}"
    assert backup.exists()
    header, *rows = [json.loads(line) for line in backup.read_text().splitlines()]
    assert header["count"] == len(rows) and header["up_to_offset"] == end_at_plan
    assert [(r["key_b64"], r["value_b64"]) for r in rows] == [(_b64(k), _b64(v)) for k, v in before]
    requests.put(f"{lab.connect_url}/connectors/{src}/resume", timeout=10).raise_for_status()
    eventually(lambda: conn_state(lab, src) == "RUNNING", timeout_s=30, what="resumed")
    res = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
    assert res.returncode == 8, res.stderr
    assert "precondition does not hold" in res.stderr and f"{src} is RUNNING, expected STOPPED" in res.stderr
    low = KafkaAdmin.connect(source_conf(lab)).partition_bounds([(syncs_topic, 0)])[(syncs_topic, 0)]
    assert low.earliest == 0  # nothing was deleted

    # Stopped again: resume completes; records below the plan-time end are gone, nothing else is.
    requests.put(f"{lab.connect_url}/connectors/{src}/stop", timeout=10).raise_for_status()
    eventually(lambda: conn_state(lab, src) == "STOPPED", timeout_s=30, what="stopped")
    res = mm2ctl("apply", "--resume", str(journal), "--auto-approve", state=state_dir)
    assert res.returncode == 0, res.stderr
    low = KafkaAdmin.connect(source_conf(lab)).partition_bounds([(syncs_topic, 0)])[(syncs_topic, 0)]
    assert low.earliest == end_at_plan
    assert syncs(lab, flow) == []

    # Rollback re-produces the backed-up records (at new offsets), while the connector is still stopped.
    rollback(journal, state_dir)
    after = syncs(lab, flow)
    assert after[-len(before) :] == before
    low = KafkaAdmin.connect(source_conf(lab)).partition_bounds([(syncs_topic, 0)])[(syncs_topic, 0)]
    assert low.earliest == end_at_plan and low.latest is not None and low.latest >= end_at_plan + len(before)


def _b64(data: bytes | None) -> str | None:
    import base64

    return None if data is None else base64.b64encode(data).decode("ascii")


# -------------------------------------------------------------------------------- reset-connector-offsets


def test_reset_connector_offsets_to_explicit_position(lab: LabInfo, state_dir: Path) -> None:
    flow, topic = make_flow(lab, "sapos")  # 6 records per partition replicated; stored offsets 5 and 5
    src = flow.connectors["source"]
    remote = f"{flow.source_alias}.{topic}"
    before = offsets(lab, flow)
    assert [o["offset"]["offset"] for o in before] == [5, 5]

    # Position 2 on partition 0: stop, PATCH, resume. Killed after the PATCH, Connect shows exactly it.
    plan, journal, a = plan_and_apply(
        lab,
        flow,
        state_dir,
        "pos",
        "reset-connector-offsets",
        "--connector",
        src,
        "--position",
        f"{topic}:0=2",
        faults=Faults(kill_after_step=1),
    )
    assert a.returncode == -9, a.stderr
    assert [s["kind"] for s in plan_steps(plan)] == ["connector_stop", "connect_offsets_patch", "connector_resume"]
    assert conn_state(lab, src) == "STOPPED"
    now = offsets(lab, flow)
    # Position N = "replicate upstream offset N next"; MirrorSourceConnector stores the last one done, N-1.
    assert [o["offset"]["offset"] for o in now] == [1, 5]
    assert now[1] == before[1]

    # Rollback from there restores the exact before-offsets and runs the connector again: no duplicates.
    rollback(journal, state_dir)
    assert conn_state(lab, src) == "RUNNING" and offsets(lab, flow) == before
    records.produce(source_conf(lab), topic, [(b"k-new", b"v-new", 0)])
    eventually(
        lambda: [o["offset"]["offset"] for o in offsets(lab, flow)] == [6, 5],
        timeout_s=60,
        what="the new record replicated",
    )
    assert end_offset(target_conf(lab), remote, 0) == 7  # 6 + 1, nothing copied twice

    # Applied for real: after the resume MM2 replicates partition 0 again from upstream offset 2.
    _, _, a = plan_and_apply(
        lab, flow, state_dir, "pos2", "reset-connector-offsets", "--connector", src, "--position", f"{topic}:0=2"
    )
    assert a.returncode == 0, a.stderr
    assert conn_state(lab, src) == "RUNNING"
    eventually(lambda: end_offset(target_conf(lab), remote, 0) == 7 + 5, timeout_s=60, what="re-replication")
    assert values(target_conf(lab), remote, 0, 7, 12) == values(source_conf(lab), topic, 0, 2, 7)
    assert end_offset(target_conf(lab), remote, 1) == 6  # partition 1 untouched
    eventually(
        lambda: [o["offset"]["offset"] for o in offsets(lab, flow)] == [6, 5],
        timeout_s=60,
        what="offsets committed again",
    )


def test_reset_connector_offsets_resume_at_target_preset(lab: LabInfo, state_dir: Path) -> None:
    flow, topic = make_flow(lab, "sapreset")
    src = flow.connectors["source"]
    remote = f"{flow.source_alias}.{topic}"
    # The connector lost its offsets (it would re-copy everything), and the source moved on meanwhile.
    requests.put(f"{lab.connect_url}/connectors/{src}/stop", timeout=10).raise_for_status()
    eventually(lambda: conn_state(lab, src) == "STOPPED", timeout_s=30, what="stopped")
    requests.delete(f"{lab.connect_url}/connectors/{src}/offsets", timeout=30).raise_for_status()
    assert offsets(lab, flow) == []
    records.produce(source_conf(lab), topic, [(b"late%d" % i, b"late%d" % i, 0) for i in range(3)])

    # What the preset must compute, worked out here from the newest sync and the target's end offsets.
    newest: dict[int, tuple[int, int]] = {}
    for k, v in syncs(lab, flow):
        s = decode_offset_sync(k, v)
        newest[s.partition] = (s.upstream_offset, s.downstream_offset)
    expected = {}
    for p in (0, 1):
        u, d = newest[p]
        expected[p] = u + (end_offset(target_conf(lab), remote, p) - d)
    assert expected == {0: 6, 1: 6}  # where the target is, not the source's end (9 on partition 0)

    pair = f"{flow.source_alias}->{flow.target_alias}"
    plan, journal, a = plan_and_apply(
        lab, flow, state_dir, "preset", "reset-connector-offsets", "--pair", pair, "--preset", "resume-at-target"
    )
    assert a.returncode == 0, a.stderr
    (patch,) = plan_steps(plan)  # already STOPPED: no stop, and it stays stopped
    assert patch["kind"] == "connect_offsets_patch"
    planned = {o["partition"]["partition"]: o["offset"] for o in patch["payload"]["offsets"]}
    assert planned == {p: {"offset": n - 1} for p, n in expected.items()}
    assert [o["offset"] for o in offsets(lab, flow)] == [{"offset": 5}, {"offset": 5}]

    rollback(journal, state_dir)  # the exact before-offsets: none
    assert offsets(lab, flow) == [] and conn_state(lab, src) == "STOPPED"

    a = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(state_dir / "again.jsonl"), state=state_dir)
    assert a.returncode == 0, a.stderr  # the rollback left exactly the state the plan was made from
    _, _, a = plan_and_apply(lab, flow, state_dir, "go", "connectors", "resume", "--connector", src)
    assert a.returncode == 0, a.stderr
    eventually(lambda: end_offset(target_conf(lab), remote, 0) == 9, timeout_s=60, what="the late records")
    assert values(target_conf(lab), remote, 0, 6, 9) == [b"late0", b"late1", b"late2"]
    eventually(
        lambda: [o["offset"]["offset"] for o in offsets(lab, flow)] == [8, 5], timeout_s=60, what="offsets committed"
    )
    assert end_offset(target_conf(lab), remote, 0) == 9 and end_offset(target_conf(lab), remote, 1) == 6
