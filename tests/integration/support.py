"""Small helpers the integration tests share: unique names, polling with a deadline, client configs."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import Consumer

from mm2ctl.lab.control import LabInfo

T = TypeVar("T")


def uniq(prefix: str) -> str:
    """A topic or group name no other test (or earlier run against a kept lab) uses."""
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def eventually(check: Callable[[], T | None], *, timeout_s: float = 60.0, interval_s: float = 0.5, what: str = "") -> T:
    """Poll ``check`` until it returns something truthy; fail with ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what or check!r}; last value: {last!r}")


def conf(bootstrap: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap}


def source_conf(lab: LabInfo) -> dict[str, str]:
    return conf(lab.source.bootstrap)


def target_conf(lab: LabInfo) -> dict[str, str]:
    return conf(lab.target.bootstrap)


def remote_topic(lab: LabInfo, topic: str) -> str:
    return topic if lab.replication_policy == "identity" else f"primary.{topic}"


def offset_syncs_location(lab: LabInfo) -> tuple[str, str]:
    """(bootstrap of the cluster holding the offset-syncs topic, its name) for the lab's setup."""
    if lab.offset_syncs_location == "target":
        return lab.target.bootstrap, "mm2-offset-syncs.primary.internal"
    return lab.source.bootstrap, "mm2-offset-syncs.backup.internal"


def consume_and_commit(bootstrap: str, topic: str, group: str, count: int, *, timeout_s: float = 30.0) -> int:
    """Consume ``count`` records of ``topic`` as ``group`` from the start, commit, and leave the group."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    seen = 0
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout_s
        while seen < count and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            seen += 1
            if seen == count:
                consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen
