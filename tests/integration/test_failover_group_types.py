"""Failover of the Kafka 4 group types MirrorMaker 2 never translates, on real clients: a share group (a
share consumer that accepted part of each partition) and a streams group (a Kafka Streams application with
``group.protocol=streams``), beside a consumer group that MM2 checkpoints.

MM2 runs every role, so it syncs the consumer group itself; it never touches the other two. After
``plan failover`` + ``apply``, real clients on the target show, by content, that nothing is lost: the
streams application processes exactly the records it had not processed on the source, and the share group
gets every record it had not acknowledged and none it had (its position is read from its share-partition
state, not its start offset); ``inspect`` then shows both at the positions the plan wrote. The failback of
every group type, and MM2 alone beside mm2ctl, are the group-types drill's (``test_drill_group_types.py``).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import AcknowledgeType, ShareConsumer

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GroupAdmin
from mm2ctl.core.kafka.records import read_partitions
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.share_consumer import accept_prefix, consume_all, read_from_earliest
from mm2ctl.lab.streams_app import start_streams_app
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration

FIRST, LATER = 200, 100  # records per partition before the streams app stops, and after
ACCEPTED = {0: 120, 1: 70}  # what the share consumer accepts per partition on the source


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def _processed(conf: dict[str, str], topic: str) -> dict[int, list[int]]:
    """The sequence numbers in ``topic``'s values by the source partition each names (``p<partition>-<seq>``)."""
    out: dict[int, list[int]] = {0: [], 1: []}
    for r in read_partitions(conf, topic, [0, 1]):
        if r.value:
            part, seq = r.value.split(b"-")
            out[int(part[1:])].append(int(seq))
    return {p: sorted(seqs) for p, seqs in out.items()}


def _produce(conf: dict[str, str], topic: str, start: int, count: int) -> None:
    records.produce(conf, topic, [(b"k", b"p%d-%06d" % (p, i), p) for p in (0, 1) for i in range(start, start + count)])


def _inspect_shows_what_mm2ctl_wrote(
    src: dict[str, str], mm2_config: str, state_dir: Path, name: str, share: str, streams: str, plan_id: str
) -> None:
    """``inspect`` after the apply: rows for both groups, at their source positions (the share group's read from
    its state: past what it accepted), as never checkpointed by MM2, each at the target position the plan wrote;
    the streams group's offsets name the plan that wrote them (share groups keep no metadata)."""
    args = ("inspect", "--mm2-config", mm2_config, "--groups", f"iso-{name}-.*", "--format", "json", "--quiet")
    proc = mm2ctl(*args, state=state_dir)
    assert proc.returncode in (0, 10), proc.stderr
    rows = {(r["group"], r["partition"]): r for r in map(json.loads, proc.stdout.splitlines())}
    positions = GroupAdmin(src, "primary").positions({share: "share", streams: "streams"})
    for p in (0, 1):
        s, t = rows[(share, p)], rows[(streams, p)]
        assert (s["group_type"], t["group_type"]) == ("share", "streams")
        assert (s["status"], t["status"]) == ("not_checkpointed", "not_checkpointed")
        assert s["is_ok"] and t["is_ok"]
        assert s["source_offset"] == ACCEPTED[p] > positions[share].offsets[(s["topic"], p)] == s["share_start_offset"]
        assert s["replay_if_failover_now_at_least"] == 0  # at the position the plan wrote, nothing acknowledged past
        assert t["source_offset"] == positions[streams].offsets[(t["topic"], p)] == FIRST
        assert s["target_written_by"] is None
        assert t["target_written_by"] == f"mm2ctl:{plan_id}:verified_delta"
        assert "MM2 never checkpoints share groups" in s["explanation"]


def test_share_and_streams_groups_fail_over_with_nothing_lost(lab: LabInfo, state_dir: Path, tmp_path: Path) -> None:
    name = "types" + uuid.uuid4().hex[:6]
    topic, out_src, out_dst = f"iso-{name}-t", f"iso-{name}-out", f"{name}-out-dst"
    src, dst = source_conf(lab), target_conf(lab)
    KafkaAdmin.connect(src).create_topics({topic: 2, out_src: 2})
    KafkaAdmin.connect(dst).create_topics({out_dst: 2})
    flow = lab_core.add_flow(lab, name)
    remote = f"{flow.source_alias}.{topic}"
    share, streams = f"iso-{name}-share", f"iso-{name}-streams"
    _produce(src, topic, 0, FIRST)

    # The streams application reads everything there is, commits, and leaves; then more records arrive.
    with start_streams_app(lab.source.bootstrap, streams, topic, out_src, log_path=tmp_path / "src-app.log"):
        eventually(
            lambda: (
                KafkaAdmin.connect(src).committed_offsets([streams])[streams].offsets
                == {(topic, 0): FIRST, (topic, 1): FIRST}
            ),
            timeout_s=90,
            what="the streams group committed the log end",
        )
    _produce(src, topic, FIRST, LATER)
    read_from_earliest(src, share)
    assert accept_prefix(src, share, topic, ACCEPTED) == ACCEPTED
    eventually(
        lambda: (
            [KafkaAdmin.connect(dst).partition_bounds([(remote, p)])[(remote, p)].latest for p in (0, 1)]
            == [FIRST + LATER] * 2
        ),
        timeout_s=120,
        what="MM2 copied the topic",
    )

    plan = state_dir / "plan.yaml"
    pair = f"{flow.source_alias}->{flow.target_alias}"
    r = mm2ctl(
        "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*",
        "--out", str(plan), "--json", state=state_dir,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    steps = {s["target"]["group"]: s for s in doc["plan"]["steps"] if s["kind"] == "group_offsets_write"}
    assert steps[share]["target"]["group_type"] == "share"
    assert steps[streams]["target"]["group_type"] == "streams"
    notes = "\n".join(doc["plan"]["notes"])
    assert f"share group {share}: MirrorMaker 2 never translates" in notes
    assert "0 record(s) the group acknowledged past a gap" in notes, notes
    assert f"streams group {streams}: MirrorMaker 2 never translates" in notes
    planned = {(row["group"], row["partition"]): row["target_offset"] for row in doc["rows"]}
    share_rows = [row for row in doc["rows"] if row["group"] == share]
    assert {row["partition"]: row["source_offset"] for row in share_rows} == ACCEPTED  # the state's, not 0
    assert all(row["method"] == "verified_delta" for row in doc["rows"]), doc["rows"]

    applied = mm2ctl("apply", str(plan), "--auto-approve", state=state_dir)
    assert applied.returncode == 0, applied.stderr
    target_admin = GroupAdmin(dst, "backup")
    assert target_admin.positions({share: "share"})[share].offsets == {(remote, p): planned[(share, p)] for p in (0, 1)}
    assert KafkaAdmin.connect(dst).committed_offsets([streams])[streams].offsets == {
        (remote, p): planned[(streams, p)] for p in (0, 1)
    }
    provenance = f"mm2ctl:{doc['plan']['plan_id']}:verified_delta"
    assert KafkaAdmin.connect(dst).commit_metadata(streams) == {(remote, p): provenance for p in (0, 1)}
    _inspect_shows_what_mm2ctl_wrote(src, flow.mm2_config, state_dir, name, share, streams, doc["plan"]["plan_id"])

    # The streams application on the target processes exactly the records it had not processed.
    with start_streams_app(lab.target.bootstrap, streams, remote, out_dst, log_path=tmp_path / "dst-app.log"):
        eventually(
            lambda: sum(map(len, _processed(dst, out_dst).values())) >= 2 * LATER,
            timeout_s=90,
            what="the streams application processed what was left",
        )
    assert _processed(dst, out_dst) == {p: list(range(FIRST, FIRST + LATER)) for p in (0, 1)}

    # The share group on the target gets every record it had not acknowledged, and none it had.
    values = consume_all(dst, share, remote)
    delivered = {p: [int(v.split(b"-")[1]) for v in values.get(p, [])] for p in (0, 1)}
    for p, n in ACCEPTED.items():
        assert sorted(delivered[p]) == list(range(n, FIRST + LATER))  # nothing lost, nothing again


def test_a_share_group_with_members_on_the_target_is_refused_and_rollback_deletes_what_apply_made(
    lab: LabInfo, state_dir: Path
) -> None:
    name = "sharerb" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-t"
    src, dst = source_conf(lab), target_conf(lab)
    KafkaAdmin.connect(src).create_topics({topic: 2})
    flow = lab_core.add_flow(lab, name)
    remote = f"{flow.source_alias}.{topic}"
    share = f"iso-{name}-share"
    _produce(src, topic, 0, 50)
    read_from_earliest(src, share)
    accept_prefix(src, share, topic, {0: 20, 1: 10})
    eventually(
        lambda: (
            [KafkaAdmin.connect(dst).partition_bounds([(remote, p)])[(remote, p)].latest for p in (0, 1)] == [50, 50]
        ),
        timeout_s=120,
        what="MM2 copied the topic",
    )
    pair = f"{flow.source_alias}->{flow.target_alias}"
    plan = state_dir / "plan.yaml"
    args = ("plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", share, "--out", str(plan))

    member = ShareConsumer({**dst, "group.id": share, "share.acknowledgement.mode": "explicit"})
    try:
        member.subscribe([remote])

        def joined() -> bool:
            for msg in member.poll(0.5):
                member.acknowledge(msg, AcknowledgeType.RELEASE)
            return GroupAdmin(dst, "backup").describe({share: "share"})[share].members == 1

        eventually(joined, what="a member of the share group on the target")
        refused = mm2ctl(*args, state=state_dir)
        assert refused.returncode == 8, refused.stderr
        assert f"group {share} on {flow.target_alias} has 1 active member(s)" in refused.stderr
    finally:
        member.close()
    admin = GroupAdmin(dst, "backup")
    admin.delete_share_group(share)  # the member's visit made the group: the failover makes it anew
    assert share not in {g.group for g in admin.list_groups()}

    assert mm2ctl(*args, state=state_dir).returncode == 0
    journal = state_dir / "j.jsonl"
    applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
    assert applied.returncode == 0, applied.stderr
    assert admin.positions({share: "share"})[share].offsets.keys() == {(remote, 0), (remote, 1)}
    rolled = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)
    assert rolled.returncode == 0, rolled.stderr
    assert share not in {g.group for g in admin.list_groups()}
