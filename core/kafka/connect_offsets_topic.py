"""Connect's offsets topic read directly: the latest stored record of each key of one connector.

Why read the topic instead of ``GET /connectors/{c}/offsets``: a worker older than 3.5 has no offsets API,
dedicated-mode MM2 has no REST API at all, and a tombstone only works when its key is *byte-identical* to
the stored key and lands on the *same partition* (docs/design.md, "Connect offsets"). So the key bytes and the partition
are kept exactly as read; nothing here re-serializes a key. JSON is decoded only to select the connector's keys and to
show offsets to a human.

Key form as the lab's 4.3.1 worker writes it (JsonConverter, schemas off), read back byte for byte:
``["mm2-x-source",{"cluster":"xsrc","partition":0,"topic":"iso-x-a"}]``, value ``{"offset":4}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.compaction import Keyed, newest_records


@dataclass(frozen=True, slots=True)
class StoredOffset:
    """The newest record of one key in the offsets topic. ``value`` None: the newest record is a tombstone."""

    partition: int
    offset: int
    key: bytes
    value: bytes | None

    @property
    def source_partition(self) -> dict[str, Any] | None:
        """The connector's partition map (``{"cluster","topic","partition"}`` for MirrorSourceConnector)."""
        parsed = _parse_key(self.key)
        return None if parsed is None else parsed[1]

    @property
    def source_offset(self) -> dict[str, Any] | None:
        """The stored offset map, or None for a tombstone or an undecodable value."""
        if self.value is None:
            return None
        try:
            value = json.loads(self.value.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None
        return value if isinstance(value, dict) else None


def _parse_key(key: bytes | None) -> tuple[str, dict[str, Any]] | None:
    if not key:
        return None
    try:
        parsed = json.loads(key.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    if isinstance(parsed, list) and len(parsed) == 2 and isinstance(parsed[0], str) and isinstance(parsed[1], dict):
        return parsed[0], parsed[1]
    return None


def connector_of_key(key: bytes | None) -> str | None:
    """The connector name a Connect offsets key belongs to (None: not a Connect offsets key)."""
    parsed = _parse_key(key)
    return None if parsed is None else parsed[0]


def latest_offsets(
    config: Mapping[str, str], topic: str, connector: str, *, timeout_s: float = 60.0
) -> list[StoredOffset]:
    """The newest record of each key of ``connector`` in the offsets topic, tombstones included.

    Sorted by (partition, key) so a fingerprint of it is stable. Reads the whole topic up to the end
    offsets seen when the read began: the topic is compacted, so that is bounded by the live key count.
    """
    keyed = (
        Keyed((rec.partition, rec.key), rec.offset, rec.value)
        for rec in records.read_partitions(config, topic, timeout_s=timeout_s)
        if rec.key is not None and connector_of_key(rec.key) == connector
    )
    newest = newest_records(keyed)
    return [StoredOffset(p, newest[(p, k)].offset, k, newest[(p, k)].value) for p, k in sorted(newest)]


def live_offsets(stored: list[StoredOffset]) -> list[StoredOffset]:
    """Only the keys whose newest record holds a value (``core.kafka.compaction``'s rule): what the worker would load
    for the connector."""
    return [s for s in stored if s.value is not None]
