"""Dedicated-mode MirrorMaker 2 (``connect-mirror-maker.sh``): a real ``MirrorMaker`` process on the lab.

It has no REST API: its connector offsets live in ``mm2-offsets.<source>.internal`` on the target and its
workers form the ``<source>-mm2`` group there. mm2ctl must refuse to touch those offsets while that group
has members, and once the process is gone its tombstones must make a restarted MM2 replicate from the start.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.connect_offsets_topic import latest_offsets
from mm2ctl.inspector.reads.mm2_position import read_position
from mm2ctl.lab import dedicated_mm2
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.dedicated_mm2 import DedicatedMm2
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration

NAME = "ded"
TOPIC = f"iso-{NAME}-orders"


@pytest.fixture
def mm2(lab: LabInfo) -> Iterator[list[DedicatedMm2]]:
    """The dedicated MM2 of this test, as a one-element holder so the test can swap in restarted ones;
    whatever is running at the end is stopped."""
    holder = [dedicated_mm2.create_dedicated_mm2(lab, NAME)]
    try:
        yield holder
    finally:
        if holder[0].pid is not None:
            dedicated_mm2.stop(holder[0])


def stored(lab: LabInfo, m: DedicatedMm2) -> dict[tuple[int, str], str | None]:
    """(partition, key) -> newest value of MirrorSourceConnector's records in the dedicated offsets topic."""
    return {
        (s.partition, base64.b64encode(s.key).decode()): None if s.value is None else s.value.decode()
        for s in latest_offsets(target_conf(lab), m.offsets_topic, "MirrorSourceConnector")
    }


def topic_offsets(lab: LabInfo, m: DedicatedMm2) -> list[str]:
    """The stored offsets of this test's topic only, by partition. MM2 replicates every ``heartbeats``
    topic of the source whatever its topic filter says, and the shared lab's source cluster holds one once
    any earlier test ran a flow into it, so the offsets topic may hold those keys too."""
    mine = [
        s
        for s in latest_offsets(target_conf(lab), m.offsets_topic, "MirrorSourceConnector")
        if (s.source_partition or {}).get("topic") == TOPIC
    ]
    return [
        s.value.decode() if s.value is not None else ""
        for s in sorted(mine, key=lambda s: (s.source_partition or {}).get("partition", -1))
    ]


def target_ends(lab: LabInfo, remote: str) -> list[int | None]:
    admin = KafkaAdmin.connect(target_conf(lab))
    if remote not in admin.list_topics():
        return []
    bounds = admin.partition_bounds([(remote, 0), (remote, 1)])
    return [bounds[(remote, p)].latest for p in (0, 1)]


def test_dedicated_mm2_refused_while_running_then_tombstone_reset(
    lab: LabInfo, mm2: list[DedicatedMm2], tmp_path: Path
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    m = mm2[0]
    pair = f"{m.source_alias}->{m.target_alias}"
    remote = f"{m.source_alias}.{TOPIC}"
    KafkaAdmin.connect(source_conf(lab)).create_topics({TOPIC: 2})
    records.produce(source_conf(lab), TOPIC, [(b"k%d" % i, b"v%d" % i, i % 2) for i in range(12)])
    m = mm2[0] = dedicated_mm2.start(m)
    eventually(lambda: target_ends(lab, remote) == [6, 6], timeout_s=90, what="dedicated MM2 replicated")
    seen: list[object] = []

    def committed() -> bool:
        seen[:] = [stored(lab, m)]
        return topic_offsets(lab, m) == ['{"offset":5}'] * 2

    try:
        eventually(committed, timeout_s=120, what="dedicated MM2 committed its source offsets")
    except AssertionError as exc:  # say what the offsets topic held and what MM2 logged last
        tail = Path(m.log_file).read_text(errors="replace").splitlines()[-40:]
        raise AssertionError(f"{exc}; {m.offsets_topic} holds {seen}; MM2 log tail:\n" + "\n".join(tail)) from None
    before = stored(lab, m)
    # inspect reads MM2's position from the same topic, with no Connect worker.
    config = load_mm2_config(m.mm2_config)
    position = read_position(config, config.pair(pair), None)
    assert position.read_from == f"MirrorSourceConnector's records in {m.offsets_topic} on {m.target_alias}"
    assert {tp: n for tp, n in (position.next_offsets or {}).items() if tp[0] == TOPIC} == {
        (TOPIC, 0): 6,
        (TOPIC, 1): 6,
    }

    plan = state_dir / "ded.yaml"
    args = ("plan", "reset-connector-offsets", "--pair", pair, "--mm2-config", m.mm2_config, "--out", str(plan))
    refused = mm2ctl(*args, state=state_dir)  # no --connect-url: dedicated mode
    assert refused.returncode == 7, refused.stderr
    assert f"worker group {m.group_id} on {m.target_alias} has 1 member(s)" in refused.stderr
    assert not plan.exists()

    m = mm2[0] = dedicated_mm2.stop(m)
    r = mm2ctl(*args, state=state_dir)
    assert r.returncode == 0, r.stderr
    assert "connect_offsets_tombstone" in r.stdout and m.offsets_topic in r.stdout
    journal = state_dir / "ded.jsonl"
    a = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(journal), state=state_dir)
    assert a.returncode == 0, a.stderr
    assert stored(lab, m).keys() == before.keys() and set(stored(lab, m).values()) == {None}

    rb = mm2ctl("rollback", str(journal), "--auto-approve", state=state_dir)  # the exact records again
    assert rb.returncode == 0, rb.stderr
    assert stored(lab, m) == before
    again = state_dir / "again.jsonl"
    a = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(again), state=state_dir)
    assert a.returncode == 0, a.stderr  # the rollback left exactly the state the plan was made from

    # Restarted, MM2 finds no offsets and replicates every partition again from the start.
    m = mm2[0] = dedicated_mm2.start(m)
    eventually(lambda: target_ends(lab, remote) == [12, 12], timeout_s=90, what="re-replication from the start")
    first = [r.value for r in records.read_partitions(target_conf(lab), remote, [0], end={0: 6})]
    second = [r.value for r in records.read_partitions(target_conf(lab), remote, [0], start={0: 6}, end={0: 12})]
    assert first == second == [b"v%d" % i for i in range(0, 12, 2)]

    # Rolling back under a running dedicated MM2 is refused: its workers would overwrite the restore.
    rb = mm2ctl("rollback", str(again), "--auto-approve", state=state_dir)
    assert rb.returncode == 8, rb.stderr
    assert f"group {m.group_id} on {m.target_alias} has 1 member(s)" in rb.stderr
