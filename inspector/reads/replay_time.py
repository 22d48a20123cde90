"""What a failover now would replay, in time: ``checkpoint_lag_seconds`` of a group partition whose position is
exact.

A consumer resuming on the target now starts at its committed target offset ``J``; its true position there is
the copy of the record at its source offset ``c``. The time between the two is the timestamp of the record at
``c`` on the source minus that of the record at ``J`` on the target (MirrorSourceTask copies each record's
timestamp, so the target's records carry the source's times): positive, the time the consumer would read
again; negative, the time it would never see (its target offset is ahead). It is 0 where ``J`` is the
translated position, and null where either record does not exist (a position at a partition's end), or the
position is not exact (the count it would stand beside is only a bound).

The records are read on the driver, on each cluster through one consumer assigned to every partition needed
(``core.kafka.records.read_ranges``), a few offsets from each position (a transaction marker takes an offset
and is never delivered), ``read_uncommitted`` as ``inspector.reads.waiting_records`` reads. A partition many
groups sit on is read once per distinct position, in rounds: round ``k`` reads the ``k``-th position of every
partition. At most ``MAX_PROBES`` rows of a pair are read per run; the others stay null.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.kafka.records import read_ranges

#: Offsets read from a position to find the record there.
PROBE_OFFSETS = 16
#: Rows of a pair whose replay in time one run reads at most.
MAX_PROBES = 10_000
#: What one fetch asks of each partition (a larger first batch still comes whole).
FETCH_BYTES_PER_PARTITION = 64 * 1024


@dataclass(frozen=True, slots=True)
class ReplayProbe:
    """One exact group-partition row: its source partition and offset ``c``, its remote partition and committed
    target offset ``J``, and both partitions' ends (nothing is read at or past them)."""

    group: str
    topic: str
    partition: int
    remote_topic: str
    source_offset: int
    source_latest: int
    target_offset: int
    target_latest: int


def timestamps_at(
    config: Mapping[str, str], wanted: Iterable[tuple[TP, int, int]], *, timeout_s: float = 60.0
) -> dict[tuple[TP, int], int]:
    """The timestamp (ms) of the first record at or after each ``(partition, offset, end)``, keyed by
    ``(partition, offset)``; a position with no record before ``end`` is left out."""
    by_partition: dict[TP, dict[int, int]] = {}
    for tp, offset, end in wanted:
        if offset < end:
            by_partition.setdefault(tp, {})[offset] = end
    rounds = max((len(v) for v in by_partition.values()), default=0)
    ordered = {tp: sorted(v.items()) for tp, v in by_partition.items()}
    small = {**config, "max.partition.fetch.bytes": str(FETCH_BYTES_PER_PARTITION)}
    found: dict[tuple[TP, int], int] = {}
    for k in range(rounds):
        ranges = {tp: (o, min(end, o + PROBE_OFFSETS)) for tp, items in ordered.items() if k < len(items)
                  for o, end in [items[k]]}  # fmt: skip
        for r in read_ranges(small, ranges, isolation="read_uncommitted", timeout_s=timeout_s):
            start = ranges[(r.topic, r.partition)][0]
            if r.timestamp_type >= 0:
                found.setdefault(((r.topic, r.partition), start), r.timestamp_ms)
    return found


def replay_seconds(
    source_config: Mapping[str, str], target_config: Mapping[str, str], probes: Sequence[ReplayProbe]
) -> dict[tuple[str, str, int], float]:
    """``checkpoint_lag_seconds`` of each probe, keyed by (group, topic, partition); a probe either of whose
    records does not exist is left out."""
    probes = probes[:MAX_PROBES]
    source = timestamps_at(source_config, (((p.topic, p.partition), p.source_offset, p.source_latest) for p in probes))
    target = timestamps_at(
        target_config, (((p.remote_topic, p.partition), p.target_offset, p.target_latest) for p in probes)
    )
    out: dict[tuple[str, str, int], float] = {}
    for p in probes:
        at_c = source.get(((p.topic, p.partition), p.source_offset))
        at_j = target.get(((p.remote_topic, p.partition), p.target_offset))
        if at_c is not None and at_j is not None:
            out[(p.group, p.topic, p.partition)] = (at_c - at_j) / 1000.0
    return out
