"""The secured lab (SASL_SSL + SCRAM-SHA-512, OAUTHBEARER, ACLs), with mm2ctl as its least-privilege principal.

One secured lab serves the whole file. Each test works on an isolated flow of its own (``iso-<name>-…``
topics and groups), seeded as the lab's admin principal, while every mm2ctl command runs as ``User:mm2ctl``,
whose only rights are the ACLs of README's table:

* inspect gives the same rows from the lab's MM2 properties file, its KafkaMirrorMaker2 resource with its
  Secrets, and the live connectors (``--from-connect``), under both replication policies, and over OAUTHBEARER;
* plan failover, apply and rollback run over SCRAM and over OAUTHBEARER;
* with one ACL removed, apply is refused with the one-line denial, exit 4, and nothing changes;
* a denied group marks only that group's rows of an inspection;
* config diff finds no difference between the lab's own file and its connectors, and each kind of change;
* last, every plan, journal, log and output these tests produced is searched for every password, client
  secret, private key and access token the lab made: none is there.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.ipc as ipc
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from mm2ctl.core.config.sources import ConfigSource, resolve_config
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.inspector.inspection import InspectOptions, Inspector, preflight
from mm2ctl.inspector.selection import Selection
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.lab.secured import MM2CTL, LabSecurity
from tests.integration.support import eventually

pytestmark = [pytest.mark.integration, pytest.mark.lab(security="sasl-ssl")]

PARTITIONS = 3
RECORDS = 300
#: Columns that depend on when the inspection ran, not on what it read.
#: Columns that depend on when the inspection read (the newest checkpoint and its age, syncs MM2 keeps writing).
UNSTABLE = ("checkpoint_timestamp", "sync_count", "group_checkpoint_age_seconds")
#: Where the inspections of this file save what they read of MM2's topics (``inspector.kept.topic_cache``).
SAVED = "inspect-state"


# --- helpers ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def produced(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Everything mm2ctl writes in this file: command outputs, plans, and its state dir (journals, logs)."""
    return tmp_path_factory.mktemp("secured-outputs")


def mm2ctl(produced: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``mm2ctl ARGS`` as an operator does, its state dir and its outputs kept under ``produced``."""
    env = {**os.environ, "MM2CTL_STATE_DIR": str(produced / "state"), "MM2CTL_INSPECT_CACHE": str(produced / SAVED)}
    out = subprocess.run(
        [sys.executable, "-m", "mm2ctl", *args], capture_output=True, text=True, timeout=600, env=env, check=False
    )
    name = f"{len(list(produced.glob('*.out')))}-{args[0]}"
    (produced / f"{name}.out").write_text(f"$ mm2ctl {' '.join(args)}\n{out.stdout}\n--- stderr\n{out.stderr}")
    return out


def admin(lab: LabInfo, alias: str) -> KafkaAdmin:
    return KafkaAdmin.connect(lab.client_config(alias))


def seed(lab: LabInfo, name: str, policy: str = "default") -> LabFlow:
    """An isolated flow with a topic of 3 partitions and two groups, as the admin principal; returns once MM2
    replicated it and synced both groups' offsets to the target."""
    flow = lab_core.add_flow(lab, name, replication_policy=policy)
    topic = f"iso-{name}-orders"
    src = lab.client_config("primary")
    admin(lab, "primary").create_topics({topic: PARTITIONS})
    records.produce(src, topic, [(f"k{i}".encode(), f"v{i}".encode(), i % PARTITIONS) for i in range(RECORDS * 3)])
    source = admin(lab, "primary")
    source.alter_group_offsets({group(name, "a"): {(topic, p): 120 for p in range(PARTITIONS)}})
    source.alter_group_offsets({group(name, "b"): {(topic, p): 250 for p in range(PARTITIONS)}})
    remote = topic if policy == "identity" else f"{flow.source_alias}.{topic}"
    target = admin(lab, "backup")

    def synced() -> bool:
        got = target.committed_offsets([group(name, "a"), group(name, "b")])
        return all(len([tp for tp in r.offsets if tp[0] == remote]) == PARTITIONS for r in got.values())

    eventually(synced, timeout_s=120, what=f"MM2 syncing {name}'s groups to the target")
    return flow


def group(name: str, suffix: str) -> str:
    return f"iso-{name}-g{suffix}"


def pair_of(flow: LabFlow) -> str:
    return f"{flow.source_alias}->{flow.target_alias}"


def stable_rows(spark: Any, source: ConfigSource, pair: str, lab: LabInfo) -> list[dict[str, Any]]:
    """inspect's rows of ``pair`` (in-process, on the session's Spark), without the columns that tell the time."""
    reader = None
    if source.from_connect is not None:
        from mm2ctl.connect_client.factory import connector_config_reader

        reader = connector_config_reader()
    config = resolve_config(source, read_connectors=reader)
    options = InspectOptions(pairs=(pair,), selection=Selection())
    inspector = Inspector(spark, config, options, preflight(config, options))
    result = inspector.run()
    try:
        rows = [{k: v for k, v in r.items() if k not in UNSTABLE} for r in result.rows.to_arrow().to_pylist()]
    finally:
        result.close()
        inspector.close()
    return sorted(rows, key=lambda r: (r["group"], r["topic"], r["partition"]))


def set_acl(lab: LabInfo, binding: AclBinding, *, present: bool) -> None:
    """Create or delete one ACL on backup as the admin, and wait until the broker enforces it."""
    client = AdminClient({**lab.client_config("backup"), "log_level": 0})
    if present:
        for fut in client.create_acls([binding]).values():
            fut.result()
    else:
        flt = AclBindingFilter(
            binding.restype,
            binding.name,
            binding.resource_pattern_type,
            binding.principal,
            binding.host,
            binding.operation,
            binding.permission_type,
        )
        for fut in client.delete_acls([flt]).values():
            fut.result()


def mm2ctl_may(lab: LabInfo, group_name: str, operation: str) -> bool:
    answer = KafkaAdmin.connect(lab.client_config("backup", MM2CTL)).authorized_operations(groups=[group_name])
    got = answer[("group", group_name)]
    return isinstance(got, frozenset) and operation in got


# --- inspect: three ways to give the setup, two policies, two mechanisms --------------------------


@pytest.mark.parametrize("policy", ["default", "identity"])
def test_the_file_the_resource_and_the_live_connectors_give_the_same_rows(
    lab: LabInfo, spark: Any, policy: str
) -> None:
    name = f"same{policy[:3]}{uuid.uuid4().hex[:6]}"
    flow = seed(lab, name, policy)
    pair = pair_of(flow)
    from_file = stable_rows(spark, ConfigSource(mm2_config=flow.mm2_config), pair, lab)
    from_resource = stable_rows(spark, ConfigSource(mm2_config=flow.resource, secrets=lab.secrets), pair, lab)
    from_connect = stable_rows(spark, ConfigSource(from_connect=lab.connect_url), pair, lab)
    assert len(from_file) == 2 * PARTITIONS
    assert {r["error"] for r in from_file} == {None}
    assert from_resource == from_file
    assert from_connect == from_file
    if policy == "identity":
        assert {r["remote_topic"] for r in from_file} == {f"iso-{name}-orders"}
    else:
        over_oauth = stable_rows(spark, ConfigSource(mm2_config=flow.mm2_oauth_config), pair, lab)
        assert over_oauth == from_file


def test_a_denied_group_marks_only_its_rows(lab: LabInfo, spark: Any) -> None:
    name = f"deny{uuid.uuid4().hex[:6]}"
    flow = seed(lab, name)
    denied = group(name, "a")
    deny = AclBinding(
        ResourceType.GROUP,
        denied,
        ResourcePatternType.LITERAL,
        f"User:{MM2CTL}",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.DENY,
    )
    set_acl(lab, deny, present=True)
    try:
        eventually(lambda: not mm2ctl_may(lab, denied, "DESCRIBE"), timeout_s=30, what="the DENY taking effect")
        rows = stable_rows(spark, ConfigSource(mm2_config=flow.mm2_config), pair_of(flow), lab)
    finally:
        set_acl(lab, deny, present=False)
    marked = [r for r in rows if r["group"] == denied]
    others = [r for r in rows if r["group"] != denied]
    assert len(marked) == PARTITIONS and len(others) == PARTITIONS
    expected = (
        f"User:mm2ctl is not authorized to DESCRIBE group '{denied}' on cluster {flow.target_alias} "
        "[GROUP_AUTHORIZATION_FAILED]"
    )
    for r in marked:
        assert r["status"] == "error"
        assert expected in r["error"]
    assert all(r["error"] is None and r["status"] != "error" for r in others)


# --- plan, apply, rollback over SCRAM and over OAUTHBEARER ------------------------------------------


@pytest.mark.parametrize("mechanism", ["scram", "oauthbearer"])
def test_failover_apply_and_rollback_as_the_least_privilege_principal(
    lab: LabInfo, produced: Path, mechanism: str
) -> None:
    name = f"fo{mechanism[:5]}{uuid.uuid4().hex[:6]}"
    flow = seed(lab, name)
    # SCRAM through the KafkaMirrorMaker2 resource and its Secrets: apply and rollback find both again from
    # what the plan recorded. OAUTHBEARER through the properties file.
    setup = (
        ["--mm2-config", flow.resource, "--secrets", lab.secrets]
        if mechanism == "scram"
        else ["--mm2-config", flow.mm2_oauth_config]
    )
    g = group(name, "a")
    remote = f"{flow.source_alias}.iso-{name}-orders"
    target = admin(lab, "backup")
    plan = produced / f"{name}.yaml"
    made = mm2ctl(
        produced,
        "plan", "failover", *setup, "--pair", pair_of(flow), "--groups", g,
        "--connect-url", lab.connect_url, "--stop-mirroring", "-o", str(plan), "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    rows = json.loads(made.stdout)["rows"]
    assert {r["partition"] for r in rows} == set(range(PARTITIONS))
    recorded = json.loads(made.stdout)["plan"]["mm2_source"]
    assert recorded["secrets"] == (lab.secrets if mechanism == "scram" else None)
    before = target.committed_offsets([g])[g].offsets

    applied = mm2ctl(produced, "apply", str(plan), "--auto-approve", "--json")
    assert applied.returncode == 0, applied.stderr
    journal = json.loads(applied.stdout)["journal"]
    after = target.committed_offsets([g])[g].offsets
    assert {p: after[(remote, p)] for p in range(PARTITIONS)} == {r["partition"]: r["target_offset"] for r in rows}

    undone = mm2ctl(produced, "rollback", journal, "--auto-approve", "--json")
    assert undone.returncode == 0, undone.stderr
    assert target.committed_offsets([g])[g].offsets == before


def test_one_acl_removed_is_refused_in_one_line_and_nothing_changes(lab: LabInfo, produced: Path) -> None:
    name = f"acl{uuid.uuid4().hex[:6]}"
    flow = seed(lab, name)
    g = group(name, "a")
    plan = produced / f"{name}.yaml"
    made = mm2ctl(
        produced,
        "plan", "failover", "--mm2-config", flow.mm2_config, "--pair", pair_of(flow), "--groups", g,
        "--connect-url", lab.connect_url, "--stop-mirroring", "-o", str(plan), "--json",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    plan_id = json.loads(made.stdout)["plan"]["plan_id"]
    target = admin(lab, "backup")
    offsets_before = target.committed_offsets([g])[g].offsets
    read_any_group = AclBinding(
        ResourceType.GROUP,
        "*",
        ResourcePatternType.LITERAL,
        f"User:{MM2CTL}",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    set_acl(lab, read_any_group, present=False)
    try:
        eventually(lambda: not mm2ctl_may(lab, g, "READ"), timeout_s=30, what="the ACL removal taking effect")
        refused = mm2ctl(produced, "apply", str(plan), "--auto-approve")
    finally:
        set_acl(lab, read_any_group, present=True)
        eventually(lambda: mm2ctl_may(lab, g, "READ"), timeout_s=30, what="the ACL restored")
    assert refused.returncode == ExitCode.KAFKA
    assert refused.stdout == ""
    assert refused.stderr.splitlines()[-1] == (
        f"mm2ctl: error: User:mm2ctl is not authorized to READ group '{g}' on cluster {flow.target_alias} "
        "[GROUP_AUTHORIZATION_FAILED]"
    )
    assert target.committed_offsets([g])[g].offsets == offsets_before
    states = lab_core.connect_worker.connector_states(lab.connect_url)
    assert {states[c]["state"] for c in flow.connectors.values()} == {"RUNNING"}  # --stop-mirroring never ran
    assert not (produced / "state" / "journals" / plan_id).exists()


# --- config diff ------------------------------------------------------------------------------------


def test_config_diff_of_the_labs_own_file_and_each_kind_of_change(lab: LabInfo, produced: Path) -> None:
    same = mm2ctl(produced, "config", "diff", "--mm2-config", lab.mm2_config, "--connect-url", lab.connect_url)
    assert same.returncode == 0, same.stdout + same.stderr
    assert same.stdout.startswith("no difference between")
    resource = mm2ctl(
        produced, "config", "diff", "--mm2-config", lab.resource, "--secrets", lab.secrets,
        "--connect-url", lab.connect_url,
    )  # fmt: skip
    assert resource.returncode == 0, resource.stdout + resource.stderr
    text = Path(lab.mm2_config).read_text()
    changes = {
        "alias": (re.sub(r"\bprimary\b", "main", text), "flow main->backup"),
        "separator": (text + "replication.policy.separator = _\n", "replication.policy.separator"),
        "policy": (
            text.replace("DefaultReplicationPolicy", "IdentityReplicationPolicy"),
            "replication.policy.class",
        ),
        "topic filter": (re.sub(r"(?m)^topics = .*$", "topics = orders-.*", text), '"what": "primary->backup: topics"'),
    }
    for kind, (changed, expected) in changes.items():
        path = produced / f"changed-{kind.replace(' ', '-')}.properties"
        path.write_text(changed)
        got = mm2ctl(produced, "config", "diff", "--mm2-config", str(path), "--connect-url", lab.connect_url, "--json")
        assert got.returncode == ExitCode.CONFIG_DIFFERS, (kind, got.stdout, got.stderr)
        assert expected in got.stdout, (kind, got.stdout)
        path.unlink()  # a copy of the lab's file holds mm2ctl's password: not an output to search


# --- no secret anywhere ---------------------------------------------------------------------------------


def test_an_inspection_over_scram_and_oauthbearer_saves_its_state(lab: LabInfo, produced: Path) -> None:
    """The saved state the last test searches: each inspection saves the flow's offset syncs and checkpoints."""
    flow = seed(lab, f"saved{uuid.uuid4().hex[:6]}")
    for config in (flow.mm2_config, flow.mm2_oauth_config):
        done = mm2ctl(produced, "inspect", "--mm2-config", config, "--pair", pair_of(flow), "--format", "json", "-q")
        assert done.returncode == 0, done.stderr
        rows = [json.loads(line) for line in done.stdout.splitlines()]
        assert len([r for r in rows if "note" not in r]) == 2 * PARTITIONS, done.stdout
    saved = sorted(p.name.split("-")[0] for p in (produced / SAVED).iterdir())
    assert saved == ["checkpoints", "offset"], saved


def _files(root: Path) -> Iterator[Path]:
    yield from (p for p in root.rglob("*") if p.is_file())


def _text(path: Path, produced: Path) -> str:
    """What a file holds, as text; a saved state's Arrow file (compressed) decoded: its rows and metadata."""
    if SAVED not in path.relative_to(produced).parts:
        return path.read_text(errors="replace")
    with ipc.open_file(path) as saved:
        table = saved.read_all()
    return json.dumps(
        [table.to_pylist(), {str(k): str(v) for k, v in (table.schema.metadata or {}).items()}], default=str
    )


def test_no_password_token_or_key_in_any_plan_journal_log_or_output(lab: LabInfo, produced: Path) -> None:
    secrets = LabSecurity(lab.dir).every_secret()
    assert len(secrets) >= 5
    tokens = LabSecurity(lab.dir).issued_tokens.read_text().split()
    assert tokens, "the OAuth tests fetched tokens from the lab's identity provider"
    # The JVMs' and the identity provider's logs; not the brokers' data (Connect's config topic holds MM2's
    # connector configs, credentials included, as any Connect cluster's does).
    lab_logs = [p for p in _files(Path(lab.dir)) if p.suffix == ".log" and "data" not in p.relative_to(lab.dir).parts]
    searched = [*_files(produced), *lab_logs]
    assert any(p.suffix == ".yaml" for p in searched) and any("journals" in p.parts for p in searched)
    assert len(list(_files(produced / SAVED))) >= 2, "the inspections saved no state to search"
    texts = {p: (_text(p, produced) if p.is_relative_to(produced) else p.read_text(errors="replace")) for p in searched}
    leaks = [(str(p), s[:6] + "…") for p, text in texts.items() for s in secrets if s in text]
    assert leaks == [], leaks
