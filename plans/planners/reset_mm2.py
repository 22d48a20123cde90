"""``mm2ctl plan truncate-offset-syncs`` and ``reset-mm2``: empty a flow's offset-syncs topic, and the full
reset operators do by hand (stop connectors, truncate offset-syncs, reset connector offsets, resume).

Truncation deletes records up to the end offset seen *at plan time*, on whichever cluster
``offset-syncs.topic.location`` puts the topic. Kafka cannot un-delete, so the records are first copied to a
backup file beside the apply's journal; rollback re-produces them, at new offsets (see ``ROLLBACK_NOTE``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.core.config.flows import parse_flow
from mm2ctl.core.errors import PlanError
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.live_state import part_group_members, part_topic_bounds
from mm2ctl.plans.payloads import OffsetSyncsBackup, OffsetSyncsTruncate
from mm2ctl.plans.planners.builder import PlanBuilder, offsets_cluster_for_worker
from mm2ctl.plans.planners.connectors import (
    Action,
    create_step,
    delete_step,
    lifecycle_step,
    observed_state,
    restore_step,
)
from mm2ctl.plans.planners.find_connectors import ALL_ROLES, find_pair_connectors
from mm2ctl.plans.planners.reset_offsets import (
    DEFAULT_OFFSETS_TOPIC,
    Method,
    OffsetsLocation,
    PartitionSelection,
    reset_connector_steps,
    resolve_method,
)
from mm2ctl.plans.preconditions import (
    AllOf,
    ConnectorAbsent,
    ConnectorStopped,
    Precondition,
    TopicEndOffsetEquals,
    WorkerGroupHasNoMembers,
)
from mm2ctl.plans.steps import StepKind
from mm2ctl.plans.targets import TopicPartitionsTarget

ROLLBACK_NOTE = (
    "Truncating offset-syncs cannot be undone by Kafka. Apply first copies every truncated record to a "
    "backup file beside its journal. Rollback re-produces those records (same keys and values, same "
    "partition) at NEW offsets after whatever MM2 wrote since: MM2 and mm2ctl inspect then see the old syncs "
    "again, but the original offsets, timestamps and the order relative to newer syncs are not restored."
)


def _backup_name(cluster: str, topic: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "_", f"offset-syncs-backup.{cluster}.{topic}.jsonl")


def truncate_steps(b: PlanBuilder, pair: str, halted: Precondition) -> bool:
    """Backup + truncate steps for the flow's offset-syncs topic; False when it is already empty."""
    flow = b.live.mm2.pair(pair)
    cluster, topic = flow.offset_syncs_cluster, flow.offset_syncs_topic
    b.aliases.add(cluster)
    bounds = b.read(part_topic_bounds(cluster, topic, 0))
    start, end = bounds["start"], bounds["end"]
    if end <= start:
        b.notes.append(f"{cluster}:{topic} holds no records (offsets {start}..{end}): nothing to truncate")
        return False
    backup = _backup_name(cluster, topic)
    target = TopicPartitionsTarget(cluster=cluster, topic=topic, partitions=(0,))
    at_end = TopicEndOffsetEquals(cluster=cluster, topic=topic, partition=0, end_offset=end)
    b.add(
        StepKind.OFFSET_SYNCS_BACKUP,
        target,
        OffsetSyncsBackup(up_to_offset=end, backup_file=backup),
        AllOf(conditions=(halted, at_end)),
        before={"start": start, "end": end},
        after={"backup_file": backup},
        description=f"copy {cluster}:{topic} records {start}..{end - 1} to {backup} beside the journal",
    )
    b.add(
        StepKind.OFFSET_SYNCS_TRUNCATE,
        target,
        OffsetSyncsTruncate(before_offset=end, backup_file=backup),
        AllOf(conditions=(halted, at_end)),
        before={"start": start, "end": end},
        after={"start": end, "end": end},
        description=f"delete records of {cluster}:{topic} below offset {end} (the end seen at plan time)",
        irreversible_reason=ROLLBACK_NOTE,
    )
    b.notes.append(ROLLBACK_NOTE)
    return True


def _source_guard(b: PlanBuilder, pair: str, source_connector: str | None) -> Precondition:
    """What must hold before truncating: MirrorSourceConnector stopped (or, dedicated MM2, no workers)."""
    target = parse_flow(pair).target
    if b.live.connect is None:
        flow = b.live.mm2.pair(pair)
        members = b.read(part_group_members(target, flow.dedicated_group_id))["members"]
        if members:
            raise PlanError(
                f"the dedicated MirrorMaker 2 worker group {flow.dedicated_group_id} on {target} has "
                f"{members} member(s); stop connect-mirror-maker.sh for this flow first"
            )
        return WorkerGroupHasNoMembers(cluster=target, group=flow.dedicated_group_id)
    if source_connector is None:
        raise PlanError(f"no MirrorSourceConnector of {pair} on the Connect worker")
    return ConnectorStopped(connector=source_connector)


def plan_truncate_offset_syncs(b: PlanBuilder, pair: str) -> Plan:
    """Backup and truncate the flow's offset-syncs topic; the source connector must already be stopped."""
    b.kind, b.pair = PlanKind.TRUNCATE_OFFSET_SYNCS, pair
    source_connector = None
    if b.live.connect is not None:
        source, target = parse_flow(pair)
        source_connector = find_pair_connectors(b.live, source, target, ["source"]).get("source")
        if source_connector is not None:
            state = observed_state(b, source_connector)
            if state != ConnectorState.STOPPED.value:
                raise PlanError(
                    f"{source_connector} is {state}; truncating offset-syncs needs it STOPPED (else MM2 keeps "
                    f"writing syncs). Stop it first: mm2ctl plan connectors stop --pair {pair} --role source, "
                    "or use reset-mm2"
                )
    truncate_steps(b, pair, _source_guard(b, pair, source_connector))
    return b.build(f"truncate the offset-syncs topic of {pair}")


def plan_reset_mm2(
    b: PlanBuilder,
    pair: str,
    *,
    roles: Sequence[str] = ALL_ROLES,
    offsets_topic: str | None = None,
    offsets_cluster: str | None = None,
) -> Plan:
    """Seed 001's reset: halt the pair's connectors, back up and truncate offset-syncs, reset every
    connector's offsets (auto method), bring the connectors back to the state they were in."""
    b.kind, b.pair = PlanKind.RESET_MM2, pair
    if b.live.connect is None:
        raise PlanError(
            "reset-mm2 drives connectors through the Connect REST API (--connect-url); for dedicated MM2 stop "
            "it, then plan truncate-offset-syncs and reset-connector-offsets"
        )
    source, target = parse_flow(pair)
    found = find_pair_connectors(b.live, source, target, roles)
    if "source" not in found:
        raise PlanError(f"no MirrorSourceConnector of {pair} on the Connect worker")
    names = list(found.values())
    originals = {n: observed_state(b, n) for n in names}
    method = resolve_method(b, Method.AUTO)
    location = None
    if method is Method.TOMBSTONE:
        location = OffsetsLocation(
            offsets_cluster_for_worker(b.live, offsets_cluster), offsets_topic or DEFAULT_OFFSETS_TOPIC
        )
    states = dict(originals)
    deleted = {}
    can_stop = b.live.server_info().supports_stop()
    for name in names:  # 1. halt: stop, or on workers without stop delete (config saved for step 4)
        if can_stop:
            lifecycle_step(b, name, Action.STOP, states[name])
            states[name] = ConnectorState.STOPPED.value
        else:
            deleted[name] = delete_step(b, name, states[name])
            states[name] = "DELETED"
    guard = ConnectorStopped(connector=found["source"]) if can_stop else ConnectorAbsent(connector=found["source"])
    truncate_steps(b, pair, guard)  # 2.
    reset_connector_steps(b, names, PartitionSelection(), Method.AUTO, location, states=states)  # 3.
    for name in names:  # 4.
        if name in deleted:
            create_step(b, deleted[name])
        else:
            restore_step(b, name, originals[name], states[name])
    b.notes.append(
        "After the reset MirrorSourceConnector replicates every source partition again from its earliest "
        "offset: the target receives duplicates of what it already holds."
    )
    return b.build(f"reset MirrorMaker 2 for {pair}: stop, truncate offset-syncs, reset offsets, resume")
