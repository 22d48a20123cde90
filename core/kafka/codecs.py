"""Byte-exact codecs for MM2's internal records (docs/design.md, "Record formats").

MM2 writes these with Kafka Connect's Struct serialization: fields back to back with no framing; INT16,
INT32 and INT64 are big-endian and signed; a STRING is an INT16 length then UTF-8 bytes. The encoders here
write one record at a time, for the lab, the benchmarks and the tests. Decoding has one rule,
``inspector.rules.decoding``, over Arrow tables (what Spark runs, and what the planners call on the records
they read); its reasons for a malformed record are ``MALFORMED_REASONS``.

``BytesReader`` reads the same primitives for other topics' records (the share-group state,
``core.kafka.share_state_codec``) and raises ``RecordDecodeError`` (never ``struct.error`` or
``UnicodeDecodeError``), so a caller can count a malformed record and go on.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


NULL_KEY = "null key"
KEY_TRUNCATED = "key truncated"
KEY_TRAILING = "key has trailing bytes"
VALUE_TRUNCATED = "value truncated"
VALUE_TRAILING = "value has trailing bytes"
NEGATIVE_STRING_LENGTH = "negative string length"
INVALID_UTF8 = "string is not UTF-8"
UNKNOWN_CHECKPOINT_VERSION = "unknown checkpoint version"
#: A record without a value: the decoders of whole records refuse it; a table decode calls it a tombstone.
NULL_VALUE = "null value"

#: Every reason a malformed MM2 record is given, in ``inspector.rules.decoding``'s order.
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


class RecordDecodeError(ValueError):
    """A record's bytes do not match the expected layout; ``reason`` names the fault without the detail."""

    def __init__(self, message: str, *, reason: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason if reason is not None else message


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
    """Big-endian fields read in order from one record's bytes (its ``part``: key, value or record); running past
    the end is a ``RecordDecodeError``."""

    __slots__ = ("_buf", "_part", "_pos")

    def __init__(self, buf: bytes, part: str = "record") -> None:
        self._buf = buf
        self._part = part
        self._pos = 0

    def take(self, n: int) -> bytes:
        end = self._pos + n
        if n < 0 or end > len(self._buf):
            raise RecordDecodeError(
                f"{self._part} truncated: need {n} bytes at {self._pos}, have {len(self._buf)}",
                reason=f"{self._part} truncated",
            )
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
        return utf8(self.string_bytes())

    def string_bytes(self) -> bytes:
        """A STRING's bytes, not yet checked for UTF-8."""
        return self.take(string_length(self.i16()))

    def done(self) -> None:
        if self._pos != len(self._buf):
            raise RecordDecodeError(
                f"{len(self._buf) - self._pos} trailing bytes", reason=f"{self._part} has trailing bytes"
            )


def string_length(length: int) -> int:
    """A STRING's INT16 length, refused when negative."""
    if length < 0:
        raise RecordDecodeError(f"negative string length {length}", reason=NEGATIVE_STRING_LENGTH)
    return length


def utf8(raw: bytes) -> str:
    """A STRING's bytes as text."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordDecodeError(f"string is not UTF-8: {exc}", reason=INVALID_UTF8) from exc


def _string(value: str) -> bytes:
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes does not fit an INT16 length")
    return _I16.pack(len(raw)) + raw


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


# --- Heartbeat: topic heartbeats ----------------------------------------------------------------------

HEARTBEAT_VERSION = 0


def encode_heartbeat(hb: Heartbeat) -> tuple[bytes, bytes]:
    return (
        _string(hb.source_alias) + _string(hb.target_alias),
        _I16.pack(HEARTBEAT_VERSION) + _I64.pack(hb.timestamp_ms),
    )
