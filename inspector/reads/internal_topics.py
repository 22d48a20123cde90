"""MM2's internal topics as a run reads them: one snapshot of their bounds, and what to read of them.

Each run reads the offset-syncs and checkpoints topics up to the end offsets it saw at one instant, taken
with the admin state on the driver (``snapshot``), so every use of a topic in the run sees the same records.
A live session (``mm2ctl exporter``, ``inspect --watch``) keeps what it decoded and reads only the records
past the previous run's snapshot (``plan_read``), unless the topic changed under it in a way that leaves
its kept records unlike what the topic now holds: then it reads the topic again in full and says why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.security.authorization import denial_text, is_denial

#: What the ``topic_access`` lookup of a missing topic answers.
_UNKNOWN_TOPIC = "UNKNOWN_TOPIC_OR_PART"


@dataclass(frozen=True, slots=True)
class TopicSnapshot:
    """An internal topic at one instant: where it lives (the cluster's alias and Kafka cluster id), its id, and
    each partition's ``[earliest, end)``."""

    cluster: str
    topic: str
    topic_id: str | None
    bounds: Mapping[int, tuple[int, int]]
    cluster_id: str | None = None

    @property
    def records_span(self) -> int:
        """Offsets between each partition's earliest and end, summed (records, markers and gaps)."""
        return sum(end - start for start, end in self.bounds.values())


@dataclass(frozen=True, slots=True)
class Unreadable:
    """Why an internal topic cannot be read: it does not exist, or this principal may not read it."""

    cluster: str
    topic: str
    message: str
    denied: bool


def snapshot(admin: KafkaAdmin, *, cluster: str, topic: str, principal: str) -> TopicSnapshot | Unreadable:
    """``topic`` on ``cluster`` now: its id and bounds, or why it cannot be read (``Unreadable``).

    Without READ, Spark's read would fail the whole inspection; without DESCRIBE the topic would look missing
    and every row unsynced. Either way it is the pair's rows that are affected, and they say why.
    """
    access = admin.topic_access([topic])[topic]
    if access.error is not None:
        if is_denial(access.error.code):
            return _denied(principal, cluster, topic, access.error.code)
        if access.error.code == _UNKNOWN_TOPIC:
            return Unreadable(cluster, topic, "topic does not exist", denied=False)
        return Unreadable(cluster, topic, f"{access.error.code}: {access.error.message}", denied=False)
    if access.operations is not None and not access.operations & {"ALL", "READ"}:
        return _denied(principal, cluster, topic, "TOPIC_AUTHORIZATION_FAILED")
    partitions = admin.describe_topics([topic])[topic].partitions
    bounds = admin.partition_bounds([(topic, p) for p in range(partitions)])
    failed = next((b.error for b in bounds.values() if b.error is not None), None)
    if failed is not None:
        return Unreadable(cluster, topic, f"{failed.code}: {failed.message}", denied=is_denial(failed.code))
    spans = {p: (b.earliest, b.latest) for (_t, p), b in bounds.items()}
    return TopicSnapshot(
        cluster,
        topic,
        access.topic_id,
        {p: (int(s or 0), int(e or 0)) for p, (s, e) in spans.items()},
        cluster_id=admin.cluster_id(),
    )


def _denied(principal: str, cluster: str, topic: str, code: str) -> Unreadable:
    return Unreadable(
        cluster, topic, f"{denial_text(principal, 'READ', 'topic', topic, cluster)} [{code}]", denied=True
    )


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """What a run reads of a topic: per partition ``[start, end)``; ``full`` when that is everything it holds,
    with ``reason`` saying why a live session reads it in full again (None on its first read)."""

    ranges: Mapping[int, tuple[int, int]]
    full: bool
    reason: str | None = None

    @property
    def empty(self) -> bool:
        return all(start >= end for start, end in self.ranges.values())

    @property
    def offsets(self) -> int:
        """The offsets it reads (records, markers and gaps)."""
        return sum(max(0, end - start) for start, end in self.ranges.values())

    def describe(self, topic: str) -> str:
        """One line for the run's progress: how many records of ``topic`` it reads, and from where."""
        records = self.offsets
        where = "in full" if self.full else "past the kept ones"
        spans = ", ".join(f"{p}: [{start}, {end})" for p, (start, end) in sorted(self.ranges.items())[:4])
        more = f", … {len(self.ranges) - 4} more partition(s)" if len(self.ranges) > 4 else ""
        return f"{topic}: reading {records} record(s) {where} ({spans}{more})"


def plan_read(kept: TopicSnapshot | None, now: TopicSnapshot, *, reread: str | None = None) -> ReadPlan:
    """Read ``now`` in full, or only past ``kept`` (the snapshot the kept records were read up to).

    In full: the first read; ``reread`` (the caller's reason: its kept state no longer describes the topic);
    a new topic id (deleted and created again); other partitions; an end offset below the kept one (truncated
    or recreated); or an earliest offset above the kept one (records deleted, which a run reading it now would
    not see, while the kept state still holds them).
    """
    full = ReadPlan(dict(now.bounds), full=True)
    if kept is None:
        return full
    reason = reread or _changed(kept, now)
    if reason is not None:
        return ReadPlan(dict(now.bounds), full=True, reason=reason)
    return ReadPlan({p: (kept.bounds[p][1], end) for p, (_start, end) in now.bounds.items()}, full=False)


def _changed(kept: TopicSnapshot, now: TopicSnapshot) -> str | None:
    if kept.topic_id is not None and now.topic_id is not None and kept.topic_id != now.topic_id:
        return "it was deleted and created again (its topic id changed)"
    if set(kept.bounds) != set(now.bounds):
        return f"its partitions changed ({len(kept.bounds)} -> {len(now.bounds)})"
    for p, (start, end) in sorted(now.bounds.items()):
        kept_start, kept_end = kept.bounds[p]
        if end < kept_end:
            return f"partition {p} ends at {end}, before the {kept_end} read already: truncated or recreated"
        if start > kept_start:
            return f"records below offset {start} of partition {p} were deleted since it was read"
    return None
