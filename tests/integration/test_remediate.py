"""Plan / apply / rollback against the real lab, driving ``mm2ctl`` as a subprocess.

Every test works on its own isolated MM2 flow (``lab.add_flow``): its own connector, offset-syncs topic and
``iso-<name>-…`` topics, so stopping, resetting and truncating never touches the lab's own flow.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.plans.serialize import load_plan
from mm2ctl.remediate.journal import Journal
from tests.integration.faulty_apply import Faults
from tests.integration.support import eventually, source_conf

pytestmark = pytest.mark.integration

SECRET_SSL = "s3cr3t-ssl-Pw-" + uuid.uuid4().hex[:8]
SECRET_CONNECT = "s3cr3t-connect-Pw-" + uuid.uuid4().hex[:8]


def mm2ctl(
    *args: str, env: dict[str, str] | None = None, state: Path, faults: Faults | None = None
) -> subprocess.CompletedProcess[str]:
    """``mm2ctl ARGS`` in a process of its own; with ``faults``, under ``faulty_apply`` (killed or held there)."""
    full = {**os.environ, "MM2CTL_STATE_DIR": str(state), **(env or {})}
    full.pop("MM2CTL_CONNECT_URL", None)
    program = faults.command() if faults is not None else [sys.executable, "-m", "mm2ctl"]
    proc = subprocess.run([*program, *args], capture_output=True, text=True, env=full, timeout=300)
    log = state / "cli.log"
    with open(log, "a", encoding="utf-8") as fh:
        # Only what mm2ctl itself printed: the argv may carry a password the test passed on purpose.
        fh.write(f"$ mm2ctl {args[0]}\n{proc.stdout}\n{proc.stderr}\nrc={proc.returncode}\n")
    return proc


def make_flow(lab: LabInfo, name: str, topic_records: int = 12, *, rest: bool = True) -> tuple[LabFlow, str]:
    """A source-only flow with one replicated two-partition topic, replicated and offset-committed."""
    flow = lab_core.add_flow(lab, name, roles=("source",))
    topic = f"iso-{name}-orders"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 2})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%d" % i, i % 2) for i in range(topic_records)])
    want = topic_records // 2 - 1
    if not rest:  # Connect < 3.5 has no GET .../offsets; the caller reads connect-offsets itself
        return flow, topic
    eventually(
        lambda: len(offsets(lab, flow)) == 2 and all(o["offset"]["offset"] == want for o in offsets(lab, flow)),
        timeout_s=90,
        what="the flow's source offsets committed",
    )
    return flow, topic


def offsets(lab: LabInfo, flow: LabFlow) -> list[dict[str, Any]]:
    """The source connector's offsets from Connect's REST API. A partition listed with a null offset has none
    (a worker can list just-deleted partitions that way for a moment), so it is left out, as mm2ctl does."""
    body = requests.get(f"{lab.connect_url}/connectors/{flow.connectors['source']}/offsets", timeout=10).json()
    # MM2 copies every heartbeats topic of the source whatever its topic filter, and other tests' flows leave
    # some on the shared lab's source: only the flow's own topics count here.
    live = [
        o for o in body["offsets"] if o.get("offset") is not None and not o["partition"]["topic"].endswith("heartbeats")
    ]
    return sorted(live, key=lambda o: o["partition"]["partition"])


def state(lab: LabInfo, flow: LabFlow) -> str:
    body = requests.get(f"{lab.connect_url}/connectors/{flow.connectors['source']}/status", timeout=10).json()
    return str(body["connector"]["state"])


def syncs(lab: LabInfo, flow: LabFlow) -> list[tuple[bytes | None, bytes | None]]:
    topic = f"mm2-offset-syncs.{flow.target_alias}.internal"
    return [(r.key, r.value) for r in records.read_partitions(source_conf(lab), topic, [0])]


def snapshot(lab: LabInfo, flow: LabFlow) -> dict[str, Any]:
    return {"state": state(lab, flow), "offsets": offsets(lab, flow)}


def plan_reset(lab: LabInfo, flow: LabFlow, out: Path, state_dir: Path, *extra: str) -> None:
    r = mm2ctl(
        "plan",
        "reset-mm2",
        "--pair",
        f"{flow.source_alias}->{flow.target_alias}",
        "--mm2-config",
        flow.mm2_config,
        "--connect-url",
        lab.connect_url,
        "--out",
        str(out),
        *extra,
        state=state_dir,
    )
    assert r.returncode == 0, r.stderr


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def test_reset_mm2_apply_then_rollback_restores_exact_offsets(lab: LabInfo, state_dir: Path) -> None:
    flow, _topic = make_flow(lab, "rmone")
    before, before_syncs = snapshot(lab, flow), syncs(lab, flow)
    assert before["state"] == "RUNNING" and before_syncs
    plan = state_dir / "reset.yaml"
    plan_reset(lab, flow, plan, state_dir)
    shown = mm2ctl("show", str(plan), "--json", state=state_dir)
    assert shown.returncode == 0 and '"reset-mm2"' in shown.stdout

    no_tty = mm2ctl("apply", str(plan), state=state_dir)
    assert no_tty.returncode == 16 and "--auto-approve" in no_tty.stderr

    journal = state_dir / "j.jsonl"
    r = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), "--json", state=state_dir)
    assert r.returncode == 0, r.stderr
    applied = json.loads(r.stdout)  # stdout holds the result alone; the review and progress went to stderr
    made = load_plan(plan)
    assert applied == {
        "command": "apply",
        "plan_id": made.plan_id,
        "dry_run": False,
        "steps": [f"step {s.index} ({s.kind.value}): applied" for s in made.steps],
        "changes": sum(s.writes for s in made.steps),
        "journal": str(journal),
        "plan_file": str(plan),
        "rollback_command": f"mm2ctl rollback {journal}",
        "exit_code": 0,
        "exit_meaning": "success",
    }
    assert state(lab, flow) == "RUNNING"
    low = KafkaAdmin.connect(source_conf(lab)).partition_bounds([(f"mm2-offset-syncs.{flow.target_alias}.internal", 0)])
    assert next(iter(low.values())).earliest == len(before_syncs) or next(iter(low.values())).earliest > 0
    # MM2 replicated everything again from the start and committed the same upstream positions.
    eventually(lambda: offsets(lab, flow) == before["offsets"], timeout_s=60, what="re-replication")

    rb = mm2ctl("rollback", str(journal), "--auto-approve", "--json", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    rolled = json.loads(rb.stdout)
    assert {k: rolled[k] for k in ("command", "plan_id", "dry_run", "journal", "exit_code", "exit_meaning")} == {
        "command": "rollback",
        "plan_id": made.plan_id,
        "dry_run": False,
        "journal": str(journal),
        "exit_code": 0,
        "exit_meaning": "success",
    }
    assert rolled["steps"] and all(line.startswith("rollback of step ") for line in rolled["steps"])
    assert rolled["changes"] == len(rolled["steps"])
    assert snapshot(lab, flow) == before
    after_syncs = syncs(lab, flow)
    assert after_syncs[-len(before_syncs) :] == before_syncs  # re-produced, at new offsets


def test_stale_plan_is_refused_and_dry_run_writes_nothing(lab: LabInfo, state_dir: Path) -> None:
    flow, topic = make_flow(lab, "rmstale")
    plan = state_dir / "reset.yaml"
    plan_reset(lab, flow, plan, state_dir)
    before, before_syncs = snapshot(lab, flow), syncs(lab, flow)

    dry = mm2ctl("apply", str(plan), "--dry-run", "--detailed-exitcode", state=state_dir)
    assert dry.returncode == 14, dry.stderr
    dry_json = mm2ctl("apply", str(plan), "--dry-run", "--detailed-exitcode", "--json", state=state_dir)
    assert dry_json.returncode == 14, dry_json.stderr
    doc = json.loads(dry_json.stdout)
    assert (doc["command"], doc["dry_run"], doc["journal"], doc["plan_file"]) == ("apply", True, None, str(plan))
    assert doc["changes"] > 0 and all(line.startswith("would apply step ") for line in doc["steps"])
    assert (doc["exit_code"], doc["exit_meaning"]) == (14, "--detailed-exitcode: the plan has changes to make")
    assert snapshot(lab, flow) == before and syncs(lab, flow) == before_syncs
    assert not list(state_dir.glob("journals/**/*.jsonl"))

    records.produce(source_conf(lab), topic, [(b"late", b"late", 0)])  # the world moves on
    eventually(lambda: offsets(lab, flow) != before["offsets"], timeout_s=60, what="new offsets")
    stale = mm2ctl("apply", str(plan), "--auto-approve", state=state_dir)
    assert stale.returncode == 8, stale.stderr
    assert "connector-offsets" in stale.stderr or "topic-bounds" in stale.stderr
    assert state(lab, flow) == "RUNNING"


def test_tombstone_method_resets_and_rollback_restores(lab: LabInfo, state_dir: Path) -> None:
    flow, _ = make_flow(lab, "rmtomb")
    before = snapshot(lab, flow)
    plan = state_dir / "tomb.yaml"
    r = mm2ctl(
        "plan",
        "reset-connector-offsets",
        "--connector",
        flow.connectors["source"],
        "--method",
        "tombstone",
        "--mm2-config",
        flow.mm2_config,
        "--connect-url",
        lab.connect_url,
        "--out",
        str(plan),
        state=state_dir,
    )
    assert r.returncode == 0, r.stderr
    assert "connect_offsets_tombstone" in r.stdout and "connector_stop" in r.stdout
    journal = state_dir / "j.jsonl"
    faults = Faults(kill_after_step=1)  # stop, tombstone, [killed], resume
    crashed = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), faults=faults, state=state_dir)
    assert crashed.returncode == -9
    assert state(lab, flow) == "STOPPED" and offsets(lab, flow) == []  # the worker sees no offsets
    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert snapshot(lab, flow) == before


# The first and the last step in every run; the steps between them with the extended tests.
@pytest.mark.parametrize(
    "kill_after", [0, pytest.param(1, marks=pytest.mark.extended), pytest.param(2, marks=pytest.mark.extended), 3]
)
def test_crash_after_each_step_then_resume_or_rollback(lab: LabInfo, state_dir: Path, kill_after: int) -> None:
    flow, _ = make_flow(lab, f"rmcrash{kill_after}")
    before, before_syncs = snapshot(lab, flow), syncs(lab, flow)
    faults = Faults(kill_after_step=kill_after)

    plan = state_dir / "a.yaml"
    plan_reset(lab, flow, plan, state_dir)
    j1 = state_dir / "crash-rollback.jsonl"
    crashed = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(j1), faults=faults, state=state_dir)
    assert crashed.returncode == -9, crashed.stderr
    with Journal.open(j1) as j:
        assert j.state.completed_steps == tuple(range(kill_after + 1))
    rb = mm2ctl("rollback", str(j1), "--auto-approve", state=state_dir)
    assert rb.returncode == 0, rb.stderr
    assert snapshot(lab, flow) == before
    if kill_after >= 2:  # truncated: the backed-up syncs were re-produced
        assert syncs(lab, flow)[-len(before_syncs) :] == before_syncs

    plan2 = state_dir / "b.yaml"
    plan_reset(lab, flow, plan2, state_dir)
    j2 = state_dir / "crash-resume.jsonl"
    crashed = mm2ctl("apply", str(plan2), "--auto-approve", "--journal", str(j2), faults=faults, state=state_dir)
    assert crashed.returncode == -9, crashed.stderr
    res = mm2ctl("apply", "--resume", str(j2), "--auto-approve", state=state_dir)
    assert res.returncode == 0, res.stderr
    with Journal.open(j2) as j:
        assert j.state.apply_status == "succeeded" and len(j.state.completed_steps) == 5
    # The same end state as an uninterrupted apply: running, syncs truncated, offsets re-established.
    assert state(lab, flow) == "RUNNING"
    eventually(lambda: offsets(lab, flow) == before["offsets"], timeout_s=60, what="re-replication")


def test_no_secret_in_any_plan_journal_or_log(lab: LabInfo, state_dir: Path) -> None:
    flow, _ = make_flow(lab, "rmsecret")
    secret_config = state_dir / "mm2-with-secrets.properties"
    secret_config.write_text(
        Path(flow.mm2_config).read_text()
        + f"\n{flow.source_alias}.ssl.truststore.password = {SECRET_SSL}\n"
        + f"{flow.target_alias}.ssl.key.password = {SECRET_SSL}\n"
    )
    plan = state_dir / "p.yaml"
    r = mm2ctl(
        "plan",
        "reset-mm2",
        "--pair",
        f"{flow.source_alias}->{flow.target_alias}",
        "--mm2-config",
        str(secret_config),
        "--connect-url",
        lab.connect_url,
        "--connect-user",
        "admin",
        "--connect-password",
        SECRET_CONNECT,
        "--out",
        str(plan),
        "--json",
        state=state_dir,
    )
    assert r.returncode == 0, r.stderr
    journal = state_dir / "j.jsonl"
    env = {"MM2CTL_CONNECT_PASSWORD": SECRET_CONNECT}
    a = mm2ctl(
        "-v",
        "apply",
        str(plan),
        "--auto-approve",
        "--journal",
        str(journal),
        "--connect-user",
        "admin",
        env=env,
        state=state_dir,
    )
    assert a.returncode == 0, a.stderr
    rb = mm2ctl("-v", "rollback", str(journal), "--auto-approve", "--connect-user", "admin", env=env, state=state_dir)
    assert rb.returncode == 0, rb.stderr
    files = [p for p in state_dir.rglob("*") if p.is_file() and p != secret_config]
    assert any(p.suffix == ".jsonl" for p in files) and (state_dir / "cli.log").exists()
    for p in files:
        text = p.read_bytes()
        assert SECRET_SSL.encode() not in text and SECRET_CONNECT.encode() not in text, p
