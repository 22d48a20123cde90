"""``mm2ctl plan reset-connector-offsets``: reset or set a connector's source offsets, by REST or tombstones.

Methods (docs/design.md, "Connect offsets"):

- ``rest`` (Connect >= 3.6): stop, then ``DELETE /offsets`` (everything) or ``PATCH /offsets`` (selected
  partitions set to null, or explicit positions), then restore the connector's state.
- ``tombstone`` (any Connect, and dedicated MM2): produce null values for the connector's keys to the
  worker's offsets topic, each key byte-identical and on the partition it was read from. Around them the
  connector is stopped (3.5+) or, on older workers that cannot stop, deleted and re-created from the config
  saved in the plan. Dedicated MM2 has no REST API: its ``<source>-mm2`` worker group must have no members.
- ``auto``: ``rest`` when the worker has it, else ``tombstone``.

Explicit positions name the *next upstream offset to replicate*; MirrorSourceConnector stores the last
replicated one, so position N is stored as N-1 (and position 0 as "no offset": start from the beginning).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.core.config.flows import parse_flow
from mm2ctl.core.errors import PlanError
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.fingerprint import canonical_json
from mm2ctl.plans.live_state import (
    part_connector_offsets,
    part_group_members,
    part_stored_offsets,
    part_topic_bounds,
)
from mm2ctl.plans.offsets import PlannedConnectorOffset, TombstoneRecord
from mm2ctl.plans.payloads import ConnectOffsetsDelete, ConnectOffsetsPatch, ConnectOffsetsTombstone
from mm2ctl.plans.planners.builder import PlanBuilder, offsets_cluster_for_worker
from mm2ctl.plans.planners.connectors import (
    Action,
    create_step,
    delete_step,
    lifecycle_step,
    observed_state,
    restore_step,
)
from mm2ctl.plans.planners.find_connectors import DEDICATED_NAMES, find_pair_connectors
from mm2ctl.plans.preconditions import (
    AllOf,
    ConnectorAbsent,
    ConnectorOffsetsUnchanged,
    ConnectorStopped,
    OffsetsRecordsUnchanged,
    Precondition,
    WorkerGroupHasNoMembers,
)
from mm2ctl.plans.steps import StepKind
from mm2ctl.plans.targets import ConnectorTarget, TopicPartitionsTarget

DEFAULT_OFFSETS_TOPIC = "connect-offsets"


class Method(StrEnum):
    AUTO = "auto"
    REST = "rest"
    TOMBSTONE = "tombstone"


@dataclass(frozen=True)
class PartitionSelection:
    """Which partitions of a connector to reset; empty means all. ``positions`` sets explicit ones."""

    topics: tuple[str, ...] = ()
    partitions: tuple[int, ...] = ()
    positions: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @property
    def everything(self) -> bool:
        return not self.topics and not self.partitions and not self.positions

    def matches(self, partition: Mapping[str, Any]) -> bool:
        if self.everything:
            return True
        if (partition.get("topic"), partition.get("partition")) in self.positions:
            return True
        if not self.topics and not self.partitions:
            return False
        if self.topics and partition.get("topic") not in self.topics:
            return False
        return not self.partitions or partition.get("partition") in self.partitions


@dataclass(frozen=True)
class OffsetsLocation:
    """Where tombstones go: an offsets topic on a cluster (by alias)."""

    cluster: str
    topic: str


def stored_offset_for_position(position: int) -> dict[str, int] | None:
    """MirrorSourceConnector's stored offset for "replicate from upstream offset ``position`` next"."""
    if position < 0:
        raise PlanError(f"an upstream position must be >= 0, got {position}")
    return None if position == 0 else {"offset": position - 1}


def resolve_method(b: PlanBuilder, method: Method) -> Method:
    if b.live.connect is None:
        if method is Method.REST:
            raise PlanError("--method rest needs a Connect worker (--connect-url); dedicated MM2 has no REST API")
        return Method.TOMBSTONE
    alter = b.live.server_info().supports_offsets_alter()
    if method is Method.AUTO:
        return Method.REST if alter else Method.TOMBSTONE
    if method is Method.REST and not alter:
        raise PlanError(
            f"the Connect worker (Kafka {b.live.server_info().version}) cannot alter offsets over REST "
            "(needs 3.6+); use --method tombstone or auto"
        )
    return method


def _rest_offsets_steps(b: PlanBuilder, connector: str, selection: PartitionSelection, stopped: Precondition) -> None:
    current = b.read(part_connector_offsets(connector))
    before = {"offsets": current}
    unchanged = ConnectorOffsetsUnchanged(
        connector=connector,
        expected=tuple(PlannedConnectorOffset(partition=o["partition"], offset=o["offset"]) for o in current),
    )
    pre = AllOf(conditions=(stopped, unchanged))
    target = ConnectorTarget(connector=connector)
    if selection.everything:
        if not current:
            b.notes.append(f"{connector} has no stored offsets: nothing to reset")
            return
        b.add(
            StepKind.CONNECT_OFFSETS_DELETE,
            target,
            ConnectOffsetsDelete(),
            pre,
            before=before,
            after={"offsets": []},
            description=f"DELETE /connectors/{connector}/offsets: forget all {len(current)} source offsets",
        )
        return
    entries: dict[str, PlannedConnectorOffset] = {}
    for o in current:
        if (
            selection.matches(o["partition"])
            and (o["partition"].get("topic"), o["partition"].get("partition")) not in selection.positions
        ):
            entries[canonical_json(o["partition"])] = PlannedConnectorOffset(partition=o["partition"], offset=None)
    cluster = _source_alias_of(b, connector, current)
    for (topic, partition), position in sorted(selection.positions.items()):
        part: dict[str, Any] = {"cluster": cluster, "partition": partition, "topic": topic}
        entries[canonical_json(part)] = PlannedConnectorOffset(
            partition=part, offset=stored_offset_for_position(position)
        )
    if not entries:
        b.notes.append(f"{connector}: no stored offset matches the selection: nothing to reset")
        return
    offsets = tuple(entries[k] for k in sorted(entries))
    after = [{"partition": dict(o.partition), "offset": None if o.offset is None else dict(o.offset)} for o in offsets]
    b.add(
        StepKind.CONNECT_OFFSETS_PATCH,
        target,
        ConnectOffsetsPatch(offsets=offsets),
        pre,
        before=before,
        after={"patched": after},
        description=f"PATCH /connectors/{connector}/offsets: {len(offsets)} partition(s)",
    )


def _source_alias_of(b: PlanBuilder, connector: str, current: Sequence[Mapping[str, Any]]) -> str:
    for o in current:
        cluster = o["partition"].get("cluster")
        if isinstance(cluster, str):
            return cluster
    if b.pair is not None:
        return parse_flow(b.pair).source
    config = b.live.connector_config(connector) or {}
    alias = config.get("source.cluster.alias")
    if not alias:
        raise PlanError(f"cannot tell the source cluster alias of {connector}; use --pair")
    return alias


def tombstone_step(
    b: PlanBuilder, connector: str, selection: PartitionSelection, location: OffsetsLocation, guard: Precondition
) -> bool:
    """One tombstone step for the connector's live keys that match; False when there is nothing to reset."""
    if selection.positions:
        raise PlanError("explicit positions need --method rest (Connect 3.6+); tombstones can only reset")
    stored = b.read(part_stored_offsets(location.cluster, location.topic, connector))
    chosen = []
    for s in stored:
        key = json.loads(base64.b64decode(s["key_b64"]))
        if selection.matches(key[1]):
            chosen.append(
                TombstoneRecord(partition=s["partition"], key_b64=s["key_b64"], original_value_b64=s["value_b64"])
            )
    if not chosen:
        b.notes.append(f"{connector}: no stored offset in {location.topic} matches: nothing to reset")
        return False
    records = tuple(chosen)
    unchanged = OffsetsRecordsUnchanged(cluster=location.cluster, topic=location.topic, records=records)
    b.aliases.add(location.cluster)
    b.add(
        StepKind.CONNECT_OFFSETS_TOMBSTONE,
        TopicPartitionsTarget(
            cluster=location.cluster,
            topic=location.topic,
            partitions=tuple(sorted({r.partition for r in records})),
        ),
        ConnectOffsetsTombstone(connector=connector, records=records),
        AllOf(conditions=(guard, unchanged)),
        before={
            "records": [
                {"partition": r.partition, "key_b64": r.key_b64, "value_b64": r.original_value_b64} for r in records
            ]
        },
        after={"records": [{"partition": r.partition, "key_b64": r.key_b64, "value_b64": None} for r in records]},
        description=(
            f"tombstone {len(records)} stored offset(s) of {connector} in {location.cluster}:{location.topic} "
            "(byte-exact keys, each on the partition it was read from)"
        ),
    )
    return True


def reset_connector_steps(
    b: PlanBuilder,
    connectors: Sequence[str],
    selection: PartitionSelection,
    method: Method,
    location: OffsetsLocation | None,
    *,
    states: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Reset each connector's offsets (already halted connectors included). Returns connector -> the state
    it is in after these steps. ``states`` gives states already changed by earlier steps of the plan."""
    states = dict(states or {})
    resolved = resolve_method(b, method)
    for name in connectors:
        current = states.get(name) or observed_state(b, name)
        if resolved is Method.REST:
            if current != ConnectorState.STOPPED.value:
                lifecycle_step(b, name, Action.STOP, current)
            _rest_offsets_steps(b, name, selection, ConnectorStopped(connector=name))
            states[name] = ConnectorState.STOPPED.value
            continue
        assert location is not None
        if current == "DELETED":
            tombstone_step(b, name, selection, location, ConnectorAbsent(connector=name))
        elif b.live.server_info().supports_stop():
            if current != ConnectorState.STOPPED.value:
                lifecycle_step(b, name, Action.STOP, current)
            tombstone_step(b, name, selection, location, ConnectorStopped(connector=name))
            states[name] = ConnectorState.STOPPED.value
        else:
            deleted = delete_step(b, name, current)
            if not tombstone_step(b, name, selection, location, ConnectorAbsent(connector=name)):
                b.steps.pop()  # nothing to tombstone: do not delete the connector for nothing
                continue
            create_step(b, deleted)
            states[name] = ConnectorState.RUNNING.value
    return states


def plan_reset_connector_offsets(
    b: PlanBuilder,
    *,
    connectors: Sequence[str] = (),
    pair: str | None = None,
    roles: Sequence[str] = ("source",),
    selection: PartitionSelection | None = None,
    method: Method = Method.AUTO,
    offsets_topic: str | None = None,
    offsets_cluster: str | None = None,
    resume_at_target: bool = False,
) -> Plan:
    """The whole ``reset-connector-offsets`` plan, Connect-mode or dedicated MM2."""
    b.kind = PlanKind.RESET_CONNECTOR_OFFSETS
    selection = selection or PartitionSelection()
    if pair is not None:
        b.pair = pair
    if resume_at_target:
        if pair is None:
            raise PlanError("--preset resume-at-target needs --pair")
        selection = PartitionSelection(positions=resume_positions(b, pair))
    if b.live.connect is None:
        if pair is None:
            raise PlanError("dedicated MM2 (no --connect-url) needs --pair")
        resolve_method(b, method)  # refuses --method rest: dedicated MM2 has no REST API
        return _plan_dedicated(b, pair, roles, selection, offsets_topic)
    names = list(connectors)
    if pair is not None and not names:
        source, target = parse_flow(pair)
        names = list(find_pair_connectors(b.live, source, target, roles).values())
        if not names:
            raise PlanError(f"no MM2 connectors of {pair} (roles {', '.join(roles)}) on the Connect worker")
    if not names:
        raise PlanError("name connectors with --connector, or a flow with --pair")
    location = None
    if resolve_method(b, method) is Method.TOMBSTONE:
        location = OffsetsLocation(
            offsets_cluster_for_worker(b.live, offsets_cluster), offsets_topic or DEFAULT_OFFSETS_TOPIC
        )
    originals = {n: observed_state(b, n) for n in names}
    states = reset_connector_steps(b, names, selection, method, location)
    for name in names:
        restore_step(b, name, originals[name], states[name])
    _note_effects(b)
    return b.build(f"reset source offsets of {', '.join(names)}")


def _plan_dedicated(
    b: PlanBuilder, pair: str, roles: Sequence[str], selection: PartitionSelection, offsets_topic: str | None
) -> Plan:
    target = parse_flow(pair).target
    flow = b.live.mm2.pair(pair)
    location = OffsetsLocation(target, offsets_topic or flow.dedicated_offsets_topic)
    members = b.read(part_group_members(target, flow.dedicated_group_id))["members"]
    if members:
        raise PlanError(
            f"the dedicated MirrorMaker 2 worker group {flow.dedicated_group_id} on {target} has {members} "
            "member(s); stop connect-mirror-maker.sh for this flow first"
        )
    guard = WorkerGroupHasNoMembers(cluster=target, group=flow.dedicated_group_id)
    for role in roles:
        tombstone_step(b, DEDICATED_NAMES[role], selection, location, guard)
    _note_effects(b)
    b.notes.append("dedicated MM2: start connect-mirror-maker.sh again after apply; mm2ctl cannot start it")
    return b.build(f"reset dedicated MM2 offsets of {pair} in {location.topic}")


def _note_effects(b: PlanBuilder) -> None:
    b.notes.append(
        "A reset MirrorSourceConnector partition replicates again from the source's earliest offset: records "
        "already on the target are copied a second time. Rollback restores the recorded offsets, not the "
        "target topics."
    )


def resume_positions(b: PlanBuilder, pair: str) -> dict[tuple[str, int], int]:
    """The "resume where the target already is" preset: for each replicated source partition, the upstream
    offset right after the last record the target holds.

    From the newest offset sync (u, d) of the partition: records after d on the target map 1:1 onto
    records after u upstream, because MM2 writes a sync at every upstream gap. So the position is
    ``u + (target_end - d)``. A partition with nothing on the target starts at the source's earliest offset.
    """
    from mm2ctl.core.kafka.records import read_partitions
    from mm2ctl.plans.kafka_records import decoded_syncs

    flow = b.live.mm2.pair(pair)
    source_admin = b.live.admin(flow.source)
    target_topics = b.live.admin(flow.target).list_topics()
    syncs: dict[tuple[str, int], tuple[int, int]] = {}
    cluster, topic = flow.offset_syncs_cluster, flow.offset_syncs_topic
    bounds = b.read(part_topic_bounds(cluster, topic, 0))
    read = read_partitions(b.live.kafka_config(cluster), topic, [0], end={0: bounds["end"]})
    for decoded in decoded_syncs(read):
        tp, sync = decoded if decoded is not None else (None, None)
        if tp is not None and sync is not None:  # a malformed sync or a tombstone maps nothing
            syncs[tp] = (sync.upstream, sync.downstream)
    positions: dict[tuple[str, int], int] = {}
    for src_topic, count in sorted(source_admin.list_topics().items()):
        remote = flow.remote_topic(src_topic)
        if not flow.replicates_topic(src_topic) or remote not in target_topics:
            continue
        for p in range(count):
            b_src = b.read(part_topic_bounds(flow.source, src_topic, p))
            b_dst = b.read(part_topic_bounds(flow.target, remote, p))
            newest = syncs.get((src_topic, p))
            if b_dst["end"] == 0:
                positions[(src_topic, p)] = b_src["start"]
            elif newest is None:
                raise PlanError(
                    f"{src_topic}/{p}: the target holds records but no offset sync maps them; "
                    "cannot tell where replication stands"
                )
            else:
                u, d = newest
                positions[(src_topic, p)] = min(u + (b_dst["end"] - d), b_src["end"])
    if not positions:
        raise PlanError(f"no replicated topic of {pair} found on the target")
    return positions
