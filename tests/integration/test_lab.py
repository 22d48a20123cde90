"""The lab against the real processes: replication, offset syncs, checkpoints, synced group offsets."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.process import is_alive
from tests.integration.support import (
    consume_and_commit,
    eventually,
    offset_syncs_location,
    remote_topic,
    source_conf,
    target_conf,
    uniq,
)
from tests.reference_codecs import decode_checkpoint, decode_offset_sync

pytestmark = pytest.mark.integration


def _produce_numbered(lab: LabInfo, topic: str, count: int, partitions: int = 1) -> None:
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: partitions})
    records.produce(
        source_conf(lab),
        topic,
        [(f"k{i}".encode(), f"v{i}".encode(), i % partitions) for i in range(count)],
    )


def _read_remote(lab: LabInfo, topic: str, count: int) -> list[tuple[bytes | None, bytes | None, int]]:
    remote = remote_topic(lab, topic)

    def replicated() -> list[tuple[bytes | None, bytes | None, int]] | None:
        topics = KafkaAdmin.connect(target_conf(lab)).list_topics()
        if remote not in topics:
            return None
        got = [(r.key, r.value, r.partition) for r in records.read_partitions(target_conf(lab), remote)]
        return got if len(got) >= count else None

    return eventually(replicated, timeout_s=90, what=f"{count} records replicated to {remote}")


def test_lab_is_healthy_and_describes_itself(lab: LabInfo) -> None:
    st = lab_core.status(Path(lab.dir))
    assert st.healthy, st
    assert {c.alias for c in st.clusters} == {"primary", "backup"}
    assert set(lab.connectors.values()) <= set(st.connectors)
    for name in lab.connectors.values():
        assert st.connectors[name]["state"] == "RUNNING"
    assert KafkaAdmin.connect(source_conf(lab)).cluster_id() == lab.source.cluster_id
    assert KafkaAdmin.connect(target_conf(lab)).cluster_id() == lab.target.cluster_id
    # The lab's mm2.properties is a real MM2 file: our own reader derives the lab's actual names from it.
    pair = load_mm2_config(lab.mm2_config).pair("primary->backup")
    assert pair.source_kafka_config["bootstrap.servers"] == lab.source.bootstrap
    assert pair.target_kafka_config["bootstrap.servers"] == lab.target.bootstrap
    assert pair.sync_group_offsets_enabled
    bootstrap, syncs_topic = offset_syncs_location(lab)
    assert pair.offset_syncs_topic == syncs_topic
    assert pair.checkpoints_topic == "primary.checkpoints.internal"
    assert pair.remote_topic("orders") == remote_topic(lab, "orders")
    assert syncs_topic in KafkaAdmin.connect({"bootstrap.servers": bootstrap}).list_topics()


@pytest.mark.parametrize(
    "policy", [pytest.param("default"), pytest.param("identity", marks=pytest.mark.lab(policy="identity"))]
)
def test_records_arrive_on_backup_under_the_remote_name(lab: LabInfo, policy: str) -> None:
    assert lab.replication_policy == policy
    topic = uniq("orders")
    _produce_numbered(lab, topic, 60, partitions=3)
    got = _read_remote(lab, topic, 60)
    expected = {(f"k{i}".encode(), f"v{i}".encode(), i % 3) for i in range(60)}
    assert set(got) == expected
    # Per partition, MM2 keeps the order the source had.
    for p in range(3):
        vals = [int(v[1:]) for _k, v, part in got if part == p]  # type: ignore[index]
        assert vals == sorted(vals)


@pytest.mark.parametrize(
    "location", [pytest.param("source"), pytest.param("target", marks=pytest.mark.lab(location="target"))]
)
def test_offset_syncs_topic_holds_offset_sync_records(lab: LabInfo, location: str) -> None:
    assert lab.offset_syncs_location == location
    topic = uniq("syncs")
    _produce_numbered(lab, topic, 250)
    _read_remote(lab, topic, 250)
    bootstrap, syncs_topic = offset_syncs_location(lab)

    def ours() -> list[tuple[int, int]] | None:
        decoded = [
            decode_offset_sync(r.key, r.value)
            for r in records.read_partitions({"bootstrap.servers": bootstrap}, syncs_topic)
        ]
        mine = [(s.upstream_offset, s.downstream_offset) for s in decoded if s.topic == topic]
        return mine or None

    syncs = eventually(ours, timeout_s=60, what=f"offset syncs for {topic} in {syncs_topic}")
    # The first record of a partition always gets a sync; a fresh remote topic starts at offset 0.
    assert syncs[0] == (0, 0)
    for upstream, downstream in syncs:
        assert 0 <= upstream < 250
        assert downstream == upstream  # nothing filtered or compacted: offsets line up one to one


def test_group_on_primary_gets_checkpoint_and_synced_offset_on_backup(lab: LabInfo) -> None:
    topic, group = uniq("payments"), uniq("billing")
    _produce_numbered(lab, topic, 120)
    _read_remote(lab, topic, 120)
    assert consume_and_commit(lab.source.bootstrap, topic, group, 80) == 80
    remote = remote_topic(lab, topic)

    def checkpoint() -> tuple[int, int] | None:
        for r in records.read_partitions(target_conf(lab), "primary.checkpoints.internal"):
            if r.value is None:
                continue
            cp = decode_checkpoint(r.key, r.value)
            if cp.group == group and cp.topic == remote and cp.partition == 0 and cp.upstream_offset == 80:
                return (cp.upstream_offset, cp.downstream_offset)
        return None

    upstream, downstream = eventually(checkpoint, timeout_s=90, what=f"checkpoint of {group}")
    assert upstream == 80
    # Translation never points past the record the group has not consumed yet.
    assert 0 < downstream <= 80

    def synced() -> int | None:
        offsets = KafkaAdmin.connect(target_conf(lab)).committed_offsets([group])[group]
        return offsets.offsets.get((remote, 0))

    target_offset = eventually(synced, timeout_s=90, what=f"{group} offset synced to backup")
    assert target_offset == downstream

    # And a consumer of the backup group really resumes there.
    consumer = Consumer({"bootstrap.servers": lab.target.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        committed = consumer.committed([TopicPartition(remote, 0)], timeout=10)
        assert committed[0].offset == downstream
    finally:
        consumer.close()


@pytest.mark.parametrize(
    "version",
    [
        pytest.param("3.9.2", marks=pytest.mark.lab(version="3.9.2")),
        pytest.param("3.4.1", marks=pytest.mark.lab(version="3.4.1")),
    ],
)
def test_older_releases_boot_with_running_connectors(lab: LabInfo, version: str) -> None:
    assert lab.kafka_version == version
    st = lab_core.status(Path(lab.dir))
    assert st.healthy, st
    topic = uniq("legacy")
    _produce_numbered(lab, topic, 10)
    assert len(_read_remote(lab, topic, 10)) == 10


def test_lab_down_leaves_no_process(tmp_path: Path, lab_pool: object) -> None:
    """A lab of its own, so the shared one stays up: up, down, and every pid it started is gone."""
    from tests.integration.conftest import LabPool

    assert isinstance(lab_pool, LabPool)
    lab_pool.release()  # one lab at a time on two cores
    info = lab_core.up(tmp_path / "solo", kafka_version="3.4.1")
    assert all(is_alive(p) for p in info.pids)
    stopped = lab_core.down(tmp_path / "solo")
    assert sorted(stopped) == sorted(info.pids)
    assert not any(is_alive(p) for p in info.pids)
