"""Sample plans shared by the plan, journal and lock tests: one step of every kind, every precondition kind.

Kept as a test module (not conftest) so other test files import the builders explicitly; the one test here
guards the guard: the sample really does cover every kind, so "round-trips every kind" stays true as kinds
are added.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.plans.connect_target import ConnectTarget
from mm2ctl.plans.connector_config import ConnectorConfig, SecretSource
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.fingerprint import fingerprint_of
from mm2ctl.plans.offsets import GroupOffset, PlannedConnectorOffset, TombstoneRecord
from mm2ctl.plans.payloads import (
    CatchUpTarget,
    ConnectOffsetsDelete,
    ConnectOffsetsPatch,
    ConnectOffsetsTombstone,
    ConnectorCreate,
    ConnectorDelete,
    ConnectorPause,
    ConnectorRestart,
    ConnectorResume,
    ConnectorStop,
    DeferredRow,
    GroupOffsetRow,
    GroupOffsetsVerify,
    GroupOffsetsWrite,
    OffsetSyncsBackup,
    OffsetSyncsTruncate,
    SparkOffsetRow,
    SparkQueryWrite,
    TranslateAfterCatchUp,
    TranslationMethod,
    WaitForCatchUp,
)
from mm2ctl.plans.preconditions import (
    PRECONDITION_TYPES,
    AllOf,
    ConnectorAbsent,
    ConnectorOffsetsUnchanged,
    ConnectorStateIn,
    ConnectorStopped,
    GroupEmptyOrAbsent,
    GroupOffsetsInRange,
    GroupOffsetsUnchanged,
    NoPrecondition,
    OffsetsRecordsUnchanged,
    Precondition,
    SparkCheckpointAt,
    TopicEndOffsetEquals,
    WorkerGroupHasNoMembers,
    iter_preconditions,
)
from mm2ctl.plans.steps import PAYLOAD_TYPES, Step, StepKind
from mm2ctl.plans.targets import ConnectorTarget, GroupTarget, SparkQueryTarget, TopicPartitionsTarget

PLAN_ID = "0b6f7a3e-5a7c-4d43-9a43-6f1f1d2e9c10"
CLUSTERS = {"A": "aaaaAAAAaaaaAAAAaaaaAA", "B": "bbbbBBBBbbbbBBBBbbbbBB"}
SRC = "mm2-source"
SECRET_PASSWORD = "hunter2-s3cr3t-Pa55"
SECRET_JAAS = (
    f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{SECRET_PASSWORD}";'
)


def connector_config() -> dict[str, str]:
    """A realistic MirrorSourceConnector config carrying secrets that must never be written."""
    return {
        "connector.class": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "source.cluster.alias": "A",
        "target.cluster.alias": "B",
        "topics": "orders,payments",
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "source.cluster.bootstrap.servers": "a:9092",
        "source.cluster.sasl.jaas.config": SECRET_JAAS,
        "source.cluster.ssl.truststore.password": SECRET_PASSWORD,
        "target.cluster.ssl.keystore.password": "${file:/etc/kafka/secrets.properties:ks}",
    }


def offsets_key(connector: str, partition: dict[str, object]) -> str:
    raw = json.dumps([connector, partition], separators=(",", ":")).encode()
    return base64.b64encode(raw).decode()


def tombstone_records() -> tuple[TombstoneRecord, ...]:
    return (
        TombstoneRecord(
            partition=7,
            key_b64=offsets_key(SRC, {"cluster": "A", "partition": 0, "topic": "orders"}),
            original_value_b64=base64.b64encode(b'{"offset":1000}').decode(),
        ),
        TombstoneRecord(
            partition=19,
            key_b64=offsets_key(SRC, {"cluster": "A", "partition": 1, "topic": "orders"}),
            original_value_b64=None,
        ),
    )


def every_step() -> list[Step]:
    """One step of every kind, each with a different precondition kind, in a plausible order."""
    src = ConnectorTarget(connector=SRC)
    offsets_before = [{"partition": {"cluster": "A", "topic": "orders", "partition": 0}, "offset": {"offset": 1000}}]
    syncs = TopicPartitionsTarget(cluster="A", topic="mm2-offset-syncs.B.internal", partitions=(0,))
    group = GroupTarget(cluster="B", group="billing")
    rows = (
        GroupOffsetRow(
            topic="A.orders",
            partition=0,
            offset=998,
            before_offset=None,
            method=TranslationMethod.OFFSET_SYNC_EXACT,
            source_offset=1000,
        ),
        GroupOffsetRow(
            topic="A.orders",
            partition=1,
            offset=51,
            before_offset=40,
            method=TranslationMethod.OFFSET_SYNC_NEXT,
            source_offset=60,
        ),
        GroupOffsetRow(topic="A.payments", partition=0, offset=0, before_offset=3, method=TranslationMethod.EARLIEST),
    )
    specs: list[tuple[StepKind, object, object, Precondition, object, object, bool, str | None]] = [
        (
            StepKind.CONNECTOR_PAUSE,
            src,
            ConnectorPause(),
            ConnectorStateIn(connector=SRC, states=frozenset({ConnectorState.RUNNING})),
            {"state": "RUNNING"},
            {"state": "PAUSED"},
            True,
            None,
        ),
        (
            StepKind.CONNECTOR_STOP,
            src,
            ConnectorStop(),
            ConnectorStateIn(connector=SRC, states=frozenset({ConnectorState.RUNNING, ConnectorState.PAUSED})),
            {"state": "PAUSED"},
            {"state": "STOPPED"},
            True,
            None,
        ),
        (
            StepKind.CONNECT_OFFSETS_DELETE,
            src,
            ConnectOffsetsDelete(),
            AllOf(
                conditions=(
                    ConnectorStopped(connector=SRC),
                    ConnectorOffsetsUnchanged(
                        connector=SRC,
                        expected=(
                            PlannedConnectorOffset(
                                partition={"cluster": "A", "topic": "orders", "partition": 0},
                                offset={"offset": 1000},
                            ),
                        ),
                    ),
                )
            ),
            {"offsets": offsets_before},
            {"offsets": []},
            True,
            None,
        ),
        (
            StepKind.CONNECT_OFFSETS_PATCH,
            src,
            ConnectOffsetsPatch(
                offsets=(
                    PlannedConnectorOffset(
                        partition={"cluster": "A", "topic": "orders", "partition": 0}, offset={"offset": 5}
                    ),
                    PlannedConnectorOffset(partition={"cluster": "A", "topic": "orders", "partition": 1}, offset=None),
                )
            ),
            ConnectorStopped(connector=SRC),
            {"offsets": []},
            {"offsets": [{"offset": 5}]},
            True,
            None,
        ),
        (
            StepKind.CONNECT_OFFSETS_TOMBSTONE,
            TopicPartitionsTarget(cluster="B", topic="connect-offsets", partitions=(7, 19)),
            ConnectOffsetsTombstone(connector=SRC, records=tombstone_records()),
            OffsetsRecordsUnchanged(cluster="B", topic="connect-offsets", records=tombstone_records()),
            None,
            None,
            True,
            None,
        ),
        (
            StepKind.OFFSET_SYNCS_BACKUP,
            syncs,
            OffsetSyncsBackup(up_to_offset=4242, backup_file="offset-syncs-A-0.jsonl"),
            TopicEndOffsetEquals(cluster="A", topic="mm2-offset-syncs.B.internal", partition=0, end_offset=4242),
            {"end_offset": 4242},
            None,
            True,
            None,
        ),
        (
            StepKind.OFFSET_SYNCS_TRUNCATE,
            syncs,
            OffsetSyncsTruncate(before_offset=4242, backup_file="offset-syncs-A-0.jsonl"),
            WorkerGroupHasNoMembers(cluster="B", group="A-mm2"),
            {"start_offset": 0, "end_offset": 4242},
            {"start_offset": 4242},
            False,
            "Kafka cannot un-delete records; rollback can re-produce the backup, but at new offsets",
        ),
        (
            StepKind.CONNECTOR_DELETE,
            src,
            ConnectorDelete(config=ConnectorConfig(values=connector_config())),
            ConnectorStateIn(connector=SRC, states=frozenset({ConnectorState.STOPPED})),
            {"state": "STOPPED", "config": connector_config()},
            None,
            True,
            None,
        ),
        (
            StepKind.CONNECTOR_CREATE,
            src,
            ConnectorCreate(
                config=ConnectorConfig(values=connector_config()), secrets_from=SecretSource.LIVE_CONNECTOR
            ),
            ConnectorAbsent(connector=SRC),
            None,
            {"config": connector_config()},
            True,
            None,
        ),
        (
            StepKind.CONNECTOR_RESUME,
            src,
            ConnectorResume(),
            ConnectorStopped(connector=SRC),
            {"state": "STOPPED"},
            {"state": "RUNNING"},
            True,
            None,
        ),
        (
            StepKind.CONNECTOR_RESTART,
            src,
            ConnectorRestart(include_tasks=True, only_failed=True),
            NoPrecondition(),
            None,
            None,
            True,
            None,
        ),
        (
            StepKind.WAIT_FOR_CATCH_UP,
            src,
            WaitForCatchUp(
                source_cluster="A",
                timeout_seconds=300,
                targets=(CatchUpTarget(topic="orders", partition=0, upstream_offset=1000),),
            ),
            NoPrecondition(),
            None,
            None,
            True,
            None,
        ),
        (
            StepKind.GROUP_OFFSETS_TRANSLATE,
            src,
            TranslateAfterCatchUp(
                pair="A->B",
                source_cluster="A",
                target_cluster="B",
                rows=(
                    DeferredRow(
                        group="billing",
                        source_topic="orders",
                        target_topic="A.orders",
                        partition=0,
                        source_offset=1800,
                        mm2_next_offset=800,
                    ),
                ),
            ),
            NoPrecondition(),
            None,
            {"translated": 1},
            True,
            None,
        ),
        (
            StepKind.GROUP_OFFSETS_WRITE,
            group,
            GroupOffsetsWrite(rows=rows),
            AllOf(
                conditions=(
                    GroupEmptyOrAbsent(cluster="B", group="billing"),
                    GroupOffsetsUnchanged(
                        cluster="B",
                        group="billing",
                        expected=(
                            GroupOffset(topic="A.orders", partition=0, offset=None),
                            GroupOffset(topic="A.orders", partition=1, offset=40),
                            GroupOffset(topic="A.payments", partition=0, offset=3),
                        ),
                    ),
                    GroupOffsetsInRange(
                        cluster="B",
                        offsets=tuple(GroupOffset(topic=r.topic, partition=r.partition, offset=r.offset) for r in rows),
                    ),
                )
            ),
            {"A.orders/0": None, "A.orders/1": 40, "A.payments/0": 3},
            {"A.orders/0": 998, "A.orders/1": 51, "A.payments/0": 0},
            True,
            None,
        ),
        (
            StepKind.GROUP_OFFSETS_VERIFY,
            group,
            GroupOffsetsVerify(
                expected=tuple(GroupOffset(topic=r.topic, partition=r.partition, offset=r.offset) for r in rows)
            ),
            NoPrecondition(),
            None,
            None,
            True,
            None,
        ),
        (
            StepKind.SPARK_QUERY_WRITE,
            SparkQueryTarget(location="/data/checkpoints/orders"),
            SparkQueryWrite(
                form="json",
                output="/data/checkpoints/orders.B.starting-offsets.json",
                batch_id=7,
                rows=(
                    SparkOffsetRow(
                        source_index=0,
                        source_topic="orders",
                        target_topic="A.orders",
                        partition=0,
                        source_offset=1000,
                        target_offset=998,
                        method=TranslationMethod.VERIFIED_DELTA,
                    ),
                ),
            ),
            SparkCheckpointAt(location="/data/checkpoints/orders", batch_id=7, digest="0" * 64),
            {"batch_id": 7, "query_id": "q"},
            {"form": "json", "output": "/data/checkpoints/orders.B.starting-offsets.json"},
            True,
            None,
        ),
    ]
    steps = []
    for i, (kind, target, payload, pre, before, after, rev, why) in enumerate(specs):
        steps.append(
            Step(
                index=i,
                kind=kind,
                target=target,
                payload=payload,
                precondition=pre,  # type: ignore[arg-type]
                before=before,
                after=after,
                reversible=rev,
                irreversible_reason=why,
                description=f"step {i}: {kind.value}",
            )
        )
    return steps


def live_parts() -> dict[str, object]:
    return {
        f"connector:{SRC}:state": "RUNNING",
        f"connector:{SRC}:offsets": [{"partition": {"topic": "orders", "partition": 0}, "offset": {"offset": 1000}}],
        "topic:A:mm2-offset-syncs.B.internal:0:end": 4242,
        "group:B:billing:offsets": {"A.orders/1": 40, "A.payments/0": 3},
    }


def sample_plan(**overrides: object) -> Plan:
    fields: dict[str, object] = dict(
        plan_id=PLAN_ID,
        created_at=datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC).isoformat(),
        created_by_tool_version="0.1.0",
        kind=PlanKind.RESET_MM2,
        pair="A->B",
        clusters=CLUSTERS,
        connect=ConnectTarget(urls=("http://connect-1:8083",), kafka_cluster_id=CLUSTERS["B"], version="3.9.0"),
        fingerprint=fingerprint_of(live_parts()),
        steps=tuple(every_step()),
        notes=("display only: the executor never reads this",),
        description="Reset MM2 A->B",
    )
    fields.update(overrides)
    return Plan(**fields)  # type: ignore[arg-type]


def test_sample_covers_every_step_and_precondition_kind() -> None:
    plan = sample_plan()
    assert {s.kind for s in plan.steps} == set(PAYLOAD_TYPES)
    used = {type(leaf).KIND for s in plan.steps for leaf in iter_preconditions(s.precondition)}
    used |= {type(s.precondition).KIND for s in plan.steps}
    assert used == set(PRECONDITION_TYPES)
