"""A failover drill per Kafka group type: what MirrorMaker 2 alone loses or delivers again at failover, and what
``mm2ctl plan failover`` + ``apply`` does, for classic, consumer (KIP-848), share (KIP-932) and streams
(KIP-1071) groups, counted by content on real clients.

Facts the drill relies on (Kafka 4.3.1, MirrorMaker 2 of the same release):

- MM2's checkpoint connector lists only classic and consumer groups: with ``sync.group.offsets.enabled`` it
  writes their translated offsets to the target while the target group has no members. Share and streams
  groups it never checkpoints nor syncs (``core.kafka.group_admin``).
- A share consumer joining a share group that has no start offset on the target starts at the log end
  (``share.auto.offset.reset`` defaults to ``latest``): whatever the group had not acknowledged is skipped.
- A Kafka Streams application whose group has no committed offsets starts at the earliest offset (Streams'
  own ``auto.offset.reset`` default): it processes everything again.
- A share group's start offset stays behind what it acknowledged (the persisted start offset trails a round
  of acknowledgements: a group that accepted the first 40 records of a fresh partition reads 0). mm2ctl reads
  its position from the share-partition state (``core.kafka.share_state``): the first record it left undone.
  The records it acknowledged past that gap are kept only in the source cluster's state, so on the target
  they are delivered again; the plan counts them in a note (``share group G: ... N record(s) the group
  acknowledged past a gap``). The drill's share groups release one record (``released``) to leave such a gap.

The drill, on a running lab (Kafka 4.2+, no security), through an MM2 flow of its own (``lab.add_flow``,
every role, so ``sync.group.offsets`` runs), on one two-partition topic whose values name their partition
and sequence number (``p<partition>-<seq>``):

1. ``first`` records per partition are produced. Two groups of each type (``iso-<name>-mm2-<type>``, left
   to MM2, and ``iso-<name>-ctl-<type>``, failed over by mm2ctl) reach the same source state: classic and
   consumer groups read everything there is and commit; a streams application (passthrough) processes
   everything, commits and leaves; a share consumer accepts the first ``accepted[p]`` records of each
   partition but the one at offset ``released``, with explicit acknowledgement, and releases the rest.
2. ``later`` records per partition are produced; MM2 copies everything; MM2's sync of the classic and
   consumer groups' offsets is awaited (until they appear and stop moving, or a deadline).
3. The flow's checkpoint connector is stopped, as at a failover (left running, MM2's group sync can write
   its older translation back over a group's commit on the target). ``mm2ctl plan failover --groups
   'iso-<name>-ctl-.*'`` and ``mm2ctl apply --auto-approve`` run as an operator would type them
   (``python -m mm2ctl``).
4. Every group of both methods resumes on the target with a real client of its type and reads to the end
   (all at once: the consumers on threads, the streams applications in JVMs of their own).
5. ``more`` records per partition are produced on the source (records the groups have not processed, so a
   failback that put them at the log end would lose them); MM2 copies them. ``mm2ctl plan failback`` +
   ``apply`` move the mm2ctl groups back, and each resumes on the source and reads to the end.

LOST counts records the group had not processed before the move that it never gets after it; DELIVERED AGAIN
counts deliveries after the move of records it had already processed (or got twice after it). The goal, for
the mm2ctl rows (failover and failback): nothing lost, nothing delivered again, except for a share group
exactly the records the plan's note counts. MM2 alone's rows are measured, with no goal.

The drill is split by what each part owns: ``drill.group_run`` (the drill in progress: options, names, what
each group processed), ``drill.group_load`` (the records and the real clients of each type),
``drill.group_strategies`` (MM2 alone, and mm2ctl's plan + apply), ``drill.group_truth`` (lost and delivered
again, the goals) and ``drill.group_result`` (the rows and their table). This module runs the phases.

This module never prints: it reports through ``progress`` and returns a ``GroupTypesDrill``.
"""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

from mm2ctl.core.errors import LabError, Mm2ctlError
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GROUP_TYPES
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.drill.group_load import produce, resume_all, source_state, wait_copied
from mm2ctl.drill.group_result import GroupTypeRow, GroupTypesDrill
from mm2ctl.drill.group_run import DEFAULT_OPTIONS, PARTITIONS, GroupTypesOptions, GroupTypesRun
from mm2ctl.drill.group_strategies import (
    mm2_notes,
    mm2ctl_notes,
    plan_and_apply,
    stop_checkpointing,
    wait_mm2_synced,
)
from mm2ctl.drill.group_truth import score_rows
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo

__all__ = ["drill_group_types"]


def _failover(run: GroupTypesRun) -> list[GroupTypeRow]:
    """MM2's sync awaited, mm2ctl's failover of its groups, then every group of both methods resumes on the
    target at once."""
    o = run.options
    synced = wait_mm2_synced(run, [run.group("mm2", t) for t in ("classic", "consumer")])
    stop_checkpointing(run)
    planned = plan_and_apply(run, "failover")
    run.progress("every group resumes on the target and reads to the end")
    groups = {run.group(m, t): t for m in ("mm2", "mm2ctl") for t in GROUP_TYPES}
    got = resume_all(run, groups, on_target=True, label="target")
    mm2 = score_rows(run, "mm2", got, o.first + o.later, planned, mm2_notes(run, synced))
    return mm2 + score_rows(run, "mm2ctl", got, o.first + o.later, planned, mm2ctl_notes(run, "mm2ctl", planned))


def _failback(run: GroupTypesRun) -> list[GroupTypeRow]:
    """``more`` records on the source, copied by MM2; mm2ctl's failback of its groups; each resumes on the
    source."""
    o = run.options
    total = o.first + o.later + o.more
    produce(run.src, run.topic, o.first + o.later, o.more)
    wait_copied(run, total)
    planned = plan_and_apply(run, "failback")
    run.progress("the mm2ctl groups resume on the source and read to the end")
    groups = {run.group("mm2ctl", t): t for t in GROUP_TYPES}
    got = resume_all(run, groups, on_target=False, label="failback")
    return score_rows(run, "failback", got, total, planned, mm2ctl_notes(run, "failback", planned))


def _remove_flow(run: GroupTypesRun) -> None:
    """Delete the drill flow's connectors (its topics keep their unique names)."""
    from mm2ctl.connect_client import build_connect_client

    with build_connect_client([run.lab.connect_url]) as connect:
        for c in run.connectors:
            try:
                connect.delete(c)
            except Mm2ctlError:
                run.progress(f"could not delete connector {c}; delete it by hand")


def _check_lab(lab: LabInfo) -> None:
    version = tuple(int(x) for x in lab.kafka_version.split(".")[:2])
    if version < (4, 2):
        raise LabError(
            f"the group-types drill needs Kafka 4.2+ (share and streams groups); this lab runs {lab.kafka_version}"
        )
    if lab.secured:
        raise LabError("the group-types drill needs a lab without security: its streams app connects in plaintext")


def drill_group_types(
    lab: LabInfo, workdir: Path, progress: Progress | None = None, options: GroupTypesOptions = DEFAULT_OPTIONS
) -> GroupTypesDrill:
    """Run the drill (see the module's docstring) on a running lab through a flow of its own, deleted at the
    end; plans, journals, mm2ctl's output, the streams apps' logs and ``result.json`` stay in ``workdir``."""
    _check_lab(lab)
    if len(options.accepted) != len(PARTITIONS) or not all(0 < n < options.first for n in options.accepted):
        raise LabError(f"accepted must give {len(PARTITIONS)} counts between 1 and first - 1")
    if not -1 <= options.released < min(options.accepted):
        raise LabError("released must be an offset below every accepted count, or -1 for none")
    workdir.mkdir(parents=True, exist_ok=True)
    run = GroupTypesRun(lab, "gt" + uuid.uuid4().hex[:8], workdir, progress or no_progress, options)
    t0 = time.monotonic()
    try:
        KafkaAdmin.connect(run.src).create_topics({run.topic: len(PARTITIONS)})
        run.progress(f"creating MM2 flow {run.name}src->{run.name}dst (every role, sync.group.offsets on)")
        flow = lab_core.add_flow(lab, run.name)
        run.connectors.extend(flow.connectors.values())
        run.checkpoint_connector = flow.connectors["checkpoint"]
        run.pair, run.mm2_config = f"{flow.source_alias}->{flow.target_alias}", flow.mm2_config
        produce(run.src, run.topic, 0, options.first)
        source_state(run)
        produce(run.src, run.topic, options.first, options.later)
        wait_copied(run, options.first + options.later)
        rows = _failover(run) + _failback(run)
    finally:
        _remove_flow(run)
    result = GroupTypesDrill(
        pair=run.pair, topic=run.topic, remote_topic=run.remote, partitions=len(PARTITIONS), first=options.first,
        later=options.later, more=options.more, accepted=options.accepted, released=options.released, rows=tuple(rows),
        seconds=round(time.monotonic() - t0, 1), workdir=str(workdir),
    )  # fmt: skip
    (workdir / "result.json").write_text(json.dumps(result.to_json(), indent=2) + "\n", encoding="utf-8")
    return result
