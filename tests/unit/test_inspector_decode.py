"""Spark's decoders (``inspector.transforms.decode``: the Arrow decode run through ``mapInArrow``) against the byte
layouts (docs/design.md, "Record formats") and the Python codecs."""

from __future__ import annotations

import datetime as dt
import struct
from types import SimpleNamespace
from typing import Any, TypeVar

import pyarrow as pa
import pytest
from hypothesis import strategies as st
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import to_arrow_schema

from mm2ctl.core.kafka import codecs
from mm2ctl.inspector.schemas import DECODED_CHECKPOINT_SCHEMA, DECODED_OFFSET_SYNC_SCHEMA, KAFKA_RECORD_SCHEMA
from mm2ctl.inspector.spark.compat import frame_from_arrow
from mm2ctl.inspector.transforms import decode, live_checkpoints
from tests import reference_codecs as reference
from tests.property_examples import drawn

pytestmark = pytest.mark.spark

LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
TS = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
Case = TypeVar("Case")


def _records(spark: Any, pairs: list[tuple[bytes | None, bytes | None]]) -> Any:
    """A Kafka-source frame, built through Arrow: a local relation, no Python worker round trip."""
    names = KAFKA_RECORD_SCHEMA.names
    rows = [dict(zip(names, ("a->b", k, v, "internal", 0, i, TS, 0), strict=True)) for i, (k, v) in enumerate(pairs)]
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(KAFKA_RECORD_SCHEMA))
    return frame_from_arrow(spark, table, KAFKA_RECORD_SCHEMA)


def _syncs(spark: Any, pairs: list[tuple[bytes | None, bytes | None]]) -> list[Any]:
    return sorted(decode.decode_offset_syncs(_records(spark, pairs)).collect(), key=lambda r: r.record_offset)


def _checkpoints(spark: Any, pairs: list[tuple[bytes | None, bytes | None]]) -> list[Any]:
    return sorted(decode.decode_checkpoints(_records(spark, pairs)).collect(), key=lambda r: r.record_offset)


def _i16(n: int) -> bytes:
    return struct.pack(">h", n)


# --- offset syncs ---


def test_offset_sync_design_example_bytes(spark: Any) -> None:
    key = bytes.fromhex("00066f72646572730000000" + "3")
    value = bytes.fromhex("00000000000003e8" + "00000000000003e6")
    (row,) = _syncs(spark, [(key, value)])
    assert (row.topic, row.partition, row.upstream_offset, row.downstream_offset) == ("orders", 3, 1000, 998)
    assert row.malformed_reason is None and row.is_tombstone is False
    assert (row.cluster_pair, row.record_partition, row.record_offset) == ("a->b", 0, 0)


def test_offset_sync_schema_matches_declared(spark: Any) -> None:
    df = decode.decode_offset_syncs(_records(spark, []))
    assert [(f.name, f.dataType) for f in df.schema] == [(f.name, f.dataType) for f in DECODED_OFFSET_SYNC_SCHEMA]


SIGNED_EXTREMES = [
    (0, -1, -1),
    (INT_MIN, LONG_MIN, LONG_MAX),
    (INT_MAX, LONG_MAX, LONG_MIN),
    (-1, 0, 2**32),
    (1, 2**31, -(2**31)),
    (-(2**15), 2**63 - 2**32, -(2**63) + 1),
]


def test_offset_sync_signed_extremes(spark: Any) -> None:
    pairs = [codecs.encode_offset_sync(codecs.OffsetSync("t", p, u, d)) for p, u, d in SIGNED_EXTREMES]
    rows = _syncs(spark, pairs)
    assert [(r.partition, r.upstream_offset, r.downstream_offset) for r in rows] == SIGNED_EXTREMES


def test_offset_sync_non_ascii_and_empty_topic(spark: Any) -> None:
    rows = _syncs(
        spark,
        [
            codecs.encode_offset_sync(codecs.OffsetSync("zamówienia-€-🚀", 7, 1, 2)),
            codecs.encode_offset_sync(codecs.OffsetSync("", 0, 3, 4)),
        ],
    )
    assert [r.topic for r in rows] == ["zamówienia-€-🚀", ""]
    assert all(r.malformed_reason is None for r in rows)


def test_offset_sync_tombstone_is_a_deletion_not_damage(spark: Any) -> None:
    key = codecs.encode_offset_sync_key("orders", 2)
    (row,) = _syncs(spark, [(key, None)])
    assert row.is_tombstone is True and row.malformed_reason is None
    assert (row.topic, row.partition, row.upstream_offset, row.downstream_offset) == ("orders", 2, None, None)


GOOD_SYNC_KEY = codecs.encode_offset_sync_key("orders", 2)
GOOD_SYNC_VALUE = codecs.encode_offset_sync_value(10, 20)


SYNC_MALFORMED = [
    (None, GOOD_SYNC_VALUE, decode.NULL_KEY),
    (None, None, decode.NULL_KEY),
    (b"", GOOD_SYNC_VALUE, decode.KEY_TRUNCATED),
    (b"\x00", GOOD_SYNC_VALUE, decode.KEY_TRUNCATED),
    (_i16(-1) + b"abcd", GOOD_SYNC_VALUE, decode.NEGATIVE_STRING_LENGTH),
    (_i16(10) + b"orders", GOOD_SYNC_VALUE, decode.KEY_TRUNCATED),
    (GOOD_SYNC_KEY[:-1], GOOD_SYNC_VALUE, decode.KEY_TRUNCATED),
    (GOOD_SYNC_KEY + b"\x00", GOOD_SYNC_VALUE, decode.KEY_TRAILING),
    (_i16(2) + b"\xc3\x28" + b"\x00\x00\x00\x01", GOOD_SYNC_VALUE, decode.INVALID_UTF8),
    (_i16(3) + b"\xed\xa0\x80" + b"\x00\x00\x00\x01", GOOD_SYNC_VALUE, decode.INVALID_UTF8),
    (GOOD_SYNC_KEY, b"", decode.VALUE_TRUNCATED),
    (GOOD_SYNC_KEY, GOOD_SYNC_VALUE[:-1], decode.VALUE_TRUNCATED),
    (GOOD_SYNC_KEY, GOOD_SYNC_VALUE + b"\x00", decode.VALUE_TRAILING),
    (GOOD_SYNC_KEY[:-1], None, decode.KEY_TRUNCATED),
]


def test_offset_sync_malformed_shapes(spark: Any) -> None:
    """Every malformed shape in one frame: each row keeps its reason and nothing half-decoded."""
    rows = _syncs(spark, [(k, v) for k, v, _ in SYNC_MALFORMED])
    assert [r.malformed_reason for r in rows] == [reason for _, _, reason in SYNC_MALFORMED]
    for row in rows:
        assert row.is_tombstone is False
        assert (row.topic, row.partition, row.upstream_offset, row.downstream_offset) == (
            None,
            None,
            None,
            None,
        )


# --- checkpoints ---


def test_a_read_of_checkpoints_counts_the_malformed_records_and_names_the_groups_of_the_others(spark: Any) -> None:
    good = [codecs.encode_checkpoint(codecs.Checkpoint(g, "src.t", 0, 5, 5, "")) for g in ("g1", "g2", "g1")]
    decoded = decode.decode_checkpoints(_records(spark, [*good, (None, None), (b"", b"")]))
    facts = {r.malformed_reason: (r.records, sorted(r.groups)) for r in live_checkpoints.read_facts(decoded).collect()}
    assert facts[None] == (3, ["g1", "g2"])
    assert sum(n for reason, (n, _) in facts.items() if reason is not None) == 2
    assert all(groups == [] for reason, (_, groups) in facts.items() if reason is not None)


def test_checkpoint_roundtrip_and_schema(spark: Any) -> None:
    cp = codecs.Checkpoint("grp-ü", "src.orders", 5, LONG_MAX, -1, 'meta,with "commas"')
    df = decode.decode_checkpoints(_records(spark, [codecs.encode_checkpoint(cp)]))
    assert [(f.name, f.dataType) for f in df.schema] == [(f.name, f.dataType) for f in DECODED_CHECKPOINT_SCHEMA]
    (row,) = df.collect()
    assert (
        row.group,
        row.topic,
        row.partition,
        row.upstream_offset,
        row.downstream_offset,
        row.metadata,
    ) == (
        cp.group,
        cp.topic,
        cp.partition,
        cp.upstream_offset,
        cp.downstream_offset,
        cp.metadata,
    )
    assert row.malformed_reason is None and row.is_tombstone is False


def test_checkpoint_tombstone(spark: Any) -> None:
    (row,) = _checkpoints(spark, [(codecs.encode_checkpoint_key("g", "src.t", 0), None)])
    assert row.is_tombstone is True and row.malformed_reason is None
    assert (row.group, row.topic, row.partition, row.upstream_offset) == ("g", "src.t", 0, None)


GOOD_CP_KEY = codecs.encode_checkpoint_key("g", "src.t", 1)
GOOD_CP_VALUE = codecs.encode_checkpoint_value(5, 6, "m")


CHECKPOINT_MALFORMED = [
    (None, GOOD_CP_VALUE, decode.NULL_KEY),
    (b"\x00", GOOD_CP_VALUE, decode.KEY_TRUNCATED),
    (_i16(-2) + b"gg", GOOD_CP_VALUE, decode.NEGATIVE_STRING_LENGTH),
    (_i16(1) + b"g" + _i16(-1) + b"\x00\x00\x00\x00", GOOD_CP_VALUE, decode.NEGATIVE_STRING_LENGTH),
    (_i16(1) + b"g", GOOD_CP_VALUE, decode.KEY_TRUNCATED),
    (GOOD_CP_KEY[:-2], GOOD_CP_VALUE, decode.KEY_TRUNCATED),
    (GOOD_CP_KEY + b"\xff", GOOD_CP_VALUE, decode.KEY_TRAILING),
    (_i16(1) + b"\xff" + _i16(1) + b"t" + b"\x00" * 4, GOOD_CP_VALUE, decode.INVALID_UTF8),
    (_i16(1) + b"g" + _i16(1) + b"\x80" + b"\x00" * 4, GOOD_CP_VALUE, decode.INVALID_UTF8),
    (GOOD_CP_KEY, b"\x00", decode.VALUE_TRUNCATED),
    (GOOD_CP_KEY, _i16(1) + GOOD_CP_VALUE[2:], decode.UNKNOWN_CHECKPOINT_VERSION),
    (GOOD_CP_KEY, _i16(-1) + GOOD_CP_VALUE[2:], decode.UNKNOWN_CHECKPOINT_VERSION),
    (GOOD_CP_KEY, GOOD_CP_VALUE[:19], decode.VALUE_TRUNCATED),
    (GOOD_CP_KEY, GOOD_CP_VALUE[:18] + _i16(-1), decode.NEGATIVE_STRING_LENGTH),
    (GOOD_CP_KEY, GOOD_CP_VALUE[:18] + _i16(5) + b"ab", decode.VALUE_TRUNCATED),
    (GOOD_CP_KEY, GOOD_CP_VALUE[:18] + _i16(1) + b"\xfe", decode.INVALID_UTF8),
    (GOOD_CP_KEY, GOOD_CP_VALUE + b"\x00", decode.VALUE_TRAILING),
]


def test_checkpoint_malformed_shapes(spark: Any) -> None:
    rows = _checkpoints(spark, [(k, v) for k, v, _ in CHECKPOINT_MALFORMED])
    assert [r.malformed_reason for r in rows] == [reason for _, _, reason in CHECKPOINT_MALFORMED]
    for row in rows:
        assert (row.group, row.upstream_offset, row.metadata, row.is_tombstone) == (None, None, None, False)


# --- property tests against the Python reference codecs ---

names = st.text(max_size=12)  # any code points incl. non-ASCII; surrogates excluded by st.text's default
int32s = st.integers(INT_MIN, INT_MAX)
int64s = st.one_of(st.integers(LONG_MIN, LONG_MAX), st.sampled_from([LONG_MIN, LONG_MAX, -1, 0, 1]))


def _mutate(data: st.DataObject, raw: bytes) -> bytes | None:
    kind = data.draw(st.sampled_from(["keep", "truncate", "append", "flip", "random", "null"]))
    if kind == "keep":
        return raw
    if kind == "null":
        return None
    if kind == "truncate":
        return raw[: data.draw(st.integers(0, max(len(raw) - 1, 0)))]
    if kind == "append":
        return raw + data.draw(st.binary(min_size=1, max_size=4))
    if kind == "flip" and raw:
        i = data.draw(st.integers(0, len(raw) - 1))
        return raw[:i] + bytes([data.draw(st.integers(0, 255))]) + raw[i + 1 :]
    return data.draw(st.binary(max_size=24))


def _reference(decoder: Any, key: bytes | None, value: bytes | None, dummy_value: bytes) -> tuple[str, Any]:
    """What the Python codec says: ('ok', record), ('tombstone', record-with-dummy-value) or ('bad', None)."""
    try:
        if value is None:
            return "tombstone", decoder(key, dummy_value)
        return "ok", decoder(key, value)
    except codecs.RecordDecodeError:
        return "bad", None


def _flat(examples: list[list[Case]]) -> list[Case]:
    return [case for example in examples for case in example]


def test_property_offset_sync_roundtrip(spark: Any) -> None:
    syncs = _flat(drawn(st.lists(st.tuples(names, int32s, int64s, int64s), min_size=1, max_size=40)))
    rows = _syncs(spark, [codecs.encode_offset_sync(codecs.OffsetSync(*s)) for s in syncs])
    assert [(r.topic, r.partition, r.upstream_offset, r.downstream_offset) for r in rows] == syncs
    assert all(r.malformed_reason is None for r in rows)


@st.composite
def mutated_syncs(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """Up to 40 offset syncs' records, each key and value kept, truncated, extended, flipped, replaced or null."""
    data = SimpleNamespace(draw=draw)
    cases = []
    for _ in range(draw(st.integers(1, 40))):
        sync = codecs.OffsetSync(draw(names), draw(int32s), draw(int64s), draw(int64s))
        key, value = codecs.encode_offset_sync(sync)
        cases.append((_mutate(data, key), _mutate(data, value)))  # type: ignore[arg-type]
    return cases


@st.composite
def mutated_checkpoints(draw: st.DrawFn) -> list[tuple[bytes | None, bytes | None]]:
    """Up to 40 checkpoints' records, mutated as ``mutated_syncs``'."""
    data = SimpleNamespace(draw=draw)
    cases = []
    for _ in range(draw(st.integers(1, 40))):
        cp = codecs.Checkpoint(draw(names), draw(names), draw(int32s), draw(int64s), draw(int64s), draw(names))
        key, value = codecs.encode_checkpoint(cp)
        cases.append((_mutate(data, key), _mutate(data, value)))  # type: ignore[arg-type]
    return cases


def test_property_offset_sync_mutations_match_reference(spark: Any) -> None:
    cases = _flat(drawn(mutated_syncs()))
    rows = _syncs(spark, cases)
    for (key, value), row in zip(cases, rows, strict=True):
        verdict, ref = _reference(reference.decode_offset_sync, key, value, GOOD_SYNC_VALUE)
        assert (row.malformed_reason is None) == (verdict != "bad"), (key, value, row)
        assert row.is_tombstone == (verdict == "tombstone")
        if verdict == "ok":
            assert (row.topic, row.partition, row.upstream_offset, row.downstream_offset) == (
                ref.topic,
                ref.partition,
                ref.upstream_offset,
                ref.downstream_offset,
            )
        elif verdict == "tombstone":
            assert (row.topic, row.partition) == (ref.topic, ref.partition)


def test_property_checkpoint_mutations_match_reference(spark: Any) -> None:
    cases = _flat(drawn(mutated_checkpoints()))
    rows = _checkpoints(spark, cases)
    for (key, value), row in zip(cases, rows, strict=True):
        verdict, ref = _reference(reference.decode_checkpoint, key, value, GOOD_CP_VALUE)
        assert (row.malformed_reason is None) == (verdict != "bad"), (key, value, row)
        assert row.is_tombstone == (verdict == "tombstone")
        if verdict == "ok":
            got = (row.group, row.topic, row.partition, row.upstream_offset, row.downstream_offset, row.metadata)
            assert got == (
                ref.group,
                ref.topic,
                ref.partition,
                ref.upstream_offset,
                ref.downstream_offset,
                ref.metadata,
            )
        elif verdict == "tombstone":
            assert (row.group, row.topic, row.partition) == (ref.group, ref.topic, ref.partition)


# --- offset syncs matched by their raw key (decode_offset_syncs(..., known=...)) ---


def _known(spark: Any, keys: list[tuple[str, int]]) -> Any:
    rows = [("a->b", t, p, i + 1) for i, (t, p) in enumerate(keys)]
    return spark.createDataFrame(rows, "cluster_pair string, topic string, partition int, _part int")


def test_property_offset_sync_key_is_the_codecs_bytes(spark: Any) -> None:
    keys = _flat(drawn(st.lists(st.tuples(names, int32s), min_size=1, max_size=20)))
    frame = _known(spark, keys).select(decode.offset_sync_key(F.col("topic"), F.col("partition")).alias("k"))
    assert [bytes(r.k) for r in frame.collect()] == [codecs.encode_offset_sync_key(t, p) for t, p in keys]


@st.composite
def syncs_some_known(draw: st.DrawFn) -> tuple[list[tuple[bytes | None, bytes | None]], list[tuple[str, int]]]:
    """Up to 30 offset syncs' records (keys kept or mutated, values mutated) and the keys of some of them."""
    data = SimpleNamespace(draw=draw)
    cases, keys = [], []
    for _ in range(draw(st.integers(1, 30))):
        sync = codecs.OffsetSync(draw(names), draw(int32s), draw(int64s), draw(int64s))
        key, value = codecs.encode_offset_sync(sync)
        if draw(st.booleans()):
            keys.append((sync.topic, sync.partition))
        mutate_key = draw(st.booleans())
        cases.append((_mutate(data, key) if mutate_key else key, _mutate(data, value)))  # type: ignore[arg-type]
    return cases, keys


def test_property_offset_sync_known_keys_decode_the_same(spark: Any) -> None:
    """Matching by raw key is a shortcut only: every column equals the full decode, malformed records too."""
    examples = drawn(syncs_some_known())
    cases = _flat([c for c, _ in examples])
    keys = _flat([k for _, k in examples])
    records = _records(spark, cases)
    known = _known(spark, sorted(set(keys)))
    full = sorted(decode.decode_offset_syncs(records).collect(), key=lambda r: r.record_offset)
    fast_frame = decode.decode_offset_syncs(records, known=known)
    assert fast_frame.columns == ["cluster_pair", "_part", *DECODED_OFFSET_SYNC_SCHEMA.names[1:]]
    fast = sorted(fast_frame.collect(), key=lambda r: r.record_offset)
    assert [r.asDict() | {"_part": None} for r in fast] == [r.asDict() | {"_part": None} for r in full]
    encoded = {codecs.encode_offset_sync_key(t, p) for t, p in keys}
    for (key, _value), row in zip(cases, fast, strict=True):
        assert (row._part is not None) == (key in encoded)


def test_offset_sync_known_key_with_malformed_values(spark: Any) -> None:
    key = codecs.encode_offset_sync_key("orders", 3)
    records = _records(spark, [(key, b"\x00" * 15), (key, b"\x00" * 17), (key, None), (key, GOOD_SYNC_VALUE)])
    decoded = decode.decode_offset_syncs(records, known=_known(spark, [("orders", 3)]))
    rows = sorted(decoded.collect(), key=lambda r: r.record_offset)
    assert [r.malformed_reason for r in rows] == [decode.VALUE_TRUNCATED, decode.VALUE_TRAILING, None, None]
    assert [r.is_tombstone for r in rows] == [False, False, True, False]
    assert [(r.topic, r.partition, r._part) for r in rows] == [(None, None, 1)] * 2 + [("orders", 3, 1)] * 2
    assert (rows[3].upstream_offset, rows[3].downstream_offset) == (10, 20)
    assert rows[0].upstream_offset is None and rows[2].upstream_offset is None
