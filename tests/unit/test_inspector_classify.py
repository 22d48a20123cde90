"""Every status, its message, precedence and the Aiven-compatible columns, one tiny joined frame per case."""

from __future__ import annotations

import datetime as dt
import re
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from mm2ctl.inspector import statuses
from mm2ctl.inspector.kept.pair_topics import Numbering
from mm2ctl.inspector.rules.admin_facts import joined_rows, with_remote_topics
from mm2ctl.inspector.schemas import (
    CHECKPOINTS_SCHEMA,
    CLASSIFIED_SCHEMA,
    FRESH_CHECKPOINT,
    GROUP_STATES_SCHEMA,
    JOINED_SCHEMA,
    MM2_POSITIONS_SCHEMA,
    PARTITION_NUMBERS_SCHEMA,
    REMOTE_GROUP_OFFSETS_SCHEMA,
    SOURCE_GROUP_OFFSETS_SCHEMA,
    SOURCE_PARTITIONS_SCHEMA,
    TARGET_GROUP_OFFSETS_SCHEMA,
    TARGET_PARTITIONS_SCHEMA,
)
from mm2ctl.inspector.spark.compat import to_arrow
from mm2ctl.inspector.statuses import Blocking, Status
from mm2ctl.inspector.transforms import classify
from mm2ctl.inspector.transforms.sql_text import micros
from mm2ctl.inspector.transforms.sync_runs import RUN_COLUMNS
from mm2ctl.inspector.transforms.translated_offsets import translate

PAIR = "a->b"
NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)
#: The six messages of Aiven's offset sync inspector, verbatim from the table of its documentation ("Analyze
#: offset synchronization status … with Aiven's offset sync inspection tool"), status column.
AIVEN_DOCUMENTED_MESSAGES = (
    "Successfully synced, operating normally.",
    "Intentionally not synced because the source partition is empty. Other partitions in this group are synced.",
    "Intentionally not synced because the source partition is empty. Other partitions in this group are not synced.",
    "Intentionally not synced because the source group is too old. Other partitions in this group are synced.",
    "Erroneously not synced. Source partition has data, and other partitions for this group are synced.",
    "Erroneously not synced. Source partition has data, and other partitions for this group are not synced.",
)

AIVEN_COLUMNS = [
    "cluster_pair",
    "topic",
    "partition",
    "group",
    "source_earliest",
    "source_latest",
    "source_group_state",
    "source_offset",
    "source_lag",
    "target_earliest",
    "target_latest",
    "target_group_state",
    "target_offset",
    "target_lag",
    "target_lag_to_source",
    "source_has_data",
    "source_group_valid",
    "target_has_data",
    "is_ok",
    "blocking_component",
    "message",
]


def _df(spark: Any, schema: StructType, rows: list[dict[str, Any]]) -> Any:
    return spark.createDataFrame(_table(schema, rows), schema)


def healthy(**overrides: Any) -> dict[str, Any]:
    """A group partition MM2 has synced correctly: committed 100 on the source, sync 95→97 so T = 98, and the
    target group (and the checkpoint) at 98."""
    row: dict[str, Any] = {
        "cluster_pair": PAIR,
        "group": "g",
        "topic": "orders",
        "partition": 0,
        "committed_offset": 100,
        "translated_offset": 98,
        "translation_method": "offset_sync_next",
        "sync_upstream": 95,
        "sync_downstream": 97,
        "latest_sync_upstream": 150,
        "latest_sync_downstream": 148,
        "oldest_sync_upstream": 10,
        "oldest_sync_downstream": 9,
        "sync_count": 3,
        "source_earliest": 0,
        "source_latest": 200,
        "remote_topic": "src.orders",
        "source_group_state": "Stable",
        "target_earliest": 0,
        "target_latest": 198,
        "target_offset": 98,
        "target_group_state": "Empty",
        "target_group_members": 0,
        "checkpoint_upstream": 100,
        "checkpoint_offset": 98,
        "checkpoint_timestamp": NOW - dt.timedelta(hours=1),
        "error": None,
    }
    row.update(overrides)
    return row


def _table(schema: StructType, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )


def _comparable(row: dict[str, Any]) -> str:
    """A row as text, its times as UTC instants (Spark hands back naive times in the process's zone)."""

    def instant(v: Any) -> Any:
        return v.astimezone(dt.UTC) if isinstance(v, dt.datetime) else v

    return repr({k: instant(v) for k, v in row.items()})


def _classify(spark: Any, rows: list[dict[str, Any]], sync: bool = True, **kw: Any) -> dict[tuple[str, str, int], Any]:
    """The rows as Spark classifies them, after checking that the rule run in-process gives the same rows."""
    out = classify.classify(
        _df(spark, JOINED_SCHEMA, rows), admin=None, sync_group_offsets_enabled=sync, **kw
    ).collect()
    in_process = classify.classify_in_process(_table(JOINED_SCHEMA, rows), sync_group_offsets_enabled=sync, **kw)
    assert in_process.column_names == classify.CLASSIFIED_ROWS_SCHEMA.names
    assert sorted(map(_comparable, in_process.to_pylist())) == sorted(_comparable(r.asDict()) for r in out)
    return {(r.group, r.topic, r.partition): r for r in out}


NOT_SYNCED_HERE = {"target_offset": None, "checkpoint_offset": None, "checkpoint_upstream": None}

# (case id, rows — the first is the row under test —, sync.group.offsets.enabled, classify kwargs,
#  expected status, blocking component, message)
CASES: list[tuple[str, list[dict[str, Any]], bool, dict[str, Any], Status, str | None, str]] = [
    ("synced", [healthy()], True, {}, Status.SYNCED, None, statuses.AIVEN_SYNCED),
    (
        "mm2 sparse store checkpoints lower: still synced",
        [healthy(target_offset=60, checkpoint_offset=60)],
        True,
        {},
        Status.SYNCED,
        None,
        statuses.AIVEN_SYNCED,
    ),
    (
        "untranslatable by us but MM2 wrote an offset: synced",
        [healthy(translated_offset=None, sync_upstream=None, sync_downstream=None)],
        True,
        {},
        Status.SYNCED,
        None,
        statuses.AIVEN_SYNCED,
    ),
    (
        "judged by checkpoint when sync.group.offsets is off",
        [healthy(target_offset=None, target_group_members=3, target_group_state="Stable")],
        False,
        {},
        Status.SYNCED,
        None,
        statuses.AIVEN_SYNCED,
    ),
    (
        "error wins over everything",
        [healthy(error="target group: GROUP_AUTHORIZATION_FAILED", target_latest=None, target_group_members=4)],
        True,
        {},
        Status.ERROR,
        Blocking.INSPECTOR,
        statuses.ERROR_MESSAGE,
    ),
    (
        "remote topic missing",
        [healthy(target_earliest=None, target_latest=None, target_offset=None)],
        True,
        {},
        Status.REMOTE_TOPIC_MISSING,
        Blocking.MIRROR_SOURCE_CONNECTOR,
        statuses.REMOTE_TOPIC_MISSING_MESSAGE,
    ),
    (
        "target group has members",
        [healthy(target_group_state="Stable", target_group_members=2)],
        True,
        {},
        Status.TARGET_GROUP_ACTIVE,
        Blocking.TARGET_GROUP,
        statuses.TARGET_GROUP_ACTIVE_MESSAGE,
    ),
    (
        "target group rebalancing (confluent-kafka spelling)",
        [healthy(target_group_state="PREPARING_REBALANCE", target_group_members=None)],
        True,
        {},
        Status.TARGET_GROUP_ACTIVE,
        Blocking.TARGET_GROUP,
        statuses.TARGET_GROUP_ACTIVE_MESSAGE,
    ),
    (
        "identity replication without translation: target ahead",
        [healthy(target_offset=100)],
        True,
        {},
        Status.TARGET_AHEAD,
        Blocking.TARGET_GROUP,
        statuses.TARGET_AHEAD_MESSAGE,
    ),
    (
        "checkpoint ahead with sync off",
        [healthy(target_offset=None, checkpoint_offset=120)],
        False,
        {},
        Status.TARGET_AHEAD,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.TARGET_AHEAD_MESSAGE,
    ),
    (
        "stale: target trails translation beyond offset.lag.max",
        [healthy(committed_offset=600, translated_offset=501, latest_sync_upstream=550, target_offset=10)],
        True,
        {},
        Status.STALE_SYNC,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.STALE_SYNC_MESSAGE,
    ),
    (
        "same gap but a fresh checkpoint: MM2 interval timing, synced",
        [
            healthy(
                committed_offset=600,
                translated_offset=501,
                latest_sync_upstream=550,
                target_offset=10,
                checkpoint_timestamp=NOW - dt.timedelta(minutes=1),
            )
        ],
        True,
        {"as_of": NOW},
        Status.SYNCED,
        None,
        statuses.AIVEN_SYNCED,
    ),
    (
        "stale with an old checkpoint",
        [
            healthy(
                committed_offset=600,
                translated_offset=501,
                latest_sync_upstream=550,
                target_offset=10,
                checkpoint_timestamp=NOW - dt.timedelta(days=2),
            )
        ],
        True,
        {"as_of": NOW},
        Status.STALE_SYNC,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.STALE_SYNC_MESSAGE,
    ),
    (
        "group far behind the newest sync: sparse-store slack, synced",
        [healthy(committed_offset=100, translated_offset=98, latest_sync_upstream=5000, target_offset=2)],
        True,
        {},
        Status.SYNCED,
        None,
        statuses.AIVEN_SYNCED,
    ),
    (
        "offset.lag.max is a parameter",
        [healthy(target_offset=88, latest_sync_upstream=95)],
        True,
        {"offset_lag_max": 5},
        Status.STALE_SYNC,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.STALE_SYNC_MESSAGE,
    ),
    (
        "source partition empty, other partitions synced",
        [
            healthy(source_earliest=200, source_latest=200, committed_offset=200, **NOT_SYNCED_HERE),
            healthy(partition=1),
        ],
        True,
        {},
        Status.SOURCE_PARTITION_EMPTY,
        Blocking.SOURCE_PARTITION,
        statuses.AIVEN_EMPTY_OTHERS_SYNCED,
    ),
    (
        "source partition empty, others not synced",
        [healthy(source_earliest=0, source_latest=0, committed_offset=0, **NOT_SYNCED_HERE)],
        True,
        {},
        Status.SOURCE_PARTITION_EMPTY,
        Blocking.SOURCE_PARTITION,
        statuses.AIVEN_EMPTY_OTHERS_NOT_SYNCED,
    ),
    (
        "group too old, other partitions synced (another topic of the same group counts)",
        [healthy(source_earliest=50, committed_offset=10, **NOT_SYNCED_HERE), healthy(topic="payments")],
        True,
        {},
        Status.SOURCE_GROUP_TOO_OLD,
        Blocking.SOURCE_GROUP,
        statuses.AIVEN_TOO_OLD_OTHERS_SYNCED,
    ),
    (
        "group too old, others not synced",
        [healthy(source_earliest=50, committed_offset=10, **NOT_SYNCED_HERE), healthy(partition=1, **NOT_SYNCED_HERE)],
        True,
        {},
        Status.SOURCE_GROUP_TOO_OLD,
        Blocking.SOURCE_GROUP,
        statuses.TOO_OLD_OTHERS_NOT_SYNCED,
    ),
    (
        "no offset syncs for a partition with data",
        [healthy(translated_offset=None, sync_count=0, latest_sync_upstream=None, **NOT_SYNCED_HERE)],
        True,
        {},
        Status.NO_OFFSET_SYNCS,
        Blocking.MIRROR_SOURCE_CONNECTOR,
        statuses.NO_OFFSET_SYNCS_MESSAGE,
    ),
    (
        "erroneously not synced, other partitions synced",
        [healthy(**NOT_SYNCED_HERE), healthy(partition=1)],
        True,
        {},
        Status.NOT_SYNCED,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.AIVEN_ERRONEOUS_OTHERS_SYNCED,
    ),
    (
        "erroneously not synced, others not synced; a synced row of ANOTHER group does not count",
        [healthy(**NOT_SYNCED_HERE), healthy(group="other", partition=1)],
        True,
        {},
        Status.NOT_SYNCED,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.AIVEN_ERRONEOUS_OTHERS_NOT_SYNCED,
    ),
    (
        "not synced because no sync at or below the group's offset survives",
        [healthy(translated_offset=None, **NOT_SYNCED_HERE)],
        True,
        {},
        Status.NOT_SYNCED,
        Blocking.MIRROR_SOURCE_CONNECTOR,
        statuses.AIVEN_ERRONEOUS_OTHERS_NOT_SYNCED,
    ),
    (
        "sync off and no checkpoint: not synced even with a target offset",
        [healthy(checkpoint_offset=None, checkpoint_upstream=None)],
        False,
        {},
        Status.NOT_SYNCED,
        Blocking.CHECKPOINT_CONNECTOR,
        statuses.AIVEN_ERRONEOUS_OTHERS_NOT_SYNCED,
    ),
]


@pytest.mark.spark
@pytest.mark.parametrize(
    ("rows", "sync", "kwargs", "status", "blocking", "message"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_status(
    spark: Any,
    rows: list[dict[str, Any]],
    sync: bool,
    kwargs: dict[str, Any],
    status: Status,
    blocking: str | None,
    message: str,
) -> None:
    first = rows[0]
    row = _classify(spark, rows, sync, **kwargs)[(first["group"], first["topic"], first["partition"])]
    assert (row.status, row.blocking_component, row.message) == (status.value, blocking, message)
    assert row.is_ok is (status in statuses.OK_STATUSES)


@pytest.mark.spark
def test_output_columns_and_aiven_values(spark: Any) -> None:
    out = classify.classify(
        _df(spark, JOINED_SCHEMA, [healthy(target_offset=90, checkpoint_offset=90)]),
        admin=None,
        sync_group_offsets_enabled=True,
    )
    assert out.columns[: len(AIVEN_COLUMNS)] == AIVEN_COLUMNS
    shown = [(f.name, f.dataType) for f in out.schema if not f.name.startswith("_")]
    assert shown == [(f.name, f.dataType) for f in CLASSIFIED_SCHEMA]
    (row,) = out.collect()
    assert (row.source_offset, row.source_lag) == (100, 100)
    assert (row.target_offset, row.target_lag) == (90, 108)
    # Aiven: source latest - (target offset + (newest sync upstream - downstream)) = 200 - (90 + 2)
    assert row.target_lag_to_source == 108
    assert (row.source_has_data, row.target_has_data) == (True, True)
    assert (row.translated_offset, row.checkpoint_offset, row.sync_count) == (98, 90, 3)
    assert row.source_group_valid is True
    # 95->97 is below the committed offset: the translation is not exact, so only the bounds are known.
    assert (row.replay_if_failover_now, row.skip_if_failover_now) == (None, None)
    assert (row.replay_if_failover_now_at_least, row.skip_if_failover_now_at_most) == (8, 0)
    assert row.mm2_records_behind is None  # MM2's position not known
    assert (row.remote_topic, row.translation_method, row.explanation, row.error) == (
        "src.orders",
        "offset_sync_next",
        None,
        None,
    )


@pytest.mark.spark
def test_failover_estimates_and_lags_with_gaps(spark: Any) -> None:
    rows = [
        healthy(group="ahead", target_offset=105),
        healthy(group="exact", target_offset=95, translation_method="offset_sync_exact"),
        healthy(group="verified", target_offset=100, translation_method="verified_search"),
        healthy(group="none", target_offset=None, target_latest=198),
        healthy(group="past-end", target_offset=250),
        healthy(group="empty", source_earliest=7, source_latest=7, target_earliest=3, target_latest=3),
    ]
    got = {g: r for (g, _, _), r in _classify(spark, rows).items()}
    assert (got["ahead"].skip_if_failover_now_at_most, got["ahead"].replay_if_failover_now_at_least) == (7, 0)
    assert (got["none"].skip_if_failover_now_at_most, got["none"].replay_if_failover_now_at_least) == (None, None)
    assert (got["exact"].skip_if_failover_now, got["exact"].replay_if_failover_now) == (0, 3)
    assert (got["verified"].skip_if_failover_now, got["verified"].replay_if_failover_now) == (2, 0)
    assert got["none"].target_lag is None
    assert got["past-end"].target_lag == 0  # clamped like Aiven's
    assert (got["empty"].source_has_data, got["empty"].target_has_data) == (False, False)


@pytest.mark.spark
def test_precedence_is_first_match(spark: Any) -> None:
    """A row that is at once active on the target, ahead and stale reports the highest-precedence status."""
    row = healthy(target_group_members=1, target_offset=500)
    (got,) = _classify(spark, [row]).values()
    assert got.status == Status.TARGET_GROUP_ACTIVE.value
    assert list(statuses.PRECEDENCE).index(Status.TARGET_GROUP_ACTIVE) < list(statuses.PRECEDENCE).index(
        Status.TARGET_AHEAD
    )


def test_every_status_has_a_message() -> None:
    for status in Status:
        for others in (True, False):
            assert statuses.aiven_message(status, others) or statuses.OWN_MESSAGES[status]


def test_aiven_messages_are_verbatim_from_its_documentation() -> None:
    assert sorted(statuses.AIVEN_MESSAGES) == sorted(AIVEN_DOCUMENTED_MESSAGES)


@pytest.mark.spark
def test_untranslatable_rows_explain_why_and_name_the_oldest_sync(spark: Any) -> None:
    """A group below the partition's oldest sync: MM2 catches up only once it commits past it, which an idle
    group never does; a partition without syncs can still be translated by timestamp."""
    below = {"translated_offset": None, "translation_method": None, "sync_upstream": None, "sync_downstream": None}
    rows = [
        healthy(
            group="idle",
            committed_offset=150,
            oldest_sync_upstream=199,
            oldest_sync_downstream=199,
            source_group_state="Empty",
            **below,
            **NOT_SYNCED_HERE,
        ),
        healthy(
            group="busy",
            committed_offset=150,
            oldest_sync_upstream=199,
            oldest_sync_downstream=199,
            **below,
            **NOT_SYNCED_HERE,
        ),
        healthy(
            group="none",
            sync_count=0,
            oldest_sync_upstream=None,
            oldest_sync_downstream=None,
            latest_sync_upstream=None,
            latest_sync_downstream=None,
            **below,
            **NOT_SYNCED_HERE,
        ),
    ]
    got = {g: r for (g, _, _), r in _classify(spark, rows).items()}
    assert got["idle"].status == Status.NOT_SYNCED.value
    assert "no offset sync at or below offset 150" in got["idle"].explanation
    assert "oldest offset sync is 199->199" in got["idle"].explanation
    assert "never will while the group is not consuming (state Empty)" in got["idle"].explanation
    assert "will checkpoint the group once it commits at or beyond 199" in got["busy"].explanation
    assert "by content or by timestamp" in got["busy"].explanation
    assert got["none"].status == Status.NO_OFFSET_SYNCS.value
    assert "wrote no offset sync" in got["none"].explanation and "timestamp" in got["none"].explanation


# --- MM2 has not copied up to the group's position ---


def behind(**overrides: Any) -> dict[str, Any]:
    """MM2 throttled: the source holds 0..3299 and the group committed 3300, but MM2 stored 549 as its next
    offset to copy, its newest sync is 548 -> 548 and the target holds 549 records. The target group sits at
    the translation (T = J = 549), so the row would be synced if MM2's position were not known."""
    row = healthy(
        committed_offset=3300,
        source_latest=3300,
        translated_offset=549,
        sync_upstream=548,
        sync_downstream=548,
        latest_sync_upstream=548,
        latest_sync_downstream=548,
        target_latest=549,
        target_offset=549,
        checkpoint_upstream=3300,
        checkpoint_offset=549,
        mm2_position_known=True,
        mm2_next_offset=549,
    )
    row.update(overrides)
    return row


#: At 3300, synced by the newest sync 3299 -> 3299: T = J = 3300.
CAUGHT_UP = {"translated_offset": 3300, "sync_upstream": 3299, "sync_downstream": 3299, "target_offset": 3300}
#: The newest sync 3000 -> 3000 translates 3300 to T = J = 3001.
SYNC_AT_3000 = {
    "translated_offset": 3001,
    "sync_upstream": 3000,
    "sync_downstream": 3000,
    "latest_sync_upstream": 3000,
    "latest_sync_downstream": 3000,
    "target_offset": 3001,
}
NO_SYNCS = {
    "translated_offset": None,
    "translation_method": None,
    "sync_upstream": None,
    "sync_downstream": None,
    "latest_sync_upstream": None,
    "latest_sync_downstream": None,
    "oldest_sync_upstream": None,
    "oldest_sync_downstream": None,
    "sync_count": 0,
}

# (case id, the row, expected status, expected mm2_records_behind)
NOT_COPIED_CASES: list[tuple[str, dict[str, Any], Status, int | None]] = [
    ("past MM2's position: never synced", behind(), Status.NOT_YET_COPIED, 2751),
    ("one record past MM2's position", behind(committed_offset=550), Status.NOT_YET_COPIED, 1),
    ("exactly at MM2's position", behind(committed_offset=549), Status.SYNCED, 0),
    ("MM2's position unknown: no new alarm", behind(mm2_position_known=False), Status.SYNCED, None),
    ("no position row for the partition", behind(mm2_position_known=None, mm2_next_offset=None), Status.SYNCED, None),
    (
        "the stored position trails, the newest sync shows MM2 copied up to the group",
        behind(latest_sync_upstream=3299, latest_sync_downstream=3299, target_latest=3300, **CAUGHT_UP),
        Status.SYNCED,
        0,
    ),
    (
        "the target holds copies past the newest sync, up to the group",
        behind(target_latest=3300, **SYNC_AT_3000),
        Status.SYNCED,
        0,
    ),
    (
        "the target holds copies past the newest sync, short of the group",
        behind(target_latest=3250, **SYNC_AT_3000),
        Status.NOT_YET_COPIED,
        50,
    ),
    (
        "nothing stored for a partition with data: MM2 copies from the earliest offset",
        behind(mm2_next_offset=None, target_latest=0, **NO_SYNCS, **NOT_SYNCED_HERE),
        Status.NOT_YET_COPIED,
        3300,
    ),
    (
        "records lost to retention are not waited for: MM2 resumes at the earliest offset",
        behind(source_earliest=3300, source_latest=3400, target_latest=3001, **SYNC_AT_3000),
        Status.SYNCED,
        0,
    ),
    (
        "empty source partition, MM2 behind its log start",
        behind(source_earliest=3300, **NOT_SYNCED_HERE),
        Status.SOURCE_PARTITION_EMPTY,
        0,
    ),
    (
        "empty source partition MM2 never copied from",
        behind(
            source_earliest=0, source_latest=0, committed_offset=0, mm2_next_offset=None, target_latest=0,
            **NO_SYNCS, **NOT_SYNCED_HERE,
        ),
        Status.SOURCE_PARTITION_EMPTY,
        0,
    ),
    ("past the source's end", behind(committed_offset=4000, **NOT_SYNCED_HERE), Status.SOURCE_GROUP_TOO_OLD, None),
    ("an error wins", behind(error="target group: GROUP_AUTHORIZATION_FAILED"), Status.ERROR, 2751),
    ("an active target group wins", behind(target_group_members=1), Status.TARGET_GROUP_ACTIVE, 2751),
    ("wins over target ahead", behind(target_offset=600), Status.NOT_YET_COPIED, 2751),
    ("wins over stale", behind(target_offset=10, checkpoint_offset=10), Status.NOT_YET_COPIED, 2751),
]  # fmt: skip


@pytest.mark.spark
@pytest.mark.parametrize(("row", "status", "records"), [pytest.param(*c[1:], id=c[0]) for c in NOT_COPIED_CASES])
def test_not_yet_copied(spark: Any, row: dict[str, Any], status: Status, records: int | None) -> None:
    (got,) = _classify(spark, [row]).values()
    assert (got.status, got.mm2_records_behind) == (status.value, records)
    assert got.is_ok is (status in statuses.OK_STATUSES)


@pytest.mark.spark
def test_a_row_mm2_has_not_copied_up_to_says_how_far_behind_and_what_to_do(spark: Any) -> None:
    (got,) = _classify(spark, [behind()]).values()
    assert got.status == Status.NOT_YET_COPIED.value
    assert (got.is_ok, got.blocking_component) == (False, Blocking.MIRROR_SOURCE_CONNECTOR.value)
    assert got.message == statuses.NOT_YET_COPIED_MESSAGE
    assert got.message.startswith("MM2 has not copied up to this group's position")
    assert got.explanation.startswith(
        "MM2 is 2751 record(s) behind this group: the group committed offset 3300, MM2 has copied this partition "
        "only below 549. Wait for MM2 to catch up"
    )
    assert "plan failover --stop-mirroring" in got.explanation
    assert Status.NOT_YET_COPIED not in statuses.OK_STATUSES
    order = list(statuses.PRECEDENCE)
    assert (
        order.index(Status.TARGET_GROUP_ACTIVE) < order.index(Status.NOT_YET_COPIED) < order.index(Status.TARGET_AHEAD)
    )


# --- join_target_state ---

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def _translated(spark: Any, offsets: pa.Table, source_partitions: pa.Table) -> Any:
    """``offsets`` with their remote topics, translated through one sync, ``orders``/0 10 -> 8
    (``inspector.transforms.translated_offsets``)."""
    partitions = sorted(
        set(zip(offsets.column("topic").to_pylist(), offsets.column("partition").to_pylist(), strict=True))
    )
    numbering = Numbering.of(partitions)
    numbers = spark.createDataFrame(numbering.table(PAIR), schema=PARTITION_NUMBERS_SCHEMA)
    runs = spark.createDataFrame(
        [(numbering.parts[("orders", 0)], 10, 8, 1, 1)],
        ", ".join(f"{c} {'int' if c == '_part' else 'long'}" for c in RUN_COLUMNS),
    )
    remote = with_remote_topics(offsets, source_partitions)
    return translate(spark.createDataFrame(remote, REMOTE_GROUP_OFFSETS_SCHEMA), runs, numbers)


def _states(rows: list[tuple[str, str | None, int | None, str | None]]) -> pa.Table:
    return _table(
        GROUP_STATES_SCHEMA,
        [{"cluster_pair": PAIR, "group": g, "state": s, "member_count": m, "error": e} for g, s, m, e in rows],
    )


def test_join_target_state_looks_up_the_remote_topic_and_carries_errors(spark: Any) -> None:
    offsets = _table(
        SOURCE_GROUP_OFFSETS_SCHEMA,
        [
            {"cluster_pair": PAIR, "group": "g", "topic": "orders", "partition": 0, "committed_offset": 10},
            {"cluster_pair": PAIR, "group": "g", "topic": "orders", "partition": 1, "committed_offset": 20},
            {"cluster_pair": PAIR, "group": "h", "topic": "orders", "partition": 0, "committed_offset": 30},
            {"cluster_pair": PAIR, "group": "h", "topic": "ghost", "partition": 0, "committed_offset": 1},
        ],
    )
    source_partitions = _table(
        SOURCE_PARTITIONS_SCHEMA,
        [
            {"cluster_pair": PAIR, "topic": "orders", "partition": p, "earliest_offset": 0, "latest_offset": 50,
             "remote_topic": "src.orders"}
            for p in (0, 1)
        ],
    )  # fmt: skip
    target_partitions = _table(
        TARGET_PARTITIONS_SCHEMA,
        [
            {"cluster_pair": PAIR, "topic": "src.orders", "partition": 0, "earliest_offset": 0, "latest_offset": 48},
            {"cluster_pair": PAIR, "topic": "src.orders", "partition": 1, "error": "NOT_LEADER_OR_FOLLOWER"},
        ],
    )
    target_group_offsets = _df(
        spark,
        TARGET_GROUP_OFFSETS_SCHEMA,
        [
            {"cluster_pair": PAIR, "group": "g", "topic": "src.orders", "partition": 0, "committed_offset": 8},
            # same number under the *source* name (identity-style lookup): must not be picked up
            {"cluster_pair": PAIR, "group": "h", "topic": "orders", "partition": 0, "committed_offset": 999},
        ],
    )
    checkpoints = _df(
        spark,
        CHECKPOINTS_SCHEMA,
        [
            {"cluster_pair": PAIR, "group": "g", "topic": "src.orders", "partition": 0, "upstream_offset": 10,
             "downstream_offset": 8, "record_offset": 3, "record_timestamp": T0},
        ],
    )  # fmt: skip
    # MM2's position: stored for orders/0, none stored for orders/1 (still known), and no row for ghost/0.
    positions = _table(
        MM2_POSITIONS_SCHEMA,
        [
            {"cluster_pair": PAIR, "topic": "orders", "partition": 0, "remote_topic": "src.orders",
             "position_known": True, "mm2_next_offset": 40},
            {"cluster_pair": PAIR, "topic": "orders", "partition": 1, "remote_topic": "src.orders",
             "position_known": True, "mm2_next_offset": None},
        ],
    )  # fmt: skip
    translated = _translated(spark, offsets, source_partitions)
    joined = classify.join_target_state(translated, target_group_offsets=target_group_offsets, checkpoints=checkpoints)
    admin = classify.AdminFacts.of(
        source_partitions=source_partitions,
        target_partitions=target_partitions,
        mm2_positions=positions,
        source_groups=_states([("g", "Stable", 2, None), ("h", "Empty", 0, None)]),
        target_groups=_states([("g", "Empty", 0, None), ("h", None, None, "GROUP_AUTHORIZATION_FAILED")]),
    )
    looked_up = joined_rows(to_arrow(joined), admin.partitions, admin.groups, JOINED_SCHEMA.names).cast(
        to_arrow_schema(JOINED_SCHEMA)
    )
    got = {(r["group"], r["topic"], r["partition"]): SimpleNamespace(**r) for r in looked_up.to_pylist()}
    assert len(got) == 4

    g0 = got[("g", "orders", 0)]
    assert (g0.remote_topic, g0.source_earliest, g0.source_latest) == ("src.orders", 0, 50)
    assert (g0.target_earliest, g0.target_latest, g0.target_offset) == (0, 48, 8)
    assert (g0.source_group_state, g0.target_group_state, g0.target_group_members) == ("Stable", "Empty", 0)
    assert (g0.checkpoint_upstream, g0.checkpoint_offset) == (10, 8)
    assert g0.checkpoint_timestamp == T0
    assert (g0.translated_offset, g0.error) == (8, None)
    assert (g0.mm2_position_known, g0.mm2_next_offset) == (True, 40)
    assert (got[("h", "orders", 0)].mm2_position_known, got[("h", "orders", 0)].mm2_next_offset) == (True, 40)
    assert (got[("g", "orders", 1)].mm2_position_known, got[("g", "orders", 1)].mm2_next_offset) == (True, None)

    assert got[("g", "orders", 1)].error == "target partition: NOT_LEADER_OR_FOLLOWER"
    h0 = got[("h", "orders", 0)]
    assert h0.target_offset is None  # not the 999 committed under the source name
    assert h0.error == "target group: GROUP_AUTHORIZATION_FAILED"
    ghost = got[("h", "ghost", 0)]
    assert ghost.error == ("source partition: not described by the job; target group: GROUP_AUTHORIZATION_FAILED")
    assert (ghost.mm2_position_known, ghost.mm2_next_offset) == (None, None)  # no row: the position is unknown

    # The join leaves the rows clustered by (pair, group), as the classification needs them: Spark plans no
    # shuffle for it (the repartition it asks for is dropped), so no row moves between the two; and the lookup
    # happens there, beside the classification, with no broadcast.
    classified = classify.classify(joined, admin=admin, sync_group_offsets_enabled=True)
    assert _exchanges(classified) == _exchanges(joined) > 0
    broadcasts = [_plan(f).count("BroadcastExchange") for f in (translated, joined, classified)]
    assert broadcasts[2] == broadcasts[1] <= broadcasts[0] + 2  # at most the target offsets and checkpoints
    rows = {(r.group, r.topic, r.partition): r for r in classified.collect()}
    assert set(rows) == set(got)
    assert rows[("h", "ghost", 0)].status == Status.ERROR.value
    assert rows[("g", "orders", 0)].status == Status.SYNCED.value


def _plan(frame: Any) -> str:
    """``frame``'s physical plan, as Spark prints it."""
    return str(frame._jdf.queryExecution().executedPlan().toString())


def _exchanges(frame: Any) -> int:
    """The shuffle exchanges in ``frame``'s physical plan."""
    return len(
        re.findall(r"\bExchange (?:hashpartitioning|roundrobinpartitioning|rangepartitioning)", _plan(frame), re.I)
    )


def test_the_readme_statuses_table_lists_every_status_with_its_ok_flag() -> None:
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    for status in Status:
        ok = "yes" if status in statuses.OK_STATUSES else "no"
        assert f"| `{status.value}` | {ok} |" in readme, status


# A share or streams group: MM2 never checkpoints it (no checkpoint, nothing MM2 wrote on the target).
UNMIRRORED = {"checkpoint_upstream": None, "checkpoint_offset": None, "checkpoint_timestamp": None}

# (case id, the row, expected status, replay exact, replay at least, skip at most)
UNMIRRORED_CASES: list[tuple[str, dict[str, Any], Status, int | None, int | None, int | None]] = [
    (
        "share, nothing on the target: starts at the log end",
        healthy(group_type="share", target_offset=None, **UNMIRRORED),
        Status.NOT_CHECKPOINTED, None, 0, 100,
    ),
    (
        "streams, nothing on the target: starts at the earliest offset",
        healthy(group_type="streams", target_offset=None, target_earliest=5, **UNMIRRORED),
        Status.NOT_CHECKPOINTED, None, 93, 0,
    ),
    (
        "share at its translated start on the target: a bound only",
        healthy(group_type="share", **UNMIRRORED),
        Status.NOT_CHECKPOINTED, None, 0, 0,
    ),
    (
        "share with its state read: exact, what it acknowledged past a gap replayed",
        healthy(
            group_type="share", translation_method="offset_sync_exact", share_start_offset=40,
            share_acknowledged_past=7, **UNMIRRORED,
        ),
        Status.NOT_CHECKPOINTED, 7, 7, 0,
    ),
    (
        "share with its state read, nothing on the target: it would skip, and how much again is unknown",
        healthy(
            group_type="share", translation_method="offset_sync_exact", share_start_offset=40,
            share_acknowledged_past=7, target_offset=None, **UNMIRRORED,
        ),
        Status.NOT_CHECKPOINTED, None, 0, 100,
    ),
    (
        "streams at its translation: exact",
        healthy(group_type="streams", translation_method="offset_sync_exact", **UNMIRRORED),
        Status.NOT_CHECKPOINTED, 0, 0, 0,
    ),
    (
        "members on the target do not make it target_group_active",
        healthy(group_type="share", target_group_members=2, **UNMIRRORED),
        Status.NOT_CHECKPOINTED, None, 0, 0,
    ),
    ("an error wins", healthy(group_type="share", error="boom", **UNMIRRORED), Status.ERROR, None, 0, 0),
    ("not yet copied wins", behind(group_type="streams", **UNMIRRORED), Status.NOT_YET_COPIED, None, None, None),
    ("a consumer group is judged as before", healthy(group_type="consumer"), Status.SYNCED, None, 0, 0),
]  # fmt: skip


@pytest.mark.spark
@pytest.mark.parametrize(
    ("row", "status", "replay", "replay_at_least", "skip_at_most"),
    [pytest.param(*c[1:], id=c[0]) for c in UNMIRRORED_CASES],
)
def test_share_and_streams_groups_are_never_checkpointed_by_mm2(
    spark: Any,
    row: dict[str, Any],
    status: Status,
    replay: int | None,
    replay_at_least: int | None,
    skip_at_most: int | None,
) -> None:
    (got,) = _classify(spark, [row]).values()
    assert got.status == status.value
    assert got.is_ok is (status in statuses.OK_STATUSES)
    assert got.group_type == row.get("group_type")
    assert got.share_start_offset == row.get("share_start_offset")
    if status is Status.NOT_YET_COPIED:
        return
    assert (got.replay_if_failover_now, got.replay_if_failover_now_at_least) == (replay, replay_at_least)
    assert got.skip_if_failover_now_at_most == skip_at_most
    if status is Status.NOT_CHECKPOINTED:
        assert got.blocking_component == Blocking.CHECKPOINT_CONNECTOR.value
        assert f"MM2 never checkpoints {row['group_type']} groups" in got.explanation
        assert ("has no position" in got.explanation) is (row["target_offset"] is None)
        assert ("delivered again" in got.explanation) is (row["group_type"] == "share")


@pytest.mark.spark
def test_a_row_kept_synced_by_a_fresh_checkpoint_is_found_once_the_clock_makes_it_stale(spark: Any) -> None:
    """The one rule of the clock: a row's status may change with no new input once its checkpoint is no longer
    fresh. ``FRESH_CHECKPOINT`` keeps the checkpoint that proved MM2 was keeping up, and ``stale_at`` tells when
    it no longer does."""
    gap = {"committed_offset": 600, "translated_offset": 501, "latest_sync_upstream": 550, "target_offset": 10}
    checkpointed = NOW - dt.timedelta(minutes=1)
    rows = [
        healthy(group="fresh", checkpoint_timestamp=checkpointed, **gap),
        healthy(group="old", checkpoint_timestamp=NOW - dt.timedelta(days=2), **gap),
        healthy(group="none", checkpoint_timestamp=None),
    ]
    age = dt.timedelta(minutes=5)
    kept = classify.classify(_df(spark, JOINED_SCHEMA, rows), admin=None, sync_group_offsets_enabled=True, as_of=NOW)
    assert {r.group: r[FRESH_CHECKPOINT] for r in kept.collect()} == {
        "fresh": checkpointed.replace(tzinfo=None),
        "old": None,
        "none": None,
    }
    assert not classify.stale_at(micros(checkpointed), as_of=NOW + dt.timedelta(minutes=3), fresh_checkpoint_age=age)
    assert classify.stale_at(micros(checkpointed), as_of=NOW + dt.timedelta(minutes=5), fresh_checkpoint_age=age)
    assert not classify.stale_at(None, as_of=NOW + dt.timedelta(days=9), fresh_checkpoint_age=age)
    again = classify.classify(
        _df(spark, JOINED_SCHEMA, rows[:1]),
        admin=None,
        sync_group_offsets_enabled=True,
        as_of=NOW + dt.timedelta(minutes=5),
    )
    assert [r.status for r in again.collect()] == [Status.STALE_SYNC.value]
