"""The scenario ``mm2ctl demo`` runs on a lab: traffic and consumer groups, some healthy and some broken in the
ways a failover goes wrong, on an isolated MM2 flow so a running lab's own connectors are never touched.

The groups (all on one two-partition topic whose head retention deleted before MM2 started, so source and
target offsets differ by ``DELETED``):

- ``healthy``: consumed on the source; MM2 syncs it to the target. ``inspect`` says synced.
- ``raw-copy``: someone copied the source offset *numbers* to the target (replication without translation):
  the target is ahead, a failover now skips records. ``plan failover --allow-rewind`` moves it back.
- ``below-start``: committed below the source's log start (the records it would read are gone); nothing
  can translate it, and the plan says so instead of guessing.
- ``late``: created while the checkpoint connector was stopped, so MM2 never checkpointed or synced it.

Never prints; ``progress`` gets one line per stage.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.errors import KafkaClusterError, Mm2ctlError
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.polling import poll_until
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo

RECORDS = 200
DELETED = 50


@dataclass(frozen=True)
class DemoScenario:
    flow: LabFlow
    pair: str
    topic: str
    remote_topic: str
    groups: dict[str, str]


def _wait(check: Callable[[], bool], what: str, timeout_s: float = 90.0) -> None:
    if not poll_until(check, timeout_s=timeout_s, interval_s=0.5):
        raise KafkaClusterError(f"demo: timed out after {timeout_s:.0f}s waiting for {what}")


def build_scenario(info: LabInfo, progress: Progress = no_progress) -> DemoScenario:
    """Create the topic, the flow and the four groups; wait until MM2 has done what it will do for them."""
    name = "demo" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-orders"
    groups = {k: f"iso-{name}-{k}" for k in ("healthy", "raw-copy", "below-start", "late")}
    src = KafkaAdmin.connect({"bootstrap.servers": info.source.bootstrap}, name="source")
    dst = KafkaAdmin.connect({"bootstrap.servers": info.target.bootstrap}, name="target")
    progress(f"producing {RECORDS} records to {topic}; retention deletes the first {DELETED} per partition")
    src.create_topics({topic: 2})
    records.produce(
        {"bootstrap.servers": info.source.bootstrap},
        topic,
        [(b"k%d" % i, b"order %d" % i, i % 2) for i in range(RECORDS)],
    )
    per_partition = RECORDS // 2
    src.delete_records({(topic, p): DELETED for p in range(2)})
    progress(f"creating MM2 flow {name}src->{name}dst on the lab's Connect worker")
    flow = lab_core.add_flow(info, name)
    pair = f"{flow.source_alias}->{flow.target_alias}"
    remote = topic if info.replication_policy == "identity" else f"{flow.source_alias}.{topic}"

    def copied() -> bool:
        b = dst.partition_bounds([(remote, p) for p in range(2)])
        return all(v.error is None and v.latest == per_partition - DELETED for v in b.values())

    _wait(copied, "MM2 to copy the topic")

    def commit(group: str, offsets: dict[int, int], admin: KafkaAdmin = src, t: str = topic) -> None:
        res = admin.alter_group_offsets({group: {(t, p): o for p, o in offsets.items()}})[group]
        if any(r.error is not None for r in res):
            raise KafkaClusterError(f"demo: committing {group}: {res}")

    progress("groups: healthy, raw-copy (source numbers on the target), below-start, late (no checkpoints)")
    commit(groups["healthy"], {0: 80, 1: 70})
    commit(groups["raw-copy"], {0: 90, 1: 85})
    commit(groups["below-start"], {0: 10, 1: 20})

    def synced(group: str) -> bool:
        got = dst.committed_offsets([group])[group].offsets
        return len(got) == 2

    _wait(lambda: synced(groups["healthy"]), "MM2 to sync the healthy group")
    # The raw copy: the source's numbers written to the target before MM2 got to it (MM2 only moves forward).
    commit(groups["raw-copy"], {0: 90, 1: 85}, dst, remote)
    checkpoint = flow.connectors.get("checkpoint")
    if checkpoint is not None:
        with build_connect_client([info.connect_url]) as connect:
            connect.stop(checkpoint)
            connect.wait_for_state(checkpoint, ["STOPPED"], timeout=60)
    commit(groups["late"], {0: 60, 1: 95})
    return DemoScenario(flow=flow, pair=pair, topic=topic, remote_topic=remote, groups=groups)


def remove_flow(info: LabInfo, scenario: DemoScenario, progress: Progress = no_progress) -> None:
    """Delete the demo flow's connectors from a lab the demo did not start (its topics keep unique names)."""
    with build_connect_client([info.connect_url]) as connect:
        for c in scenario.flow.connectors.values():
            try:
                connect.delete(c)
            except Mm2ctlError:
                progress(f"could not delete connector {c}; delete it by hand")
