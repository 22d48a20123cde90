"""Byte-exact codec for the share coordinator's records in ``__share_group_state`` (Kafka 4.2+, KIP-932).

The share coordinator keeps each share-partition's state (group, topic id, partition) as a ``ShareSnapshot``
(the whole state) followed by ``ShareUpdate`` records (what one write changed); the state is the last
snapshot with the later updates folded in (``core.kafka.share_state``). Layout, as Kafka 4.2 and 4.3 write it
(their ``ShareSnapshotKey``/``Value`` and ``ShareUpdateKey``/``Value`` message schemas):

- **Key**: INT16 record type (0 snapshot, 1 update), then GroupId (INT16 length + UTF-8), TopicId (16 bytes),
  Partition (INT32). Not a flexible version: no tagged fields.
- **Value**: INT16 version (0), then the flexible-version body:
  - snapshot: SnapshotEpoch INT32, StateEpoch INT32, LeaderEpoch INT32, StartOffset INT64, CreateTimestamp
    INT64, WriteTimestamp INT64, StateBatches;
  - update: SnapshotEpoch INT32, LeaderEpoch INT32, StartOffset INT64 (-1: unchanged), StateBatches;
  - StateBatches is a compact array (unsigned varint length + 1) of FirstOffset INT64, LastOffset INT64,
    DeliveryState INT8 (0 available, 2 acknowledged, 4 archived), DeliveryCount INT16 and the batch's tagged
    fields; the body ends with its tagged fields, where tag 0 is DeliveryCompleteCount INT32 (4.2, KIP-1226;
    -1 when absent).
- A null value (tombstone) ends the state of its key (the share group or its offsets were deleted).

Kafka's own decoder is ``ShareGroupStateMessageFormatter`` (``kafka-console-consumer --formatter``). Decoders
raise ``RecordDecodeError``, so a reader can count a record it does not know and go on.
"""

from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

from mm2ctl.core.kafka.codecs import BytesReader, RecordDecodeError

SNAPSHOT_TYPE = 0
UPDATE_TYPE = 1
#: The value versions Kafka 4.2 and 4.3 write (the delivery complete count came as a tagged field, so 4.2 kept 0).
VALUE_VERSIONS = frozenset({0})
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
_DELIVERY_COMPLETE_TAG = 0

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


@dataclass(frozen=True, slots=True, order=True)
class StateBatch:
    """Offsets ``first_offset``..``last_offset`` (inclusive) in one delivery state, delivered ``delivery_count``
    times."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class ShareStateKey:
    """What a record is about: ``topic_id`` in Kafka's text form (URL-safe base64 of the 16 bytes, unpadded)."""

    group: str
    topic_id: str
    partition: int


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One decoded record: ``snapshot`` (the whole state) or an update; ``None`` fields are absent from the
    record type (a snapshot has a state epoch, an update has none)."""

    key: ShareStateKey
    snapshot: bool
    start_offset: int
    leader_epoch: int
    state_epoch: int | None
    delivery_complete_count: int
    batches: tuple[StateBatch, ...]


class _Reader(BytesReader):
    """``BytesReader`` with the flexible versions' fields: unsigned varints and tagged fields."""

    __slots__ = ()

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            b = self.take(1)[0]
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise RecordDecodeError("unsigned varint longer than 5 bytes")

    def tagged(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self.take(self.uvarint())
        return out


def topic_id_text(raw: bytes) -> str:
    """Kafka's text form of a topic id (``Uuid.toString``): URL-safe base64 of its 16 bytes, unpadded."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def kafka_topic_id(text: str) -> str:
    """A topic id's text in Kafka's form: librdkafka prints the same 16 bytes in standard base64 (``+``, ``/``),
    Kafka in URL-safe base64 (``-``, ``_``), both unpadded."""
    return text.replace("+", "-").replace("/", "_").rstrip("=")


def decode_share_state_key(key: bytes | None) -> tuple[int, ShareStateKey]:
    """The record type (``SNAPSHOT_TYPE`` or ``UPDATE_TYPE``) and the share-partition a record is about."""
    if key is None:
        raise RecordDecodeError("share-state key is null")
    k = _Reader(key)
    record_type = k.i16()
    if record_type not in (SNAPSHOT_TYPE, UPDATE_TYPE):
        raise RecordDecodeError(f"unknown share-state record type {record_type}")
    group, topic_id, partition = k.string(), topic_id_text(k.take(16)), k.i32()
    k.done()
    return record_type, ShareStateKey(group, topic_id, partition)


def _batches(v: _Reader) -> tuple[StateBatch, ...]:
    n = v.uvarint() - 1
    if n < 0:
        raise RecordDecodeError("null state batches")
    out = []
    for _ in range(n):
        out.append(StateBatch(v.i64(), v.i64(), v.i8(), v.i16()))
        v.tagged()
    return tuple(out)


def decode_share_state(key: bytes | None, value: bytes | None) -> ShareStateRecord | None:
    """A record of ``__share_group_state``, or ``None`` for a tombstone (``decode_share_state_key`` says whose)."""
    record_type, k = decode_share_state_key(key)
    if value is None:
        return None
    v = _Reader(value)
    version = v.i16()
    if version not in VALUE_VERSIONS:
        raise RecordDecodeError(f"unknown share-state value version {version}")
    v.i32()  # snapshot epoch
    state_epoch = v.i32() if record_type == SNAPSHOT_TYPE else None
    leader_epoch, start_offset = v.i32(), v.i64()
    if record_type == SNAPSHOT_TYPE:
        v.i64(), v.i64()  # create and write timestamps
    batches = _batches(v)
    tags = v.tagged()
    v.done()
    complete = tags.get(_DELIVERY_COMPLETE_TAG)
    if complete is not None and len(complete) != 4:
        raise RecordDecodeError(f"delivery complete count of {len(complete)} bytes")
    count = -1 if complete is None else int(_I32.unpack(complete)[0])
    return ShareStateRecord(k, record_type == SNAPSHOT_TYPE, start_offset, leader_epoch, state_epoch, count, batches)


# --- encoders: the lab and the tests write records as the share coordinator does -----------------------------


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def encode_share_state_key(snapshot: bool, key: ShareStateKey) -> bytes:
    raw = key.group.encode("utf-8")
    topic_id = base64.urlsafe_b64decode(key.topic_id + "=" * (-len(key.topic_id) % 4))
    kind = SNAPSHOT_TYPE if snapshot else UPDATE_TYPE
    return _I16.pack(kind) + _I16.pack(len(raw)) + raw + topic_id + _I32.pack(key.partition)


def encode_share_state(record: ShareStateRecord, *, write_ms: int = 0) -> tuple[bytes, bytes]:
    """``record`` as the share coordinator writes it (key, value)."""
    body = _I16.pack(0) + _I32.pack(0)
    if record.snapshot:
        body += _I32.pack(record.state_epoch or 0)
    body += _I32.pack(record.leader_epoch) + _I64.pack(record.start_offset)
    if record.snapshot:
        body += _I64.pack(write_ms) + _I64.pack(write_ms)
    body += _uvarint(len(record.batches) + 1)
    for b in record.batches:
        body += _I64.pack(b.first_offset) + _I64.pack(b.last_offset) + _I8.pack(b.delivery_state)
        body += _I16.pack(b.delivery_count) + _uvarint(0)
    if record.delivery_complete_count >= 0:
        body += _uvarint(1) + _uvarint(_DELIVERY_COMPLETE_TAG) + _uvarint(4) + _I32.pack(record.delivery_complete_count)
    else:
        body += _uvarint(0)
    return encode_share_state_key(record.snapshot, record.key), body
