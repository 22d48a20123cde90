"""Byte-exact codecs for MM2's internal records (docs/design.md, "Record formats").

MM2 writes these with Kafka Connect's Struct serialization: fields back to back with no framing; INT16,
INT32 and INT64 are big-endian and signed; a STRING is an INT16 length then UTF-8 bytes. The Spark job
decodes the same layout with SQL expressions (``inspector.transforms.decode``); these Python codecs are the reference
it is tested against, and what the lab, the benchmark and the remediations use to read and write records.

Decoders raise ``RecordDecodeError`` (never ``struct.error`` or ``UnicodeDecodeError``) so callers can count
a malformed record and go on.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class RecordDecodeError(ValueError):
    """A record's bytes do not match the expected layout."""


@dataclass(frozen=True, slots=True)
class OffsetSync:
    topic: str  # the *source* topic name
    partition: int
    upstream_offset: int
    downstream_offset: int


@dataclass(frozen=True, slots=True)
class Checkpoint:
    group: str
    topic: str  # the *target-side* topic name
    partition: int
    upstream_offset: int
    downstream_offset: int
    metadata: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    source_alias: str
    target_alias: str
    timestamp_ms: int


class BytesReader:
    """Big-endian fields read in order from one record's bytes; running past the end is a ``RecordDecodeError``."""

    __slots__ = ("_buf", "_pos")

    def __init__(self, buf: bytes) -> None:
        self._buf = buf
        self._pos = 0

    def take(self, n: int) -> bytes:
        end = self._pos + n
        if n < 0 or end > len(self._buf):
            raise RecordDecodeError(f"record truncated: need {n} bytes at {self._pos}, have {len(self._buf)}")
        chunk = self._buf[self._pos : end]
        self._pos = end
        return chunk

    def i8(self) -> int:
        return int(_I8.unpack(self.take(1))[0])

    def i16(self) -> int:
        return int(_I16.unpack(self.take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self.take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self.take(8))[0])

    def string(self) -> str:
        length = self.i16()
        if length < 0:
            raise RecordDecodeError(f"negative string length {length}")
        try:
            return self.take(length).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordDecodeError(f"string is not UTF-8: {exc}") from exc

    def done(self) -> None:
        if self._pos != len(self._buf):
            raise RecordDecodeError(f"{len(self._buf) - self._pos} trailing bytes")


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes does not fit an INT16 length")
    return _I16.pack(len(raw)) + raw


def _need(data: bytes | None, what: str) -> bytes:
    if data is None:
        raise RecordDecodeError(f"{what} is null")
    return data


# --- OffsetSync: topic mm2-offset-syncs.<alias>.internal ---------------------------------------------


def encode_offset_sync_key(topic: str, partition: int) -> bytes:
    return _string(topic) + _I32.pack(partition)


def encode_offset_sync_value(upstream_offset: int, downstream_offset: int) -> bytes:
    return _I64.pack(upstream_offset) + _I64.pack(downstream_offset)


def encode_offset_sync(sync: OffsetSync) -> tuple[bytes, bytes]:
    return (
        encode_offset_sync_key(sync.topic, sync.partition),
        encode_offset_sync_value(sync.upstream_offset, sync.downstream_offset),
    )


def decode_offset_sync_key(key: bytes | None) -> tuple[str, int]:
    """The source (topic, partition) an offset-sync record is about; a tombstone has only this."""
    k = BytesReader(_need(key, "offset-sync key"))
    topic, partition = k.string(), k.i32()
    k.done()
    return topic, partition


def decode_offset_sync(key: bytes | None, value: bytes | None) -> OffsetSync:
    topic, partition = decode_offset_sync_key(key)
    v = BytesReader(_need(value, "offset-sync value"))
    upstream, downstream = v.i64(), v.i64()
    v.done()
    return OffsetSync(topic, partition, upstream, downstream)


# --- Checkpoint: topic <source>.checkpoints.internal ----------------------------------------------------

CHECKPOINT_VERSION = 0


def encode_checkpoint_key(group: str, topic: str, partition: int) -> bytes:
    return _string(group) + _string(topic) + _I32.pack(partition)


def encode_checkpoint_value(upstream_offset: int, downstream_offset: int, metadata: str = "") -> bytes:
    return _I16.pack(CHECKPOINT_VERSION) + _I64.pack(upstream_offset) + _I64.pack(downstream_offset) + _string(metadata)


def encode_checkpoint(cp: Checkpoint) -> tuple[bytes, bytes]:
    return (
        encode_checkpoint_key(cp.group, cp.topic, cp.partition),
        encode_checkpoint_value(cp.upstream_offset, cp.downstream_offset, cp.metadata),
    )


def decode_checkpoint_key(key: bytes | None) -> tuple[str, str, int]:
    """The (group, target topic, partition) a checkpoint record is about; a tombstone has only this."""
    k = BytesReader(_need(key, "checkpoint key"))
    group, topic, partition = k.string(), k.string(), k.i32()
    k.done()
    return group, topic, partition


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    group, topic, partition = decode_checkpoint_key(key)
    v = BytesReader(_need(value, "checkpoint value"))
    version = v.i16()
    if version != CHECKPOINT_VERSION:
        raise RecordDecodeError(f"unknown checkpoint version {version}")
    upstream, downstream, metadata = v.i64(), v.i64(), v.string()
    v.done()
    return Checkpoint(group, topic, partition, upstream, downstream, metadata)


# --- Heartbeat: topic heartbeats ----------------------------------------------------------------------

HEARTBEAT_VERSION = 0


def encode_heartbeat(hb: Heartbeat) -> tuple[bytes, bytes]:
    return (
        _string(hb.source_alias) + _string(hb.target_alias),
        _I16.pack(HEARTBEAT_VERSION) + _I64.pack(hb.timestamp_ms),
    )


def decode_heartbeat(key: bytes | None, value: bytes | None) -> Heartbeat:
    k = BytesReader(_need(key, "heartbeat key"))
    source, target = k.string(), k.string()
    k.done()
    v = BytesReader(_need(value, "heartbeat value"))
    v.i16()  # version: MM2 has only ever written 0; tolerate others, as MM2's own reader does
    ts = v.i64()
    v.done()
    return Heartbeat(source, target, ts)
