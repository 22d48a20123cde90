"""The encoders of MM2's internal records, byte for byte (docs/design.md, "Record formats"), and the tests'
reference decoder (``tests.reference_codecs``) that the one decoding rule is held to."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2ctl.core.kafka.codecs import (
    Checkpoint,
    Heartbeat,
    OffsetSync,
    RecordDecodeError,
    encode_checkpoint,
    encode_heartbeat,
    encode_offset_sync,
)
from tests.reference_codecs import decode_checkpoint, decode_heartbeat, decode_offset_sync

longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ints = st.integers(min_value=-(2**31), max_value=2**31 - 1)
names = st.text(max_size=40)


def test_offset_sync_matches_the_documented_bytes() -> None:
    key, value = encode_offset_sync(OffsetSync("orders", 3, 1000, 998))
    assert key == bytes.fromhex("00 06 6f 72 64 65 72 73 00 00 00 03")
    assert value == bytes.fromhex("00 00 00 00 00 00 03 e8 00 00 00 00 00 00 03 e6")
    assert decode_offset_sync(key, value) == OffsetSync("orders", 3, 1000, 998)


def test_signed_int64_extremes_round_trip() -> None:
    for upstream, downstream in [(-1, 0), (-(2**63), 2**63 - 1), (2**63 - 1, -(2**63))]:
        key, value = encode_offset_sync(OffsetSync("t", -1, upstream, downstream))
        assert decode_offset_sync(key, value) == OffsetSync("t", -1, upstream, downstream)
    assert encode_offset_sync(OffsetSync("t", 0, -1, 0))[1][:8] == b"\xff" * 8


def test_checkpoint_layout_has_version_zero_and_metadata_string() -> None:
    cp = Checkpoint("g", "primary.t", 2, 10, 9, "meta")
    key, value = encode_checkpoint(cp)
    assert key == b"\x00\x01g" + b"\x00\x09primary.t" + b"\x00\x00\x00\x02"
    assert value[:2] == b"\x00\x00"
    assert value[-6:] == b"\x00\x04meta"
    assert decode_checkpoint(key, value) == cp


@given(names, ints, longs, longs)
def test_offset_sync_round_trip(topic: str, partition: int, up: int, down: int) -> None:
    sync = OffsetSync(topic, partition, up, down)
    assert decode_offset_sync(*encode_offset_sync(sync)) == sync


@given(names, names, ints, longs, longs, names)
def test_checkpoint_round_trip(group: str, topic: str, partition: int, up: int, down: int, meta: str) -> None:
    cp = Checkpoint(group, topic, partition, up, down, meta)
    assert decode_checkpoint(*encode_checkpoint(cp)) == cp


@given(names, names, longs)
def test_heartbeat_round_trip(source: str, target: str, ts: int) -> None:
    hb = Heartbeat(source, target, ts)
    assert decode_heartbeat(*encode_heartbeat(hb)) == hb


GOOD_KEY, GOOD_VALUE = encode_offset_sync(OffsetSync("orders", 0, 5, 5))


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (None, GOOD_VALUE, "offset-sync key is null"),
        (GOOD_KEY, None, "offset-sync value is null"),
        (GOOD_KEY[:-1], GOOD_VALUE, "truncated"),
        (GOOD_KEY, GOOD_VALUE[:15], "truncated"),
        (GOOD_KEY + b"\x00", GOOD_VALUE, "1 trailing bytes"),
        (GOOD_KEY, GOOD_VALUE + b"\x00\x00", "2 trailing bytes"),
        (b"\xff\xff" + GOOD_KEY[2:], GOOD_VALUE, "negative string length"),
        (b"\x00\x02\xc3\x28\x00\x00\x00\x00", GOOD_VALUE, "not UTF-8"),
        (b"", b"", "truncated"),
    ],
)
def test_malformed_offset_syncs_raise_record_decode_error(key: bytes | None, value: bytes | None, message: str) -> None:
    with pytest.raises(RecordDecodeError, match=message):
        decode_offset_sync(key, value)


def test_checkpoint_of_an_unknown_version_is_malformed() -> None:
    key, value = encode_checkpoint(Checkpoint("g", "t", 0, 1, 1, ""))
    with pytest.raises(RecordDecodeError, match="unknown checkpoint version 1"):
        decode_checkpoint(key, b"\x00\x01" + value[2:])


def test_record_decode_error_is_a_value_error_not_a_struct_error() -> None:
    with pytest.raises(ValueError):
        decode_offset_sync(b"\x00", b"")
