"""A real share consumer (KIP-932) for the lab's tests and drill: librdkafka's ``ShareConsumer`` with explicit
acknowledgement, which accepts a chosen prefix of each partition and releases everything else."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping

from confluent_kafka import AcknowledgeType, ShareConsumer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

from mm2ctl.core.errors import LabError

log = logging.getLogger("mm2ctl.lab")


def read_from_earliest(conf: Mapping[str, str], group: str) -> None:
    """Set the share group's ``share.auto.offset.reset`` to ``earliest`` (the default, ``latest``, skips what is
    already on the topic)."""
    entry = ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[entry])
    admin = AdminClient(dict(conf))  # kept until the answer: a collected client cancels its calls
    admin.incremental_alter_configs([resource])[resource].result(30)


def accept_prefix(
    conf: Mapping[str, str],
    group: str,
    topic: str,
    accept_below: Mapping[int, int],
    *,
    release: Mapping[int, Collection[int]] | None = None,
    timeout_s: float = 90.0,
) -> dict[int, int]:
    """Join ``group`` as a share consumer of ``topic``, accept every record of partition ``p`` below offset
    ``accept_below[p]`` except the offsets ``release[p]``, release the others, and leave. Returns the records
    accepted per partition; raises ``LabError`` if the prefixes were not all accepted by the deadline."""
    keep = {p: set((release or {}).get(p, ())) for p in accept_below}
    wanted = {p: n - len({o for o in keep[p] if o < n}) for p, n in accept_below.items()}
    consumer = ShareConsumer(
        {**conf, "group.id": group, "share.acknowledgement.mode": "explicit", "log_level": 3, "logger": log}
    )
    accepted = dict.fromkeys(accept_below, 0)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while any(accepted[p] < n for p, n in wanted.items()):
            if time.monotonic() > deadline:
                raise LabError(f"share group {group} accepted {accepted} of {wanted} in {timeout_s:.0f}s")
            for msg in consumer.poll(1.0):
                p, o = msg.partition(), msg.offset()
                if msg.error() is not None or p is None or o is None:
                    continue
                if p in accept_below and o < accept_below[p] and o not in keep[p]:
                    consumer.acknowledge(msg)
                    accepted[p] += 1
                else:
                    consumer.acknowledge(msg, AcknowledgeType.RELEASE)
        consumer.commit_sync()
    finally:
        consumer.close()
    return accepted


def consume_all(
    conf: Mapping[str, str],
    group: str,
    topic: str,
    *,
    idle_s: float = 5.0,
    first_s: float = 20.0,
    timeout_s: float = 90.0,
) -> dict[int, list[bytes]]:
    """Join ``group`` as a share consumer of ``topic`` and accept every record delivered, until none has come
    for ``idle_s`` after the first (or none within ``first_s``, or ``timeout_s`` in all); the values delivered
    per partition, in delivery order. A new member's first delivery comes with the share group's next
    heartbeat, about 5 s after it subscribes, so the idle clock starts at the first record."""
    consumer = ShareConsumer(
        {**conf, "group.id": group, "share.acknowledgement.mode": "explicit", "log_level": 3, "logger": log}
    )
    got: dict[int, list[bytes]] = {}
    try:
        consumer.subscribe([topic])
        started = time.monotonic()
        deadline = started + timeout_s
        last: float | None = None
        while time.monotonic() < deadline:
            if time.monotonic() - (started if last is None else last) >= (first_s if last is None else idle_s):
                break
            for msg in consumer.poll(1.0):
                p, value = msg.partition(), msg.value()
                if msg.error() is not None or p is None:
                    continue
                consumer.acknowledge(msg)
                got.setdefault(p, []).append(value if isinstance(value, bytes) else b"")
                last = time.monotonic()
        consumer.commit_sync()
    finally:
        consumer.close()
    return got
