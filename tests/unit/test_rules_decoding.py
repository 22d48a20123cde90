"""The Arrow decode of MM2's records (``inspector.rules.decoding``) against the byte layouts, the tests' reference
decoder (``tests.reference_codecs``, record for record, with the reason) and Spark's decode
(``inspector.transforms.decode``, the same function run through ``mapInArrow``)."""

from __future__ import annotations

import datetime as dt
import struct
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema

from mm2ctl.core.kafka import codecs
from mm2ctl.inspector.rules import decoding
from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA
from mm2ctl.inspector.spark.compat import frame_from_arrow, to_arrow
from mm2ctl.inspector.transforms import decode
from tests import reference_codecs as reference
from tests.property_examples import drawn
from tests.unit.test_inspector_decode import CHECKPOINT_MALFORMED, SIGNED_EXTREMES, SYNC_MALFORMED

Pair = tuple[bytes | None, bytes | None]
TS = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
EXAMPLES = 200
BINARY = pa.binary()


def _table(pairs: list[Pair], *, key_type: pa.DataType = BINARY) -> pa.Table:
    """A Kafka-source table of ``pairs``, with ``cluster_pair`` to pass through."""
    names = KAFKA_RECORD_SCHEMA.names
    rows = [dict(zip(names, ("a->b", k, v, "internal", 0, i, TS, 0), strict=True)) for i, (k, v) in enumerate(pairs)]
    table = pa.Table.from_pylist(rows, schema=to_arrow_schema(KAFKA_RECORD_SCHEMA))
    if key_type != BINARY:
        table = table.set_column(1, "key", table.column("key").cast(key_type))
        table = table.set_column(2, "value", table.column("value").cast(key_type))
    return table


def _syncs(pairs: list[Pair]) -> list[dict[str, Any]]:
    return decoding.decode_offset_syncs_table(_table(pairs)).to_pylist()


def _checkpoints(pairs: list[Pair]) -> list[dict[str, Any]]:
    return decoding.decode_checkpoints_table(_table(pairs)).to_pylist()


def _i16(n: int) -> bytes:
    return struct.pack(">h", n)


def test_the_reasons_are_the_codecs_and_the_spark_decodes() -> None:
    assert decoding.MALFORMED_REASONS == codecs.MALFORMED_REASONS == decode.MALFORMED_REASONS
    assert decoding.CHECKPOINT_VERSION == codecs.CHECKPOINT_VERSION


def test_offset_sync_design_example_bytes() -> None:
    key = bytes.fromhex("00066f726465727300000003")
    value = bytes.fromhex("00000000000003e8" + "00000000000003e6")
    (row,) = _syncs([(key, value)])
    assert row == {
        "cluster_pair": "a->b",
        "topic": "orders",
        "partition": 3,
        "upstream_offset": 1000,
        "downstream_offset": 998,
        "is_tombstone": False,
        "malformed_reason": None,
        "record_partition": 0,
        "record_offset": 0,
        "record_timestamp": TS,
    }


def test_offset_sync_signed_extremes_and_non_ascii_topics() -> None:
    pairs = [codecs.encode_offset_sync(codecs.OffsetSync("zamówienia-€-🚀", p, u, d)) for p, u, d in SIGNED_EXTREMES]
    rows = _syncs(pairs)
    assert [(r["partition"], r["upstream_offset"], r["downstream_offset"]) for r in rows] == SIGNED_EXTREMES
    assert {r["topic"] for r in rows} == {"zamówienia-€-🚀"}


def test_checkpoint_signed_extremes_and_metadata() -> None:
    cps = [codecs.Checkpoint("grp-ü", "", p, u, d, 'meta,"x"') for p, u, d in SIGNED_EXTREMES]
    rows = _checkpoints([codecs.encode_checkpoint(cp) for cp in cps])
    got = [
        (r["group"], r["topic"], r["partition"], r["upstream_offset"], r["downstream_offset"], r["metadata"])
        for r in rows
    ]
    assert got == [
        (cp.group, cp.topic, cp.partition, cp.upstream_offset, cp.downstream_offset, cp.metadata) for cp in cps
    ]


def test_tombstones_keep_their_key_and_no_offsets() -> None:
    (sync,) = _syncs([(codecs.encode_offset_sync_key("orders", 2), None)])
    (cp,) = _checkpoints([(codecs.encode_checkpoint_key("g", "src.t", 0), None)])
    assert (sync["topic"], sync["partition"], sync["upstream_offset"], sync["is_tombstone"]) == (
        "orders",
        2,
        None,
        True,
    )
    assert (cp["group"], cp["topic"], cp["partition"], cp["metadata"], cp["is_tombstone"]) == (
        "g",
        "src.t",
        0,
        None,
        True,
    )
    assert sync["malformed_reason"] is None and cp["malformed_reason"] is None


def _reason(decoder: Callable[..., Any], *args: bytes | None) -> str | None:
    try:
        decoder(*args)
    except codecs.RecordDecodeError as error:
        return error.reason
    return None


@pytest.mark.parametrize(("key", "value", "reason"), SYNC_MALFORMED)
def test_offset_sync_malformed_shapes(key: bytes | None, value: bytes | None, reason: str) -> None:
    (row,) = _syncs([(key, value)])
    assert row["malformed_reason"] == reason
    assert (row["topic"], row["partition"], row["upstream_offset"], row["is_tombstone"]) == (None, None, None, False)
    by_codecs = (
        _reason(reference.decode_offset_sync_key, key)
        if value is None
        else _reason(reference.decode_offset_sync, key, value)
    )
    assert by_codecs == reason


@pytest.mark.parametrize(("key", "value", "reason"), CHECKPOINT_MALFORMED)
def test_checkpoint_malformed_shapes(key: bytes | None, value: bytes | None, reason: str) -> None:
    (row,) = _checkpoints([(key, value)])
    assert row["malformed_reason"] == reason
    assert (row["group"], row["upstream_offset"], row["metadata"], row["is_tombstone"]) == (None, None, None, False)
    assert _reason(reference.decode_checkpoint, key, value) == reason


def test_a_string_is_checked_for_utf8_once_the_field_after_it_is_read() -> None:
    """A record with two faults reports the one the codecs meet first, in the order the Spark decode kept."""
    bad_topic_short_partition = _i16(2) + b"\xc3\x28" + b"\x00\x00"
    bad_group_no_topic_length = _i16(1) + b"\xff"
    cases = [
        (reference.decode_offset_sync, _syncs, bad_topic_short_partition, codecs.encode_offset_sync_value(1, 1)),
        (
            reference.decode_checkpoint,
            _checkpoints,
            bad_group_no_topic_length,
            codecs.encode_checkpoint_value(1, 1),
        ),
    ]
    for decoder, table_decode, key, value in cases:
        (row,) = table_decode([(key, value)])
        assert row["malformed_reason"] == _reason(decoder, key, value) == decoding.KEY_TRUNCATED


def test_the_kafka_source_columns_give_way_to_the_decoded_ones_and_the_others_pass_through() -> None:
    table = _table([codecs.encode_offset_sync(codecs.OffsetSync("t", 1, 2, 3))])
    table = table.append_column("headers", pa.array([None], pa.null())).append_column(
        "_part", pa.array([7], pa.int32())
    )
    out = decoding.decode_offset_syncs_table(table)
    assert out.schema.names == [
        "cluster_pair",
        "_part",
        *(n for n, _ in decoding.OFFSET_SYNC_FIELDS),
        *(n for n, _ in decoding.RECORD_COORDINATES),
    ]
    assert out.schema.field("record_timestamp").type == pa.timestamp("us", "UTC")
    assert out.column("_part").to_pylist() == [7]


def test_an_empty_table_gives_an_empty_table_of_the_decoded_schema() -> None:
    syncs = decoding.decode_offset_syncs_table(_table([]))
    checkpoints = decoding.decode_checkpoints_table(_table([]))
    assert syncs.num_rows == checkpoints.num_rows == 0
    assert syncs.schema == decoding.decoded_schema(_table([]).schema, decoding.OFFSET_SYNC_FIELDS)
    assert checkpoints.schema.names[1:4] == ["group", "topic", "partition"]


def test_a_column_of_nulls_is_read_as_null_keys_and_tombstones() -> None:
    table = pa.table(
        {"key": pa.nulls(2), "value": pa.nulls(2), "partition": pa.array([0, 0], pa.int32())}
    ).append_column("offset", pa.array([0, 1], pa.int64()))
    table = table.append_column("timestamp", pa.array([TS, TS], pa.timestamp("us", "UTC")))
    rows = decoding.decode_offset_syncs_table(table).to_pylist()
    assert [(r["malformed_reason"], r["is_tombstone"]) for r in rows] == [(decoding.NULL_KEY, False)] * 2


def _some_checkpoints(n: int) -> list[Pair]:
    pairs: list[Pair] = []
    for i in range(n):
        key, value = codecs.encode_checkpoint(codecs.Checkpoint(f"g{i}", "tö" * (i % 4), i, i, -i, "m" * (i % 3)))
        pairs.append((key if i % 5 else key[:-1], None if i % 7 == 3 else value))
    return pairs


def _without_offsets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**r, "record_offset": None} for r in rows]


def test_chunks_slices_large_binaries_and_chunked_columns_decode_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = _some_checkpoints(40)
    expected = _without_offsets(_checkpoints(pairs))
    monkeypatch.setattr(decoding, "CHUNK_ROWS", 7)
    assert _without_offsets(_checkpoints(pairs)) == expected
    whole = _table([(None, None), *pairs, (b"", b"")])
    assert _without_offsets(decoding.decode_checkpoints_table(whole.slice(1, len(pairs))).to_pylist()) == expected
    large = _table(pairs, key_type=pa.large_binary())
    assert _without_offsets(decoding.decode_checkpoints_table(large).to_pylist()) == expected
    chunked = pa.concat_tables([_table(pairs[:13]), _table(pairs[13:])])
    assert _without_offsets(decoding.decode_checkpoints_table(chunked).to_pylist()) == expected


def test_only_the_records_whose_strings_are_not_utf8_are_malformed() -> None:
    topics = [b"\xc3\xa9t\xc3\xa9" if i % 9 else b"\xc3\x28" for i in range(1000)]
    pairs: list[Pair] = [(_i16(len(t)) + t + b"\x00\x00\x00\x01", b"\x00" * 16) for t in topics]
    rows = _syncs(pairs)
    assert [r["malformed_reason"] for r in rows] == [None if i % 9 else decoding.INVALID_UTF8 for i in range(1000)]
    assert {r["topic"] for r in rows if r["topic"] is not None} == {"été"}


def test_utf8_is_judged_as_python_judges_it() -> None:
    samples = [b"\xed\xa0\x80", b"\xc0\x80", b"\xf4\x90\x80\x80", b"\xef\xbf\xbe", b"\xf0\x9f\x9a\x80", b"\xe2\x82"]
    valid = decoding.utf8_valid(pa.array(samples, pa.binary()))

    def python(raw: bytes) -> bool:
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    assert valid.tolist() == [python(s) for s in samples]


# --- property tests: random valid and corrupted records ---------------------------------------------------------

int16s = st.integers(-(2**15), 2**15 - 1)
int32s = st.integers(-(2**31), 2**31 - 1)
int64s = st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([-(2**63), 2**63 - 1, -1, 0, 1]))


@st.composite
def string_fields(draw: st.DrawFn) -> bytes:
    """A STRING: text or any bytes (often not UTF-8), after its length or a wrong or negative one."""
    payload = draw(st.one_of(st.text(max_size=10).map(lambda s: s.encode("utf-8")), st.binary(max_size=10)))
    length = draw(
        st.one_of(st.just(len(payload)), st.just(len(payload)), int16s, st.sampled_from([-1, len(payload) + 1]))
    )
    return _i16(length) + payload


@st.composite
def mutated(draw: st.DrawFn, raw: bytes) -> bytes | None:
    """``raw`` kept, truncated, extended, with a byte changed, replaced or null."""
    kind = draw(st.sampled_from(["keep", "keep", "truncate", "append", "flip", "random", "null"]))
    if kind == "keep":
        return raw
    if kind == "null":
        return None
    if kind == "truncate":
        return raw[: draw(st.integers(0, max(len(raw) - 1, 0)))]
    if kind == "append":
        return raw + draw(st.binary(min_size=1, max_size=4))
    if kind == "flip" and raw:
        i = draw(st.integers(0, len(raw) - 1))
        return raw[:i] + bytes([draw(st.integers(0, 255))]) + raw[i + 1 :]
    return draw(st.binary(max_size=24))


@st.composite
def sync_records(draw: st.DrawFn) -> list[Pair]:
    """Up to 30 offset-sync records, well-formed or corrupted anywhere."""
    records = []
    for _ in range(draw(st.integers(1, 30))):
        key = draw(string_fields()) + struct.pack(">i", draw(int32s))
        value = struct.pack(">qq", draw(int64s), draw(int64s))
        records.append((draw(mutated(key)), draw(mutated(value))))
    return records


@st.composite
def checkpoint_records(draw: st.DrawFn) -> list[Pair]:
    """Up to 30 checkpoint records, well-formed or corrupted anywhere (an unknown version among them)."""
    records = []
    for _ in range(draw(st.integers(1, 30))):
        key = draw(string_fields()) + draw(string_fields()) + struct.pack(">i", draw(int32s))
        version = draw(st.one_of(st.just(0), st.just(0), int16s))
        value = struct.pack(">hqq", version, draw(int64s), draw(int64s)) + draw(string_fields())
        records.append((draw(mutated(key)), draw(mutated(value))))
    return records


def _expected_sync(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """The row the codecs say a record decodes to."""
    try:
        if value is None:
            topic, partition = reference.decode_offset_sync_key(key)
            return {"topic": topic, "partition": partition, "upstream_offset": None, "downstream_offset": None} | {
                "is_tombstone": True,
                "malformed_reason": None,
            }
        s = reference.decode_offset_sync(key, value)
    except codecs.RecordDecodeError as error:
        assert error.reason in codecs.MALFORMED_REASONS
        return {"topic": None, "partition": None, "upstream_offset": None, "downstream_offset": None} | {
            "is_tombstone": False,
            "malformed_reason": error.reason,
        }
    return {"topic": s.topic, "partition": s.partition, "upstream_offset": s.upstream_offset} | {
        "downstream_offset": s.downstream_offset,
        "is_tombstone": False,
        "malformed_reason": None,
    }


def _expected_checkpoint(key: bytes | None, value: bytes | None) -> dict[str, Any]:
    """The row the codecs say a record decodes to."""
    offsets = {"upstream_offset": None, "downstream_offset": None, "metadata": None}
    try:
        if value is None:
            group, topic, partition = reference.decode_checkpoint_key(key)
            return {"group": group, "topic": topic, "partition": partition, **offsets} | {
                "is_tombstone": True,
                "malformed_reason": None,
            }
        c = reference.decode_checkpoint(key, value)
    except codecs.RecordDecodeError as error:
        assert error.reason in codecs.MALFORMED_REASONS
        return {"group": None, "topic": None, "partition": None, **offsets} | {
            "is_tombstone": False,
            "malformed_reason": error.reason,
        }
    return {"group": c.group, "topic": c.topic, "partition": c.partition, "upstream_offset": c.upstream_offset} | {
        "downstream_offset": c.downstream_offset,
        "metadata": c.metadata,
        "is_tombstone": False,
        "malformed_reason": None,
    }


def _decoded(row: dict[str, Any], names: list[str]) -> dict[str, Any]:
    return {name: row[name] for name in names}


@settings(max_examples=max(EXAMPLES, settings.default.max_examples), deadline=None)
@given(sync_records())
def test_property_offset_syncs_decode_as_the_codecs_do(pairs: list[Pair]) -> None:
    names = [n for n, _ in decoding.OFFSET_SYNC_FIELDS]
    for (key, value), row in zip(pairs, _syncs(pairs), strict=True):
        assert _decoded(row, names) == _expected_sync(key, value), (key, value)


@settings(max_examples=max(EXAMPLES, settings.default.max_examples), deadline=None)
@given(checkpoint_records())
def test_property_checkpoints_decode_as_the_codecs_do(pairs: list[Pair]) -> None:
    names = [n for n, _ in decoding.CHECKPOINT_FIELDS]
    for (key, value), row in zip(pairs, _checkpoints(pairs), strict=True):
        assert _decoded(row, names) == _expected_checkpoint(key, value), (key, value)


def _comparable(table: pa.Table) -> list[dict[str, Any]]:
    """Rows in record order, the timestamp as microseconds (Spark's session time zone aside)."""
    table = table.set_column(
        table.schema.get_field_index("record_timestamp"),
        "record_timestamp",
        table.column("record_timestamp").cast(pa.int64()),
    )
    return sorted(table.to_pylist(), key=lambda r: r["record_offset"])


@pytest.mark.spark
def test_property_spark_decodes_as_the_arrow_functions(spark: Any) -> None:
    """Both topics' drawn records, every example in one table: Spark's decode gives the in-process rows."""
    for strategy, in_process, by_spark in [
        (sync_records(), decoding.decode_offset_syncs_table, decode.decode_offset_syncs),
        (checkpoint_records(), decoding.decode_checkpoints_table, decode.decode_checkpoints),
    ]:
        pairs = [pair for example in drawn(strategy, at_least=EXAMPLES) for pair in example]
        table = _table(pairs)
        frame = by_spark(frame_from_arrow(spark, table, KAFKA_RECORD_SCHEMA))
        assert _comparable(to_arrow(frame)) == _comparable(in_process(table))
