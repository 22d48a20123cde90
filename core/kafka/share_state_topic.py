"""``__share_group_state`` read into share-partition states, in full or extending an earlier read.

The topic is small (a snapshot and a few updates per share-partition, compacted), so it is read on the driver
with one librdkafka consumer. ``ShareStateLog`` keeps the offset each partition was read up to and the states
folded so far; ``extend`` reads only what was written since, so an incremental read folds the same records in
the same order as a full one and gives the same states. Records are keyed by topic *id*; ``by_topic_name``
resolves them through the ids an admin describe gives (a topic deleted and created again gets a new id, so a
state of the old topic is never taken for the new one's).

Reading needs READ and DESCRIBE on the topic ``__share_group_state``; a denial is raised as
``core.security.authorization.AuthorizationError``, which names the permission.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.kafka.codecs import RecordDecodeError
from mm2ctl.core.kafka.records import read_partitions
from mm2ctl.core.kafka.share_state import SharePartitionState, ShareStates, resume_position
from mm2ctl.core.kafka.share_state_codec import decode_share_state, decode_share_state_key, kafka_topic_id

SHARE_STATE_TOPIC = "__share_group_state"


@dataclass
class ShareStateLog:
    """The states folded from ``__share_group_state`` up to ``read_to`` (partition -> next offset to read)."""

    read_to: dict[int, int] = field(default_factory=dict)
    folded: ShareStates = field(default_factory=ShareStates)
    #: Records that did not decode (a release writing a version this codec does not know); they are skipped.
    malformed: int = 0
    records: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def extend(self, config: Mapping[str, str], admin: KafkaAdmin, *, timeout_s: float = 60.0) -> int:
        """Read what was written since the last read (everything, the first time); the number of records read.
        A cluster without the topic (no share group yet, or a release without share groups) has no state. Two
        callers sharing the log (two pairs of one cluster) extend it one after the other."""
        with self._lock:
            return self._extend(config, admin, timeout_s)

    def _extend(self, config: Mapping[str, str], admin: KafkaAdmin, timeout_s: float) -> int:
        partitions = admin.list_topics().get(SHARE_STATE_TOPIC)
        if not partitions:
            return 0
        bounds = admin.partition_bounds([(SHARE_STATE_TOPIC, p) for p in range(partitions)])
        ends: dict[int, int] = {}
        for (_t, p), b in bounds.items():
            if b.latest is None:
                raise KafkaClusterError(
                    f"cannot read the end offsets of {SHARE_STATE_TOPIC}: {b.error.message if b.error else '?'}",
                    code=b.error.code if b.error else None,
                )
            ends[p] = b.latest
        start = {p: self.read_to.get(p, 0) for p in ends}
        todo = [p for p in sorted(ends) if ends[p] > start[p]]
        read = 0
        if todo:
            got = read_partitions(config, SHARE_STATE_TOPIC, todo, start=start, end=ends, timeout_s=timeout_s)
            for r in got:
                read += 1
                try:
                    _kind, key = decode_share_state_key(r.key)
                    self.folded.apply(key, decode_share_state(r.key, r.value))
                except RecordDecodeError:
                    self.malformed += 1
        self.read_to.update(ends)
        self.records += read
        return read

    def by_topic_name(self, topic_ids: Mapping[str, str]) -> dict[tuple[str, str, int], SharePartitionState]:
        """(group, topic, partition) -> state, for the topics of ``topic_ids`` (name -> id)."""
        names = {i: t for t, i in topic_ids.items()}
        return {
            (k.group, names[k.topic_id], k.partition): s for k, s in self.folded.states.items() if k.topic_id in names
        }


def topic_ids(admin: KafkaAdmin, topics: list[str] | set[str]) -> dict[str, str]:
    """name -> topic id (Kafka's text form) of ``topics`` that exist and this client may describe."""
    return {t: kafka_topic_id(a.topic_id) for t, a in admin.topic_access(sorted(topics)).items() if a.topic_id}


def share_group_states(
    log: ShareStateLog, admin: KafkaAdmin, groups: Mapping[str, Mapping[TP, int]]
) -> dict[tuple[str, str, int], SharePartitionState]:
    """The states of ``groups``' partitions (group -> the partitions its start offsets name), by topic name."""
    topics = {t for parts in groups.values() for t, _p in parts}
    states = log.by_topic_name(topic_ids(admin, topics))
    return {(g, t, p): s for (g, t, p), s in states.items() if (t, p) in groups.get(g, {})}


@dataclass(frozen=True, slots=True)
class SharePositions:
    """Share groups' positions read from their state: per group and partition the position, the start offset
    Kafka reports, and the records acknowledged past the position (absent where no state was found)."""

    positions: dict[str, dict[TP, int]]
    start_offsets: dict[str, dict[TP, int]]
    acknowledged_past: dict[str, dict[TP, int]]


def share_positions(
    log: ShareStateLog, admin: KafkaAdmin, start_offsets: Mapping[str, Mapping[TP, int]]
) -> SharePositions:
    """The positions of share groups whose start offsets (``Admin.listShareGroupOffsets``) are
    ``start_offsets``, from the states ``log`` holds (extend it first)."""
    states = share_group_states(log, admin, start_offsets)
    positions: dict[str, dict[TP, int]] = {}
    again: dict[str, dict[TP, int]] = {}
    for g, parts in start_offsets.items():
        positions[g] = {}
        for tp, start in parts.items():
            position, past = resume_position(start, states.get((g, *tp)))
            positions[g][tp] = position
            if past is not None:
                again.setdefault(g, {})[tp] = past
    return SharePositions(positions, {g: dict(p) for g, p in start_offsets.items()}, again)
