"""Compaction semantics, translation (against a plain-Python model of DESIGN §5), joins and the summary."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StructType

from mm2ctl.core import codecs
from mm2ctl.inspector import decode, transforms
from mm2ctl.inspector.schemas import (
    CHECKPOINTS_SCHEMA,
    DECODED_CHECKPOINT_SCHEMA,
    DECODED_OFFSET_SYNC_SCHEMA,
    GROUP_STATES_SCHEMA,
    JOINED_SCHEMA,
    KAFKA_RECORD_SCHEMA,
    SOURCE_GROUP_OFFSETS_SCHEMA,
    SOURCE_PARTITIONS_SCHEMA,
    SUMMARY_SCHEMA,
    SYNCS_SCHEMA,
    TARGET_GROUP_OFFSETS_SCHEMA,
    TARGET_PARTITIONS_SCHEMA,
)

pytestmark = pytest.mark.spark

PAIR = "a->b"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
# Each example batches many independent scenarios (one source partition each) into one frame, so a handful of
# Spark runs covers hundreds of cases.
PROPERTY = settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
SCENARIOS = 24


def _df(spark: Any, schema: StructType, rows: list[dict[str, Any]]) -> Any:
    """An inline frame with an explicit schema, built through Arrow (a local relation: fast, no Python worker)."""
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )
    return spark.createDataFrame(table, schema)


def _sync_record(offset: int, topic: str, partition: int, up: int | None, down: int | None, **kw: Any) -> dict:
    return {
        "cluster_pair": PAIR,
        "topic": topic,
        "partition": partition,
        "upstream_offset": up,
        "downstream_offset": down,
        "is_tombstone": up is None and kw.get("reason") is None,
        "malformed_reason": kw.get("reason"),
        "record_partition": kw.get("record_partition", 0),
        "record_offset": offset,
        "record_timestamp": T0 + dt.timedelta(seconds=offset),
    }


# --- latest_syncs ---


def test_latest_syncs_keeps_every_live_sync_and_counts_them(spark: Any) -> None:
    decoded = _df(
        spark,
        DECODED_OFFSET_SYNC_SCHEMA,
        [
            _sync_record(0, "t", 0, 0, 0),
            _sync_record(1, "t", 0, 100, 98),
            _sync_record(2, "t", 1, 5, 5),
            _sync_record(3, None, None, None, None, reason="key truncated"),  # type: ignore[arg-type]
            _sync_record(4, "t", 0, 200, 197),
            _sync_record(0, "t", 0, 999, 999, record_partition=1),  # MM2 never reads partition 1
        ],
    )
    got = transforms.latest_syncs(decoded)
    assert [f.name for f in got.schema] == SYNCS_SCHEMA.names
    rows = sorted((r.partition, r.upstream_offset, r.downstream_offset, r.sync_count) for r in got.collect())
    assert rows == [(0, 0, 0, 3), (0, 100, 98, 3), (0, 200, 197, 3), (1, 5, 5, 1)]


def test_latest_syncs_tombstone_deletes_earlier_syncs_of_its_key_only(spark: Any) -> None:
    decoded = _df(
        spark,
        DECODED_OFFSET_SYNC_SCHEMA,
        [
            _sync_record(0, "t", 0, 10, 10),
            _sync_record(1, "t", 1, 10, 10),
            _sync_record(2, "t", 0, None, None),  # tombstone for t-0
            _sync_record(3, "t", 0, 50, 40),
        ],
    )
    rows = sorted((r.partition, r.upstream_offset, r.sync_count) for r in transforms.latest_syncs(decoded).collect())
    assert rows == [(0, 50, 1), (1, 10, 1)]


def test_latest_syncs_upstream_rewind_discards_the_history_before_it(spark: Any) -> None:
    decoded = _df(
        spark,
        DECODED_OFFSET_SYNC_SCHEMA,
        [
            _sync_record(0, "t", 0, 100, 100),
            _sync_record(1, "t", 0, 200, 200),
            _sync_record(2, "t", 0, 150, 300),  # source partition went back: older syncs are invalid
            _sync_record(3, "t", 0, 160, 310),
            _sync_record(4, "t", 0, 160, 311),  # equal upstream is not a rewind
        ],
    )
    rows = sorted((r.upstream_offset, r.downstream_offset) for r in transforms.latest_syncs(decoded).collect())
    assert rows == [(150, 300), (160, 310), (160, 311)]


# --- translate: examples ---


def test_latest_syncs_keeps_syncs_at_the_extreme_record_offsets(spark: Any) -> None:
    """No sentinel stands in for "nothing dead": a sync at record offset -2^63 is live, and a tombstone at
    2^63 - 1 deletes every sync before it without overflowing."""
    long_min, long_max = -(2**63), 2**63 - 1

    def record(offset: int, up: int | None) -> dict:
        return _sync_record(0, "t", 0, up, up) | {"record_offset": offset}  # its timestamp stays T0

    live = _df(spark, DECODED_OFFSET_SYNC_SCHEMA, [record(long_min, 5)])
    assert [(r.upstream_offset, r.sync_count) for r in transforms.latest_syncs(live).collect()] == [(5, 1)]
    deleted = _df(spark, DECODED_OFFSET_SYNC_SCHEMA, [record(0, 5), record(long_max, None)])
    assert transforms.latest_syncs(deleted).collect() == []


def _syncs(spark: Any, syncs: list[tuple[str, int, int, int, int]]) -> Any:
    """(topic, partition, upstream, downstream, record_offset) → a decoded offset-syncs frame."""
    return _df(
        spark,
        DECODED_OFFSET_SYNC_SCHEMA,
        [_sync_record(rec, topic, partition, up, down) for topic, partition, up, down, rec in syncs],
    )


def _group_offsets(spark: Any, rows: list[tuple[str, str, int, int | None]]) -> Any:
    return _df(
        spark,
        SOURCE_GROUP_OFFSETS_SCHEMA,
        [{"cluster_pair": PAIR, "group": g, "topic": t, "partition": p, "committed_offset": c} for g, t, p, c in rows],
    )


def test_translate_design_rule(spark: Any) -> None:
    syncs = _syncs(spark, [("t", 0, 100, 90, 0), ("t", 0, 200, 185, 1), ("t", 0, 200, 186, 2), ("t", 0, 300, 280, 3)])
    offsets = _group_offsets(
        spark,
        [
            ("exact", "t", 0, 100),  # upstream == c → downstream
            ("between", "t", 0, 150),  # upstream < c → downstream + 1, never + (c - upstream)
            ("tie", "t", 0, 200),  # two syncs at 200: the later record wins
            ("past-last", "t", 0, 1000),
            ("before-first", "t", 0, 99),  # untranslatable
            ("no-syncs", "t", 1, 5),
            ("null", "t", 0, None),
        ],
    )
    got = {r.group: r for r in transforms.translate(offsets, syncs).collect()}
    assert got["exact"].translated_offset == 90
    assert got["between"].translated_offset == 91
    assert (got["between"].sync_upstream, got["between"].sync_downstream) == (100, 90)
    assert got["tie"].translated_offset == 186
    assert (got["past-last"].translated_offset, got["past-last"].sync_upstream) == (281, 300)
    assert (got["before-first"].translated_offset, got["before-first"].sync_upstream) == (None, None)
    assert (got["no-syncs"].translated_offset, got["no-syncs"].sync_count) == (None, 0)
    assert got["null"].translated_offset is None
    for group in ("exact", "between", "tie", "past-last", "before-first", "null"):
        assert (got[group].latest_sync_upstream, got[group].latest_sync_downstream) == (300, 280)
        assert got[group].sync_count == 4


def test_translate_keeps_input_columns_and_rows(spark: Any) -> None:
    offsets = _group_offsets(spark, [("g1", "t", 0, 5), ("g2", "t", 0, 5)])
    got = transforms.translate(offsets, _syncs(spark, [("t", 0, 5, 7, 0)]))
    assert got.columns[: len(offsets.columns)] == offsets.columns
    assert got.columns[len(offsets.columns) :] == [f.name for f in transforms_fields()]
    assert sorted((r.group, r.translated_offset) for r in got.collect()) == [("g1", 7), ("g2", 7)]


def test_translate_keeps_the_key_of_a_partition_the_numbering_lacks(spark: Any) -> None:
    """A probe's key comes back from its partition's number; a probe of a partition the numbering has no number
    for keeps its own key (and has no sync to translate by) rather than coming out keyless."""
    offsets = _group_offsets(spark, [("g1", "t", 0, 5), ("g2", "u", 3, 5)])
    numbers = transforms.partition_numbers(offsets).where("topic = 't'")
    syncs = decode.decode_offset_syncs(
        spark.createDataFrame(
            [
                (PAIR, codecs.encode_offset_sync_key(t, p), codecs.encode_offset_sync_value(5, 7), "s", 0, 0, T0, 0)
                for t, p in (("t", 0), ("u", 3))
            ],
            KAFKA_RECORD_SCHEMA,
        ),
        known=numbers,
    )
    got = transforms.translate(offsets, syncs, numbers=numbers).collect()
    assert sorted(((r.group, r.cluster_pair, r.topic, r.partition, r.translated_offset) for r in got), key=str) == [
        ("g1", PAIR, "t", 0, 7),
        ("g2", PAIR, "u", 3, None),  # its sync is not the numbering's, so it is not used
    ]


def transforms_fields() -> list[Any]:
    from mm2ctl.inspector.schemas import TRANSLATION_FIELDS

    return TRANSLATION_FIELDS


def test_translate_downstream_overflow_is_null_not_a_crash(spark: Any) -> None:
    long_max = 2**63 - 1
    offsets = _group_offsets(spark, [("g", "t", 0, 10)])
    (row,) = transforms.translate(offsets, _syncs(spark, [("t", 0, 1, long_max, 0)])).collect()
    assert row.translated_offset is None and row.sync_downstream == long_max


# --- translate: property test against a plain-Python model of DESIGN §5 ---


def _model_translate(syncs: list[tuple[int, int, int]], c: int | None) -> dict[str, int | None]:
    """DESIGN §5 in plain Python. syncs: (upstream, downstream, record_offset) of one partition."""
    out: dict[str, int | None] = dict.fromkeys(("translated_offset", "sync_upstream", "sync_downstream"))
    if c is None:
        return out
    below = [s for s in syncs if s[0] <= c]
    if below:
        up, down, _ = max(below, key=lambda s: (s[0], s[2]))
        out.update(
            translated_offset=down if up == c else down + 1,
            sync_upstream=up,
            sync_downstream=down,
        )
    return out


small = st.integers(0, 40)


scenario = st.tuples(
    st.lists(st.tuples(small, small), max_size=10),  # syncs of the partition, in record order
    st.lists(st.one_of(st.none(), st.integers(-3, 45)), min_size=1, max_size=6),  # committed offsets
)


@PROPERTY
@given(scenarios=st.lists(scenario, min_size=1, max_size=SCENARIOS))
def test_property_translate_matches_model(
    spark: Any, scenarios: list[tuple[list[tuple[int, int]], list[int | None]]]
) -> None:
    sync_list = [(p, up, down) for p, (syncs, _) in enumerate(scenarios) for up, down in syncs]
    sync_rows = [("t", p, up, down, rec) for rec, (p, up, down) in enumerate(sync_list)]
    offset_rows = [(f"g{p}-{i}", "t", p, c) for p, (_, offsets) in enumerate(scenarios) for i, c in enumerate(offsets)]
    got = {
        r.group: r for r in transforms.translate(_group_offsets(spark, offset_rows), _syncs(spark, sync_rows)).collect()
    }
    live = _model_live_syncs([(p, "sync", up, down) for _, p, up, down, _ in sync_rows])
    for group, _, partition, c in offset_rows:
        mine = live.get(partition, [])
        expected = _model_translate(mine, c)
        row = got[group]
        assert {k: getattr(row, k) for k in expected} == expected, (partition, c, mine)
        assert row.sync_count == len(mine)
        if mine:
            latest = max(mine, key=lambda s: (s[0], s[2]))
            assert (row.latest_sync_upstream, row.latest_sync_downstream) == latest[:2]
        else:
            assert (row.latest_sync_upstream, row.latest_sync_downstream) == (None, None)


# --- latest_syncs + translate: property test against MM2's store semantics ---


def _model_live_syncs(
    records: list[tuple[int, str, int | None, int | None]],
) -> dict[int, list[tuple[int, int, int]]]:
    """Replays the records the way a compacted topic and MM2's store see them: tombstones and upstream
    rewinds wipe a partition's history; malformed records are skipped."""
    live: dict[int, list[tuple[int, int, int]]] = {}
    for offset, (partition, kind, up, down) in enumerate(records):
        if kind == "bad":
            continue
        history = live.setdefault(partition, [])
        if kind == "tombstone":
            history.clear()
            continue
        assert up is not None and down is not None
        if history and up < history[-1][0]:
            history.clear()
        history.append((up, down, offset))
    return live


record = st.one_of(
    st.tuples(st.integers(0, SCENARIOS - 1), st.just("sync"), small, small),
    st.tuples(st.integers(0, SCENARIOS - 1), st.just("sync"), small, small),
    st.tuples(st.integers(0, SCENARIOS - 1), st.sampled_from(["tombstone", "bad"]), st.none(), st.none()),
)


@PROPERTY
@given(records=st.lists(record, max_size=150), offsets=st.lists(st.integers(0, 45), min_size=1, max_size=4))
def test_property_latest_syncs_then_translate_match_model(
    spark: Any, records: list[tuple[int, str, int | None, int | None]], offsets: list[int]
) -> None:
    rows = []
    for offset, (partition, kind, up, down) in enumerate(records):
        if kind == "bad":
            rows.append(_sync_record(offset, None, None, None, None, reason="key truncated"))  # type: ignore[arg-type]
        else:
            rows.append(_sync_record(offset, "t", partition, up, down))
    decoded = _df(spark, DECODED_OFFSET_SYNC_SCHEMA, rows)
    offset_rows = [(f"g{p}-{i}", "t", p, c) for i, c in enumerate(offsets) for p in range(SCENARIOS)]
    got = {r.group: r for r in transforms.translate(_group_offsets(spark, offset_rows), decoded).collect()}
    live = _model_live_syncs(records)
    kept = sorted(
        (r.partition, r.upstream_offset, r.downstream_offset, r.record_offset, r.sync_count)
        for r in transforms.latest_syncs(decoded).collect()
    )
    assert kept == sorted((p, up, down, rec, len(syncs)) for p, syncs in live.items() for up, down, rec in syncs)
    for group, _, partition, c in offset_rows:
        expected = _model_translate(live.get(partition, []), c)
        row = got[group]
        assert {k: getattr(row, k) for k in expected} == expected, (partition, c, live.get(partition))
        assert row.sync_count == len(live.get(partition, []))
    # The job's path: the same records as raw Kafka bytes, matched to the partitions by their raw key.
    raw = []
    for offset, (partition, kind, up, down) in enumerate(records):
        key = codecs.encode_offset_sync_key("t", partition)
        value = None if kind == "tombstone" else codecs.encode_offset_sync_value(up or 0, down or 0)
        raw.append((PAIR, key[:3] if kind == "bad" else key, value, "syncs", 0, offset, T0, 0))
    group_offsets = _group_offsets(spark, offset_rows)
    numbers = transforms.partition_numbers(group_offsets)
    known = decode.decode_offset_syncs(spark.createDataFrame(raw, KAFKA_RECORD_SCHEMA), known=numbers)
    by_key = {r.group: r for r in transforms.translate(group_offsets, known, numbers=numbers).collect()}
    assert by_key == got


# --- latest_checkpoints ---


def _checkpoint_record(offset: int, group: str, up: int | None, down: int | None, reason: str | None = None) -> dict:
    return {
        "cluster_pair": PAIR,
        "group": None if reason else group,
        "topic": None if reason else "src.t",
        "partition": None if reason else 0,
        "upstream_offset": up,
        "downstream_offset": down,
        "metadata": "" if up is not None else None,
        "is_tombstone": up is None and reason is None,
        "malformed_reason": reason,
        "record_partition": 0,
        "record_offset": offset,
        "record_timestamp": T0 + dt.timedelta(seconds=offset),
    }


def test_latest_checkpoints_newest_wins_tombstone_deletes(spark: Any) -> None:
    decoded = _df(
        spark,
        DECODED_CHECKPOINT_SCHEMA,
        [
            _checkpoint_record(0, "g1", 10, 9),
            _checkpoint_record(1, "g1", 5, 4),  # an upstream rewind: newer record, lower offsets, still wins
            _checkpoint_record(2, "g2", 10, 9),
            _checkpoint_record(3, "g2", None, None),  # tombstone
            _checkpoint_record(4, "g3", None, None),
            _checkpoint_record(5, "g3", 7, 7),  # written after its tombstone: live
            _checkpoint_record(6, "g1", None, None, reason="value truncated"),
        ],
    )
    got = transforms.latest_checkpoints(decoded)
    expected = _df(
        spark,
        CHECKPOINTS_SCHEMA,
        [
            {
                "cluster_pair": PAIR,
                "group": g,
                "topic": "src.t",
                "partition": 0,
                "upstream_offset": up,
                "downstream_offset": down,
                "metadata": "",
                "record_offset": off,
                "record_timestamp": T0 + dt.timedelta(seconds=off),
            }
            for g, up, down, off in [("g1", 5, 4, 1), ("g3", 7, 7, 5)]
        ],
    )
    # pyspark.testing.assertDataFrameEqual imports pandas-on-Spark, which fails to import with the pinned
    # pandas; comparing column names/types and sorted rows checks the same thing.
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in expected.schema]
    assert sorted(got.collect()) == sorted(expected.collect())


# --- join_target_state ---


def _states(spark: Any, rows: list[tuple[str, str | None, int | None, str | None]]) -> Any:
    return _df(
        spark,
        GROUP_STATES_SCHEMA,
        [{"cluster_pair": PAIR, "group": g, "state": s, "member_count": m, "error": e} for g, s, m, e in rows],
    )


def test_join_target_state_looks_up_the_remote_topic_and_carries_errors(spark: Any) -> None:
    offsets = _df(
        spark,
        SOURCE_GROUP_OFFSETS_SCHEMA,
        [
            {"cluster_pair": PAIR, "group": "g", "topic": "orders", "partition": 0, "committed_offset": 10},
            {"cluster_pair": PAIR, "group": "g", "topic": "orders", "partition": 1, "committed_offset": 20},
            {"cluster_pair": PAIR, "group": "h", "topic": "orders", "partition": 0, "committed_offset": 30},
            {"cluster_pair": PAIR, "group": "h", "topic": "ghost", "partition": 0, "committed_offset": 1},
        ],
    )
    translated = transforms.translate(offsets, _syncs(spark, [("orders", 0, 10, 8, 0)]))
    source_partitions = _df(
        spark,
        SOURCE_PARTITIONS_SCHEMA,
        [
            {
                "cluster_pair": PAIR,
                "topic": "orders",
                "partition": p,
                "earliest_offset": 0,
                "latest_offset": 50,
                "remote_topic": "src.orders",
            }
            for p in (0, 1)
        ],
    )
    target_partitions = _df(
        spark,
        TARGET_PARTITIONS_SCHEMA,
        [
            {
                "cluster_pair": PAIR,
                "topic": "src.orders",
                "partition": 0,
                "earliest_offset": 0,
                "latest_offset": 48,
            },
            {"cluster_pair": PAIR, "topic": "src.orders", "partition": 1, "error": "NOT_LEADER_OR_FOLLOWER"},
        ],
    )
    target_group_offsets = _df(
        spark,
        TARGET_GROUP_OFFSETS_SCHEMA,
        [
            {
                "cluster_pair": PAIR,
                "group": "g",
                "topic": "src.orders",
                "partition": 0,
                "committed_offset": 8,
            },
            # same number under the *source* name (identity-style lookup): must not be picked up
            {"cluster_pair": PAIR, "group": "h", "topic": "orders", "partition": 0, "committed_offset": 999},
        ],
    )
    checkpoints = _df(
        spark,
        CHECKPOINTS_SCHEMA,
        [
            {
                "cluster_pair": PAIR,
                "group": "g",
                "topic": "src.orders",
                "partition": 0,
                "upstream_offset": 10,
                "downstream_offset": 8,
                "record_offset": 3,
                "record_timestamp": T0,
            },
        ],
    )
    joined = transforms.join_target_state(
        translated,
        source_partitions=source_partitions,
        target_partitions=target_partitions,
        target_group_offsets=target_group_offsets,
        source_groups=_states(spark, [("g", "Stable", 2, None), ("h", "Empty", 0, None)]),
        target_groups=_states(spark, [("g", "Empty", 0, None), ("h", None, None, "GROUP_AUTHORIZATION_FAILED")]),
        checkpoints=checkpoints,
    )
    assert [(f.name, f.dataType) for f in joined.schema] == [(f.name, f.dataType) for f in JOINED_SCHEMA]
    got = {(r.group, r.topic, r.partition): r for r in joined.collect()}
    assert len(got) == 4

    g0 = got[("g", "orders", 0)]
    assert (g0.remote_topic, g0.source_earliest, g0.source_latest) == ("src.orders", 0, 50)
    assert (g0.target_earliest, g0.target_latest, g0.target_offset) == (0, 48, 8)
    assert (g0.source_group_state, g0.target_group_state, g0.target_group_members) == ("Stable", "Empty", 0)
    assert (g0.checkpoint_upstream, g0.checkpoint_offset) == (10, 8)
    assert g0.checkpoint_timestamp == T0.replace(tzinfo=None)  # collected in the session zone (UTC)
    assert (g0.translated_offset, g0.error) == (8, None)

    assert got[("g", "orders", 1)].error == "target partition: NOT_LEADER_OR_FOLLOWER"
    h0 = got[("h", "orders", 0)]
    assert h0.target_offset is None  # not the 999 committed under the source name
    assert h0.error == "target group: GROUP_AUTHORIZATION_FAILED"
    ghost = got[("h", "ghost", 0)]
    assert ghost.error == ("source partition: not described by the job; target group: GROUP_AUTHORIZATION_FAILED")


# --- summarize ---


def test_summarize_counts_per_pair_and_status(spark: Any) -> None:
    from mm2ctl.inspector.schemas import CLASSIFIED_SCHEMA

    def row(pair: str, group: str, partition: int, status: str, ok: bool, replay: int | None) -> dict:
        return {
            "cluster_pair": pair,
            "topic": "t",
            "partition": partition,
            "group": group,
            "is_ok": ok,
            "message": "m",
            "status": status,
            "sync_count": 1,
            "replay_if_failover_now": replay,
            "skip_if_failover_now": 0 if replay is not None else None,
        }

    classified = _df(
        spark,
        CLASSIFIED_SCHEMA,
        [
            row("a->b", "g1", 0, "synced", True, 0),
            row("a->b", "g1", 1, "stale_sync", False, 500),
            row("a->b", "g2", 0, "synced", True, 3),
            row("a->b", "g3", 0, "not_synced", False, None),
            row("c->d", "g1", 0, "synced", True, 0),
        ],
    )
    got = transforms.summarize(classified)
    assert [(f.name, f.dataType) for f in got.schema] == [(f.name, f.dataType) for f in SUMMARY_SCHEMA]
    rows = [tuple(r) for r in got.collect()]
    assert rows == [
        ("a->b", "not_synced", False, 1, 1, None, None, 4, 2, 2),
        ("a->b", "stale_sync", False, 1, 1, 500, 0, 4, 2, 2),
        ("a->b", "synced", True, 2, 2, 3, 0, 4, 2, 2),
        ("c->d", "synced", True, 1, 1, 0, 0, 1, 0, 0),
    ]


def test_translation_fields_are_longs() -> None:
    from mm2ctl.inspector.schemas import TRANSLATION_FIELDS

    assert all(isinstance(f.dataType, LongType) for f in TRANSLATION_FIELDS)
