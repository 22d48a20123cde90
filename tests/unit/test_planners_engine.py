"""Planner and engine logic with fakes passed in (no lab): step ordering, method choice, dry run, refusal
order, resume of an in-progress step.

``LiveState`` is the real reader; only its clients are fakes: a Connect client that keeps connector
states and offsets in memory (and records every call), and an admin facade for cluster ids, partition
bounds and groups. Offsets-topic reads (tombstone method) are the one Kafka read ``LiveState`` does without
the admin facade, so ``FakeLive`` serves them from memory.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.connect_client import ConnectorOffset, ConnectorOffsets, ConnectorStatus, ServerInfo
from mm2ctl.connect_client.models import ConnectorInfo, ConnectorOverview, TaskStatus
from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.errors import ConnectNotFoundError, ForeignPlanError, PlanError, PreconditionError, StalePlanError
from mm2ctl.core.kafka.admin import GroupDescription, PartitionBounds
from mm2ctl.core.kafka.connect_offsets_topic import StoredOffset
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.planners import Action, Method, PartitionSelection, PlanBuilder, plan_connectors, plan_reset_mm2
from mm2ctl.plans.planners.reset_mm2 import plan_truncate_offset_syncs
from mm2ctl.plans.planners.reset_offsets import plan_reset_connector_offsets
from mm2ctl.plans.serialize import dump_plan, load_plan
from mm2ctl.plans.steps import StepKind
from mm2ctl.remediate import engine
from mm2ctl.remediate.journal import Journal

SRC = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CKP = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
HBT = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"

MM2_TEXT = """
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


def _mm2(tmp_path: Path) -> Any:
    path = tmp_path / "mm2.properties"
    path.write_text(MM2_TEXT)
    return mm2_config_from_text(MM2_TEXT, path=str(path))


@dataclass
class FakeConnect:
    version: str = "4.3.1"
    cluster_id: str = "cid-B"
    urls: list[str] = field(default_factory=lambda: ["http://connect:8083"])
    states: dict[str, str] = field(default_factory=dict)
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    offsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def add(self, name: str, cls: str, state: str = "RUNNING", offsets: list[dict[str, Any]] | None = None) -> None:
        self.states[name] = state
        self.configs[name] = {
            "connector.class": cls,
            "source.cluster.alias": "A",
            "target.cluster.alias": "B",
            "tasks.max": "1",
        }
        self.offsets[name] = list(offsets or [])

    # reads
    def server_info(self) -> ServerInfo:
        return ServerInfo(version=self.version, kafka_cluster_id=self.cluster_id)

    def list_connectors(self, **_kw: Any) -> dict[str, ConnectorOverview]:
        return {
            n: ConnectorOverview(n, self.status(n), ConnectorInfo(n, dict(self.configs[n]), (0,), "source"))
            for n in self.states
        }

    def status(self, name: str, **_kw: Any) -> ConnectorStatus:
        if name not in self.states:
            raise ConnectNotFoundError(f"connector {name} not found")
        state = self.states[name]
        tasks = () if state == "STOPPED" else (TaskStatus(0, state, "w1"),)
        return ConnectorStatus(name, state, "w1", tasks, "source")

    def config(self, name: str, **_kw: Any) -> dict[str, str]:
        self.status(name)
        return dict(self.configs[name])

    def get_offsets(self, name: str, **_kw: Any) -> ConnectorOffsets:
        self.status(name)
        return ConnectorOffsets.of([ConnectorOffset(o["partition"], o["offset"]) for o in self.offsets[name]])

    def wait_for_state(self, name: str, states: Collection[str], **_kw: Any) -> ConnectorStatus:
        status = self.status(name)
        assert status.state in states, f"{name} is {status.state}, not {states}"
        return status

    # writes
    def _write(self, op: str, name: str) -> None:
        self.calls.append((op, name))

    def stop(self, name: str, **_kw: Any) -> None:
        self._write("stop", name)
        self.states[name] = "STOPPED"

    def pause(self, name: str, **_kw: Any) -> None:
        self._write("pause", name)
        self.states[name] = "PAUSED"

    def resume(self, name: str, **_kw: Any) -> None:
        self._write("resume", name)
        self.states[name] = "RUNNING"

    def restart(self, name: str, **_kw: Any) -> None:
        self._write("restart", name)

    def delete_offsets(self, name: str, **_kw: Any) -> str:
        self._write("delete_offsets", name)
        assert self.states[name] == "STOPPED"
        self.offsets[name] = []
        return "reset"

    def patch_offsets(self, name: str, offsets: list[ConnectorOffset], **_kw: Any) -> str:
        self._write("patch_offsets", name)
        assert self.states[name] == "STOPPED"
        current = {json.dumps(o["partition"], sort_keys=True): o for o in self.offsets[name]}
        for o in offsets:
            key = json.dumps(o.partition, sort_keys=True)
            if o.offset is None:
                current.pop(key, None)
            else:
                current[key] = {"partition": o.partition, "offset": o.offset}
        self.offsets[name] = list(current.values())
        return "altered"


@dataclass
class FakeAdmin:
    cluster: str
    ids: dict[str, str]
    bounds: dict[tuple[str, str, int], tuple[int, int]]
    members: dict[tuple[str, str], int]

    def cluster_id(self) -> str:
        return self.ids[self.cluster]

    def partition_bounds(self, tps: Any) -> dict[tuple[str, int], PartitionBounds]:
        out = {}
        for topic, p in tps:
            start, end = self.bounds.get((self.cluster, topic, p), (0, 0))
            out[(topic, p)] = PartitionBounds(topic, p, start, end)
        return out

    def describe_groups(self, groups: Any) -> dict[str, GroupDescription]:
        return {g: GroupDescription(g, "Stable", self.members.get((self.cluster, g), 0)) for g in groups}

    def authorized_operations(self, *, topics: Any = (), groups: Any = ()) -> dict[tuple[str, str], None]:
        # A cluster without an authorizer says nothing about operations: nothing is refused.
        return {**{("topic", t): None for t in topics}, **{("group", g): None for g in groups}}


class FakeLive(LiveState):
    """The real reader with fake clients; stored offsets (tombstone method) come from ``stored``."""

    stored: dict[str, list[StoredOffset]]

    def stored_offsets(self, cluster: str, topic: str, connector: str) -> list[StoredOffset]:
        return [s for s in self.stored.get(connector, []) if s.value is not None]

    def all_stored_offsets(self, cluster: str, topic: str, connector: str) -> list[StoredOffset]:
        return list(self.stored.get(connector, []))


@dataclass
class World:
    connect: FakeConnect
    ids: dict[str, str]
    bounds: dict[tuple[str, str, int], tuple[int, int]]
    members: dict[tuple[str, str], int]
    mm2: Any
    stored: dict[str, list[StoredOffset]] = field(default_factory=dict)

    def live(self, *, dedicated: bool = False) -> FakeLive:
        live = FakeLive(
            mm2=self.mm2,
            connect=None if dedicated else self.connect,  # type: ignore[arg-type]
            admin_factory=lambda _conf, name: FakeAdmin(name, self.ids, self.bounds, self.members),  # type: ignore[arg-type,return-value]
        )
        live.stored = self.stored
        return live

    def builder(self, kind: PlanKind = PlanKind.CONNECTORS, *, dedicated: bool = False) -> PlanBuilder:
        return PlanBuilder(self.live(dedicated=dedicated), kind)


def _offset(topic: str, p: int, n: int) -> dict[str, Any]:
    return {"partition": {"cluster": "A", "partition": p, "topic": topic}, "offset": {"offset": n}}


@pytest.fixture
def world(tmp_path: Path) -> World:
    connect = FakeConnect()
    connect.add("ab-source", SRC, offsets=[_offset("orders", 0, 5), _offset("orders", 1, 7)])
    connect.add("ab-checkpoint", CKP)
    connect.add("ab-heartbeat", HBT)
    connect.add("other", "org.example.Other")
    return World(
        connect=connect,
        ids={"A": "cid-A", "B": "cid-B"},
        bounds={("A", "mm2-offset-syncs.B.internal", 0): (0, 42)},
        members={},
        mm2=_mm2(tmp_path),
    )


def kinds(plan: Plan) -> list[tuple[str, str]]:
    return [(s.kind.value, getattr(s.target, "connector", getattr(s.target, "topic", ""))) for s in plan.steps]


# ------------------------------------------------------------------------------------------- planners


def test_reset_mm2_orders_halt_truncate_reset_resume(world: World) -> None:
    plan = plan_reset_mm2(world.builder(PlanKind.RESET_MM2), "A->B")
    assert kinds(plan) == [
        ("connector_stop", "ab-source"),
        ("connector_stop", "ab-checkpoint"),
        ("connector_stop", "ab-heartbeat"),
        ("offset_syncs_backup", "mm2-offset-syncs.B.internal"),
        ("offset_syncs_truncate", "mm2-offset-syncs.B.internal"),
        ("connect_offsets_delete", "ab-source"),  # the only connector with stored offsets
        ("connector_resume", "ab-source"),
        ("connector_resume", "ab-checkpoint"),
        ("connector_resume", "ab-heartbeat"),
    ]
    truncate = plan.steps[4]
    assert truncate.payload.before_offset == 42 and not truncate.reversible  # type: ignore[union-attr]
    assert plan.clusters == {"A": "cid-A", "B": "cid-B"}
    assert world.connect.calls == []  # planning never writes


def test_reset_mm2_leaves_a_paused_connector_paused(world: World) -> None:
    world.connect.states["ab-heartbeat"] = "PAUSED"
    plan = plan_reset_mm2(world.builder(PlanKind.RESET_MM2), "A->B")
    assert kinds(plan)[-1] == ("connector_pause", "ab-heartbeat")


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("4.3.1", ["connector_stop", "connect_offsets_delete", "connector_resume"]),  # auto -> rest
        ("3.6.0", ["connector_stop", "connect_offsets_delete", "connector_resume"]),
        ("3.5.1", ["connector_stop", "connect_offsets_tombstone", "connector_resume"]),  # stop, no PATCH/DELETE
        ("3.4.1", ["connector_delete", "connect_offsets_tombstone", "connector_create"]),  # no stop either
    ],
)
def test_auto_method_follows_the_connect_version(world: World, version: str, expected: list[str]) -> None:
    world.connect.version = version
    key = json.dumps(["ab-source", {"cluster": "A", "partition": 0, "topic": "orders"}]).encode()
    world.stored["ab-source"] = [StoredOffset(partition=3, offset=10, key=key, value=b'{"offset":5}')]
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"], method=Method.AUTO)
    assert [k for k, _ in kinds(plan)] == expected
    if "connect_offsets_tombstone" in expected:
        step = plan.steps[1]
        (rec,) = step.payload.records  # type: ignore[union-attr]
        assert rec.partition == 3 and base64.b64decode(rec.key_b64) == key  # where it was read, byte-exact
        assert step.target.cluster == "B"  # type: ignore[union-attr]  # the worker's Kafka cluster id


def test_rest_method_refused_before_3_6(world: World) -> None:
    world.connect.version = "3.5.1"
    with pytest.raises(PlanError, match=r"needs 3\.6"):
        plan_reset_connector_offsets(world.builder(), connectors=["ab-source"], method=Method.REST)


def test_explicit_positions_become_a_patch_of_position_minus_one(world: World) -> None:
    plan = plan_reset_connector_offsets(
        world.builder(),
        connectors=["ab-source"],
        selection=PartitionSelection(positions={("orders", 0): 2, ("orders", 1): 0}),
    )
    assert [k for k, _ in kinds(plan)] == ["connector_stop", "connect_offsets_patch", "connector_resume"]
    patch = {o.partition["partition"]: o.offset for o in plan.steps[1].payload.offsets}  # type: ignore[union-attr]
    assert patch == {0: {"offset": 1}, 1: None}  # position 0 = "from the beginning" = no stored offset


def test_connectors_plan_skips_connectors_already_there(world: World) -> None:
    world.connect.states["ab-checkpoint"] = "STOPPED"
    plan = plan_connectors(world.builder(), Action.STOP, pair="A->B", roles=("source", "checkpoint"))
    assert kinds(plan) == [("connector_stop", "ab-source")]
    noop = plan_connectors(world.builder(), Action.STOP, connectors=["ab-checkpoint"])
    assert noop.steps == () and any("nothing to do" in n for n in noop.notes)
    with pytest.raises(PlanError, match="does not exist"):
        plan_connectors(world.builder(), Action.STOP, connectors=["nope"])


def test_truncate_refused_while_the_source_connector_runs(world: World) -> None:
    with pytest.raises(PlanError, match="ab-source is RUNNING; truncating offset-syncs needs it STOPPED"):
        plan_truncate_offset_syncs(world.builder(), "A->B")
    world.connect.states["ab-source"] = "STOPPED"
    plan = plan_truncate_offset_syncs(world.builder(), "A->B")
    assert [k for k, _ in kinds(plan)] == ["offset_syncs_backup", "offset_syncs_truncate"]


def test_dedicated_mode_refused_while_its_worker_group_has_members(world: World) -> None:
    key = json.dumps(["MirrorSourceConnector", {"cluster": "A", "partition": 0, "topic": "orders"}]).encode()
    world.stored["MirrorSourceConnector"] = [StoredOffset(partition=7, offset=10, key=key, value=b'{"offset":5}')]
    world.members[("B", "A-mm2")] = 2
    with pytest.raises(PlanError, match="worker group A-mm2 on B has 2 member"):
        plan_reset_connector_offsets(world.builder(dedicated=True), pair="A->B")
    world.members[("B", "A-mm2")] = 0
    plan = plan_reset_connector_offsets(world.builder(dedicated=True), pair="A->B")
    (step,) = plan.steps
    assert step.kind is StepKind.CONNECT_OFFSETS_TOMBSTONE and plan.connect is None
    assert step.target.topic == "mm2-offsets.A.internal" and step.target.cluster == "B"  # type: ignore[union-attr]
    with pytest.raises(PlanError, match="dedicated MM2 has no REST API"):
        plan_reset_connector_offsets(world.builder(dedicated=True), pair="A->B", method=Method.REST)


def test_mm2_config_field_round_trips(world: World) -> None:
    plan = plan_reset_mm2(world.builder(PlanKind.RESET_MM2), "A->B")
    assert plan.mm2_config == world.mm2.path
    again = load_plan(dump_plan(plan))
    assert again == plan and again.mm2_config == world.mm2.path


# ------------------------------------------------------------------------------------------- engine


def test_dry_run_checks_every_step_and_never_writes(world: World) -> None:
    plan = plan_reset_mm2(world.builder(PlanKind.RESET_MM2), "A->B")
    result = engine.dry_run(plan, world.live())
    assert result.dry_run and result.journal is None
    assert result.changes == sum(s.writes for s in plan.steps) == len(plan.steps) - 1  # the backup only reads
    assert world.connect.calls == []  # the simulated stops let the later steps' preconditions pass


def test_foreign_is_reported_before_stale(world: World) -> None:
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"])
    world.connect.offsets["ab-source"][0] = _offset("orders", 0, 99)  # stale ...
    world.connect.cluster_id = "another-cluster"  # ... and foreign: foreign wins
    with pytest.raises(ForeignPlanError, match="the Connect worker belongs to Kafka cluster another-cluster"):
        engine.dry_run(plan, world.live())
    world.connect.cluster_id = "cid-B"
    with pytest.raises(StalePlanError):
        engine.dry_run(plan, world.live())
    assert world.connect.calls == []


def test_apply_then_rollback_restores_offsets_and_states(world: World, tmp_path: Path) -> None:
    before = [dict(o) for o in world.connect.offsets["ab-source"]]
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"])
    journal = tmp_path / "j.jsonl"
    engine.apply_plan(plan, world.live(), journal_path=journal, state_dir=tmp_path)
    assert [op for op, _ in world.connect.calls] == ["stop", "delete_offsets", "resume"]
    assert world.connect.offsets["ab-source"] == [] and world.connect.states["ab-source"] == "RUNNING"
    world.connect.calls.clear()
    engine.rollback(journal, world.live(), state_dir=tmp_path)
    assert [op for op, _ in world.connect.calls] == ["stop", "patch_offsets", "resume"]
    assert sorted(world.connect.offsets["ab-source"], key=lambda o: o["partition"]["partition"]) == before


class Recorder:
    """A counting progress reporter: what a terminal would be told."""

    def __init__(self) -> None:
        self.messages: list[str] = []
        self.counts: list[tuple[str, int, int]] = []

    def __call__(self, message: str) -> None:
        self.messages.append(message)

    def count(self, phase: str, done: int, total: int) -> None:
        self.counts.append((phase, done, total))


def test_apply_dry_run_and_rollback_count_their_steps(world: World, tmp_path: Path) -> None:
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"])
    n = len(plan.steps)
    checked = Recorder()
    engine.dry_run(plan, world.live(), progress=checked)
    assert checked.counts == [(engine.DRY_RUN_PHASE, i, n) for i in range(n + 1)]

    applied, journal = Recorder(), tmp_path / "j.jsonl"
    engine.apply_plan(plan, world.live(), journal_path=journal, state_dir=tmp_path, progress=applied)
    assert applied.counts == [(engine.APPLY_PHASE, i, n) for i in range(n + 1)]
    assert len(applied.messages) >= n  # a message per step besides the counts

    undone = Recorder()
    engine.rollback(journal, world.live(), state_dir=tmp_path, progress=undone)
    assert undone.counts == [(engine.ROLLBACK_PHASE, i, n) for i in range(n + 1)]


def test_a_plain_callable_hears_the_messages_and_no_counts(world: World, tmp_path: Path) -> None:
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"])
    lines: list[str] = []
    engine.apply_plan(plan, world.live(), journal_path=tmp_path / "j.jsonl", state_dir=tmp_path, progress=lines.append)
    assert lines and all(isinstance(line, str) for line in lines)


def test_resume_marks_an_in_progress_step_whose_effect_is_present(world: World, tmp_path: Path) -> None:
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"])
    journal = tmp_path / "j.jsonl"
    # The process died after DELETE /offsets went through but before its completion was journaled.
    with Journal.create(journal, plan) as j:
        j.step_started(0, before={"state": "RUNNING"})
        j.step_completed(0, outcome="applied", after={"state": "STOPPED"})
        j.step_started(1, before={"offsets": world.connect.offsets["ab-source"]})
    world.connect.states["ab-source"] = "STOPPED"
    world.connect.offsets["ab-source"] = []
    result = engine.resume_apply(journal, world.live(), state_dir=tmp_path)
    assert result.steps[0] == "step 1 (connect_offsets_delete): already applied"
    assert world.connect.calls == [("resume", "ab-source")]  # the DELETE was not sent twice
    with Journal.open(journal) as j:
        assert j.state.apply_status == "succeeded" and j.state.completed_steps == (0, 1, 2)


def test_apply_stops_at_a_failed_precondition_and_says_how_to_go_on(world: World, tmp_path: Path) -> None:
    plan = plan_reset_connector_offsets(world.builder(), connectors=["ab-source"])
    journal = tmp_path / "j.jsonl"
    with Journal.create(journal, plan) as j:
        j.step_started(0, before={"state": "RUNNING"})
        j.step_completed(0, outcome="applied", after={"state": "STOPPED"})
    world.connect.states["ab-source"] = "RUNNING"  # someone resumed it: the DELETE must not run
    with pytest.raises(Exception) as info:
        engine.resume_apply(journal, world.live(), state_dir=tmp_path)
    assert "ab-source is RUNNING, expected STOPPED" in str(info.value) and "rollback" in str(info.value)
    assert info.value.exit_code == PreconditionError("x").exit_code  # type: ignore[attr-defined]
    assert "delete_offsets" not in {op for op, _ in world.connect.calls}


def test_restart_waits_for_the_announced_restart_before_trusting_running(world: World, tmp_path: Path) -> None:
    """Connect answers 202 "RESTARTING" while the status topic still says RUNNING for a moment."""
    seen: list[str] = []
    statuses = iter(["RUNNING", "RUNNING", "RESTARTING", "RUNNING"])
    real_status = world.connect.status

    def restart(name: str, **_kw: Any) -> ConnectorStatus:
        world.connect.calls.append(("restart", name))
        return ConnectorStatus(name, "RESTARTING", "w1", (TaskStatus(0, "RESTARTING", "w1"),), "source")

    def status(name: str, **kw: Any) -> ConnectorStatus:
        if world.connect.calls:  # after the restart call: the status catches up only later
            state = next(statuses, "RUNNING")
            seen.append(state)
            return ConnectorStatus(name, state, "w1", (TaskStatus(0, state, "w1"),), "source")
        return real_status(name, **kw)

    world.connect.restart = restart  # type: ignore[method-assign]
    world.connect.status = status  # type: ignore[method-assign]
    plan = plan_connectors(world.builder(), Action.RESTART, connectors=["ab-source"])
    engine.apply_plan(plan, world.live(), journal_path=tmp_path / "j.jsonl", state_dir=tmp_path)
    assert "RESTARTING" in seen and seen.index("RESTARTING") < len(seen) - 1  # RUNNING trusted only after it


# ------------------------------------------------------------------------------------ concurrent stops


def _stop_plan(world: World) -> Plan:
    plan = plan_connectors(world.builder(), Action.STOP, connectors=["ab-source", "ab-checkpoint", "ab-heartbeat"])
    assert [k for k, _ in kinds(plan)] == ["connector_stop"] * 3
    return plan


def test_a_run_of_stops_is_sent_side_by_side_and_journaled_per_step(world: World, tmp_path: Path) -> None:
    """Each stop waits at a barrier until all three requests have arrived: one at a time, the first would
    wait for the others for ever (the barrier's timeout breaks it, and the apply fails)."""
    import threading

    barrier = threading.Barrier(3, timeout=10)
    real_stop = world.connect.stop

    def stop(name: str, **kw: Any) -> None:
        barrier.wait()
        real_stop(name, **kw)

    world.connect.stop = stop  # type: ignore[method-assign]
    plan = _stop_plan(world)
    journal = tmp_path / "j.jsonl"
    engine.apply_plan(plan, world.live(), journal_path=journal, state_dir=tmp_path)
    stopped = sorted(n for op, n in world.connect.calls if op == "stop")
    assert stopped == ["ab-checkpoint", "ab-heartbeat", "ab-source"]
    assert {world.connect.states[n] for n in ("ab-source", "ab-checkpoint", "ab-heartbeat")} == {"STOPPED"}
    with Journal.open(journal) as j:
        assert j.state.apply_status == "succeeded" and j.state.completed_steps == (0, 1, 2)
        assert {j.state.steps[i].before["state"] for i in range(3)} == {"RUNNING"}  # type: ignore[index]
    world.connect.calls.clear()
    engine.rollback(journal, world.live(), state_dir=tmp_path)
    resumed = sorted(n for op, n in world.connect.calls if op == "resume")
    assert resumed == ["ab-checkpoint", "ab-heartbeat", "ab-source"]


def test_a_stop_run_with_a_failed_precondition_goes_one_at_a_time(world: World, tmp_path: Path) -> None:
    """The second connector was paused by hand after the apply began (a resumed apply does not refuse the
    plan as stale): the first is stopped, then the apply ends at the second with the precondition's exit
    code, as one step at a time always did; the third is not sent."""
    plan = _stop_plan(world)
    journal = tmp_path / "j.jsonl"
    with Journal.create(journal, plan):
        pass  # the apply began: nothing started yet
    world.connect.states["ab-checkpoint"] = "PAUSED"
    with pytest.raises(Exception) as info:
        engine.resume_apply(journal, world.live(), state_dir=tmp_path)
    assert "step 1" in str(info.value)
    assert info.value.exit_code == PreconditionError("x").exit_code  # type: ignore[attr-defined]
    assert world.connect.calls == [("stop", "ab-source")]


def test_a_failed_stop_of_a_run_journals_every_outcome(world: World, tmp_path: Path) -> None:
    real_stop = world.connect.stop

    def stop(name: str, **kw: Any) -> None:
        if name == "ab-checkpoint":
            raise ConnectNotFoundError("connector ab-checkpoint not found")
        real_stop(name, **kw)

    world.connect.stop = stop  # type: ignore[method-assign]
    plan = _stop_plan(world)
    journal = tmp_path / "j.jsonl"
    with pytest.raises(Exception) as info:
        engine.apply_plan(plan, world.live(), journal_path=journal, state_dir=tmp_path)
    assert "step 1 (connector_stop) failed" in str(info.value) and "resume with" in str(info.value)
    with Journal.open(journal) as j:
        assert j.state.completed_steps == (0, 2) and j.state.apply_status == "failed"
    # Resume runs the failed step again, alone, once the connector can be stopped.
    world.connect.stop = real_stop  # type: ignore[method-assign]
    engine.resume_apply(journal, world.live(), state_dir=tmp_path)
    assert world.connect.states["ab-checkpoint"] == "STOPPED"
