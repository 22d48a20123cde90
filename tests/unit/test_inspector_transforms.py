"""Compaction semantics, translation (against a plain-Python model of DESIGN §5), joins and the summary."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import Observation
from pyspark.sql import functions as F
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
from mm2ctl.inspector.spark_compat import frame_from_arrow
from mm2ctl.plans.translation import (
    Sync,
    conservative,
    current_mapping_start,
    newest_sync_at_or_below,
    normalize_syncs,
)

pytestmark = pytest.mark.spark

PAIR = "a->b"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
# Each example batches many independent scenarios (one source partition each) into one frame, so a handful of
# Spark runs covers hundreds of cases.
PROPERTY = settings(
    max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
#: The one rule's property test: each example is one or two Spark translations of up to ``RULE_PARTITIONS``
#: partitions' histories, so 12 examples check up to 576 histories.
PROPERTY_RULE = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
RULE_PARTITIONS = 48
SCENARIOS = 24


def _df(spark: Any, schema: StructType, rows: list[dict[str, Any]]) -> Any:
    """An inline frame with an explicit schema, built through Arrow (a local relation: fast, no Python worker)."""
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )
    return frame_from_arrow(spark, table, schema)


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


def test_latest_syncs_a_contradiction_discards_the_history_before_it(spark: Any) -> None:
    decoded = _df(
        spark,
        DECODED_OFFSET_SYNC_SCHEMA,
        [
            _sync_record(0, "t", 0, 100, 100),
            _sync_record(1, "t", 0, 200, 200),
            _sync_record(2, "t", 0, 150, 300),  # copied again after a restart: contradicts 200->200
            _sync_record(3, "t", 0, 170, 320),
            _sync_record(4, "t", 0, 160, 310),  # written out of order, agrees with the rest
            _sync_record(5, "t", 0, 250, 400),
        ],
    )
    rows = sorted((r.upstream_offset, r.downstream_offset) for r in transforms.latest_syncs(decoded).collect())
    assert rows == [(150, 300), (160, 310), (170, 320), (250, 400)]


def test_latest_syncs_one_upstream_with_two_downstreams_is_a_contradiction(spark: Any) -> None:
    decoded = _df(
        spark,
        DECODED_OFFSET_SYNC_SCHEMA,
        [_sync_record(0, "t", 0, 100, 100), _sync_record(1, "t", 0, 160, 310), _sync_record(2, "t", 0, 160, 311)],
    )
    rows = sorted((r.upstream_offset, r.downstream_offset) for r in transforms.latest_syncs(decoded).collect())
    assert rows == [(160, 311)]


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
    syncs = _syncs(spark, [("t", 0, 100, 90, 0), ("t", 0, 200, 185, 1), ("t", 0, 200, 185, 2), ("t", 0, 300, 280, 3)])
    offsets = _group_offsets(
        spark,
        [
            ("exact", "t", 0, 100),  # upstream == c → downstream
            ("between", "t", 0, 150),  # upstream < c → downstream + 1, never + (c - upstream)
            ("tie", "t", 0, 200),  # the same sync written twice
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
    assert got["tie"].translated_offset == 185
    assert (got["past-last"].translated_offset, got["past-last"].sync_upstream) == (281, 300)
    assert (got["before-first"].translated_offset, got["before-first"].sync_upstream) == (None, None)
    assert (got["no-syncs"].translated_offset, got["no-syncs"].sync_count) == (None, 0)
    assert got["null"].translated_offset is None
    for group in ("exact", "between", "tie", "past-last", "before-first", "null"):
        assert (got[group].latest_sync_upstream, got[group].latest_sync_downstream) == (300, 280)
        assert (got[group].oldest_sync_upstream, got[group].oldest_sync_downstream) == (100, 90)
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


# --- translate: the one rule (plans.translation) is the oracle ---


def translate_exactly(spark: Any, group_offsets: Any, raw_syncs: Any) -> list[Any]:
    """The job's path: raw records matched to the partitions by their raw key, translated in one pass; the
    partitions that pass finds tangled get their current mapping's start (``mapping_starts``) and are
    translated again, which must leave none tangled."""
    numbers = transforms.partition_numbers(group_offsets)
    decoded = decode.decode_offset_syncs(raw_syncs, known=numbers).select(*transforms.NUMBERED_SYNC_COLUMNS)
    first = Observation("tangled-1")
    rows = transforms.translate(group_offsets, decoded, numbers=numbers, tangled=first).collect()
    parts = transforms.tangled_parts(first.get)
    if not parts:
        return rows
    cuts = transforms.mapping_starts(decoded.where(F.col("_part").isin(parts))).collect()
    again = Observation("tangled-2")
    cut_frame = spark.createDataFrame(cuts, "_part int, _cut long")
    rows = transforms.translate(group_offsets, decoded, numbers=numbers, cuts=cut_frame, tangled=again).collect()
    assert transforms.tangled_parts(again.get) == []
    return rows


#: What a partition's history is made of. ``run`` appends syncs advancing on both sides (one mapping); the
#: others are what real topics do to it, or arbitrary syncs.
op = st.one_of(
    st.tuples(st.just("run"), st.integers(1, 6), st.integers(0, 4), st.integers(0, 4)),
    st.tuples(st.just("upstream_rewind"), st.integers(0, 40)),  # source recreated or copied again
    st.tuples(st.just("target_rewind"), st.integers(0, 40)),  # target recreated and refilled
    st.tuples(st.just("out_of_order"), st.integers(1, 3)),  # the last syncs written in another order
    st.tuples(st.just("duplicate"), st.integers(0, 30)),
    st.tuples(st.just("compaction_hole"), st.integers(0, 30)),
    st.tuples(st.just("tombstone"), st.just(0)),
    st.tuples(st.just("malformed"), st.just(0)),
    st.tuples(st.just("arbitrary"), st.integers(0, 40), st.integers(0, 40)),
)


def _history(ops: list[tuple[Any, ...]]) -> list[Sync | str | None]:
    """A partition's records in write order: a Sync, None (tombstone) or "malformed"."""
    out: list[Sync | str | None] = []
    up = down = 0
    for o in ops:
        kind = o[0]
        if kind == "run":
            for _ in range(o[1]):
                up, down = up + 1 + o[2], down + 1 + o[3]
                out.append(Sync(up, down))
        elif kind == "upstream_rewind":
            up = max(0, up - o[1])
        elif kind == "target_rewind":
            down = max(0, down - o[1])
        elif kind == "out_of_order" and len(out) > o[1]:
            out[-1 - o[1]], out[-1] = out[-1], out[-1 - o[1]]
        elif kind == "duplicate" and out:
            out.append(out[o[1] % len(out)])
        elif kind == "compaction_hole" and out:
            del out[o[1] % len(out)]
        elif kind == "tombstone":
            out.append(None)
        elif kind == "malformed":
            out.append("malformed")
        elif kind == "arbitrary":
            out.append(Sync(o[1], o[2]))
    return out


@PROPERTY_RULE
@given(
    partitions=st.lists(
        st.tuples(
            st.lists(op, max_size=12), st.lists(st.one_of(st.none(), st.integers(-2, 90)), min_size=1, max_size=5)
        ),
        min_size=1,
        max_size=RULE_PARTITIONS,
    ),
    seed=st.integers(0, 2**16),
)
def test_property_translate_computes_the_one_rule(
    spark: Any, partitions: list[tuple[list[tuple[Any, ...]], list[int | None]]], seed: int
) -> None:
    """``inspect``'s Spark translation equals ``plans.translation`` (what every planner runs) on every history:
    out-of-order writes, upstream and target rewinds, duplicates, compaction holes, tombstones, malformed
    records and arbitrary syncs, the partitions' records interleaved in the topic as MM2 writes them."""
    histories = {p: _history(ops) for p, (ops, _) in enumerate(partitions)}
    queues = {p: list(h) for p, h in histories.items()}
    rng = random.Random(seed)
    raw = []
    while any(queues.values()):
        p = rng.choice([q for q, left in queues.items() if left])
        x = queues[p].pop(0)
        key = codecs.encode_offset_sync_key("t", p)
        if x == "malformed":
            raw.append((PAIR, key[:3], None, "syncs", 0, len(raw), T0, 0))
            continue
        value = None if x is None else codecs.encode_offset_sync_value(x.upstream, x.downstream)  # type: ignore[union-attr]
        raw.append((PAIR, key, value, "syncs", 0, len(raw), T0, 0))
    offset_rows = [(f"g{p}-{i}", "t", p, c) for p, (_, offsets) in enumerate(partitions) for i, c in enumerate(offsets)]
    got = {r.group: r for r in translate_exactly(spark, _group_offsets(spark, offset_rows), _raw(spark, raw))}
    for group, _, p, c in offset_rows:
        history = [x for x in histories[p] if x != "malformed"]
        start = current_mapping_start(history)  # type: ignore[arg-type]
        syncs = normalize_syncs(history)  # type: ignore[arg-type]
        row = got[group]
        rule = None if c is None else conservative(syncs, c)
        used = None if c is None else newest_sync_at_or_below(syncs, c)
        assert row.translated_offset == (None if rule is None else rule.offset), (history, c)
        assert (row.sync_upstream, row.sync_downstream) == (
            (None, None) if used is None else (syncs[used].upstream, syncs[used].downstream)
        )
        assert row.sync_count == sum(1 for x in history[start:] if x is not None)
        assert (row.oldest_sync_upstream, row.latest_sync_upstream) == (
            (syncs[0].upstream, syncs[-1].upstream) if syncs else (None, None)
        )


def _raw(spark: Any, raw: list[tuple[Any, ...]]) -> Any:
    return spark.createDataFrame(raw, KAFKA_RECORD_SCHEMA)


@PROPERTY
@given(partitions=st.lists(st.lists(op, max_size=12), min_size=1, max_size=SCENARIOS))
def test_property_latest_syncs_are_the_current_mapping(spark: Any, partitions: list[list[tuple[Any, ...]]]) -> None:
    histories = {p: [x for x in _history(ops) if x != "malformed"] for p, ops in enumerate(partitions)}
    rows = []
    for p, history in histories.items():
        for x in history:
            up, down = (None, None) if x is None else (x.upstream, x.downstream)  # type: ignore[union-attr]
            rows.append(_sync_record(len(rows), "t", p, up, down))
    got = sorted(
        (r.partition, r.upstream_offset, r.downstream_offset)
        for r in transforms.latest_syncs(_df(spark, DECODED_OFFSET_SYNC_SCHEMA, rows)).collect()
    )
    expected = []
    for p, history in histories.items():
        start = current_mapping_start(history)  # type: ignore[arg-type]
        expected += [(p, x.upstream, x.downstream) for x in history[start:] if x is not None]  # type: ignore[union-attr]
    assert got == sorted(expected)


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
            "replay_if_failover_now_at_least": replay,
            "skip_if_failover_now_at_most": 0 if replay is not None else None,
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


def test_translation_fields_are_longs_but_the_method() -> None:
    from mm2ctl.inspector.schemas import TRANSLATION_FIELDS

    assert all(isinstance(f.dataType, LongType) for f in TRANSLATION_FIELDS if f.name != "translation_method")
