"""A reference decoder of MM2's records, one record at a time, written for the tests only.

mm2ctl decodes MM2's records with one rule, over Arrow tables (``mm2ctl.inspector.rules.decoding``). The tests
read the records they check through this plainly written decoder instead, and the decoding tests hold the
rule to it, field for field and reason for reason, so the rule is never its own oracle. It reads with the
core's byte reader (``mm2ctl.core.kafka.codecs.BytesReader``) and raises ``RecordDecodeError`` with the
rule's reasons.
"""

from __future__ import annotations

from mm2ctl.core.kafka.codecs import (
    CHECKPOINT_VERSION,
    NULL_KEY,
    NULL_VALUE,
    UNKNOWN_CHECKPOINT_VERSION,
    BytesReader,
    Checkpoint,
    Heartbeat,
    OffsetSync,
    RecordDecodeError,
    string_length,
    utf8,
)


def _key(data: bytes | None, what: str) -> BytesReader:
    if data is None:
        raise RecordDecodeError(f"{what} key is null", reason=NULL_KEY)
    return BytesReader(data, "key")


def _value(data: bytes | None, what: str) -> BytesReader:
    if data is None:
        raise RecordDecodeError(f"{what} value is null", reason=NULL_VALUE)
    return BytesReader(data, "value")


def decode_offset_sync_key(key: bytes | None) -> tuple[str, int]:
    """The source (topic, partition) an offset-sync record is about; a tombstone has only this."""
    k = _key(key, "offset-sync")
    raw_topic = k.string_bytes()
    partition = k.i32()
    topic = utf8(raw_topic)
    k.done()
    return topic, partition


def decode_offset_sync(key: bytes | None, value: bytes | None) -> OffsetSync:
    topic, partition = decode_offset_sync_key(key)
    v = _value(value, "offset-sync")
    upstream, downstream = v.i64(), v.i64()
    v.done()
    return OffsetSync(topic, partition, upstream, downstream)


def decode_checkpoint_key(key: bytes | None) -> tuple[str, str, int]:
    """The (group, target topic, partition) a checkpoint record is about; a tombstone has only this."""
    k = _key(key, "checkpoint")
    raw_group = k.string_bytes()
    topic_length = k.i16()
    group = utf8(raw_group)
    raw_topic = k.take(string_length(topic_length))
    partition = k.i32()
    topic = utf8(raw_topic)
    k.done()
    return group, topic, partition


def decode_checkpoint(key: bytes | None, value: bytes | None) -> Checkpoint:
    group, topic, partition = decode_checkpoint_key(key)
    v = _value(value, "checkpoint")
    version = v.i16()
    if version != CHECKPOINT_VERSION:
        raise RecordDecodeError(f"unknown checkpoint version {version}", reason=UNKNOWN_CHECKPOINT_VERSION)
    upstream, downstream, metadata = v.i64(), v.i64(), v.string()
    v.done()
    return Checkpoint(group, topic, partition, upstream, downstream, metadata)


def decode_heartbeat(key: bytes | None, value: bytes | None) -> Heartbeat:
    k = _key(key, "heartbeat")
    source, target = k.string(), k.string()
    k.done()
    v = _value(value, "heartbeat")
    v.i16()  # version: MM2 has only ever written 0; tolerate others, as MM2's own reader does
    ts = v.i64()
    v.done()
    return Heartbeat(source, target, ts)
