"""The share-state codec, the fold of snapshots and updates, and a share group's position in the state."""

from __future__ import annotations

import pytest

from mm2ctl.core.kafka.codecs import RecordDecodeError
from mm2ctl.core.kafka.share_state import (
    SharePartitionState,
    ShareStates,
    acknowledged_past,
    combine_batches,
    resume_position,
    share_position,
)
from mm2ctl.core.kafka.share_state_codec import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    ShareStateKey,
    ShareStateRecord,
    StateBatch,
    decode_share_state,
    decode_share_state_key,
    encode_share_state,
    kafka_topic_id,
    topic_id_text,
)

KEY = ShareStateKey("g1", topic_id_text(bytes(range(16))), 3)


def _update(start: int, *batches: StateBatch, complete: int = -1) -> ShareStateRecord:
    return ShareStateRecord(KEY, False, start, 0, None, complete, batches)


def _snapshot(start: int, *batches: StateBatch, complete: int = -1) -> ShareStateRecord:
    return ShareStateRecord(KEY, True, start, 0, 1, complete, batches)


def test_a_snapshot_and_an_update_round_trip() -> None:
    for record in (
        _snapshot(-1),
        _snapshot(0, StateBatch(0, 99, ACKNOWLEDGED, 1), complete=100),
        _update(-1, StateBatch(5, 9, ARCHIVED, 5), StateBatch(10, 10, AVAILABLE, 1)),
    ):
        key, value = encode_share_state(record, write_ms=1_700_000_000_000)
        assert decode_share_state(key, value) == record


def test_bytes_as_kafka_writes_them() -> None:
    """An update of group "g", one batch, delivery complete count 7, laid out by hand from the message schema."""
    topic_id = bytes(16)
    key = b"\x00\x01" + b"\x00\x01g" + topic_id + b"\x00\x00\x00\x02"
    value = (
        b"\x00\x00"  # version 0
        + b"\x00\x00\x00\x00"  # snapshot epoch
        + b"\x00\x00\x00\x05"  # leader epoch
        + (10).to_bytes(8, "big", signed=True)  # start offset
        + b"\x02"  # one batch (compact array: n + 1)
        + (10).to_bytes(8, "big")  # first offset
        + (19).to_bytes(8, "big")  # last offset
        + b"\x02\x00\x01\x00"  # acknowledged, delivered once, no tagged fields
        + b"\x01\x00\x04" + (7).to_bytes(4, "big")  # one tagged field: DeliveryCompleteCount
    )  # fmt: skip
    got = decode_share_state(key, value)
    assert got == ShareStateRecord(
        ShareStateKey("g", "AAAAAAAAAAAAAAAAAAAAAA", 2), False, 10, 5, None, 7, (StateBatch(10, 19, ACKNOWLEDGED, 1),)
    )
    assert decode_share_state_key(key)[0] == 1
    assert decode_share_state(key, None) is None


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"\x00\x07" + b"\x00\x01g" + bytes(16) + bytes(4), None),  # unknown record type
        (b"\x00\x01" + b"\x00\x01g" + bytes(15), None),  # truncated key
        (b"\x00\x01" + b"\x00\x01g" + bytes(20), b"\x00\x01" + bytes(20)),  # unknown value version
        (b"\x00\x01" + b"\x00\x01g" + bytes(20), b"\x00\x00" + bytes(16) + b"\x00" + b"\x00" + b"\x07"),
    ],
)
def test_malformed_records_are_refused(key: bytes, value: bytes | None) -> None:
    with pytest.raises(RecordDecodeError):
        decode_share_state(key, value)


def test_more_deliveries_win_then_the_higher_state() -> None:
    got = combine_batches(
        [StateBatch(0, 99, AVAILABLE, 1)],
        [StateBatch(0, 49, ACKNOWLEDGED, 1), StateBatch(60, 69, AVAILABLE, 2)],
        10,
    )
    assert got == (
        StateBatch(10, 49, ACKNOWLEDGED, 1),
        StateBatch(50, 59, AVAILABLE, 1),
        StateBatch(60, 69, AVAILABLE, 2),
        StateBatch(70, 99, AVAILABLE, 1),
    )


def test_the_state_is_the_last_snapshot_with_later_updates() -> None:
    states = ShareStates()
    states.apply(KEY, _snapshot(-1))
    states.apply(KEY, _update(0, StateBatch(0, 49, ACKNOWLEDGED, 1), StateBatch(50, 99, AVAILABLE, 1), complete=50))
    states.apply(KEY, _update(-1, StateBatch(50, 50, AVAILABLE, 1), StateBatch(51, 99, ACKNOWLEDGED, 1)))
    s = states.states[KEY]
    assert (s.start_offset, s.delivery_complete_count) == (0, 50)
    assert share_position(s) == 50
    assert acknowledged_past(s, 50) == 49
    states.apply(KEY, _snapshot(120))
    assert states.states[KEY].batches == () and share_position(states.states[KEY]) == 120
    states.apply(KEY, None)
    assert KEY not in states.states


def test_the_position_is_past_every_contiguous_acknowledged_or_archived_run() -> None:
    runs = (StateBatch(0, 99, ACKNOWLEDGED, 1), StateBatch(100, 109, ARCHIVED, 5), StateBatch(110, 199, AVAILABLE, 1))
    s = SharePartitionState(0, 0, 0, -1, runs)
    assert share_position(s) == 110 and acknowledged_past(s, 110) == 0
    assert share_position(SharePartitionState(-1, 0, 0, -1, ())) is None
    gap = SharePartitionState(5, 0, 0, -1, (StateBatch(7, 9, ACKNOWLEDGED, 1),))
    assert share_position(gap) == 5 and acknowledged_past(gap, 5) == 3


def test_the_position_is_never_below_the_reported_start_offset() -> None:
    s = SharePartitionState(0, 0, 0, -1, (StateBatch(0, 9, ACKNOWLEDGED, 1), StateBatch(20, 29, ACKNOWLEDGED, 1)))
    assert resume_position(0, s) == (10, 10)
    assert resume_position(15, s) == (15, 10)
    assert resume_position(40, s) == (40, 0)
    assert resume_position(7, None) == (7, None)


def test_librdkafkas_topic_id_text_is_read_as_kafkas() -> None:
    """librdkafka prints a topic id in standard base64, Kafka (and the state's keys, decoded) in URL-safe."""
    raw = bytes.fromhex("102db8c2c7a44d06fbf04b52fa29743d")
    assert kafka_topic_id("EC24wsekTQb78EtS+il0PQ") == topic_id_text(raw) == "EC24wsekTQb78EtS-il0PQ"
