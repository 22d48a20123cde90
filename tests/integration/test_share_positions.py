"""Share groups resume where they stopped: the position read from the share-partition state, on real clients.

Two share groups on ``primary`` read two partitions of 100 records each and leave: one accepted all of them
(case a), the other accepted 0-49, released 50 and accepted 51-99 (case b). Kafka's share-group tool reports
their start offset as 0 either way. After ``plan failover`` + ``apply``, share consumers of the same groups on
``backup`` show, by content, where each resumes: (a) at 100, nothing lost and nothing delivered again; (b) at
50, with 51-99 delivered again, exactly as the plan's note counts. An incremental read of the state (part
before the second group ran, the rest after) equals a full read (case c). ``inspect`` shows both groups at
their positions, with the start offset Kafka reports and what a failover would deliver again.
"""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path

import pytest

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GroupAdmin
from mm2ctl.core.kafka.share_state_topic import ShareStateLog, share_positions
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.share_consumer import accept_prefix, consume_all, read_from_earliest
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

# About a minute on a loaded lab (inspect --exact starts a Spark job): extended. The default suite's
# test_failover_group_types.py moves a share group by its state too (a prefix accepted: nothing again).
pytestmark = [pytest.mark.integration, pytest.mark.extended]

READ, LATER = 100, 100  # records per partition the groups read, and produced after they left
GAP = 50  # the offset the second group released


def _produce(conf: dict[str, str], topic: str, start: int, count: int) -> None:
    records.produce(conf, topic, [(b"k", b"p%d-%06d" % (p, i), p) for p in (0, 1) for i in range(start, start + count)])


def _sequences(values: dict[int, list[bytes]]) -> dict[int, list[int]]:
    return {p: [int(v.split(b"-")[1]) for v in values.get(p, [])] for p in (0, 1)}


def test_share_groups_resume_at_the_first_record_they_left_undone(lab: LabInfo, tmp_path: Path) -> None:
    name = "sharepos" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-t"
    src, dst = source_conf(lab), target_conf(lab)
    admin = KafkaAdmin.connect(src)
    admin.create_topics({topic: 2})
    flow = lab_core.add_flow(lab, name)
    remote = f"{flow.source_alias}.{topic}"
    whole, gapped = f"iso-{name}-whole", f"iso-{name}-gapped"
    tps = [(topic, 0), (topic, 1)]
    _produce(src, topic, 0, READ)
    for g in (whole, gapped):
        read_from_earliest(src, g)

    kept = ShareStateLog()
    assert accept_prefix(src, whole, topic, dict.fromkeys((0, 1), READ)) == dict.fromkeys((0, 1), READ)
    kept.extend(src, admin)
    released = {p: [GAP] for p in (0, 1)}
    assert accept_prefix(src, gapped, topic, dict.fromkeys((0, 1), READ), release=released) == dict.fromkeys(
        (0, 1), READ - 1
    )
    _produce(src, topic, READ, LATER)
    kept.extend(src, admin)
    full = ShareStateLog()
    full.extend(src, admin)
    assert kept.folded.states == full.folded.states  # (c)
    assert kept.malformed == full.malformed == 0
    starts = GroupAdmin(src, "primary").positions({whole: "share", gapped: "share"})
    assert {g: set(p.offsets.values()) for g, p in starts.items()} == {whole: {0}, gapped: {0}}, starts
    resumed = share_positions(full, admin, {g: p.offsets for g, p in starts.items()})
    assert resumed.positions == {whole: dict.fromkeys(tps, READ), gapped: dict.fromkeys(tps, GAP)}, full.folded.states
    assert resumed.acknowledged_past == {whole: dict.fromkeys(tps, 0), gapped: dict.fromkeys(tps, READ - GAP - 1)}

    total = READ + LATER
    admin_dst = KafkaAdmin.connect(dst)
    eventually(
        lambda: [admin_dst.partition_bounds([(remote, p)])[(remote, p)].latest for p in (0, 1)] == [total] * 2,
        timeout_s=120,
        what="MM2 copied the topic",
    )

    state_dir = tmp_path / "state"
    state_dir.mkdir()
    plan = state_dir / "plan.yaml"
    pair = f"{flow.source_alias}->{flow.target_alias}"
    r = mm2ctl(
        "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*",
        "--stop-mirroring", "--connect-url", lab.connect_url, "--out", str(plan), "--json", state=state_dir,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    notes = "\n".join(doc["plan"]["notes"])
    again_b = 2 * (READ - GAP - 1)
    assert f"share group {whole}: " in notes and "0 record(s) the group acknowledged past a gap" in notes, notes
    assert f"{again_b} record(s) the group acknowledged past a gap" in notes, notes
    planned = {(row["group"], row["partition"]): row["source_offset"] for row in doc["rows"]}
    assert planned == {(whole, 0): READ, (whole, 1): READ, (gapped, 0): GAP, (gapped, 1): GAP}, doc["rows"]

    applied = mm2ctl("apply", str(plan), "--auto-approve", state=state_dir)
    assert applied.returncode == 0, applied.stderr

    # inspect shows each row at its position, with the start offset Kafka reports and the true replay (--exact:
    # the translation proven by the records, as the plan's, where MM2's sparse syncs only bound it).
    args = ("inspect", "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*", "--exact", "--format", "json")
    args += ("--quiet",)
    shown = mm2ctl(*args, state=state_dir)
    assert shown.returncode in (0, 10), shown.stderr
    rows = {(r["group"], r["partition"]): r for r in map(json.loads, shown.stdout.splitlines())}
    for (g, position, again), p in itertools.product(((whole, READ, 0), (gapped, GAP, READ - GAP - 1)), (0, 1)):
        row = rows[(g, p)]
        fields = ("source_offset", "share_start_offset", "translated_offset", "target_offset")
        seen = {f: row[f] for f in (*fields, "translation_method", "replay_if_failover_now", "skip_if_failover_now")}
        assert [row[f] for f in fields] == [position, 0, position, position], seen
        assert (row["replay_if_failover_now"], row["skip_if_failover_now"]) == (again, 0), seen

    got_a = _sequences(consume_all(dst, whole, remote))
    assert {p: s[:1] for p, s in got_a.items()} == {0: [READ], 1: [READ]}  # (a) the first delivery
    assert got_a == {p: list(range(READ, total)) for p in (0, 1)}  # 0 lost, 0 delivered again

    got_b = _sequences(consume_all(dst, gapped, remote))
    assert {p: s[:1] for p, s in got_b.items()} == {0: [GAP], 1: [GAP]}  # (b) the first delivery
    for p in (0, 1):
        assert sorted(got_b[p]) == list(range(GAP, total))  # 0 lost
    again = sum(1 for p in (0, 1) for s in got_b[p] if GAP < s < READ)
    assert again == again_b  # delivered again, exactly as the plan counted
