"""A flow that comes to run with offset syncs disabled (KIP-1031, ``emit.offset-syncs.enabled=false``), on the
real lab: ``plan failover --from checkpoints`` and ``plan failback`` on it.

One flow mirrors a topic with its offset syncs and checkpoints on while groups commit on the source, and MM2
checkpoints them. Then the flow is reconfigured the way an operator turns offset syncs off: the
MirrorSourceConnector gets ``emit.offset-syncs.enabled=false`` (and none of its ``offset-syncs.topic.*``
settings, which MM2 refuses then), the MirrorCheckpointConnector goes (it cannot run without offset syncs),
and the MM2 file says the same. MM2 copies more records, writing no offset sync for them.

- ``--from checkpoints`` takes the checkpoints MM2 wrote before: each group's target offset is its newest
  checkpoint's downstream offset, read here from the checkpoints topic, and the record there is one the group
  had not passed on the source (it replays, never skips). A group that moved on since says so in the plan.
- ``plan failback`` translates the groups' positions on the target by timestamp, proven by content (the offset
  syncs the flow wrote before it was switched are not used): a consumer on the source reads next the record
  it reads next on the target, before and after the switch and at the end.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import connect_worker
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo, wait_for_connectors_running
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_failback import _record
from tests.integration.test_remediate import mm2ctl
from tests.reference_codecs import decode_checkpoint, decode_checkpoint_key

pytestmark = pytest.mark.integration

PARTITIONS = 2
BEFORE = 60  # records per partition mirrored with offset syncs on
AFTER = 40  # and with them off
VALUE = re.compile(rb"^\w+ p(\d+) #(\d+)$")


@dataclass
class Switched:
    lab: LabInfo
    flow: LabFlow  # as it runs now: offset syncs disabled, no checkpoint connector
    topic: str
    remote: str
    #: The source positions MM2 checkpointed while its offset syncs were on, per group.
    checkpointed: dict[str, dict[int, int]]

    @property
    def pair(self) -> str:
        return f"{self.flow.source_alias}->{self.flow.target_alias}"

    def group(self, what: str) -> str:
        return f"iso-{self.flow.source_alias.removesuffix('src')}-{what}"


def _checkpoints(lab: LabInfo, topic: str) -> dict[tuple[str, str, int], tuple[int, int]]:
    """(group, remote topic, partition) -> (upstream, downstream) of MM2's newest checkpoint of each."""
    out: dict[tuple[str, str, int], tuple[int, int]] = {}
    for r in records.read_partitions(target_conf(lab), topic, [0]):
        if r.value is None:
            out.pop(decode_checkpoint_key(r.key), None)
            continue
        cp = decode_checkpoint(r.key, r.value)
        out[(cp.group, cp.topic, cp.partition)] = (cp.upstream_offset, cp.downstream_offset)
    return out


def _copied(lab: LabInfo, remote: str, count: int) -> bool:
    got = KafkaAdmin.connect(target_conf(lab)).partition_bounds([(remote, p) for p in range(PARTITIONS)])
    return all(b.error is None and (b.latest or 0) >= count for b in got.values())


@pytest.fixture(scope="module")
def switched(lab_pool: Any) -> Iterator[Switched]:
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    name = "sw" + uuid.uuid4().hex[:8]
    topic = f"iso-{name}-t"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: PARTITIONS})
    flow = lab_core.add_flow(lab, name)  # every role: syncs and checkpoints on
    remote = f"{flow.source_alias}.{topic}"
    for p in range(PARTITIONS):
        records.produce(
            source_conf(lab), topic, [(b"k%d" % i, b"%s p%d #%d" % (name.encode(), p, i), p) for i in range(BEFORE)]
        )
    eventually(lambda: _copied(lab, remote, BEFORE), timeout_s=120, what=f"MM2 copied {topic}")
    prefix = f"iso-{name}-"
    checkpointed = {
        f"{prefix}g-early": {0: 10, 1: 37},
        f"{prefix}g-end": {0: BEFORE, 1: 45},
        f"{prefix}g-moved": {0: 20, 1: 20},
    }
    KafkaAdmin.connect(source_conf(lab)).alter_group_offsets(
        {g: {(topic, p): o for p, o in offsets.items()} for g, offsets in checkpointed.items()}
    )
    checkpoints_topic = f"{flow.source_alias}.checkpoints.internal"

    def all_checkpointed() -> bool:
        got = _checkpoints(lab, checkpoints_topic)
        return all(
            got.get((g, remote, p), (None,))[0] == o for g, offsets in checkpointed.items() for p, o in offsets.items()
        )

    eventually(all_checkpointed, timeout_s=180, interval_s=1, what="MM2's checkpoints of every group")

    # Offset syncs off: the source connector reconfigured, the checkpoint connector deleted, the file rewritten.
    # The source connector is stopped (its tasks gone, with every sync they had pending) before its new
    # configuration is put and it resumes, so no sync of the old tasks lands after ``syncs_end`` is read.
    settings = {"emit.offset-syncs.enabled": "false"}
    setup = lab_core.isolated_setup(lab, name, roles=("source", "heartbeat"), source_settings=settings)
    with build_connect_client([lab.connect_url]) as connect:
        connect.delete(flow.connectors["checkpoint"])
        source = setup.connector_names["source"]
        connect.stop(source)
        connect.wait_for_state(source, {"STOPPED"}, timeout=60)
        eventually(lambda: not connect.status(source).tasks, timeout_s=60, what=f"{source}'s tasks stopped")
        connect_worker.put_connector(lab.connect_url, source, setup.connector_configs()[source])
        connect.resume(source)
        wait_for_connectors_running(lab.connect_url, list(setup.connector_names.values()), timeout_s=120)
        disabled = Path(flow.mm2_config).with_name(f"mm2-{name}-no-syncs.properties")
        disabled.write_text(setup.mm2_properties())
        now = LabFlow(setup=setup, connectors=setup.connector_names, mm2_config=str(disabled))
        syncs = (source_conf(lab), f"mm2-offset-syncs.{flow.target_alias}.internal")
        syncs_end = _end(*syncs)
        # More records, mirrored without syncs; one group moves on past its last checkpoint.
        for p in range(PARTITIONS):
            records.produce(
                source_conf(lab), topic,
                [(b"k%d" % i, b"%s p%d #%d" % (name.encode(), p, i), p) for i in range(BEFORE, BEFORE + AFTER)],
            )  # fmt: skip
        KafkaAdmin.connect(source_conf(lab)).alter_group_offsets(
            {f"{prefix}g-moved": {(topic, p): BEFORE + 10 for p in range(PARTITIONS)}}
        )
        eventually(lambda: _copied(lab, remote, BEFORE + AFTER), timeout_s=120, what=f"MM2 copied more of {topic}")
        for connector in now.connectors.values():
            connect.stop(connector)
        for connector in now.connectors.values():
            connect.wait_for_state(connector, {"STOPPED"}, timeout=60)
    assert _end(*syncs) == syncs_end  # MM2 wrote no offset sync once they were disabled
    yield Switched(lab, now, topic, remote, checkpointed)


def _end(conf: dict[str, str], topic: str) -> int:
    return int(KafkaAdmin.connect(conf).partition_bounds([(topic, 0)])[(topic, 0)].latest or 0)


def _index(value: bytes | None) -> int | None:
    """Which source record (its index in its partition, which is its source offset) a value is a copy of."""
    if value is None:
        return None
    found = VALUE.match(value)
    assert found, value
    return int(found[2])


def test_failover_from_the_checkpoints_mm2_wrote_before_its_offset_syncs_were_disabled(
    switched: Switched, tmp_path: Path
) -> None:
    m = switched
    assert m.flow.setup.offset_syncs_disabled
    cps = _checkpoints(m.lab, f"{m.flow.source_alias}.checkpoints.internal")
    proc = mm2ctl(
        "plan", "failover", "--mm2-config", m.flow.mm2_config, "--pair", m.pair, "--groups", m.group("g-.*"),
        "--from", "checkpoints", "-o", str(tmp_path / "failover.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    assert proc.returncode == ExitCode.OK, proc.stdout + proc.stderr
    rows = json.loads(proc.stdout)["rows"]
    assert sorted((r["group"], r["partition"]) for r in rows) == sorted(
        (g, p) for g, offsets in m.checkpointed.items() for p in offsets
    )
    for r in rows:
        upstream, downstream = cps[(r["group"], m.remote, r["partition"])]
        assert (r["method"], r["target_offset"]) == ("checkpoint", downstream), r
        assert upstream == m.checkpointed[r["group"]][r["partition"]]
        assert ("the group is at" in r["detail"]) == r["group"].endswith("g-moved"), r
    applied = mm2ctl("apply", str(tmp_path / "failover.yaml"), "--auto-approve", state=tmp_path)
    assert applied.returncode == ExitCode.OK, applied.stderr
    target = KafkaAdmin.connect(target_conf(m.lab))
    for group, offsets in m.checkpointed.items():
        written = target.committed_offsets([group])[group].offsets
        for p, upstream in offsets.items():
            t = written[(m.remote, p)]
            assert t == cps[(group, m.remote, p)][1]
            # The consumer resumes on a copy of a record it had not passed when MM2 checkpointed it (or at the
            # end of the copies of what it had read): it replays, it never skips.
            copy = _index(_record(m.lab.target.bootstrap, m.remote, p, t))
            assert copy is None or copy <= upstream, (group, p, t, copy, upstream)
            assert copy is not None or upstream >= BEFORE + AFTER, (group, p, t)


def test_failback_on_a_flow_with_offset_syncs_disabled_lands_on_the_record_read_next(
    switched: Switched, tmp_path: Path
) -> None:
    m = switched
    src, dst = m.lab.source.bootstrap, m.lab.target.bootstrap
    # On the target: positions mirrored with syncs on, without them, and the end of what was mirrored.
    positions = {
        "gb-with": {0: 25, 1: 59},
        "gb-without": {0: BEFORE + 5, 1: BEFORE + AFTER - 1},
        "gb-end": {0: BEFORE + AFTER, 1: 0},
    }
    KafkaAdmin.connect(target_conf(m.lab)).alter_group_offsets(
        {m.group(g): {(m.remote, p): o for p, o in offsets.items()} for g, offsets in positions.items()}
    )
    proc = mm2ctl(
        "plan", "failback", "--mm2-config", m.flow.mm2_config, "--pair", m.pair, "--groups", m.group("gb-.*"),
        "-o", str(tmp_path / "failback.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    assert proc.returncode == ExitCode.OK, proc.stdout + proc.stderr
    doc = json.loads(proc.stdout)
    assert any("offset syncs are disabled" in n for n in doc["plan"]["notes"]), doc["plan"]["notes"]
    rows = doc["rows"]
    assert len(rows) == len(positions) * PARTITIONS, rows
    assert {r["method"] for r in rows} == {"timestamp_verified"}, rows
    applied = mm2ctl("apply", str(tmp_path / "failback.yaml"), "--auto-approve", state=tmp_path)
    assert applied.returncode == ExitCode.OK, applied.stderr
    source = KafkaAdmin.connect(source_conf(m.lab))
    for g, offsets in positions.items():
        group = m.group(g)
        on_a = source.committed_offsets([group])[group].offsets
        for p, b_offset in offsets.items():
            here = _record(dst, m.remote, p, b_offset)
            there = _record(src, m.topic, p, on_a[(m.topic, p)])
            assert here == there, (group, p, b_offset, on_a)  # the record the group reads next, on both
    end = m.group("gb-end")
    assert source.committed_offsets([end])[end].offsets[(m.topic, 0)] == BEFORE + AFTER
