"""``mm2ctl plan failback`` and the timestamp fallback against the real lab, under both replication policies
(each test runs isolated flows of its own, so one lab serves both).

Every position is checked by reading the records: a group's committed offset on a cluster is right when the
record there is the one the group reads next on the other cluster (or both are at the end of what was
mirrored). Records are made awkward on purpose: single-record transactions put a commit marker after every
record on the source, so the source's offsets advance by two per record and the target's by one.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.drill.sync_truncation import truncate_partition_syncs
from mm2ctl.lab import connect_worker
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo, wait_for_connectors_running
from mm2ctl.lab.mm2_setup import Mm2Setup
from mm2ctl.plans.kafka_records import read_syncs
from mm2ctl.plans.live_state import open_live_state
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration

POLICIES = ["default", "identity"]


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


@dataclass
class Mirrored:
    """An isolated flow whose topic MM2 copied, then stopped: nothing moves while a test plans."""

    lab: LabInfo
    flow: LabFlow
    topic: str
    remote: str
    records: int

    @property
    def pair(self) -> str:
        return f"{self.flow.source_alias}->{self.flow.target_alias}"

    @property
    def a(self) -> KafkaAdmin:
        return KafkaAdmin.connect(source_conf(self.lab))

    @property
    def b(self) -> KafkaAdmin:
        return KafkaAdmin.connect(target_conf(self.lab))

    def plan(self, kind: str, out: Path, state: Path, *extra: str, mm2_config: str | None = None):  # type: ignore[no-untyped-def]
        return mm2ctl(
            "plan", kind, "--pair", self.pair, "--mm2-config", mm2_config or self.flow.mm2_config,
            "--out", str(out), *extra, state=state,
        )  # fmt: skip


def _mirror(
    lab: LabInfo, policy: str, *, partitions: int = 2, n: int = 80, timestamps: list[int] | None = None,
    same_content: bool = False,
) -> Mirrored:  # fmt: skip
    """A flow (syncs on the target, no checkpoint connector), ``n`` single-record transactions per partition,
    mirrored, then the flow's connectors stopped."""
    name = "fb" + uuid.uuid4().hex[:8]
    flow = lab_core.add_flow(lab, name, replication_policy=policy, offset_syncs_location="target", roles=("source",))
    topic = f"iso-{name}-t"
    remote = topic if policy == "identity" else f"{flow.source_alias}.{topic}"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: partitions})
    producer = Producer({"bootstrap.servers": lab.source.bootstrap, "transactional.id": f"tx-{name}"})
    producer.init_transactions()
    for i in range(n):
        producer.begin_transaction()
        for p in range(partitions):
            value = b"same" if same_content else b"%s p%d #%d" % (name.encode(), p, i)
            kw = {} if timestamps is None else {"timestamp": timestamps[i]}
            producer.produce(topic, key=b"k" if same_content else b"k%d" % i, value=value, partition=p, **kw)
        producer.commit_transaction()
    mirrored = Mirrored(lab, flow, topic, remote, n)

    def copied() -> bool:
        got = mirrored.b.partition_bounds([(remote, p) for p in range(partitions)])
        return all(b.error is None and (b.latest or 0) >= n for b in got.values())

    eventually(copied, timeout_s=120, what=f"MM2 copied {topic}")
    live = open_live_state(flow.mm2_config)
    pair = live.mm2.pair(f"{flow.source_alias}->{flow.target_alias}")

    def synced() -> bool:  # MM2 writes its offset syncs after the records, on a loaded worker noticeably so
        syncs = read_syncs(live, pair)
        return all(syncs.get((topic, p)) for p in range(partitions))

    eventually(synced, timeout_s=120, what=f"MM2's offset syncs of every partition of {topic}")
    with build_connect_client([lab.connect_url]) as connect:
        for connector in flow.connectors.values():
            connect.stop(connector)
        for connector in flow.connectors.values():  # stop is asynchronous: a task still running writes syncs
            connect.wait_for_state(connector, {"STOPPED"}, timeout=60)
    return mirrored


def _record(bootstrap: str, topic: str, partition: int, offset: int) -> bytes | None:
    """The value of the first record at or after ``offset`` (None at the end)."""
    got = records.read_partitions({"bootstrap.servers": bootstrap}, topic, [partition], start={partition: offset})
    return next((r.value for r in got), None)


def _consume_on(bootstrap: str, topic: str, group: str, count: dict[int, int]) -> dict[int, int]:
    """The application: read ``count[p]`` records of each partition (or to its end) from where ``group`` is,
    commit, leave; the committed positions."""
    from confluent_kafka import OFFSET_STORED, KafkaError, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False, "enable.partition.eof": True}
    )
    seen = dict.fromkeys(count, 0)
    last: dict[int, int] = {}
    done: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_STORED) for p in count])
        deadline = time.monotonic() + 60
        while len(done) < len(count) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.partition() is None:
                continue
            p = msg.partition()
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    done.add(p)
                continue
            if seen[p] < count[p]:
                seen[p] += 1
                last[p] = msg.offset()
                if seen[p] == count[p]:
                    done.add(p)
        consumer.commit(offsets=[TopicPartition(topic, p, o + 1) for p, o in last.items()], asynchronous=False)
    finally:
        consumer.close()
    return {p: o + 1 for p, o in last.items()}


@pytest.mark.parametrize("policy", POLICIES)
def test_failover_consume_on_the_target_failback_exact_and_rollback(
    lab: LabInfo, policy: str, state_dir: Path, tmp_path: Path
) -> None:
    m = _mirror(lab, policy)
    group = f"iso-{m.flow.source_alias[:-3]}-app"
    before = {0: 61, 1: 110}  # a commit marker, and a record
    m.a.alter_group_offsets({group: {(m.topic, p): o for p, o in before.items()}})
    failover = m.plan("failover", tmp_path / "failover.yaml", state_dir)
    assert failover.returncode == 0, failover.stderr
    assert mm2ctl("apply", "--auto-approve", str(tmp_path / "failover.yaml"), state=state_dir).returncode == 0
    # The group consumes more on B (partition 1 to the end of what was mirrored), then fails back.
    on_b = _consume_on(lab.target.bootstrap, m.remote, group, {0: 17, 1: m.records})
    plan = m.plan("failback", tmp_path / "failback.yaml", state_dir, "--export-csv", str(tmp_path / "back.csv"))
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert "failback" in plan.stdout and "verified" in plan.stdout
    applied = mm2ctl("apply", "--auto-approve", "--json", str(tmp_path / "failback.yaml"), state=state_dir)
    assert applied.returncode == 0, applied.stderr
    on_a = m.a.committed_offsets([group])[group].offsets
    for p, b_offset in on_b.items():
        here = _record(lab.target.bootstrap, m.remote, p, b_offset)
        there = _record(lab.source.bootstrap, m.topic, p, on_a[(m.topic, p)])
        assert here == there, (p, b_offset, on_a)  # the record the group reads next, on both clusters
    assert _record(lab.source.bootstrap, m.topic, 1, on_a[(m.topic, 1)]) is None  # read everything: at the end
    csv_rows = (tmp_path / "back.csv").read_text().splitlines()
    assert sorted(csv_rows) == sorted(f"{group},{m.topic},{p},{on_a[(m.topic, p)]}" for p in on_b)
    import json

    journal = json.loads(applied.stdout)["journal"]
    undone = mm2ctl("rollback", "--auto-approve", journal, state=state_dir)
    assert undone.returncode == 0, undone.stderr
    restored = m.a.committed_offsets([group])[group].offsets
    assert {p: restored[(m.topic, p)] for p in before} == before


@pytest.mark.parametrize("policy", POLICIES)
def test_failback_beyond_the_mirrored_range_and_an_active_group_are_refused(
    lab: LabInfo, policy: str, state_dir: Path, tmp_path: Path
) -> None:
    m = _mirror(lab, policy, partitions=1, n=40)
    group = f"iso-{m.flow.source_alias[:-3]}-app"
    m.b.alter_group_offsets({group: {(m.remote, 0): 20}})
    # Records produced on B after the failover: the group reads some of them.
    records.produce(target_conf(lab), m.remote, [(b"new%d" % i, b"new %d" % i, 0) for i in range(10)])
    m.b.alter_group_offsets({group: {(m.remote, 0): 45}})
    out = tmp_path / "back.yaml"
    plan = m.plan("failback", out, state_dir)
    assert plan.returncode == ExitCode.UNTRANSLATABLE, plan.stdout + plan.stderr
    assert "UNTRANSLATABLE: 1 group partition(s)" in plan.stdout.splitlines()[1]
    assert f"produced on {m.flow.target_alias} after the failover" in plan.stdout
    assert f"mirror them to {m.flow.source_alias} first" in plan.stdout
    refused = mm2ctl("apply", "--auto-approve", str(out), state=state_dir)
    assert refused.returncode == ExitCode.UNTRANSLATABLE and "--allow-untranslatable" in refused.stderr

    # A group with members on A is refused outright.
    m.b.alter_group_offsets({group: {(m.remote, 0): 30}})
    consumer = Consumer({"bootstrap.servers": lab.source.bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.subscribe([m.topic])
    eventually(lambda: consumer.poll(0.2) is None and bool(consumer.assignment()), timeout_s=30, what="joined")
    try:
        active = m.plan("failback", out, state_dir)
        assert active.returncode == ExitCode.STALE, active.stdout + active.stderr
        assert "active member" in active.stderr
    finally:
        consumer.close()
    again = m.plan("failback", out, state_dir)
    assert again.returncode == 0, again.stderr


@pytest.mark.parametrize("policy", POLICIES)
def test_failback_beyond_the_mirrored_range_with_a_reverse_flow(
    lab: LabInfo, policy: str, state_dir: Path, tmp_path: Path
) -> None:
    """With B->A in the MM2 file: under the identity policy a reverse flow copies B's new records into the same
    topic on A, and the group's position lands on the copy of the record it reads next; the default policy
    never replicates ``A.t`` back to A, and the plan says so."""
    m = _mirror(lab, policy, partitions=1, n=40)
    src, dst = m.flow.source_alias, m.flow.target_alias
    config = Path(m.flow.mm2_config).read_text() + f"\n{dst}->{src}.enabled = true\n"
    both = tmp_path / "both-ways.properties"
    both.write_text(config)
    group = f"iso-{src[:-3]}-app"
    records.produce(
        target_conf(lab), m.remote, [(b"new%d" % i, b"%s new %d" % (dst.encode(), i), 0) for i in range(10)]
    )
    if policy == "identity":
        setup = Mm2Setup(
            source_alias=dst, target_alias=src, source_bootstrap=lab.target.bootstrap,
            target_bootstrap=lab.source.bootstrap, replication_policy="identity", offset_syncs_location="target",
            connector_prefix=f"mm2-{src}-back", topics=m.topic, topics_exclude="mm2.*\\.internal", roles=("source",),
        )  # fmt: skip
        (name, connector), *_ = setup.connector_configs().items()
        # The worker writes to its own cluster (B) unless told otherwise: this flow's target is A.
        connector_config = {**connector, "producer.override.bootstrap.servers": lab.source.bootstrap}
        connect_worker.put_connector(lab.connect_url, name, connector_config)
        wait_for_connectors_running(lab.connect_url, [name], timeout_s=120)
        eventually(
            lambda: _record(lab.source.bootstrap, m.topic, 0, 0) is not None and _copied_back(m, dst), timeout_s=120
        )
        with build_connect_client([lab.connect_url]) as connect:
            connect.delete(name)
        # It also copied B's heartbeats topics to A (MM2 copies those whatever its filter): every later flow
        # from A would copy them on, so they go.
        a_admin = KafkaAdmin.connect(source_conf(lab))
        copied = [t for t in a_admin.list_topics() if t.startswith(f"{dst}.") and t.endswith("heartbeats")]
        for future in (a_admin.client.delete_topics(copied) if copied else {}).values():
            future.result()
    m.b.alter_group_offsets({group: {(m.remote, 0): 45}})
    plan = m.plan("failback", tmp_path / "back.yaml", state_dir, mm2_config=str(both))
    if policy == "identity":
        assert plan.returncode == 0, plan.stdout + plan.stderr
        assert mm2ctl("apply", "--auto-approve", str(tmp_path / "back.yaml"), state=state_dir).returncode == 0
        on_a = m.a.committed_offsets([group])[group].offsets[(m.topic, 0)]
        assert _record(lab.source.bootstrap, m.topic, 0, on_a) == b"%s new 5" % dst.encode()
    else:
        assert plan.returncode == ExitCode.UNTRANSLATABLE, plan.stdout + plan.stderr
        assert "never replicates a topic to the cluster it came from" in plan.stdout


def _copied_back(m: Mirrored, dst: str) -> bool:
    last = b"%s new 9" % dst.encode()
    return any(r.value == last for r in records.read_partitions(source_conf(m.lab), m.topic, [0]))


@pytest.mark.parametrize("policy", POLICIES)
def test_timestamp_fallback_on_truncated_offset_syncs_lands_on_the_right_record(
    lab: LabInfo, policy: str, state_dir: Path, tmp_path: Path
) -> None:
    """Partition 0 loses its offset syncs: ``--fallback none`` leaves it untranslatable (exit 19), the default
    finds it by timestamp and proves it by content, even among records that share their timestamp and their
    content (runs of 20 identical records)."""
    now = int(time.time() * 1000) - 60_000
    n = 100
    m = _mirror(lab, policy, n=n, timestamps=[now + (i // 20) * 1000 for i in range(n)], same_content=True)
    group = f"iso-{m.flow.source_alias[:-3]}-app"
    live = open_live_state(m.flow.mm2_config)
    truncate_partition_syncs(live, live.mm2.pair(m.pair), m.topic, 0)
    committed = {0: 2 * 47, 1: 2 * 73 + 1}  # record 47; the marker after record 73
    m.a.alter_group_offsets({group: {(m.topic, p): o for p, o in committed.items()}})
    none = m.plan("failover", tmp_path / "none.yaml", state_dir, "--fallback", "none")
    assert none.returncode == ExitCode.UNTRANSLATABLE, none.stdout + none.stderr
    assert "no offset sync for this partition" in none.stdout, none.stdout
    plan = m.plan("failover", tmp_path / "ts.yaml", state_dir)
    assert plan.returncode == 0, plan.stdout + plan.stderr
    assert f"{m.topic}/0: 94 -> 47 timestamp_verified" in plan.stdout
    assert mm2ctl("apply", "--auto-approve", str(tmp_path / "ts.yaml"), state=state_dir).returncode == 0
    on_b = m.b.committed_offsets([group])[group].offsets
    # The target holds a dense copy from 0: the copy of source record i is at target offset i.
    assert {p: on_b[(m.remote, p)] for p in committed} == {0: 47, 1: 74}
