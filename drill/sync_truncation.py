"""Truncate the offset syncs of one source partition, as the drill's strategy (f) needs: the partition then
has no sync at or below any group's position, as after MM2 dropped syncs under back-pressure, a truncation
of the offset-syncs topic, or compaction, and only the timestamp fallback can translate it.

Kafka cannot delete one key's records from a topic, so the whole offset-syncs partition is truncated
(``deleteRecords`` with ``cleanup.policy`` briefly ``compact,delete``, as ``plan truncate-offset-syncs``
does) and every other source partition's syncs are produced again, in their order, as a rollback of that
plan would. Only for flows the drill owns: it rewrites the flow's offset-syncs topic.
"""

from __future__ import annotations

import time

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka import records
from mm2ctl.plans.kafka_records import decoded_syncs
from mm2ctl.plans.live_state import LiveState

_POLICY = "cleanup.policy"


def truncate_partition_syncs(live: LiveState, flow: PairConfig, topic: str, partition: int) -> int:
    """Remove every offset sync of source partition ``topic``/``partition`` from ``flow``'s offset-syncs
    topic, keeping the others; returns how many records were kept (produced again)."""
    cluster, syncs_topic = flow.offset_syncs_cluster, flow.offset_syncs_topic
    conf = live.kafka_config(cluster)
    admin = live.admin(cluster)
    read = list(records.read_partitions(conf, syncs_topic, [0]))
    kept: list[tuple[bytes | None, bytes | None, int | None]] = [
        (rec.key, rec.value, 0)
        for rec, decoded in zip(read, decoded_syncs(read), strict=True)
        if decoded is None or decoded[0] != (topic, partition)  # a malformed record is kept as it was
    ]
    end = admin.partition_bounds([(syncs_topic, 0)])[(syncs_topic, 0)].latest or 0
    original = admin.topic_config(syncs_topic).get(_POLICY, "compact")
    admin.set_topic_config(syncs_topic, _POLICY, "compact,delete")
    try:
        deadline = time.monotonic() + 30
        while True:  # the policy change takes effect a moment after the call returns
            (result,) = admin.delete_records({(syncs_topic, 0): end})
            if result.error is None or result.error.code != "POLICY_VIOLATION" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    finally:
        admin.set_topic_config(syncs_topic, _POLICY, original)
    if result.error is not None:
        raise KafkaClusterError(f"truncating {syncs_topic}: {result.error.message}", code=result.error.code)
    if kept:
        records.produce(conf, syncs_topic, kept)
    return len(kept)
