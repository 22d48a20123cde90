"""The offset syncs kept as runs (``inspector.transforms.sync_runs``) and the translation through them
(``inspector.transforms.translated_offsets``), against the one rule of ``core.translation.rule`` as the oracle."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import strategies as st
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import LongType, StructType

from mm2ctl.core.kafka import codecs
from mm2ctl.core.translation.rule import (
    Sync,
    conservative,
    current_mapping_start,
    newest_sync_at_or_below,
    normalize_syncs,
)
from mm2ctl.inspector.kept.pair_topics import Numbering
from mm2ctl.inspector.schemas import (
    KAFKA_RECORD_SCHEMA,
    PARTITION_NUMBERS_SCHEMA,
    SOURCE_GROUP_OFFSETS_SCHEMA,
    TRANSLATION_FIELDS,
)
from mm2ctl.inspector.transforms import decode, sync_runs
from mm2ctl.inspector.transforms.translated_offsets import translate
from tests.property_examples import drawn

pytestmark = pytest.mark.spark

PAIR = "a->b"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
#: The most partitions one drawn example has; the property tests check all examples in one Spark pass.
RULE_PARTITIONS = 48


def _df(spark: Any, schema: StructType, rows: list[dict[str, Any]]) -> Any:
    """An inline frame with an explicit schema, built through Arrow (a local relation: fast, no Python worker)."""
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )
    return spark.createDataFrame(table, schema)


def _raw(spark: Any, records: list[tuple[str, int, Sync | str | None]]) -> Any:
    """(topic, partition, a Sync / None for a tombstone / "malformed") in write order → raw topic records."""
    raw = []
    for topic, partition, x in records:
        key = codecs.encode_offset_sync_key(topic, partition)
        if x == "malformed":
            raw.append((PAIR, key[:3], None, "syncs", 0, len(raw), T0, 0))
            continue
        value = None if x is None else codecs.encode_offset_sync_value(x.upstream, x.downstream)  # type: ignore[union-attr]
        raw.append((PAIR, key, value, "syncs", 0, len(raw), T0 + dt.timedelta(seconds=len(raw)), 0))
    return spark.createDataFrame(raw, KAFKA_RECORD_SCHEMA)


def _numbering(spark: Any, partitions: list[tuple[str, int]]) -> tuple[Numbering, DataFrame]:
    numbering = Numbering.of(partitions)
    return numbering, spark.createDataFrame(numbering.table(PAIR), schema=PARTITION_NUMBERS_SCHEMA)


def _records(raw: Any, numbers: DataFrame) -> DataFrame:
    return sync_runs.records(decode.decode_offset_syncs(raw, known=numbers))


def cold_runs(records: DataFrame) -> tuple[DataFrame, list[Any]]:
    """What a full read keeps: the facts pass over the sorted records, then the current mappings as runs."""
    ordered = sync_runs.sorted_records(records, 3).cache()
    facts = sync_runs.partition_facts(ordered).collect()
    return sync_runs.current_runs(ordered, sync_runs.tangled(facts)), facts


def folded_runs(kept: DataFrame, new_records: DataFrame) -> DataFrame | None:
    """What a later read does with new records: None when it must read the topic in full again."""
    facts = sync_runs.partition_facts(sync_runs.sorted_records(new_records, 1)).collect()
    if sync_runs.tangled(facts):
        return None
    candidates = kept.unionByName(sync_runs.new_syncs_as_runs(new_records))
    if sync_runs.disagreeing_runs(candidates).count():
        return None
    return sync_runs.merge_runs(candidates)


def _syncs_of(runs: DataFrame, numbering: Numbering) -> dict[tuple[str, int], tuple[list[Sync], int]]:
    """Each partition's syncs (expanded from its runs, sorted) and how many sync records they stand for."""
    key_of = {n: tp for tp, n in numbering.parts.items()}
    out: dict[tuple[str, int], tuple[list[Sync], int]] = {}
    for r in runs.collect():
        syncs, records = out.get(key_of[r._part], ([], 0))
        syncs = syncs + [Sync(r._u0 + i, r._d0 + i) for i in range(r._n)]
        out[key_of[r._part]] = (sorted(syncs), records + r._records)
    return out


def _group_offsets(spark: Any, rows: list[tuple[str, str, int, int | None]]) -> Any:
    return _df(
        spark,
        SOURCE_GROUP_OFFSETS_SCHEMA,
        [{"cluster_pair": PAIR, "group": g, "topic": t, "partition": p, "committed_offset": c} for g, t, p, c in rows],
    )


def translate_exactly(spark: Any, group_offsets: Any, raw: Any) -> list[Any]:
    """The inspection's path: the records matched to the numbered partitions by their raw key, kept as runs
    (tangled partitions cut to their current mapping first), and the group offsets translated through them."""
    partitions = sorted({(r.topic, r.partition) for r in group_offsets.select("topic", "partition").collect()})
    _, numbers = _numbering(spark, partitions)
    runs, _facts = cold_runs(_records(raw, numbers))
    return translate(group_offsets, runs, numbers).collect()


# --- the runs of a mapping ---


def test_runs_keep_every_live_sync_and_count_the_records(spark: Any) -> None:
    raw = _raw(
        spark,
        [
            ("t", 0, Sync(0, 0)),
            ("t", 0, Sync(1, 1)),  # consecutive on both sides: one run with the first
            ("t", 1, Sync(5, 5)),
            ("t", 0, "malformed"),
            ("t", 0, Sync(100, 98)),
            ("t", 0, Sync(1, 1)),  # written twice: one sync, two records
        ],
    )
    numbering, numbers = _numbering(spark, [("t", 0), ("t", 1)])
    runs, facts = cold_runs(_records(raw, numbers))
    assert [c for c in runs.columns] == list(sync_runs.RUN_COLUMNS)
    got = _syncs_of(runs, numbering)
    assert got[("t", 0)] == ([Sync(0, 0), Sync(1, 1), Sync(100, 98)], 4)
    assert got[("t", 1)] == ([Sync(5, 5)], 1)
    assert sorted((r._u0, r._n) for r in runs.collect() if r._part == numbering.parts[("t", 0)]) == [(0, 2), (100, 1)]
    malformed = next(f for f in facts if f._part is None).malformed
    assert malformed[decode.MALFORMED_REASONS.index(decode.KEY_TRUNCATED)] == 1


def test_a_tombstone_deletes_the_earlier_syncs_of_its_partition_only(spark: Any) -> None:
    raw = _raw(spark, [("t", 0, Sync(10, 10)), ("t", 1, Sync(10, 10)), ("t", 0, None), ("t", 0, Sync(50, 40))])
    numbering, numbers = _numbering(spark, [("t", 0), ("t", 1)])
    runs, facts = cold_runs(_records(raw, numbers))
    assert _syncs_of(runs, numbering) == {("t", 0): ([Sync(50, 40)], 1), ("t", 1): ([Sync(10, 10)], 1)}
    assert sorted(f._part for f in facts if f.tangled) == [numbering.parts[("t", 0)]]


def test_a_contradiction_discards_the_history_before_it(spark: Any) -> None:
    history = [Sync(100, 100), Sync(200, 200), Sync(150, 300), Sync(170, 320), Sync(160, 310), Sync(250, 400)]
    numbering, numbers = _numbering(spark, [("t", 0)])
    runs, _ = cold_runs(_records(_raw(spark, [("t", 0, s) for s in history]), numbers))
    syncs, records = _syncs_of(runs, numbering)[("t", 0)]
    assert (syncs, records) == ([Sync(150, 300), Sync(160, 310), Sync(170, 320), Sync(250, 400)], 4)


def test_one_upstream_with_two_downstreams_is_a_contradiction(spark: Any) -> None:
    numbering, numbers = _numbering(spark, [("t", 0)])
    raw = _raw(spark, [("t", 0, Sync(100, 100)), ("t", 0, Sync(160, 310)), ("t", 0, Sync(160, 311))])
    runs, _ = cold_runs(_records(raw, numbers))
    assert _syncs_of(runs, numbering)[("t", 0)] == ([Sync(160, 311)], 1)


def test_a_later_read_folds_agreeing_syncs_into_the_runs_and_refuses_a_contradiction(spark: Any) -> None:
    _, numbers = _numbering(spark, [("t", 0)])
    kept, _ = cold_runs(_records(_raw(spark, [("t", 0, Sync(i, i + 5)) for i in range(10)]), numbers))
    more = _records(_raw(spark, [("t", 0, Sync(10, 15)), ("t", 0, Sync(30, 40))]), numbers)
    folded = folded_runs(kept, more)
    assert folded is not None
    assert sorted((r._u0, r._d0, r._n, r._records) for r in folded.collect()) == [(0, 5, 11, 11), (30, 40, 1, 1)]
    inside = _records(_raw(spark, [("t", 0, Sync(4, 8))]), numbers)  # 4 -> 9 is kept: 4 -> 8 contradicts it
    assert folded_runs(kept, inside) is None
    behind = _records(_raw(spark, [("t", 0, Sync(20, 14))]), numbers)  # past the runs upstream, not downstream
    assert folded_runs(kept, behind) is None
    tombstone = _records(_raw(spark, [("t", 0, None)]), numbers)
    assert folded_runs(kept, tombstone) is None


# --- translate: examples ---


def test_translate_design_rule(spark: Any) -> None:
    raw = _raw(
        spark, [("t", 0, Sync(100, 90)), ("t", 0, Sync(200, 185)), ("t", 0, Sync(200, 185)), ("t", 0, Sync(300, 280))]
    )
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
    got = {r.group: r for r in translate_exactly(spark, offsets, raw)}
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
    _, numbers = _numbering(spark, [("t", 0)])
    runs, _ = cold_runs(_records(_raw(spark, [("t", 0, Sync(5, 7))]), numbers))
    got = translate(offsets, runs, numbers)
    assert got.columns[: len(offsets.columns)] == offsets.columns
    assert got.columns[len(offsets.columns) :] == [f.name for f in TRANSLATION_FIELDS]
    assert sorted((r.group, r.translated_offset) for r in got.collect()) == [("g1", 7), ("g2", 7)]


def test_translate_downstream_overflow_is_null_not_a_crash(spark: Any) -> None:
    long_max = 2**63 - 1
    offsets = _group_offsets(spark, [("g", "t", 0, 10)])
    (row,) = translate_exactly(spark, offsets, _raw(spark, [("t", 0, Sync(1, long_max))]))
    assert row.translated_offset is None and row.sync_downstream == long_max


def test_translation_fields_are_longs_but_the_method() -> None:
    assert all(isinstance(f.dataType, LongType) for f in TRANSLATION_FIELDS if f.name != "translation_method")


# --- translate: the one rule (core.translation.rule) is the oracle ---


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


def _interleaved(histories: dict[int, list[Sync | str | None]], seed: int) -> list[tuple[str, int, Any]]:
    """The partitions' records interleaved in the topic as MM2 writes them."""
    queues = {p: list(h) for p, h in histories.items()}
    rng = random.Random(seed)
    out = []
    while any(queues.values()):
        p = rng.choice([q for q, left in queues.items() if left])
        out.append(("t", p, queues[p].pop(0)))
    return out


def _offsets_per_partition() -> st.SearchStrategy[list[int | None]]:
    return st.lists(st.one_of(st.none(), st.integers(-2, 90)), min_size=1, max_size=5)


RULE_EXAMPLE = st.tuples(
    st.lists(st.tuples(st.lists(op, max_size=12), _offsets_per_partition()), min_size=1, max_size=RULE_PARTITIONS),
    st.integers(0, 2**16),
)
LATER_READ_EXAMPLE = st.tuples(
    st.lists(st.lists(op, max_size=12), min_size=1, max_size=RULE_PARTITIONS),
    st.floats(0.0, 1.0),
    st.integers(0, 2**16),
)


def _of_example(e: int, records: list[tuple[str, int, Any]]) -> list[tuple[str, int, Any]]:
    return [(f"t{e}", p, x) for _, p, x in records]


def _rule_mismatches(row: Any, history: list[Sync | str | None], c: int | None) -> list[str]:
    """How a translated row differs from what ``core.translation.rule`` says for offset ``c`` on ``history``."""
    kept = [x for x in history if x != "malformed"]
    start = current_mapping_start(kept)  # type: ignore[arg-type]
    syncs = normalize_syncs(kept)  # type: ignore[arg-type]
    rule = None if c is None else conservative(syncs, c)
    used = None if c is None else newest_sync_at_or_below(syncs, c)
    expected = {
        "translated_offset": None if rule is None else rule.offset,
        "sync": (None, None) if used is None else (syncs[used].upstream, syncs[used].downstream),
        "sync_count": sum(1 for x in kept[start:] if x is not None),
        "range": (syncs[0].upstream, syncs[-1].upstream) if syncs else (None, None),
    }
    got = {
        "translated_offset": row.translated_offset,
        "sync": (row.sync_upstream, row.sync_downstream),
        "sync_count": row.sync_count,
        "range": (row.oldest_sync_upstream, row.latest_sync_upstream),
    }
    return [f"{k}: {got[k]} != {expected[k]}" for k in expected if got[k] != expected[k]]


def test_property_translate_computes_the_one_rule(spark: Any) -> None:
    """``inspect``'s Spark translation equals ``core.translation.rule`` (what every planner runs) on every history:
    out-of-order writes, upstream and target rewinds, duplicates, compaction holes, tombstones, malformed
    records and arbitrary syncs, the partitions' records interleaved in the topic as MM2 writes them."""
    examples = drawn(RULE_EXAMPLE)
    histories: dict[tuple[int, int], list[Sync | str | None]] = {}
    records: list[tuple[str, int, Any]] = []
    offset_rows: list[tuple[str, str, int, int | None]] = []
    for e, (partitions, seed) in enumerate(examples):
        mine = {p: _history(ops) for p, (ops, _) in enumerate(partitions)}
        histories.update({(e, p): h for p, h in mine.items()})
        records += _of_example(e, _interleaved(mine, seed))
        offset_rows += [
            (f"g{e}-{p}-{i}", f"t{e}", p, c) for p, (_, cs) in enumerate(partitions) for i, c in enumerate(cs)
        ]
    got = {r.group: r for r in translate_exactly(spark, _group_offsets(spark, offset_rows), _raw(spark, records))}
    wrong = {
        (tuple(histories[(int(t[1:]), p)]), c): diff
        for group, t, p, c in offset_rows
        if (diff := _rule_mismatches(got[group], histories[(int(t[1:]), p)], c))
    }
    assert not wrong, min(wrong.items(), key=lambda kv: len(kv[0][0]))


def test_property_a_later_read_keeps_what_a_full_read_keeps(spark: Any) -> None:
    """A live session that read part of the topic and folds in the rest later keeps exactly the runs a full
    read of the whole topic keeps, or refuses (a tombstone or a contradiction among the new records), and
    then reads the topic in full again. Refusing is per read, so an example whose new records any of its
    partitions refuses is left out of the comparison."""
    examples = drawn(LATER_READ_EXAMPLE)
    first: list[tuple[str, int, Any]] = []
    later: list[tuple[str, int, Any]] = []
    for e, (partitions, split, seed) in enumerate(examples):
        records = _of_example(e, _interleaved({p: _history(ops) for p, ops in enumerate(partitions)}, seed))
        cut = int(split * len(records))
        first, later = first + records[:cut], later + records[cut:]
    numbering, numbers = _numbering(spark, sorted({(t, p) for t, p, _ in first + later}))
    whole, _ = cold_runs(_records(_raw(spark, first + later), numbers))
    kept, _ = cold_runs(_records(_raw(spark, first), numbers))
    new = _records(_shifted(_raw(spark, later), len(first)), numbers)
    facts = sync_runs.partition_facts(sync_runs.sorted_records(new, 1)).collect()
    candidates = kept.unionByName(sync_runs.new_syncs_as_runs(new))
    refused_parts = set(sync_runs.tangled(facts)) | {r[0] for r in sync_runs.disagreeing_runs(candidates).collect()}
    topic_of = {n: tp[0] for tp, n in numbering.parts.items()}
    refused = {topic_of[n] for n in refused_parts}
    folded = _syncs_of(sync_runs.merge_runs(candidates), numbering)
    full = _syncs_of(whole, numbering)
    compared = [tp for tp in numbering.parts if tp[0] not in refused]
    assert len(refused) < len(examples), "every example refused: the comparison checks nothing"
    assert {tp: folded.get(tp) for tp in compared} == {tp: full.get(tp) for tp in compared}


def _shifted(raw: DataFrame, by: int) -> DataFrame:
    """Records read later: their offsets in the topic follow the ``by`` records read before."""
    return raw.selectExpr(
        "cluster_pair", "key", "value", "topic", "partition", f"offset + {by} AS offset", "timestamp", "timestampType"
    )
