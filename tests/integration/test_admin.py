"""The Kafka admin facade against the real lab brokers: batching, concurrency, per-item errors."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.process import free_port
from tests.integration.support import consume_and_commit, eventually, source_conf, uniq

pytestmark = pytest.mark.integration


@pytest.fixture
def admin(lab: LabInfo) -> KafkaAdmin:
    return KafkaAdmin.connect(source_conf(lab), name="primary")


def _topic_with_data(lab: LabInfo, admin: KafkaAdmin, partitions: int = 4, per_partition: int = 25) -> str:
    topic = uniq("adm")
    admin.create_topics({topic: partitions})
    records.produce(
        source_conf(lab),
        topic,
        [(b"k", f"{p}-{i}".encode(), p) for p in range(partitions) for i in range(per_partition)],
    )
    return topic


def test_cluster_id_and_topics(lab: LabInfo, admin: KafkaAdmin) -> None:
    assert admin.cluster_id() == lab.source.cluster_id
    topic = _topic_with_data(lab, admin, partitions=3)
    assert admin.list_topics()[topic] == 3
    missing = uniq("missing")
    desc = admin.describe_topics([topic, missing])
    assert desc[topic].partitions == 3 and desc[topic].error is None
    assert desc[missing].error is not None
    assert desc[missing].error.code == "UNKNOWN_TOPIC_OR_PART"


def test_partition_bounds_batches_and_reports_missing_partitions_as_data(lab: LabInfo, admin: KafkaAdmin) -> None:
    topic = _topic_with_data(lab, admin, partitions=4, per_partition=25)
    missing = uniq("missing")
    tps = [(topic, p) for p in range(4)] + [(missing, 0)]
    bounds = admin.partition_bounds(tps, batch=2)  # several batches on purpose
    for p in range(4):
        b = bounds[(topic, p)]
        assert (b.earliest, b.latest, b.error) == (0, 25, None)
    assert bounds[(missing, 0)].error is not None
    assert bounds[(missing, 0)].latest is None


def test_committed_offsets_for_many_groups_concurrently(lab: LabInfo, admin: KafkaAdmin) -> None:
    topic = _topic_with_data(lab, admin, partitions=2, per_partition=10)
    groups = [uniq("many") for _ in range(12)]
    admin.alter_group_offsets({g: {(topic, 0): i, (topic, 1): i + 1} for i, g in enumerate(groups)})
    never = uniq("never-committed")
    got = admin.committed_offsets([*groups, never], concurrency=4)
    for i, g in enumerate(groups):
        assert got[g].offsets == {(topic, 0): i, (topic, 1): i + 1}
        assert got[g].error is None
    assert got[never].offsets == {}


def test_group_state_and_members(lab: LabInfo, admin: KafkaAdmin) -> None:
    topic = _topic_with_data(lab, admin, partitions=1, per_partition=5)
    empty_group, active_group = uniq("empty"), uniq("active")
    consume_and_commit(lab.source.bootstrap, topic, empty_group, 5)
    consumer = Consumer({"bootstrap.servers": lab.source.bootstrap, "group.id": active_group})
    try:
        consumer.subscribe([topic])

        def joined() -> bool:
            consumer.poll(0.2)
            return admin.describe_groups([active_group])[active_group].state == "Stable"

        eventually(joined, timeout_s=30, what="consumer joined")
        described = admin.describe_groups([empty_group, active_group])
        assert described[active_group].members == 1
        assert described[empty_group].state == "Empty"
        assert described[empty_group].members == 0
        listed = {g.group: g.state for g in admin.list_groups()}
        assert listed[active_group] == "Stable"
        assert listed[empty_group] == "Empty"

        # Kafka refuses to move an active group's offsets; the refusal is data, per partition.
        results = admin.alter_group_offsets({active_group: {(topic, 0): 1}})[active_group]
        assert len(results) == 1 and results[0].error is not None
    finally:
        consumer.close()


def test_alter_then_delete_group_offsets(lab: LabInfo, admin: KafkaAdmin) -> None:
    topic = _topic_with_data(lab, admin, partitions=2, per_partition=10)
    group = uniq("alter")
    results = admin.alter_group_offsets({group: {(topic, 0): 3, (topic, 1): 7}})[group]
    assert [(r.partition, r.offset, r.error) for r in results] == [(0, 3, None), (1, 7, None)]
    assert admin.committed_offsets([group])[group].offsets == {(topic, 0): 3, (topic, 1): 7}
    partial = admin.delete_group_offsets(group, [(topic, 0)])
    assert partial[0].error is not None and partial[0].error.code == "UNSUPPORTED"
    deleted = admin.delete_group_offsets(group, [(topic, 0), (topic, 1)])
    assert all(r.error is None for r in deleted)
    assert admin.committed_offsets([group])[group].offsets == {}


def test_delete_records_moves_the_low_watermark(lab: LabInfo, admin: KafkaAdmin) -> None:
    topic = _topic_with_data(lab, admin, partitions=2, per_partition=20)
    results = admin.delete_records({(topic, 0): 15})
    assert [(r.partition, r.offset, r.error) for r in results] == [(0, 15, None)]
    bounds = admin.partition_bounds([(topic, 0), (topic, 1)])
    assert (bounds[(topic, 0)].earliest, bounds[(topic, 0)].latest) == (15, 20)
    assert bounds[(topic, 1)].earliest == 0
    rest = list(records.read_partitions(source_conf(lab), topic, [0]))
    assert [r.offset for r in rest] == list(range(15, 20))


def test_a_dead_broker_is_one_clear_error() -> None:
    admin = KafkaAdmin.connect({"bootstrap.servers": f"127.0.0.1:{free_port()}"}, name="nowhere", timeout_s=2)
    with pytest.raises(KafkaClusterError) as info:
        admin.cluster_id()
    assert "reaching nowhere failed" in str(info.value)
    assert info.value.code is not None
