"""A flow's configured conditions (core.config.flow_conditions) and what inspect makes of them
(inspector.reads.flow_notes): offset syncs disabled (KIP-1031) and MM2 copying aborted transactions."""

from __future__ import annotations

from typing import Any

import pytest

from mm2ctl.core.config.describe import describe_setup
from mm2ctl.core.config.flow_conditions import Condition, configured_conditions, needs_sample, observed_conditions
from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.kafka.transactional_data import TransactionSample
from mm2ctl.inspector.reads import flow_notes
from mm2ctl.inspector.schemas import JOINED_SCHEMA
from mm2ctl.inspector.statuses import Status
from mm2ctl.inspector.transforms import classify

from .test_inspector_classify import NOT_SYNCED_HERE, _df, healthy

BASE = """\
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


def flow(extra: str = "") -> Any:
    config = mm2_config_from_text(BASE + extra, path="mm2.properties")
    return config, config.pair("A->B")


def sample(topic: str = "orders", partition: int = 0, **kw: Any) -> TransactionSample:
    values = {"start": 800, "end": 1000, "aborted_records": 0, "markers": 0, "open_transaction": False, **kw}
    return TransactionSample(topic=topic, partition=partition, **values)


def test_a_default_flow_reads_uncommitted_and_config_show_names_the_fix() -> None:
    config, pair = flow()
    assert needs_sample(pair)
    (c,) = configured_conditions(config, pair)
    assert c.condition is Condition.READS_UNCOMMITTED
    assert "A->B.source.consumer.isolation.level = read_committed" in c.message
    assert "isolation.level is read_uncommitted (default)" in c.message
    report = describe_setup(config).flows[0]
    assert ("source.consumer.isolation.level", "read_uncommitted", "default") in [
        (s.name, s.value, s.origin) for s in report.settings
    ]
    assert report.to_json()["conditions"][0]["condition"] == "reads_uncommitted"


def test_a_read_committed_flow_has_no_condition_and_is_not_sampled() -> None:
    config, pair = flow("A.consumer.isolation.level = read_committed\n")
    assert not needs_sample(pair)
    assert configured_conditions(config, pair) == []
    assert observed_conditions(config, pair, [sample(aborted_records=5)]) == []


def test_inspect_reports_aborted_copies_only_when_the_sample_shows_transactions() -> None:
    config, pair = flow()
    assert observed_conditions(config, pair, [sample(), sample(partition=1)]) == []
    (c,) = observed_conditions(
        config, pair, [sample(aborted_records=3, markers=2), sample("payments", markers=4), sample("plain")]
    )
    assert c.condition is Condition.COPIES_ABORTED_RECORDS
    assert (c.flow, c.topic, c.cluster) == ("A->B", "orders, payments", "A")
    assert "3 record(s) of aborted transactions" in c.message
    assert "A->B.source.consumer.isolation.level = read_committed" in c.message
    (c,) = observed_conditions(config, pair, [sample(open_transaction=True)])
    assert "transaction markers" in c.message


@pytest.mark.parametrize(
    ("shape", "fix"),
    [
        ("connect", "source.consumer.isolation.level=read_committed in the config of A->B's MirrorSourceConnector"),
        ("resource", "source.consumer.isolation.level: read_committed in the sourceConnector.config of the A->B"),
    ],
)
def test_the_fix_is_spelled_for_the_setups_shape(shape: str, fix: str) -> None:
    config, pair = flow()
    object.__setattr__(config, "shape", shape)
    (c,) = configured_conditions(config, pair)
    assert fix in c.message


def test_offset_syncs_disabled_is_a_condition_with_its_origin() -> None:
    config, pair = flow("A->B.emit.offset-syncs.enabled = false\nA.consumer.isolation.level = read_committed\n")
    (c,) = configured_conditions(config, pair)
    assert c.condition is Condition.OFFSET_SYNCS_DISABLED
    assert "emit.offset-syncs.enabled = false (mm2.properties:5 A->B.emit.offset-syncs.enabled)" in c.message
    assert [x.condition for x in observed_conditions(config, pair, [])] == [Condition.OFFSET_SYNCS_DISABLED]
    assert flow_notes.expected_absent(pair, pair.offset_syncs_topic)
    assert flow_notes.expected_absent(pair, pair.checkpoints_topic)
    assert not flow_notes.expected_absent(pair, "orders")
    _config, enabled = flow()
    assert not flow_notes.expected_absent(enabled, enabled.offset_syncs_topic)


def test_rows_of_a_flow_without_offset_syncs_are_a_configuration_not_a_fault(spark: Any) -> None:
    no_syncs = dict(
        NOT_SYNCED_HERE,
        translated_offset=None,
        translation_method=None,
        sync_upstream=None,
        sync_downstream=None,
        latest_sync_upstream=None,
        latest_sync_downstream=None,
        oldest_sync_upstream=None,
        oldest_sync_downstream=None,
        sync_count=0,
    )
    rows = [
        healthy(group="nosync", **no_syncs),
        healthy(group="written", **{**no_syncs, "target_offset": 40}),  # someone wrote it: no translation backs it
        healthy(group="empty", **{**no_syncs, "source_earliest": 200}),  # the source partition is empty
        healthy(group="gone", **{**no_syncs, "target_latest": None}),  # the remote partition is missing
    ]
    classified = classify.classify(_df(spark, JOINED_SCHEMA, rows), admin=None, sync_group_offsets_enabled=True)
    before = {r.group: r.status for r in classified.collect()}
    assert before["nosync"] == Status.NO_OFFSET_SYNCS.value
    got = {r.group: r for r in flow_notes.with_offset_syncs_disabled(classified).collect()}
    for group in ("nosync", "written"):
        row = got[group]
        assert row.status == Status.OFFSET_SYNCS_DISABLED.value and row.is_ok, row
        assert row.blocking_component is None and "emit.offset-syncs.enabled=false" in row.message
        assert "--fallback timestamp" in row.explanation
    assert got["empty"].status == Status.SOURCE_PARTITION_EMPTY.value
    assert got["gone"].status == Status.REMOTE_TOPIC_MISSING.value and not got["gone"].is_ok
    assert flow_notes.with_offset_syncs_disabled(classified).columns == classified.columns


def test_a_consumer_override_is_named_as_not_reaching_mm2s_source_consumer() -> None:
    config, pair = flow("A->B.consumer.override.isolation.level = read_committed\n")
    assert pair.copies_aborted_records
    (c,) = configured_conditions(config, pair)
    assert "consumer.override.isolation.level (mm2.properties:5 A->B.consumer.override.isolation.level) does not" in (
        c.message
    )


def test_a_sample_that_could_not_be_read_is_said_so() -> None:
    config, pair = flow()
    (c,) = observed_conditions(config, pair, [], sample_error="User:mm2ctl is not authorized to READ topic 'orders'")
    assert c.condition is Condition.NOT_SAMPLED
    assert "could not be checked (User:mm2ctl is not authorized to READ topic 'orders')" in c.message
    committed, read_committed = flow("A.consumer.isolation.level = read_committed\n")
    assert observed_conditions(committed, read_committed, [], sample_error="denied") == []
