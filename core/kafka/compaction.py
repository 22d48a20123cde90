"""The live record of a key in a compacted topic: the one rule for what such a topic holds.

Kafka's log cleaner keeps only the newest record of each key (by offset, within a partition), and a record
whose value is null (a tombstone) deletes its key. What a compacted topic says about a key is therefore the
value of its newest record, or nothing when that record is a tombstone. A reader that has not waited for the
cleaner must apply the same rule to everything it reads, or an older record that the cleaner has not removed
yet would stand for a key that was deleted.

Connect's offsets topic (the reset planners, MM2's position) is read by this rule, a key at a time. MM2's
checkpoints topic is read by the same rule over Arrow tables (``inspector.rules.checkpoint_fold``): the
inspection and ``plan failover --from checkpoints`` both apply that one.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Keyed(Generic[K, V]):
    """One record as the rule sees it: its key (with its partition, where the topic has several), its offset
    in that partition, and its value (``None``: a tombstone)."""

    key: K
    offset: int
    value: V | None


def newest_records(records: Iterable[Keyed[K, V]]) -> dict[K, Keyed[K, V]]:
    """The newest record of every key, tombstones included (a caller that deletes with them needs their key)."""
    newest: dict[K, Keyed[K, V]] = {}
    for record in records:
        seen = newest.get(record.key)
        if seen is None or record.offset > seen.offset:
            newest[record.key] = record
    return newest
