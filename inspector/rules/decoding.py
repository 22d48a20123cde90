"""Decoding MM2's offset-sync and checkpoint records (docs/design.md, "Record formats") from a table of the
Kafka source's rows: the one implementation, which Spark runs (``inspector.transforms.decode``, through
``mapInArrow``), and the driver and the planners run in-process over the records they read
(``kafka_records``).

MM2 writes these records with Kafka Connect's Struct serialization: fields back to back with no framing; INT16,
INT32 and INT64 are big-endian and signed; a STRING is an INT16 length then UTF-8 bytes. The decode is
vectorized over the Arrow binary arrays' offsets and data buffers with NumPy: each step reads one field of
every record at once, a string through its length prefix, and no record goes through Python on its own.
UTF-8 is validated by Arrow's cast to string; only a record whose string has a non-ASCII byte is a candidate,
and only candidates of a failing cast are cast again, in halves, down to the records that fail.

Nothing here raises on bad bytes. A record that does not parse keeps its row with ``malformed_reason`` set and
its decoded fields null. A null value with a good key is a tombstone (``is_tombstone``): in a compacted topic it
deletes the key, so it is data, not damage. A null key is malformed: a compacted topic cannot hold one. The
reasons are ``core.kafka.codecs.MALFORMED_REASONS``; when a record has several faults, the one a reader meets
first wins, a string's UTF-8 checked once the field after it is read. ``tests/unit/test_rules_decoding.py``
holds the decode to a plainly written reference decoder of the tests (``tests/reference_codecs.py``), record
for record and reason for reason.

Only pyarrow, numpy and the standard library are imported, so Spark can ship the module to a Python worker
that has pyarrow but not mm2ctl (``inspector.spark.arrow_rules``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

NULL_KEY = "null key"
KEY_TRUNCATED = "key truncated"
KEY_TRAILING = "key has trailing bytes"
VALUE_TRUNCATED = "value truncated"
VALUE_TRAILING = "value has trailing bytes"
NEGATIVE_STRING_LENGTH = "negative string length"
INVALID_UTF8 = "string is not UTF-8"
UNKNOWN_CHECKPOINT_VERSION = "unknown checkpoint version"

#: Every reason a decoder can give, for reports that list zero counts too.
MALFORMED_REASONS = (
    NULL_KEY,
    KEY_TRUNCATED,
    KEY_TRAILING,
    VALUE_TRUNCATED,
    VALUE_TRAILING,
    NEGATIVE_STRING_LENGTH,
    INVALID_UTF8,
    UNKNOWN_CHECKPOINT_VERSION,
)

CHECKPOINT_VERSION = 0

#: Columns of Spark's Kafka source; every other column of the input (e.g. ``cluster_pair``) passes through.
KAFKA_SOURCE_COLUMNS = frozenset({"key", "value", "topic", "partition", "offset", "timestamp", "timestampType"})
HEADERS = "headers"

#: Offset-sync columns after the pass-through ones, in order, with their Arrow types.
OFFSET_SYNC_FIELDS = (
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("upstream_offset", pa.int64()),
    ("downstream_offset", pa.int64()),
    ("is_tombstone", pa.bool_()),
    ("malformed_reason", pa.string()),
)

#: Checkpoint columns after the pass-through ones, in order, with their Arrow types.
CHECKPOINT_FIELDS = (
    ("group", pa.string()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("upstream_offset", pa.int64()),
    ("downstream_offset", pa.int64()),
    ("metadata", pa.string()),
    ("is_tombstone", pa.bool_()),
    ("malformed_reason", pa.string()),
)

#: The record's own coordinates, last: (output name, Kafka source column).
RECORD_COORDINATES = (("record_partition", "partition"), ("record_offset", "offset"), ("record_timestamp", "timestamp"))

#: Rows decoded per step, so a step's temporaries stay small and a string column's offsets fit 32 bits.
CHUNK_ROWS = 65_536

_REASON_ARRAY = pa.array(MALFORMED_REASONS, pa.string())


@dataclass(frozen=True)
class Bytes:
    """One binary column of a batch as NumPy: the data buffer (zero-padded, so a read past a record's end stays
    inside it), and each row's start in it, length (0 when null) and nullness."""

    data: np.ndarray
    start: np.ndarray
    length: np.ndarray
    null: np.ndarray


def column_bytes(column: pa.Array) -> Bytes:
    """The buffers of a binary or large binary array (any other, a column of nulls say, cast to binary first)."""
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        column = column.cast(pa.binary())
    n = len(column)
    width = np.int64 if pa.types.is_large_binary(column.type) else np.int32
    validity, offsets_buffer, data_buffer = column.buffers()
    offsets = np.frombuffer(offsets_buffer, dtype=width)[column.offset : column.offset + n + 1].astype(np.int64)
    raw = np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None else np.zeros(0, np.uint8)
    data = np.concatenate([raw[: offsets[-1]] if n else raw[:0], np.zeros(8, np.uint8)])
    null = np.zeros(n, bool) if validity is None or column.null_count == 0 else np.asarray(column.is_null(), bool)
    return Bytes(data=data, start=offsets[:-1], length=np.where(null, 0, offsets[1:] - offsets[:-1]), null=null)


def read_int(buf: Bytes, pos: np.ndarray, width: int, where: np.ndarray) -> np.ndarray:
    """The signed big-endian integer of ``width`` bytes at each row's ``pos``, as int64; 0 where ``where`` is false
    (there the field need not lie inside the record)."""
    at = np.where(where, buf.start + pos, 0)
    picked = buf.data[at[:, None] + np.arange(width)]
    values = picked.view(f">i{width}").reshape(-1).astype(np.int64)
    return np.where(where, values, 0)


@dataclass(frozen=True)
class Strings:
    """A string field of every row: its bytes gathered into a binary array (empty where not read)."""

    array: pa.Array
    valid_utf8: np.ndarray


def read_string(buf: Bytes, pos: np.ndarray, length: np.ndarray, where: np.ndarray) -> Strings:
    """The ``length`` bytes at each row's ``pos`` where ``where`` is true (the field lies inside the record), and
    whether they are UTF-8."""
    lengths = np.where(where, length, 0)
    ends = np.cumsum(lengths)
    offsets = np.zeros(len(lengths) + 1, np.int64)
    offsets[1:] = ends
    shift = np.repeat(buf.start + np.where(where, pos, 0) - offsets[:-1], lengths)
    picked = buf.data[np.arange(offsets[-1]) + shift]
    array = pa.Array.from_buffers(
        pa.binary(), len(lengths), [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(picked)]
    )
    return Strings(array=array, valid_utf8=utf8_rows(array, picked, offsets))


def utf8_rows(array: pa.Array, data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Whether each row of a binary ``array`` (whose gathered ``data`` and ``offsets`` are given) is UTF-8: ASCII
    rows are, the others go to Arrow's validating cast."""
    valid = np.ones(len(array), bool)
    high = data >= 0x80
    if not high.any():
        return valid
    seen = np.zeros(len(data) + 1, np.int64)
    np.cumsum(high, out=seen[1:])
    candidates = np.flatnonzero(seen[offsets[1:]] > seen[offsets[:-1]])
    valid[candidates] = utf8_valid(array.take(pa.array(candidates)))
    return valid


def utf8_valid(array: pa.Array) -> np.ndarray:
    """Whether each row of a binary ``array`` is UTF-8: one cast when all are; else its halves, each alike."""
    try:
        array.cast(pa.string())
    except pa.ArrowInvalid:
        if len(array) == 1:
            return np.zeros(1, bool)
        half = len(array) // 2
        return np.concatenate([utf8_valid(array.slice(0, half)), utf8_valid(array.slice(half))])
    return np.ones(len(array), bool)


class Reasons:
    """The first fault found in each row, the checks applied in the order that decides which fault a record with
    several reports; a later check sees only rows that passed every earlier one."""

    def __init__(self, n: int) -> None:
        self.code = np.zeros(n, np.int8)

    @property
    def clean(self) -> np.ndarray:
        """Rows with no fault so far."""
        clean: np.ndarray = self.code == 0
        return clean

    def check(self, reason: str, failed: np.ndarray) -> None:
        """Give ``reason`` to the rows that fail (``failed``) among those with no fault yet."""
        self.code = np.where(self.clean & failed, MALFORMED_REASONS.index(reason) + 1, self.code).astype(np.int8)

    def column(self) -> pa.Array:
        """The reasons as strings, null for a row with none."""
        indices = pa.array(self.code.astype(np.int32) - 1, pa.int32(), mask=self.clean)
        return _REASON_ARRAY.take(indices)


def ints(values: np.ndarray, where: np.ndarray, type_: pa.DataType) -> pa.Array:
    """``values`` as an Arrow integer column, null where ``where`` is false."""
    return pa.array(values.astype(type_.to_pandas_dtype()), type_, mask=~where)


def strings(field: Strings, where: np.ndarray) -> pa.Array:
    """A decoded string field as a string column, null where ``where`` is false."""
    offsets, data = field.array.buffers()[1:]
    validity = pa.py_buffer(np.packbits(where, bitorder="little"))
    return pa.Array.from_buffers(pa.string(), len(where), [validity, offsets, data])


# --- offset syncs ----------------------------------------------------------------------------------------------


def offset_sync_columns(key: Bytes, value: Bytes) -> list[pa.Array]:
    """``OFFSET_SYNC_FIELDS`` of a batch. Key: ``topic`` STRING, ``partition`` INT32. Value: ``upstreamOffset``
    INT64, ``offset`` INT64 (16 bytes)."""
    n = len(key.null)
    kl, vl = key.length, value.length
    reasons = Reasons(n)
    reasons.check(NULL_KEY, key.null)
    reasons.check(KEY_TRUNCATED, kl < 2)
    tl = read_int(key, np.zeros(n, np.int64), 2, reasons.clean)
    reasons.check(NEGATIVE_STRING_LENGTH, tl < 0)
    reasons.check(KEY_TRUNCATED, kl < tl + 6)
    topic = read_string(key, np.full(n, 2), tl, reasons.clean)
    reasons.check(INVALID_UTF8, ~topic.valid_utf8)
    reasons.check(KEY_TRAILING, kl > tl + 6)
    reasons.check(VALUE_TRUNCATED, ~value.null & (vl < 16))
    reasons.check(VALUE_TRAILING, ~value.null & (vl > 16))
    good = reasons.clean
    row_ok = good & ~value.null
    return [
        strings(topic, good),
        ints(read_int(key, tl + 2, 4, good), good, pa.int32()),
        ints(read_int(value, np.zeros(n, np.int64), 8, row_ok), row_ok, pa.int64()),
        ints(read_int(value, np.full(n, 8), 8, row_ok), row_ok, pa.int64()),
        pa.array(good & value.null, pa.bool_()),
        reasons.column(),
    ]


def kafka_records(read: Iterable[Any], cluster_pair: str) -> pa.Table:
    """Records read through librdkafka (``core.kafka.records.RawRecord``: ``topic``, ``partition``, ``offset``,
    ``timestamp_ms``, ``timestamp_type``, ``key``, ``value``) as Spark's Kafka source gives them, with
    ``cluster_pair`` to pass through: the record's timestamp in microseconds, UTC, and ``timestampType`` as
    Java's ``TimestampType.id``. What the decoders below read, wherever the records come from."""
    rows = list(read)
    return pa.table(
        {
            "cluster_pair": pa.array([cluster_pair] * len(rows), pa.string()),
            "key": pa.array([r.key for r in rows], pa.binary()),
            "value": pa.array([r.value for r in rows], pa.binary()),
            "topic": pa.array([r.topic for r in rows], pa.string()),
            "partition": pa.array([r.partition for r in rows], pa.int32()),
            "offset": pa.array([r.offset for r in rows], pa.int64()),
            "timestamp": pa.array([r.timestamp_ms * 1000 for r in rows], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
            "timestampType": pa.array([r.timestamp_type for r in rows], pa.int32()),
        }
    )


def decode_offset_syncs_table(raw: pa.Table) -> pa.Table:
    """``mm2-offset-syncs.<alias>.internal`` records (the Kafka source's columns) decoded: the pass-through
    columns, ``OFFSET_SYNC_FIELDS``, then ``RECORD_COORDINATES``."""
    return decode_table(raw, OFFSET_SYNC_FIELDS, offset_sync_columns)


# --- checkpoints -----------------------------------------------------------------------------------------------


def checkpoint_columns(key: Bytes, value: Bytes) -> list[pa.Array]:
    """``CHECKPOINT_FIELDS`` of a batch. Key: ``group`` STRING, ``topic`` STRING (target-side name), ``partition``
    INT32. Value: ``version`` INT16 (only 0 is known), ``upstreamOffset`` INT64, ``offset`` INT64, ``metadata``
    STRING."""
    n = len(key.null)
    kl, vl = key.length, value.length
    reasons = Reasons(n)
    reasons.check(NULL_KEY, key.null)
    reasons.check(KEY_TRUNCATED, kl < 2)
    gl = read_int(key, np.zeros(n, np.int64), 2, reasons.clean)
    reasons.check(NEGATIVE_STRING_LENGTH, gl < 0)
    reasons.check(KEY_TRUNCATED, kl < gl + 4)
    group = read_string(key, np.full(n, 2), gl, reasons.clean)
    reasons.check(INVALID_UTF8, ~group.valid_utf8)
    tl = read_int(key, gl + 2, 2, reasons.clean)
    reasons.check(NEGATIVE_STRING_LENGTH, tl < 0)
    reasons.check(KEY_TRUNCATED, kl < gl + tl + 8)
    topic = read_string(key, gl + 4, tl, reasons.clean)
    reasons.check(INVALID_UTF8, ~topic.valid_utf8)
    reasons.check(KEY_TRAILING, kl > gl + tl + 8)
    partition = read_int(key, gl + tl + 4, 4, reasons.clean)
    present = ~value.null
    reasons.check(VALUE_TRUNCATED, present & (vl < 2))
    version = read_int(value, np.zeros(n, np.int64), 2, reasons.clean & present)
    reasons.check(UNKNOWN_CHECKPOINT_VERSION, present & (version != CHECKPOINT_VERSION))
    reasons.check(VALUE_TRUNCATED, present & (vl < 20))
    ml = read_int(value, np.full(n, 18), 2, reasons.clean & present)
    reasons.check(NEGATIVE_STRING_LENGTH, present & (ml < 0))
    reasons.check(VALUE_TRUNCATED, present & (vl < ml + 20))
    metadata = read_string(value, np.full(n, 20), ml, reasons.clean & present)
    reasons.check(INVALID_UTF8, ~metadata.valid_utf8)
    reasons.check(VALUE_TRAILING, present & (vl > ml + 20))
    good = reasons.clean
    row_ok = good & present
    return [
        strings(group, good),
        strings(topic, good),
        ints(partition, good, pa.int32()),
        ints(read_int(value, np.full(n, 2), 8, row_ok), row_ok, pa.int64()),
        ints(read_int(value, np.full(n, 10), 8, row_ok), row_ok, pa.int64()),
        strings(metadata, row_ok),
        pa.array(good & value.null, pa.bool_()),
        reasons.column(),
    ]


def decode_checkpoints_table(raw: pa.Table) -> pa.Table:
    """``<source>.checkpoints.internal`` records (the Kafka source's columns) decoded: the pass-through columns,
    ``CHECKPOINT_FIELDS``, then ``RECORD_COORDINATES``."""
    return decode_table(raw, CHECKPOINT_FIELDS, checkpoint_columns)


# --- the table around the decoded fields -----------------------------------------------------------------------

Decoder = Callable[[Bytes, Bytes], list[pa.Array]]


def passthrough(schema: pa.Schema) -> list[str]:
    """The input's columns that are not the Kafka source's, in order: they reach the output as they are."""
    return [name for name in schema.names if name not in KAFKA_SOURCE_COLUMNS and name != HEADERS]


def decoded_schema(schema: pa.Schema, fields: tuple[tuple[str, pa.DataType], ...]) -> pa.Schema:
    """The output schema for an input of ``schema``."""
    kept = [schema.field(name) for name in passthrough(schema)]
    decoded = [pa.field(name, type_) for name, type_ in fields]
    coordinates = [schema.field(source).with_name(name) for name, source in RECORD_COORDINATES]
    return pa.schema([*kept, *decoded, *coordinates])


def decode_table(raw: pa.Table, fields: tuple[tuple[str, pa.DataType], ...], decoder: Decoder) -> pa.Table:
    """``decoder``'s fields of ``raw``'s records, between the pass-through columns and the record's coordinates,
    decoded ``CHUNK_ROWS`` rows at a time."""
    schema = decoded_schema(raw.schema, fields)
    kept = passthrough(raw.schema)
    batches = []
    for batch in raw.select([*kept, "key", "value", *(s for _, s in RECORD_COORDINATES)]).to_batches(CHUNK_ROWS):
        decoded = decoder(column_bytes(batch.column("key")), column_bytes(batch.column("value")))
        coordinates = [batch.column(source) for _, source in RECORD_COORDINATES]
        batches.append(
            pa.RecordBatch.from_arrays([*(batch.column(c) for c in kept), *decoded, *coordinates], schema=schema)
        )
    return pa.Table.from_batches(batches, schema=schema)
