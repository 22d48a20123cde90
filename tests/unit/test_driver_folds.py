"""A live session's driver folds a cycle's new records as Spark folds them: the offset syncs into the runs
(``inspector.rules.sync_fold``), the checkpoints into the live checkpoints (``inspector.rules.checkpoint_fold``)."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import strategies as st

from mm2ctl.core.kafka import codecs
from mm2ctl.core.translation.rule import Sync
from mm2ctl.inspector import schemas
from mm2ctl.inspector.kept.pair_topics import Numbering
from mm2ctl.inspector.rules import checkpoint_fold, decoding, sync_fold
from mm2ctl.inspector.transforms import decode, live_checkpoints, sync_runs
from tests.property_examples import drawn
from tests.unit.test_inspector_syncs import (
    LATER_READ_EXAMPLE,
    PAIR,
    T0,
    _history,
    _interleaved,
    _numbering,
    _of_example,
    _raw,
    _records,
    cold_runs,
)

pytestmark = pytest.mark.spark


def _raw_table(records: list[tuple[str, int, Any]], first_offset: int) -> pa.Table:
    """``_raw``'s records as the driver reads them (``schemas.KAFKA_RECORD_SCHEMA``), offsets from ``first_offset``."""
    rows = []
    for i, (topic, partition, x) in enumerate(records):
        key = codecs.encode_offset_sync_key(topic, partition)
        offset = first_offset + i
        if x == "malformed":
            rows.append({"key": key[:3], "value": None, "offset": offset})
            continue
        value = None if x is None else codecs.encode_offset_sync_value(x.upstream, x.downstream)
        rows.append({"key": key, "value": value, "offset": offset})
    return pa.Table.from_pylist(
        [
            {**r, "cluster_pair": PAIR, "topic": "syncs", "partition": 0, "timestamp": T0, "timestampType": 0}
            for r in rows
        ],
        schema=schemas.arrow_schema(schemas.KAFKA_RECORD_SCHEMA),
    )


def _runs_by_part(table: pa.Table) -> dict[int, list[tuple[int, int, int, int]]]:
    found: dict[int, list[tuple[int, int, int, int]]] = {}
    for r in table.to_pylist():
        found.setdefault(r["_part"], []).append((r["_u0"], r["_d0"], r["_n"], r["_records"]))
    return {p: sorted(rs) for p, rs in found.items()}


def test_property_the_driver_folds_a_later_read_as_spark_does(spark: Any) -> None:
    """For each drawn example (partitions with histories of every kind, read in two parts): the driver's fold of
    the second part into the runs of the first refuses exactly when Spark's refuses a partition of the example,
    and otherwise keeps Spark's runs, newest records and malformed counts."""
    examples = drawn(LATER_READ_EXAMPLE)
    parts: list[tuple[list[Any], list[Any]]] = []
    first: list[tuple[str, int, Any]] = []
    later: list[tuple[str, int, Any]] = []
    for e, (partitions, split, seed) in enumerate(examples):
        records = _of_example(e, _interleaved({p: _history(ops) for p, ops in enumerate(partitions)}, seed))
        cut = int(split * len(records))
        parts.append((records[:cut], records[cut:]))
        first, later = first + records[:cut], later + records[cut:]
    numbering, numbers = _numbering(spark, sorted({(t, p) for t, p, _ in first + later}))
    kept_frame, _ = cold_runs(_records(_raw(spark, first), numbers))
    kept = pa.Table.from_pylist([r.asDict() for r in kept_frame.collect()], schema=sync_fold.RUNS_SCHEMA)
    new = _records(_raw(spark, later), numbers)
    facts = sync_runs.partition_facts(sync_runs.sorted_records(new, 1)).collect()
    candidates = kept_frame.unionByName(sync_runs.new_syncs_as_runs(new))
    refused_parts = set(sync_runs.tangled(facts)) | {r[0] for r in sync_runs.disagreeing_runs(candidates).collect()}
    spark_runs = _runs_by_part(pa.Table.from_pylist([r.asDict() for r in sync_runs.merge_runs(candidates).collect()]))
    topic_of = {n: tp[0] for tp, n in numbering.parts.items()}
    numbers_table = numbering.table(PAIR)
    checked = refusals = 0
    for e, (_, second) in enumerate(parts):
        mine = {n for n, t in topic_of.items() if t == f"t{e}"}
        found, malformed = sync_fold.records_of(
            decoding.decode_offset_syncs_table(_raw_table(second, 0)), numbers_table
        )
        folded = sync_fold.fold(kept, found, malformed)
        assert sum(1 for _, _, x in second if x == "malformed") == sum(malformed.values())
        if mine & refused_parts:
            assert folded.runs is None and folded.reason in (sync_fold.TANGLED, sync_fold.CONTRADICTS), e
            refusals += 1
            continue
        assert folded.runs is not None, (e, folded.reason)
        driver_runs = _runs_by_part(folded.runs)
        assert {p: driver_runs.get(p) for p in mine} == {p: spark_runs.get(p) for p in mine}, e
        checked += 1
    assert checked and refusals, (checked, refusals)


def _checkpoint_raw(
    records: list[tuple[str, str, int, tuple[int, int] | None]], first_offset: int, pair: str = PAIR
) -> pa.Table:
    rows = []
    for i, (group, topic, partition, offsets) in enumerate(records):
        key = codecs.encode_checkpoint_key(group, topic, partition)
        value = None if offsets is None else codecs.encode_checkpoint_value(offsets[0], offsets[1], "")
        rows.append(
            {
                "cluster_pair": pair,
                "key": key,
                "value": value,
                "topic": "cps",
                "partition": 0,
                "offset": first_offset + i,
                "timestamp": T0 + dt.timedelta(seconds=first_offset + i),
                "timestampType": 0,
            }
        )
    return pa.Table.from_pylist(rows, schema=schemas.arrow_schema(schemas.KAFKA_RECORD_SCHEMA))


CHECKPOINT = st.tuples(
    st.sampled_from(["g1", "g2", "g3"]),
    st.sampled_from(["a.t", "b.t"]),
    st.integers(0, 2),
    st.one_of(st.none(), st.tuples(st.integers(0, 99), st.integers(0, 99))),
)
CHECKPOINTS_EXAMPLE = st.tuples(st.lists(CHECKPOINT, max_size=30), st.lists(CHECKPOINT, max_size=10))


def _live(frame: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r) for r in frame.select(*schemas.CHECKPOINTS_SCHEMA.names).collect())


def test_property_the_driver_folds_checkpoints_as_spark_does(spark: Any) -> None:
    """The driver's fold of later checkpoint records (tombstones included) into the live checkpoints equals
    Spark's ``merged_checkpoints`` (every example in one Spark pass, an example per pair) and compaction's rule,
    and names the groups of the records it read."""
    examples = drawn(CHECKPOINTS_EXAMPLE)
    befores = [_checkpoint_raw(before, 0, f"p{e}") for e, (before, _) in enumerate(examples)]
    afters = [_checkpoint_raw(after, len(before), f"p{e}") for e, (before, after) in enumerate(examples)]
    kept = live_checkpoints.live_checkpoints(
        decode.decode_checkpoints(spark.createDataFrame(pa.concat_tables(befores).combine_chunks()))
    )
    new = decode.decode_checkpoints(spark.createDataFrame(pa.concat_tables(afters).combine_chunks()))
    merged: dict[str, list[tuple[Any, ...]]] = {}
    for row in _live(live_checkpoints.merged_checkpoints(kept, new, sum(a.num_rows for a in afters))):
        merged.setdefault(row[0], []).append(row)
    for e, (before, after) in enumerate(examples):
        start = checkpoint_fold.fold_checkpoints(_empty_checkpoints(), decoding.decode_checkpoints_table(befores[e]))
        folded = checkpoint_fold.fold_checkpoints(start.live, decoding.decode_checkpoints_table(afters[e]))
        got = sorted(tuple(_naive(v) for v in r.values()) for r in folded.live.to_pylist())
        assert got == merged.get(f"p{e}", []), e
        assert folded.groups == {g for g, _, _, _ in after}
        offsets = {(r["group"], r["topic"], r["partition"]): (r["upstream_offset"], r["downstream_offset"])
                   for r in folded.live.to_pylist()}  # fmt: skip
        assert offsets == _newest(before + after)


def _naive(value: Any) -> Any:
    """A timestamp as Spark's ``collect`` gives it in the tests' session (UTC, no zone)."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def _empty_checkpoints() -> pa.Table:
    return schemas.arrow_schema(schemas.CHECKPOINTS_SCHEMA).empty_table()


def _newest(records: list[tuple[str, str, int, tuple[int, int] | None]]) -> dict[Any, Any]:
    """Compaction's rule in plain Python: the newest record of each key, a tombstone deleting it."""
    live: dict[Any, Any] = {}
    for group, topic, partition, offsets in records:
        if offsets is None:
            live.pop((group, topic, partition), None)
        else:
            live[(group, topic, partition)] = offsets
    return live


def test_a_malformed_checkpoint_is_counted_and_passed_over() -> None:
    raw = _checkpoint_raw([("g1", "a.t", 0, (5, 6))], 0)
    bad = raw.set_column(raw.schema.get_field_index("key"), "key", pa.array([b"\x00"], pa.binary()))
    folded = checkpoint_fold.fold_checkpoints(_empty_checkpoints(), decoding.decode_checkpoints_table(bad))
    assert folded.live.num_rows == 0 and folded.groups == set()
    assert folded.malformed == Counter({decode.KEY_TRUNCATED: 1})


def test_numbering_covers_the_records_the_fold_keeps() -> None:
    numbering = Numbering.of([("t", 0)])
    raw = _raw_table([("t", 0, Sync(5, 7)), ("u", 0, Sync(1, 1))], 0)
    found, malformed = sync_fold.records_of(decoding.decode_offset_syncs_table(raw), numbering.table(PAIR))
    assert list(found) == [1] and [r.upstream for r in found[1]] == [5] and not malformed
