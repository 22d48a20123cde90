"""The planners read MM2's offset syncs through the one decoding rule (``plans.kafka_records.decoded_syncs``):
in the order MM2 wrote them, a tombstone as no sync, a malformed record as nothing."""

from __future__ import annotations

from mm2ctl.core.kafka import codecs
from mm2ctl.core.kafka.records import RawRecord
from mm2ctl.core.translation.rule import Sync
from mm2ctl.plans.kafka_records import decoded_syncs


def _record(offset: int, key: bytes | None, value: bytes | None) -> RawRecord:
    return RawRecord("mm2-offset-syncs.b.internal", 0, offset, 1_700_000_000_000 + offset, key, value)


def test_the_planners_decode_syncs_tombstones_and_malformed_records_in_order() -> None:
    orders_3 = codecs.encode_offset_sync_key("orders", 3)
    read = [
        _record(0, orders_3, codecs.encode_offset_sync_value(1000, 998)),
        _record(
            1, codecs.encode_offset_sync_key("zamówienia", -1), codecs.encode_offset_sync_value(-(2**63), 2**63 - 1)
        ),
        _record(2, orders_3[:5], codecs.encode_offset_sync_value(1, 1)),  # a truncated key
        _record(3, orders_3, None),  # a tombstone
        _record(4, orders_3, codecs.encode_offset_sync_value(5, 6) + b"\x00"),  # a trailing byte
        _record(5, orders_3, codecs.encode_offset_sync_value(1001, 999)),
    ]
    assert decoded_syncs(read) == [
        (("orders", 3), Sync(1000, 998)),
        (("zamówienia", -1), Sync(-(2**63), 2**63 - 1)),
        None,
        (("orders", 3), None),
        None,
        (("orders", 3), Sync(1001, 999)),
    ]


def test_no_records_decode_to_none() -> None:
    assert decoded_syncs([]) == []
