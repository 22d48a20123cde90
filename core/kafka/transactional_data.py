"""Do a flow's source topics hold transactions? A bounded sample of each partition's tail, read twice.

MirrorMaker 2 copies the records of aborted transactions as ordinary records when its source consumer reads
uncommitted records (Kafka's default). Whether that matters depends on the data: only a topic written by
transactional producers has aborted records. The admin API mm2ctl uses has no call that says so
(DescribeProducers is not in librdkafka's admin client), so the records say it:

- the tail of each partition (its last ``window`` offsets below the last stable offset) is read
  ``read_uncommitted`` and ``read_committed``: a record only the first read returns was aborted;
- a gap between the offsets the first read returns is a transaction marker, unless the topic is compacted
  (compaction leaves gaps too) or its log start lies in the sample;
- a last stable offset below the partition's end is a transaction open right now.

The sample sees the recent past only: a topic whose transactions all lie further back looks plain. It reads at
most ``window`` offsets per partition on each side.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.kafka.records import read_ranges

#: Offsets sampled at the end of each partition.
SAMPLE_OFFSETS = 200


@dataclass(frozen=True, slots=True)
class TransactionSample:
    """What the tail of one source partition showed about transactions."""

    topic: str
    partition: int
    #: The offsets sampled, ``[start, end)``.
    start: int
    end: int
    #: Records only a ``read_uncommitted`` read returned: records of aborted transactions.
    aborted_records: int
    #: Offsets no record holds, in a topic that is not compacted: transaction markers.
    markers: int
    #: The last stable offset lies below the end: a transaction is open.
    open_transaction: bool

    @property
    def transactional(self) -> bool:
        return bool(self.aborted_records or self.markers or self.open_transaction)


def sample_transactions(
    admin: KafkaAdmin,
    config: Mapping[str, str],
    bounds: Mapping[TP, tuple[int, int]],
    *,
    window: int = SAMPLE_OFFSETS,
) -> list[TransactionSample]:
    """Sample the tail of each partition of ``bounds`` ((earliest, latest) offsets) on one cluster: two reads
    of every partition at once (one consumer each), one request for the topics' configs."""
    if not bounds:
        return []
    stable = admin.stable_offsets(sorted(bounds))
    configs = admin.topic_configs(sorted({t for t, _p in bounds}))
    ranges: dict[TP, tuple[int, int]] = {}
    for tp, (earliest, latest) in bounds.items():
        lso = stable.get(tp)
        end = lso if isinstance(lso, int) else latest
        ranges[tp] = (max(earliest, end - window), end)
    everything = _offsets(config, ranges, "read_uncommitted")
    committed = _offsets(config, ranges, "read_committed")
    out: list[TransactionSample] = []
    for (topic, p), (start, end) in sorted(ranges.items()):
        topic_config = configs.get(topic)
        policy = topic_config.get("cleanup.policy", "delete") if isinstance(topic_config, dict) else "compact"
        seen = everything[(topic, p)]
        out.append(
            TransactionSample(
                topic=topic,
                partition=p,
                start=start,
                end=end,
                aborted_records=len(seen - committed[(topic, p)]),
                markers=0 if "compact" in policy else (end - start) - len(seen),
                open_transaction=end < bounds[(topic, p)][1],
            )
        )
    return out


def _offsets(config: Mapping[str, str], ranges: Mapping[TP, tuple[int, int]], isolation: str) -> dict[TP, set[int]]:
    out: dict[TP, set[int]] = {tp: set() for tp in ranges}
    for rec in read_ranges(config, ranges, isolation=isolation):
        out[(rec.topic, rec.partition)].add(rec.offset)
    return out


__all__ = ["SAMPLE_OFFSETS", "TransactionSample", "sample_transactions"]
