"""Transactions on the real lab: failover and failback over a source with aborted transactions, which MM2
copies to the target as ordinary records (its source consumer reads uncommitted records by default); a flow
that runs with offset syncs disabled (KIP-1031); inspect over both; a ``plan`` whose reads fall below a log
start, with a quiet terminal; a KafkaMirrorMaker2 resource that sets a shared setting on one connector only.

A position is right when a ``read_committed`` consumer resuming there reads first the record the group reads
next on the other cluster: the next *committed* record, never a copy of an aborted one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from tests.integration.support import eventually, source_conf, target_conf, uniq
from tests.integration.test_remediate import mm2ctl
from tests.integration.transactions import (
    VALUE,
    commit_points,
    first_read,
    next_committed,
    produce_transactions,
    source_log,
)

pytestmark = pytest.mark.integration

PARTITIONS = 2
EXACT = {"verified_delta", "verified_search"}


@dataclass
class Mirrored:
    """An isolated flow whose transactional topic MM2 has copied completely."""

    lab: LabInfo
    flow: LabFlow
    topic: str
    remote: str

    @property
    def pair(self) -> str:
        return f"{self.flow.source_alias}->{self.flow.target_alias}"

    def group(self, what: str) -> str:
        return f"iso-{self.flow.source_alias.removesuffix('src')}-{what}"


def _mirror(lab: LabInfo, name: str, **flow_options: Any) -> Mirrored:
    flow = lab_core.add_flow(lab, name, roles=("source", "heartbeat"), **flow_options)
    topic = f"iso-{name}-tx"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: PARTITIONS})
    produce_transactions(source_conf(lab), topic, PARTITIONS, rounds=12)
    remote = f"{flow.source_alias}.{topic}"
    want = {p: len(source_log(source_conf(lab), topic, p)) for p in range(PARTITIONS)}  # MM2 copies aborted ones

    def copied() -> bool:
        got = KafkaAdmin.connect(target_conf(lab)).partition_bounds([(remote, p) for p in range(PARTITIONS)])
        return all(b.latest == want[p] for (_t, p), b in got.items())

    eventually(copied, timeout_s=120, what=f"MM2 copying every record of {topic}, aborted ones included")
    return Mirrored(lab, flow, topic, remote)


@pytest.fixture(scope="module")
def aborting(lab_pool: Any) -> Iterator[Mirrored]:
    """A default flow (MM2 copies aborted records) over a topic of committed and aborted transactions."""
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    yield _mirror(lab, "tx" + uniq("a").split("-")[1][:6])


@pytest.fixture(scope="module")
def no_syncs(lab_pool: Any) -> Iterator[Mirrored]:
    """A flow that runs with emit.offset-syncs.enabled=false and no checkpoint connector (it refuses to run)."""
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    settings = {"emit.offset-syncs.enabled": "false"}
    yield _mirror(lab, "ns" + uniq("a").split("-")[1][:6], source_settings=settings)


def _json_plan(proc: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert proc.returncode in (ExitCode.OK, ExitCode.UNTRANSLATABLE), proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def _commit(conf: dict[str, str], group: str, offsets: dict[tuple[str, int], int]) -> None:
    res = KafkaAdmin.connect(conf).alter_group_offsets({group: offsets})[group]
    assert all(r.error is None for r in res), res


def test_failover_over_aborted_transactions_lands_on_the_next_committed_record(
    aborting: Mirrored, tmp_path: Path
) -> None:
    m, src, dst = aborting, source_conf(aborting.lab), target_conf(aborting.lab)
    expected: dict[tuple[str, int], bytes | None] = {}
    for p in range(PARTITIONS):
        log = source_log(src, m.topic, p)
        end = KafkaAdmin.connect(src).partition_bounds([(m.topic, p)])[(m.topic, p)].latest
        assert end is not None and any(e.aborted for e in log)
        for what, offset in commit_points(log, end).items():
            _commit(src, m.group(f"fo-{what}"), {(m.topic, p): offset})
            expected[(m.group(f"fo-{what}"), p)] = next_committed(log, offset)
    proc = mm2ctl(
        "plan", "failover", "--mm2-config", m.flow.mm2_config, "--pair", m.pair, "--groups", m.group("fo-.*"),
        "-o", str(tmp_path / "failover.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    rows = _json_plan(proc)["rows"]
    assert {r["method"] for r in rows} <= EXACT, rows
    apply = mm2ctl("apply", str(tmp_path / "failover.yaml"), "--auto-approve", state=tmp_path)
    assert apply.returncode == ExitCode.OK, apply.stderr
    target_end = {p: len(source_log(src, m.topic, p)) for p in range(PARTITIONS)}
    for r in rows:
        want = expected[(r["group"], r["partition"])]
        got = first_read(dst, m.remote, r["partition"], r["target_offset"])
        # Exact: the consumer reads next what it would have read on the source, no aborted record first.
        assert got == want, (r, got, want)
        if want is None:
            assert r["target_offset"] == target_end[r["partition"]], r
    # The bug this fixes: the conservative rule (and the old verification) resumed on the aborted copies.
    assert any(r["delta_candidate"] != r["target_offset"] for r in rows), rows


def test_failback_over_copies_of_aborted_records_lands_on_the_next_committed_record(
    aborting: Mirrored, tmp_path: Path
) -> None:
    """Groups on the target, resuming just before copies of aborted records (which they would read there as
    ordinary records), fail back: a consumer on the source reads the next committed record, which is the next
    record on the target that is no copy of an aborted one."""
    m, src, dst = aborting, source_conf(aborting.lab), target_conf(aborting.lab)
    expected: dict[tuple[str, int], bytes | None] = {}
    for p in range(PARTITIONS):
        target = [r.value or b"" for r in records.read_partitions(dst, m.remote, [p])]  # dense: offset == index
        first_aborted = next(i for i, v in enumerate(target) if VALUE.match(v) and VALUE.match(v)[2] == b"a")  # type: ignore[index]
        points = {"before-aborted": first_aborted, "on-aborted": first_aborted + 1, "end": len(target)}
        for what, t in points.items():
            group = m.group(f"fb-{what}")
            _commit(dst, group, {(m.remote, p): t})
            expected[(group, p)] = next((v for v in target[t:] if b"-c" in v), None)
    proc = mm2ctl(
        "plan", "failback", "--mm2-config", m.flow.mm2_config, "--pair", m.pair, "--groups", m.group("fb-.*"),
        "-o", str(tmp_path / "failback.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    rows = _json_plan(proc)["rows"]
    assert len(rows) == 3 * PARTITIONS and all(r["target_offset"] is not None for r in rows), rows
    assert {r["method"] for r in rows} <= EXACT, rows
    apply = mm2ctl("apply", str(tmp_path / "failback.yaml"), "--auto-approve", state=tmp_path)
    assert apply.returncode == ExitCode.OK, apply.stderr
    for r in rows:
        got = first_read(src, m.topic, r["partition"], r["target_offset"])
        assert got == expected[(r["group"], r["partition"])], (r, got)


def test_a_flow_with_offset_syncs_disabled_fails_over_by_timestamp_and_says_so(
    no_syncs: Mirrored, tmp_path: Path
) -> None:
    m, src, dst = no_syncs, source_conf(no_syncs.lab), target_conf(no_syncs.lab)
    assert m.flow.setup.offset_syncs_disabled
    # MM2 writes no offset syncs for it: the flow's offset-syncs topic is never created.
    assert f"mm2-offset-syncs.{m.flow.target_alias}.internal" not in KafkaAdmin.connect(src).list_topics()
    show = mm2ctl("config", "show", "--mm2-config", m.flow.mm2_config, "--json", state=tmp_path)
    assert show.returncode == ExitCode.OK, show.stderr
    (flow,) = json.loads(show.stdout)["flows"]
    assert "offset_syncs_disabled" in {c["condition"] for c in flow["conditions"]}, flow
    expected = {}
    for p in range(PARTITIONS):
        log = source_log(src, m.topic, p)
        offset = commit_points(log, log[-1].offset + 1)["marker"]
        _commit(src, m.group("ts"), {(m.topic, p): offset})
        expected[p] = next_committed(log, offset)
    planned = mm2ctl(
        "plan", "failover", "--mm2-config", m.flow.mm2_config, "--pair", m.pair, "--groups", m.group("ts"),
        "-o", str(tmp_path / "ts.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    plan = _json_plan(planned)
    assert {r["method"] for r in plan["rows"]} == {"timestamp_verified"}, plan["rows"]
    assert any("offset syncs are disabled" in n for n in plan["plan"]["notes"]), plan["plan"]["notes"]
    assert mm2ctl("apply", str(tmp_path / "ts.yaml"), "--auto-approve", state=tmp_path).returncode == ExitCode.OK
    for r in plan["rows"]:
        assert first_read(dst, m.remote, r["partition"], r["target_offset"]) == expected[r["partition"]], r
    # Without a readable source there is nothing to compare: refused, naming the way out.
    down = mm2ctl(
        "plan", "failover", "--mm2-config", m.flow.mm2_config, "--pair", m.pair, "--source-unavailable",
        "-o", str(tmp_path / "down.yaml"), state=tmp_path,
    )  # fmt: skip
    assert down.returncode == ExitCode.PLAN_INVALID and "--from checkpoints" in down.stderr, down.stderr


def _both_flows_file(a: Mirrored, b: Mirrored, path: Path) -> Path:
    """One MM2 file describing both flows (each flow's own file names only its own clusters)."""
    lines = [f"clusters = {a.flow.source_alias}, {a.flow.target_alias}, {b.flow.source_alias}, {b.flow.target_alias}"]
    for m in (a, b):
        s, t = m.flow.source_alias, m.flow.target_alias
        prefix = f"iso-{s.removesuffix('src')}-"
        lines += [
            f"{s}.bootstrap.servers = {m.lab.source.bootstrap}",
            f"{t}.bootstrap.servers = {m.lab.target.bootstrap}",
            f"{s}->{t}.enabled = true",
            f"{s}->{t}.topics = {prefix}.*",
            f"{s}->{t}.groups = {prefix}.*",
            f"{s}->{t}.emit.checkpoints.enabled = false",
            f"{s}->{t}.sync.group.offsets.enabled = false",
            *(f"{s}->{t}.{k} = {v}" for k, v in m.flow.setup.source_settings.items()),
        ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_inspect_notes_the_flow_copying_aborted_records_and_the_flow_without_offset_syncs(
    aborting: Mirrored, no_syncs: Mirrored, tmp_path: Path
) -> None:
    src = source_conf(aborting.lab)
    for m in (aborting, no_syncs):
        log = source_log(src, m.topic, 0)
        _commit(src, m.group("ins"), {(m.topic, 0): commit_points(log, log[-1].offset + 1)["marker"]})
    out = tmp_path / "rows.jsonl"
    proc = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config",
            str(_both_flows_file(aborting, no_syncs, tmp_path / "both.properties")),
            "--groups", ".*-ins", "--exact", "--format", "json", "--output", str(out),
            "--spark-conf", "spark.sql.shuffle.partitions=4",
        ],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert proc.returncode in (ExitCode.OK, ExitCode.PROBLEMS_FOUND), proc.stderr
    rows = {r["cluster_pair"]: r for r in map(json.loads, out.read_text().splitlines())}
    a, b = rows[aborting.pair], rows[no_syncs.pair]
    # --exact: the position plan failover writes, the copy of the next committed record.
    log = source_log(src, aborting.topic, 0)
    assert a["translation_method"] in EXACT, a
    assert first_read(target_conf(aborting.lab), aborting.remote, 0, a["translated_offset"]) == next_committed(
        log, a["source_offset"]
    )
    assert (b["status"], b["is_ok"]) == ("offset_syncs_disabled", True), b
    notes = [line for line in proc.stderr.splitlines() if line.startswith("mm2ctl: note:")]
    copies = [n for n in notes if n.startswith(f"mm2ctl: note: {aborting.pair}: {aborting.topic} on ")]
    assert len(copies) == 1 and "source.consumer.isolation.level = read_committed" in copies[0], notes
    assert any(f"{no_syncs.pair}:" in n and "offset syncs disabled" in n for n in notes), notes
    assert not [n for n in notes if no_syncs.pair in n and "does not exist" in n], notes


def test_plan_reading_below_a_log_start_keeps_librdkafka_off_the_terminal(lab: LabInfo, tmp_path: Path) -> None:
    """The planner's read-ahead starts a window before a group's offset, below the log start delete-records
    moved: librdkafka resets the offset and logs it. That line goes to the log file, not the terminal."""
    name = "qt" + uniq("a").split("-")[1][:6]
    flow = lab_core.add_flow(lab, name, roles=("source",))
    topic, src = f"iso-{name}-t", source_conf(lab)
    admin = KafkaAdmin.connect(src)
    admin.create_topics({topic: 1})
    records.produce(src, topic, [(b"k%d" % i, b"v%d" % i, 0) for i in range(300)])
    remote = f"{flow.source_alias}.{topic}"
    eventually(
        lambda: KafkaAdmin.connect(target_conf(lab)).partition_bounds([(remote, 0)])[(remote, 0)].latest == 300,
        timeout_s=90,
        what="MM2 copying the topic",
    )
    assert all(r.error is None for r in admin.delete_records({(topic, 0): 100}))
    _commit(src, f"iso-{name}-g", {(topic, 0): 130})
    state = tmp_path / "state"
    proc = mm2ctl(
        "plan", "failover", "--mm2-config", flow.mm2_config, "--pair", f"{flow.source_alias}->{flow.target_alias}",
        "-o", str(tmp_path / "plan.yaml"), state=state,
    )  # fmt: skip
    assert proc.returncode == ExitCode.OK, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines and all(line.startswith("mm2ctl: ") for line in lines), proc.stderr
    assert "rdkafka" not in proc.stderr
    (log,) = (state / "logs").glob("plan-*.log")
    assert re.search(r"WARNING mm2ctl\.librdkafka: OFFSET .*Offset out of range", log.read_text()), log.read_text()


def test_a_resource_setting_a_shared_key_on_one_connector_only(lab: LabInfo, tmp_path: Path) -> None:
    """The lab's KafkaMirrorMaker2 resource with the policy and the offset-syncs location left to their
    defaults on the checkpoint connector: the same flow (the source connector sets Kafka's defaults). Set to
    another value on the source connector only, the resource is refused naming both values."""
    doc = yaml.safe_load(Path(lab.resource).read_text())
    (mirror,) = doc["spec"]["mirrors"]
    for key in ("replication.policy.class", "offset-syncs.topic.location"):
        mirror["checkpointConnector"]["config"].pop(key)
    assert mirror["sourceConnector"]["config"]["offset-syncs.topic.location"] == "source"
    one = tmp_path / "one-connector.yaml"
    one.write_text(yaml.safe_dump(doc))
    show = mm2ctl("config", "show", "--mm2-config", str(one), "--secrets", lab.secrets, "--json", state=tmp_path)
    assert show.returncode == ExitCode.OK, show.stderr
    reference = mm2ctl(
        "config", "show", "--mm2-config", lab.resource, "--secrets", lab.secrets, "--json", state=tmp_path
    )
    assert json.loads(show.stdout)["flows"][0]["topics"] == json.loads(reference.stdout)["flows"][0]["topics"]
    plan = mm2ctl(
        "plan", "connectors", "pause", "--mm2-config", str(one), "--secrets", lab.secrets,
        "--pair", "primary->backup", "--connect-url", lab.connect_url, "-o", str(tmp_path / "pause.yaml"), "--json",
        state=tmp_path,
    )  # fmt: skip
    assert plan.returncode == ExitCode.OK, plan.stderr  # the flow's connectors, found through the resource
    assert len(json.loads(plan.stdout)["steps"]) == 3, plan.stdout
    mirror["sourceConnector"]["config"]["offset-syncs.topic.location"] = "target"
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(doc))
    refused = mm2ctl("config", "show", "--mm2-config", str(other), "--secrets", lab.secrets, state=tmp_path)
    assert refused.returncode == ExitCode.CONFIG, refused.stderr
    (line,) = refused.stderr.strip().splitlines()
    assert "'target' (spec.mirrors[0].sourceConnector.config.offset-syncs.topic.location)" in line, line
    assert "'source' (not set on connector primary->backup.MirrorCheckpointConnector: Kafka" in line, line
