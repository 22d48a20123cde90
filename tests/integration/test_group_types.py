"""Every group type, seen and moved through ``core.kafka.group_admin`` (the Java AdminClient on a JVM of its own):
a share group driven by a real share consumer, on Kafka 4.3.1, and a Kafka 3.9.2 cluster where share and
streams groups do not exist."""

from __future__ import annotations

import json
import sys
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mm2ctl.core.errors import KafkaClusterError, UnhostedGroupTypeError
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GROUP_ADMIN, UNMIRRORED_TYPES, GroupAdmin
from mm2ctl.inspector.reads.typed_groups import GroupListings, TypedGroups
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.share_consumer import accept_prefix, read_from_earliest
from tests.integration.support import eventually, source_conf, target_conf, uniq
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration


def _topic(lab: LabInfo, conf: dict[str, str], per_partition: int) -> str:
    topic = uniq("gt")
    KafkaAdmin.connect(conf).create_topics({topic: 2})
    rows = [(b"k%d" % i, b"v%d" % i, p) for p in (0, 1) for i in range(per_partition)]
    records.produce(conf, topic, rows)
    return topic


def test_a_share_group_is_listed_with_its_start_offsets_and_what_it_acknowledged(lab: LabInfo) -> None:
    conf = source_conf(lab)
    topic = _topic(lab, conf, 100)
    group = uniq("share")
    read_from_earliest(conf, group)
    assert accept_prefix(conf, group, topic, {0: 60, 1: 30}) == {0: 60, 1: 30}

    admin = GroupAdmin(conf, "primary")
    listed = {g.group: g for g in admin.list_groups()}
    assert listed[group].type == "share" and listed[group].state == "Empty"
    assert group not in {g.group for g in KafkaAdmin.connect(conf).list_groups()}  # librdkafka does not see it
    got = admin.positions({group: "share"})[group]
    assert got.error is None and set(got.offsets) == {(topic, 0), (topic, 1)}
    # The start offset may stay behind what was acknowledged; the lag counts only the records not yet
    # acknowledged, so the log end less the lag is what the group consumed.
    assert {p: 100 - got.lag[(topic, p)] for p in (0, 1)} == {0: 60, 1: 30}
    assert all(got.offsets[(topic, p)] <= n for p, n in ((0, 60), (1, 30)))
    shape = admin.describe({group: "share"})[group]
    assert (shape.type, shape.members, shape.error) == ("share", 0, None)


def test_share_start_offsets_are_written_to_an_empty_group_and_refused_as_a_commit(lab: LabInfo) -> None:
    conf = target_conf(lab)
    topic = _topic(lab, conf, 50)
    group = uniq("share-dst")
    read_from_earliest(conf, group)
    accept_prefix(conf, group, topic, {0: 5, 1: 5})  # the group now exists on the cluster, empty
    admin = GroupAdmin(conf, "backup")
    written = admin.write(group, "share", {(topic, 0): 20, (topic, 1): 35})
    assert [(w.partition, w.error) for w in written] == [(0, None), (1, None)]
    got = admin.positions({group: "share"})[group]
    assert got.offsets == {(topic, 0): 20, (topic, 1): 35}
    assert got.lag == {(topic, 0): 30, (topic, 1): 15}  # the state past the start offset is gone
    # An offset commit for a share group is refused by the broker: only its own call moves it.
    refused = admin.write(group, "streams", {(topic, 0): 40})
    assert refused[0].error is not None and refused[0].error.code == "GROUP_ID_NOT_FOUND"
    assert admin.positions({group: "share"})[group].offsets[(topic, 0)] == 20


#: Every process this test session starts with GroupAdmin's main class on its command line, while recording.
_STARTED: list[list[str]] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "subprocess.Popen" and _STARTED is not None and GROUP_ADMIN.main_class in map(str, args[1] or ()):
        _STARTED.append([str(a) for a in args[1]])


sys.addaudithook(_audit)


def test_a_live_session_keeps_one_client_per_cluster_and_a_later_run_starts_no_process(lab: LabInfo) -> None:
    global _STARTED
    conf, dst = source_conf(lab), target_conf(lab)
    topic = _topic(lab, conf, 40)
    group = uniq("share-live")
    read_from_earliest(conf, group)
    accept_prefix(conf, group, topic, {0: 10, 1: 20})
    settings = {"primary": conf, "backup": dst}
    config: Any = SimpleNamespace(client_settings=lambda alias, _pair: settings[alias])
    pair: Any = SimpleNamespace(source="primary", target="backup", name="primary->backup")
    listings = GroupListings()

    def run() -> tuple[dict[str, str], dict[str, Any], int]:
        typed = TypedGroups(config, pair, pool, listings=listings)
        groups = typed.unmirrored("primary", lambda g: g == group)
        hosting = sum(any(g.type in UNMIRRORED_TYPES for g in typed.listed(a).values()) for a in settings)
        return groups, typed.positions("primary", groups).by_group(), hosting

    try:
        with ThreadPoolExecutor(2) as pool:
            first = run()
            _STARTED = []
            second = run()
            started, _STARTED = _STARTED, None
            jvms, running = listings.jvm_starts(), listings.jvms_running()
    finally:
        listings.close()
    assert first[0] == second[0] == {group: "share"}  # a share group's listing is read again every run
    assert first[1] == second[1] and set(first[1][group].offsets) == {(topic, 0), (topic, 1)}
    assert started == []  # the second run's calls all went to the clients the first run started
    assert jvms == 2  # one JVM per cluster, started by the first run
    # Kept: the JVM of each cluster that hosts a share or streams group (the source does; the target may, from
    # other tests on this lab). A cluster without either ended its JVM after its listing.
    assert running == second[2] >= 1


def test_a_missing_group_and_a_dead_broker(lab: LabInfo) -> None:
    admin = GroupAdmin(source_conf(lab), "primary")
    got = admin.positions({uniq("none"): "share", uniq("none"): "streams"})
    assert all(not p.offsets for p in got.values())
    assert admin.hosts(["share", "streams", "classic"]) == {"share", "streams"}
    dead = GroupAdmin({"bootstrap.servers": "127.0.0.1:1"}, "nowhere", timeout_s=3)
    with pytest.raises(KafkaClusterError, match=r"on nowhere failed: .*no answer within 3000 ms"):
        dead.list_groups()


@pytest.mark.lab(version="3.9.2")
def test_kafka_3_9_has_no_share_or_streams_groups_and_that_is_no_error(lab: LabInfo, tmp_path: Path) -> None:
    conf = source_conf(lab)
    name = "old" + uuid.uuid4().hex[:6]
    topic, group = f"iso-{name}-t", f"iso-{name}-classic"
    KafkaAdmin.connect(conf).create_topics({topic: 1})
    flow = lab_core.add_flow(lab, name, roles=("source",))
    records.produce(conf, topic, [(b"k", b"v%d" % i, 0) for i in range(10)])
    KafkaAdmin.connect(conf).alter_group_offsets({group: {(topic, 0): 4}})
    admin = GroupAdmin(conf, "primary")
    listed = {g.group: g.type for g in admin.list_groups()}
    assert listed[group] == "classic"
    assert not {t for t in listed.values()} & {"share", "streams"}
    got = admin.positions({uniq("share"): "share", uniq("streams"): "streams"})
    assert all(not p.offsets and p.error is None for p in got.values())
    assert admin.hosts(["share", "streams"]) == frozenset()  # a plan moving either type here is refused (exit 22)
    queue = uniq("queue")
    with pytest.raises(UnhostedGroupTypeError, match=f"primary cannot host share group {queue}: .*Kafka 4.2"):
        admin.write(queue, "share", {(topic, 0): 1})

    # The failover plan works as before and names no share or streams group.
    remote = f"{flow.source_alias}.{topic}"
    target = KafkaAdmin.connect(target_conf(lab))
    eventually(lambda: target.partition_bounds([(remote, 0)])[(remote, 0)].latest == 10, what="MM2 copied")
    pair = f"{flow.source_alias}->{flow.target_alias}"
    r = mm2ctl(
        "plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*",
        "--out", str(tmp_path / "plan.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [row["group"] for row in doc["rows"]] == [group]
    assert not any("share" in n or "streams" in n for n in doc["plan"]["notes"]), doc["plan"]["notes"]
    assert all("group_type" not in s["target"] for s in doc["plan"]["steps"] if s["kind"] == "group_offsets_write")

    # inspect too: the group, as the classic group it is, and no share or streams group.
    args = ("inspect", "--mm2-config", flow.mm2_config, "--groups", f"iso-{name}-.*", "--format", "json", "--quiet")
    seen = mm2ctl(*args, state=tmp_path)
    assert seen.returncode in (0, 10), seen.stderr
    rows = [json.loads(line) for line in seen.stdout.splitlines()]
    assert [(r["group"], r["group_type"]) for r in rows] == [(group, "classic")]
    assert "not_checkpointed" not in {r["status"] for r in rows}
