"""``mm2ctl plan failover``: write each consumer group's translated position to the target before its
consumers move there, then read it back. MM2 copies records, not offsets: a group's offset number copied as
it is replays or skips records on the target, so it is translated.

Where a row's position comes from (``plans.translation`` has the rules and why):

- ``--from syncs`` (default): the flow's offset syncs, with the conservative rule (docs/design.md,
  "Translation"), or, when the source is readable, the verified exact translation (records compared on both
  sides). This works under both replication policies whatever MM2's checkpoints say.
- ``--from checkpoints``: MM2's own checkpoint, the newest per group and remote partition.
- The group's committed source offset is read on the source; with ``--source-unavailable`` it is the
  ``upstreamOffset`` of MM2's newest checkpoint (the last one MM2 saw), and only the conservative rule runs.
- Where no offset sync lies at or below a group's offset (MM2 dropped syncs under back-pressure, the syncs
  were truncated, the topic was mirrored by another tool), ``--fallback timestamp`` (the default when the
  source is readable) finds the position by the next record's timestamp and proves it by content
  (``plans.timestamp_lookup``); ``plans.positions`` runs every method in that order.

A group partition left untranslatable gets no offset, so its consumers would resume at ``auto.offset.reset``
(by default the end of the log). The plan says so in its first note and records the partitions
(``Plan.untranslatable``): ``plan`` exits 19 and ``apply`` refuses it unless ``--allow-untranslatable``.

What the plan guarantees at apply (preconditions, re-checked live before the write): the target group has no
members (Kafka would refuse, and a live consumer would overwrite us); its offsets on the planned partitions
are still what the plan saw (so nothing is rewound behind the reviewer's back, and rollback restores the right
values); every offset lies within the target partition's [earliest, latest]. The plan itself refuses to
rewind an existing target offset unless ``allow_rewind``. The source group's committed offsets are part of the
fingerprint: if the source consumers moved after planning, the translation is outdated and apply refuses.

With MirrorMaker 2 still running (no ``--stop-mirroring``) and syncing group offsets, MM2 may move a target
group between planning and apply: apply accepts an offset moved forward up to the planned one while the
group has no members (``remediate.preconditions``), and each read-back watches its group for
``settle_window`` after the write, writing the plan again over anything MM2's next sync round puts back below
it. ``--stop-mirroring`` stops the checkpoint connector (with the others) after the catch-up wait and before
the first write, so nothing moves and no read-back waits.

Rollback restores the previous offsets. Partitions that had no offset before can only be removed by deleting
the whole group (confluent-kafka has no OffsetDelete): done when the group had no offsets at all before,
otherwise left in place and reported (``NEW_PARTITIONS_NOTE``).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.core.admin import TP
from mm2ctl.core.codecs import Checkpoint, RecordDecodeError, decode_checkpoint, decode_checkpoint_key
from mm2ctl.core.compaction import Keyed, live_values
from mm2ctl.core.config import PairConfig
from mm2ctl.core.errors import NotCopiedError, PlanError, PreconditionError
from mm2ctl.core.patterns import NameFilter
from mm2ctl.core.progress import Progress, count, no_progress
from mm2ctl.core.records import PartitionReader, read_partitions
from mm2ctl.inspector.mm2_position import read_position
from mm2ctl.plans.document import Plan, PlanKind, UntranslatablePartition
from mm2ctl.plans.kafka_records import (
    KafkaRecords,
    OffsetsForTimes,
    last_record_offset,
    read_syncs,
    syncs_disabled_note,
)
from mm2ctl.plans.live_state import LiveState, part_positions
from mm2ctl.plans.offsets import GroupOffset
from mm2ctl.plans.payloads import (
    EXACT_METHODS,
    CatchUpTarget,
    DeferredRow,
    GroupOffsetRow,
    GroupOffsetsVerify,
    GroupOffsetsWrite,
    TranslateAfterCatchUp,
    TranslationMethod,
    WaitForCatchUp,
)
from mm2ctl.plans.planners.connectors import Action, lifecycle_step, observed_state
from mm2ctl.plans.planners.context import PlanBuilder
from mm2ctl.plans.planners.mm2_connectors import ALL_ROLES, find_pair_connectors
from mm2ctl.plans.positions import Fallback, Sides, locate
from mm2ctl.plans.preconditions import (
    AllOf,
    ConnectorStateIn,
    ConnectorStopped,
    GroupEmptyOrAbsent,
    GroupOffsetsInRange,
    GroupOffsetsUnchanged,
    NoPrecondition,
)
from mm2ctl.plans.steps import StepKind
from mm2ctl.plans.targets import ConnectorTarget, GroupTarget
from mm2ctl.plans.translation import Bounds, Sync, Translation, newest_sync_at_or_below

#: The phase ``plan_failover`` counts (``core.progress.count``): source partitions whose groups are translated.
TRANSLATE_PHASE = "partitions translated"

NEW_PARTITIONS_NOTE = (
    "rollback cannot remove an offset this plan adds to a group that already had other offsets: Kafka's "
    "OffsetDelete is not in confluent-kafka. Rollback restores every previous offset and reports those "
    "partitions; remove them with: kafka-consumer-groups --bootstrap-server <target> --delete-offsets "
    "--group <group> --topic <topic>:<partition>"
)


class Source(StrEnum):
    SYNCS = "syncs"
    CHECKPOINTS = "checkpoints"


@dataclass(frozen=True, slots=True)
class FailoverRow:
    """One group partition as the plan sees it; ``target_offset`` None means untranslatable (no step)."""

    group: str
    source_topic: str
    target_topic: str
    partition: int
    source_offset: int
    target_offset: int | None
    before_offset: int | None
    method: TranslationMethod | None
    detail: str
    delta_candidate: int | None = None
    #: MM2's next source offset to copy on this partition when the plan was made (None: not known).
    mm2_next_offset: int | None = None

    @property
    def deferred(self) -> bool:
        """Translated by apply once MM2 has caught up (``TranslationMethod.AFTER_CATCH_UP``)."""
        return self.method is TranslationMethod.AFTER_CATCH_UP


@dataclass
class FailoverReport:
    """Everything ``plan failover`` decided, for rendering and ``--export-csv`` (the plan holds the steps)."""

    rows: list[FailoverRow] = field(default_factory=list)

    @property
    def untranslatable(self) -> list[FailoverRow]:
        return [r for r in self.rows if r.target_offset is None]

    def csv_rows(self) -> list[tuple[str, str, int, int]]:
        """``group,topic,partition,offset`` rows, as ``kafka-consumer-groups --reset-offsets --from-file``
        reads them (target-side topic names); a row translated only after the catch-up has no offset yet."""
        return [
            (r.group, r.target_topic, r.partition, r.target_offset)
            for r in self.rows
            if r.target_offset is not None and not r.deferred
        ]


@dataclass(frozen=True)
class FailoverOptions:
    pair: str
    #: ``--groups`` and ``--topics`` (``core.patterns``: whole names); None selects all.
    groups: str | None = None
    topics: str | None = None
    source: Source = Source.SYNCS
    source_unavailable: bool = False
    stop_mirroring: bool = False
    allow_rewind: bool = False
    catch_up_timeout_s: float = 300.0
    #: What translates a group partition no offset sync lies at or below (the source must be readable).
    fallback: Fallback = Fallback.TIMESTAMP
    #: Without ``stop_mirroring``: plan MM2's cautious answer for the rows MM2 has not copied up to yet,
    #: instead of refusing them (``NotCopiedError``).
    accept_cautious: bool = False


# ----------------------------------------------------------------------------------------- reading


def read_checkpoints(live: LiveState, flow: PairConfig) -> dict[str, dict[TP, tuple[int, int]]]:
    """group -> {(target topic, partition): (upstream, downstream)}: MM2's live checkpoints, the newest record
    of each key unless it is a tombstone (``core.compaction``). Malformed records are skipped."""
    topic = flow.checkpoints_topic
    if topic not in live.admin(flow.target).list_topics():
        why = (
            "is the MirrorCheckpointConnector running for this flow?"
            if flow.emit_offset_syncs_enabled
            else "offset syncs are disabled on this flow, and MM2's checkpoint connector cannot run without them; "
            "translate by timestamp (--from syncs, the default) instead"
        )
        raise PlanError(f"the checkpoints topic {topic} does not exist on {flow.target}: {why}")
    keyed: list[Keyed[tuple[str, str, int], Checkpoint]] = []
    for rec in read_partitions(live.kafka_config(flow.target), topic, [0]):
        try:
            key = decode_checkpoint_key(rec.key)
            value = None if rec.value is None else decode_checkpoint(rec.key, rec.value)
        except RecordDecodeError:
            continue
        keyed.append(Keyed(key, rec.offset, value))
    out: dict[str, dict[TP, tuple[int, int]]] = {}
    for (group, remote, partition), cp in live_values(keyed).items():
        out.setdefault(group, {})[(remote, partition)] = (cp.upstream_offset, cp.downstream_offset)
    return out


# ----------------------------------------------------------------------------------------- planning


def plan_failover(
    builder: PlanBuilder, opts: FailoverOptions, *, progress: Progress = no_progress
) -> tuple[Plan, FailoverReport]:
    """The failover plan and the per-row report. Raises ``PreconditionError`` when a group cannot be written
    safely (active members, out of range, a rewind without ``allow_rewind``), listing every problem.

    ``progress`` hears each reading stage and counts the source partitions translated (``TRANSLATE_PHASE``):
    verifying reads records on both clusters partition by partition, the long part of a large failover."""
    live = builder.live
    flow = live.mm2.pair(opts.pair)
    _begin(builder, flow, opts)
    syncs = _offset_syncs(builder, flow, opts, progress)
    checkpoints: dict[str, dict[TP, tuple[int, int]]] = {}
    if opts.source is Source.CHECKPOINTS or opts.source_unavailable:
        progress(f"reading MM2's checkpoints ({flow.checkpoints_topic} on {flow.target})")
        checkpoints = read_checkpoints(live, flow)
    progress("reading the groups' committed offsets" + ("" if opts.source_unavailable else f" on {flow.source}"))
    selected = NameFilter(opts.groups, "--groups"), NameFilter(opts.topics, "--topics")
    committed = _source_positions(builder, flow, opts, *selected, checkpoints)
    if not opts.source_unavailable:
        committed = _streams_internal_topics(builder, flow, committed)
    state = _partition_state(builder, flow, opts, committed, syncs, progress)
    report = FailoverReport()
    for row in translate_partitions(
        live,
        flow,
        sorted((tp, offset, group) for group, parts in committed.items() for tp, offset in parts.items()),
        state,
        fallback=Fallback.NONE if opts.source_unavailable else opts.fallback,
        checkpoints=checkpoints if opts.source is Source.CHECKPOINTS else None,
        progress=progress,
    ):
        report.rows.append(_defer_if_not_copied(row, state.target_bounds, opts))
    report.rows.sort(key=lambda row: (row.group, row.source_topic, row.partition))
    if not report.rows:
        raise PlanError(
            f"no committed offsets of groups matching {opts.groups or '.*'!r} on replicated topics matching "
            f"{opts.topics or '.*'!r} in {opts.pair}"
        )
    _refuse_not_copied(builder, report.rows, syncs, opts)
    progress(f"reading the groups' state and offsets on {flow.target}")
    report.rows = _with_target_state(builder, flow.target, report.rows, state.target_bounds, opts.allow_rewind)
    writes = _write_steps(builder, flow, opts, committed, report, state)
    return builder.build(f"fail {len(writes)} group(s) over from {flow.source} to {flow.target}"), report


def _begin(builder: PlanBuilder, flow: PairConfig, opts: FailoverOptions) -> None:
    """The plan's kind, and the clusters it names: only the target when the source is unavailable."""
    builder.kind = PlanKind.FAILOVER
    if opts.source_unavailable:
        builder.aliases.add(flow.target)  # the plan must be appliable with the source down
        if opts.stop_mirroring:
            builder.notes.append("--source-unavailable: no catch-up wait; the pair's connectors are only stopped")
    else:
        builder.pair = opts.pair
        builder.live.start_listing(flow.source)


def _offset_syncs(
    builder: PlanBuilder, flow: PairConfig, opts: FailoverOptions, progress: Progress
) -> dict[TP, list[Sync]]:
    """The flow's offset syncs when the plan translates through them (none with ``--from checkpoints``, or
    when MM2 emits none: a note then, or an error when nothing else could translate)."""
    if opts.source is not Source.SYNCS:
        return {}
    disabled = syncs_disabled_note(flow)
    if disabled is not None:
        if opts.source_unavailable:
            raise PlanError(
                f"offset syncs are disabled on {opts.pair} (emit.offset-syncs.enabled=false) and the source is "
                "unavailable, so no record can be compared: use --from checkpoints (checkpoints MM2 wrote while "
                "its offset syncs were on)"
            )
        builder.notes.append(disabled)
        return {}
    if opts.source_unavailable and flow.offset_syncs_cluster == flow.source:
        raise PlanError(
            f"the offset syncs of {opts.pair} live on the source ({flow.offset_syncs_topic}), "
            "which is unavailable: use --from checkpoints"
        )
    progress(f"reading the offset syncs of {opts.pair} ({flow.offset_syncs_topic} on {flow.offset_syncs_cluster})")
    return read_syncs(builder.live, flow)


def _partition_state(
    builder: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    committed: Mapping[str, Mapping[TP, int]],
    syncs: Mapping[TP, Sequence[Sync]],
    progress: Progress,
) -> PartitionState:
    """Both sides' bounds of the groups' partitions and MM2's position on them, read once."""
    live = builder.live
    target_topics = live.admin(flow.target).list_topics()
    remote_partitions = {
        (flow.remote_topic(topic), partition)
        for parts in committed.values()
        for topic, partition in parts
        if flow.remote_topic(topic) in target_topics
    }
    target_bounds = bounds_of(live, flow.target, sorted(remote_partitions))
    if opts.source_unavailable:
        return PartitionState(syncs=syncs, source_bounds={}, target_bounds=target_bounds)
    source_bounds = bounds_of(live, flow.source, sorted({tp for parts in committed.values() for tp in parts}))
    note_share_groups(builder, flow.source, flow.target, committed, source_bounds)
    copied = None
    if opts.source is Source.SYNCS:
        progress(f"reading MM2's position on {opts.pair}")
        copied = mm2_copy_positions(live, flow, source_bounds, frozenset(target_topics), builder.notes)
    return PartitionState(syncs=syncs, source_bounds=source_bounds, target_bounds=target_bounds, copied=copied)


def _write_steps(
    builder: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    committed: Mapping[str, Mapping[TP, int]],
    report: FailoverReport,
    state: PartitionState,
) -> dict[str, list[FailoverRow]]:
    """The plan's steps (the mirroring stopped when asked, then each group's writes) and its notes; the rows
    to write, by group."""
    live, target = builder.live, flow.target
    writes: dict[str, list[FailoverRow]] = {}
    for row in report.rows:  # sorted by group: each group's rows in one pass
        if needs_write(live, target, row):
            writes.setdefault(row.group, []).append(row)
    stops_checkpoints = opts.stop_mirroring and _stop_mirroring(
        builder, flow, opts, committed, report.rows, state.source_bounds
    )
    write_group_offsets(builder, target, writes, settle_seconds=0.0 if stops_checkpoints else settle_window(flow))
    note_untranslatable(builder, report.untranslatable)
    unchanged = sum(1 for row in report.rows if row.target_offset is not None and not needs_write(live, target, row))
    if unchanged:
        builder.notes.append(f"{unchanged} group partition(s) are already at their translated position")
    methods = Counter(row.method.value for row in report.rows if row.method is not None)
    listed = ", ".join(f"{method}={n}" for method, n in sorted(methods.items())) or "none"
    builder.notes.append(f"translation methods: {listed}")
    if not writes:
        builder.notes.append("nothing to write")
    return writes


@dataclass(frozen=True)
class PartitionState:
    """What translating a flow's group partitions reads once: the offset syncs, both sides' bounds, and MM2's
    next offset to copy per source partition (None: not known, or the source cannot be read)."""

    syncs: Mapping[TP, Sequence[Sync]]
    source_bounds: Mapping[TP, Bounds]
    target_bounds: Mapping[TP, Bounds]
    copied: Mapping[TP, int] | None = None


def mm2_copy_positions(
    live: LiveState, flow: PairConfig, s_bounds: Mapping[TP, Bounds], target_topics: frozenset[str], notes: list[str]
) -> dict[TP, int] | None:
    """MM2's next source offset to copy per source partition in ``s_bounds`` (``inspector.mm2_position``); a
    partition MM2 holds no position for has had nothing copied, so its next offset is the log start. None,
    with a note, when the position cannot be read."""
    position = read_position(live.mm2, flow, live.connect, target_topics=target_topics)
    if position.next_offsets is None:
        notes.append(
            f"MM2's position on {flow.name} is not known ({position.reason}): a group MM2 has not copied up to "
            "cannot be told from one it has, except by the records"
        )
        return None
    return {tp: position.next_offsets.get(tp, bounds.start) for tp, bounds in s_bounds.items()}


def translate_partitions(
    live: LiveState,
    flow: PairConfig,
    todo: Sequence[tuple[TP, int, str]],
    state: PartitionState,
    *,
    fallback: Fallback,
    checkpoints: Mapping[str, Mapping[TP, tuple[int, int]]] | None = None,
    progress: Progress = no_progress,
) -> list[FailoverRow]:
    """A row per ``(source partition, committed offset, group)`` of ``todo`` (sorted), with its translated
    target position (``plans.positions.locate``), or MM2's checkpoint when ``checkpoints`` is given. Both
    sides' records are read when both bounds are known; the planner and apply's translation after the
    catch-up both translate here."""
    src, dst = flow.source, flow.target
    partitions = len({tp for tp, _c, _g in todo})
    progress(f"translating {len(todo)} group partition(s) on {partitions} source partition(s)")
    # One consumer per cluster, re-assigned from partition to partition; each partition's records are read
    # ahead once for all its groups (``KafkaRecords``). The source's reader also returns the records of
    # aborted transactions, marked: MM2 may have copied them to the target as ordinary records.
    src_reader = PartitionReader(live.kafka_config(src), mark_aborted=True)
    dst_reader = PartitionReader(live.kafka_config(dst))
    rows: list[FailoverRow] = []
    current: TP | None = None
    sides: Sides | None = None
    translated = 0
    try:
        for (topic, p), c, group in todo:
            remote = flow.remote_topic(topic)
            next_copy = None if state.copied is None else state.copied.get((topic, p))
            if (topic, p) != current:
                translated += current is not None
                count(progress, TRANSLATE_PHASE, translated, partitions)
                current, sides = (topic, p), None
                sb, tb = state.source_bounds.get((topic, p)), state.target_bounds.get((remote, p))
                if sb is not None and tb is not None:
                    sides = Sides(
                        source=KafkaRecords(src_reader, topic, p, sb.end),
                        target=KafkaRecords(dst_reader, remote, p, tb.end),
                        source_bounds=sb,
                        target_bounds=tb,
                        offset_for_time=OffsetsForTimes(live.admin(dst), remote, p),
                        source_offset_for_time=OffsetsForTimes(live.admin(src), topic, p),
                        copied_end=next_copy,
                    )
            tr: Translation | None
            if (remote, p) not in state.target_bounds:
                tr, why = None, f"{remote}/{p} does not exist on {dst}"
            elif checkpoints is not None:
                tr, why = (
                    _from_checkpoint(checkpoints.get(group, {}).get((remote, p)), c),
                    "no checkpoint for this partition",
                )
            else:
                tr, why = locate(state.syncs.get((topic, p), []), c, sides, fallback)
            rows.append(
                FailoverRow(
                    group=group,
                    source_topic=topic,
                    target_topic=remote,
                    partition=p,
                    source_offset=c,
                    target_offset=None if tr is None else tr.offset,
                    before_offset=None,
                    method=None if tr is None else tr.method,
                    detail=f"untranslatable: {why}" if tr is None else tr.detail,
                    delta_candidate=None if tr is None else tr.delta_candidate,
                    mm2_next_offset=next_copy,
                )
            )
    finally:
        src_reader.close()
        dst_reader.close()
    count(progress, TRANSLATE_PHASE, partitions, partitions)
    return rows


def _from_checkpoint(cp: tuple[int, int] | None, c: int) -> Translation | None:
    if cp is None:
        return None
    seen = "" if cp[0] == c else f" (the group is at {c} now)"
    return Translation(cp[1], TranslationMethod.CHECKPOINT, f"checkpoint {cp[0]}->{cp[1]}{seen}")


def not_copied(row: FailoverRow) -> bool:
    """Does the group's position lie past what MM2 had copied, unproven by the records? A position proven by
    content (an exact method) has its records on the target, whatever MM2's stored position (which trails
    the copy by up to one offset flush) says."""
    if row.mm2_next_offset is None or row.source_offset <= row.mm2_next_offset:
        return False
    return row.method is None or row.method.value not in EXACT_METHODS


def _defer_if_not_copied(row: FailoverRow, t_bounds: Mapping[TP, Bounds], opts: FailoverOptions) -> FailoverRow:
    """With ``--stop-mirroring``, a row MM2 has not copied up to is translated by apply after the catch-up:
    its offset until then is the cautious answer (or the target's log start), only for review."""
    if not (opts.stop_mirroring and not_copied(row)):
        return row
    assert row.mm2_next_offset is not None
    behind = row.source_offset - row.mm2_next_offset
    placeholder = row.target_offset
    if placeholder is None:
        tb = t_bounds.get((row.target_topic, row.partition))
        placeholder = None if tb is None else tb.start
    if placeholder is None:
        return row  # the remote partition does not exist: untranslatable, after the catch-up too
    return dataclasses.replace(
        row,
        target_offset=placeholder,
        method=TranslationMethod.AFTER_CATCH_UP,
        detail=f"MM2 had copied up to offset {row.mm2_next_offset} of the source, {behind} record(s) short of "
        "the group's position: apply translates it once MM2 has caught up and stopped",
    )


def _replay_at_most(row: FailoverRow, syncs: Sequence[Sync]) -> int | None:
    """How many records the cautious answer (the newest sync at or below the position, plus one) replays at
    most: the source offsets between that sync and the position (markers and aborted records included)."""
    i = newest_sync_at_or_below(syncs, row.source_offset)
    return None if i is None else max(0, row.source_offset - syncs[i].upstream - 1)


def _refuse_not_copied(
    b: PlanBuilder, rows: Sequence[FailoverRow], syncs: Mapping[TP, Sequence[Sync]], opts: FailoverOptions
) -> None:
    """Without ``--stop-mirroring``, a row MM2 has not copied up to can only get MM2's cautious answer: refuse
    (``NotCopiedError``) unless ``accept_cautious``, then say how much it replays."""
    if opts.stop_mirroring:
        return
    late = [r for r in rows if not_copied(r)]
    if not late:
        return
    bounds = [_replay_at_most(r, syncs.get((r.source_topic, r.partition), ())) for r in late]
    replay = sum(x for x in bounds if x is not None)
    shown = deferred_summary(late, limit=5)
    if not opts.accept_cautious:
        raise NotCopiedError(
            f"MM2 has not copied up to the position of {len(late)} group partition(s): {shown}. Their records are "
            "not on the target yet, so no translation can be proven. Plan with --stop-mirroring (apply waits for "
            "MM2, stops it and translates them then), wait for MM2 to catch up, or pass --accept-cautious to plan "
            f"MM2's cautious answer (replays at most {replay} record(s))"
        )
    b.notes.append(
        f"--accept-cautious: {len(late)} group partition(s) lie past what MM2 has copied ({shown}); they get the "
        f"cautious answer, which replays at most {replay} record(s)"
    )


def note_untranslatable(b: PlanBuilder, rows: Sequence[FailoverRow]) -> None:
    """Record the rows the plan writes no offset for in the plan: ``show`` lists them first, and apply refuses
    the plan unless ``--allow-untranslatable``."""
    if not rows:
        return
    b.untranslatable.extend(
        UntranslatablePartition(
            group=r.group,
            topic=r.target_topic,
            partition=r.partition,
            position=r.source_offset,
            reason=r.detail.removeprefix("untranslatable: "),
        )
        for r in rows
    )


def bounds_of(live: LiveState, alias: str, tps: Sequence[TP]) -> dict[TP, Bounds]:
    if not tps:
        return {}
    got = live.admin(alias).partition_bounds(tps)
    out = {}
    for tp, pb in got.items():
        if pb.error is None and pb.earliest is not None and pb.latest is not None:
            out[tp] = Bounds(pb.earliest, pb.latest)
    return out


def _source_positions(
    b: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    selected_groups: NameFilter,
    selected_topics: NameFilter,
    checkpoints: Mapping[str, Mapping[TP, tuple[int, int]]],
) -> dict[str, dict[TP, int]]:
    """group -> {(source topic, partition): committed source offset} for the selected groups and topics."""

    def wanted_topic(topic: str) -> bool:
        return flow.replicates_topic(topic) and selected_topics.matches(topic)

    def wanted_group(group: str) -> bool:
        return flow.group_filter.matches(group) and selected_groups.matches(group)

    out: dict[str, dict[TP, int]] = {}
    if opts.source_unavailable:
        for group, parts in checkpoints.items():
            if not wanted_group(group):
                continue
            for (remote, p), (upstream, _down) in parts.items():
                topic = flow.upstream_topic(remote) or remote
                if flow.remote_topic(topic) == remote and wanted_topic(topic):
                    out.setdefault(group, {})[(topic, p)] = upstream
        if not out:
            raise PlanError(
                f"no checkpoint of a group matching {opts.groups!r} in {flow.checkpoints_topic}: "
                "without the source, checkpoints are the only record of where groups were"
            )
        return out
    listed, not_looked = b.live.all_groups(flow.source)
    if not_looked is not None:
        b.notes.append(not_looked)
    groups = [g for g in listed if wanted_group(g.group)]
    # In the fingerprint: if the source consumers move after planning, the translation is outdated.
    part_of = {g.group: part_positions(flow.source, g.group, g.type) for g in groups}
    read = b.read_many(list(part_of.values()))
    for g in groups:
        picked = {(t, p): o for t, p, o in read[part_of[g.group]] if wanted_topic(t)}
        if picked:
            out[g.group] = picked
            b.live.note_group_type(flow.target, g.group, g.type)  # the same group, of the same type, on the target
    b.live.require_hosted(flow.target, out)
    return out


def _streams_internal_topics(
    b: PlanBuilder, flow: PairConfig, committed: dict[str, dict[TP, int]]
) -> dict[str, dict[TP, int]]:
    """Streams groups (which MM2 never translates): a note per group, and per internal topic what happens to it.

    A Kafka Streams application names its repartition and changelog topics after its application id, so on
    the target it uses those names whatever MM2 called their copies. An internal topic mirrored under its own
    name (the identity policy) is translated like an input topic; otherwise the application starts its own
    empty copy on the target, and its offset there is not written."""
    streams = {g: "streams" for g in committed if b.live.group_type(flow.source, g) == "streams"}
    if not streams:
        return committed
    shapes = b.live.group_admin(flow.source).describe(streams)
    out = dict(committed)
    for g in sorted(streams):
        shape = shapes.get(g)
        roles = shape.topics if shape is not None else {}
        b.notes.append(
            f"streams group {g}: MirrorMaker 2 never translates streams groups; this plan commits its offsets on "
            f"{flow.target} (the group must have no members there)"
        )
        internal = {t: role for role in ("repartition", "changelog") for t in roles.get(role, ())}
        for topic, role in sorted(internal.items()):
            same_name = flow.replicates_topic(topic) and flow.remote_topic(topic) == topic
            if role == "repartition" and same_name:
                what = "mirrored under its own name: its offset is translated like an input topic's"
            elif role == "repartition":
                left = [o for (t, _p), o in committed[g].items() if t == topic]
                out[g] = {tp: o for tp, o in out[g].items() if tp[0] != topic}
                what = (
                    f"not mirrored under its own name, so the application starts its own empty {topic} on "
                    f"{flow.target}; what it wrote there and had not read back on {flow.source} "
                    f"({len(left)} partition(s) with an offset) is not processed on {flow.target}"
                )
            elif same_name:
                what = "mirrored under its own name: the application restores its state from that copy"
            else:
                what = f"not mirrored under its own name: the application's state starts empty on {flow.target}"
            b.notes.append(f"streams group {g}: {role} topic {topic}: {what}")
    return {g: parts for g, parts in out.items() if parts}


def needs_write(live: LiveState, dst: str, row: FailoverRow) -> bool:
    """Does the plan write ``row`` on ``dst``: a translated offset that differs from the group's there, or is
    known only after MM2's catch-up. A share group's start offset is written even when equal: the write also
    clears the per-record state the group kept past it on ``dst``, so ``dst`` delivers exactly what
    ``note_share_groups`` counts."""
    if row.target_offset is None:
        return False
    return row.target_offset != row.before_offset or row.deferred or live.group_type(dst, row.group) == "share"


def note_share_groups(
    b: PlanBuilder, cluster: str, dst: str, committed: Mapping[str, Mapping[TP, int]], bounds: Mapping[TP, Bounds]
) -> None:
    """Share groups (which MM2 never translates), read on ``cluster`` and written on ``dst``: the plan moves
    their start offsets, and says how many records past them each group had already acknowledged. ``dst``
    knows nothing of that state, so it delivers those records again (at least once, never lost)."""
    shares = {g: "share" for g in committed if b.live.group_type(cluster, g) == "share"}
    if not shares:
        return
    positions = b.live.group_admin(cluster).positions(shares)
    for g in sorted(shares):
        p = positions[g]
        again = 0
        for tp, start in p.offsets.items():
            if tp in committed[g] and tp in p.lag and tp in bounds:
                again += max(0, bounds[tp].end - start - p.lag[tp])
        b.notes.append(
            f"share group {g}: MirrorMaker 2 never translates share groups; this plan sets its start offsets on "
            f"{dst}. {again} record(s) past them were already acknowledged on {cluster} and will be delivered again"
        )


def _with_target_state(
    b: PlanBuilder, dst: str, rows: list[FailoverRow], t_bounds: Mapping[TP, Bounds], allow_rewind: bool
) -> list[FailoverRow]:
    """Rows with the target group's current offsets filled in; refuse what apply must never do."""
    groups = sorted({r.group for r in rows})
    described = b.live.describe_groups(dst, groups)
    current = b.live.many_group_offsets(dst, groups)
    problems: list[str] = []
    out = []
    for g in groups:
        d = described[g]
        if d.members:
            problems.append(
                f"group {g} on {dst} has {d.members} active member(s) ({d.state}); stop its "
                "consumers on the target first"
            )
    for r in rows:
        before = current[r.group].get((r.target_topic, r.partition))
        r = FailoverRow(  # positional, not ``dataclasses.replace``: a 100,000-row failover does this per row
            r.group, r.source_topic, r.target_topic, r.partition, r.source_offset, r.target_offset, before, r.method,
            r.detail, r.delta_candidate, r.mm2_next_offset,
        )  # fmt: skip
        out.append(r)
        if r.target_offset is None or r.target_offset == before or r.deferred:
            continue  # a deferred row's offset is known after the catch-up: apply checks it then
        tb = t_bounds[(r.target_topic, r.partition)]
        where = f"{r.group}:{r.target_topic}/{r.partition}"
        if not tb.start <= r.target_offset <= tb.end:
            problems.append(
                f"{where}: translated offset {r.target_offset} is outside the target partition's [{tb.start}, {tb.end}]"
            )
        if before is not None and r.target_offset < before and not allow_rewind:
            problems.append(
                f"{where}: would rewind the target offset from {before} to {r.target_offset} "
                "(pass --allow-rewind to accept replaying those records)"
            )
    if problems:
        raise PreconditionError("refusing to plan the failover:\n  " + "\n  ".join(problems))
    return out


def _stop_mirroring(
    b: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    committed: Mapping[str, Mapping[TP, int]],
    rows: Sequence[FailoverRow],
    s_bounds: Mapping[TP, Bounds],
) -> bool:
    """Wait until MM2 has copied every source partition a selected group has an offset on (source readable),
    then stop every MM2 connector of the pair, so neither replication nor MM2's own offset sync moves what we
    write; then translate the rows MM2 had not copied up to at planning. Returns whether the plan stops the
    checkpoint connector (the one that syncs group offsets)."""
    found = find_pair_connectors(b.live, flow.source, flow.target, ALL_ROLES)
    if not found:
        raise PlanError(f"--stop-mirroring: no MM2 connectors of {opts.pair} on the Connect worker")
    states = {name: observed_state(b, name) for name in found.values()}
    source_connector = found.get("source")
    deferred = [r for r in rows if r.deferred]
    if deferred and source_connector is None:
        raise PlanError(
            f"--stop-mirroring: {len(deferred)} group partition(s) lie past what MM2 has copied, and {opts.pair} "
            "has no MirrorSourceConnector on the Connect worker to wait for"
        )
    if not opts.source_unavailable and source_connector is not None:
        _wait_for_catch_up(
            b, flow, opts, source_connector, sorted({tp for g in committed.values() for tp in g}), s_bounds
        )
    for role in ALL_ROLES:
        name = found.get(role)
        if name is not None:
            lifecycle_step(b, name, Action.STOP, states[name])
    if deferred:
        assert source_connector is not None
        b.add(
            StepKind.GROUP_OFFSETS_TRANSLATE,
            ConnectorTarget(connector=source_connector),
            TranslateAfterCatchUp(
                pair=opts.pair,
                source_cluster=flow.source,
                target_cluster=flow.target,
                rows=tuple(
                    DeferredRow(
                        group=r.group,
                        source_topic=r.source_topic,
                        target_topic=r.target_topic,
                        partition=r.partition,
                        source_offset=r.source_offset,
                        mm2_next_offset=r.mm2_next_offset,
                    )
                    for r in deferred
                ),
                allow_rewind=opts.allow_rewind,
                fallback=opts.fallback.value,
            ),
            ConnectorStopped(connector=source_connector),
            before=None,
            after={"translated": len(deferred)},
            description=f"translate {len(deferred)} group partition(s) MM2 had not copied up to at planning "
            f"({deferred_summary(deferred)}), now that it has caught up and stopped, and prove them by content",
        )
    return "checkpoint" in found


def deferred_summary(rows: Sequence[FailoverRow], limit: int = 3) -> str:
    """The first ``limit`` rows MM2 had not copied up to, on one line (``group:topic/partition@offset, MM2 at
    next``): the translation step's description and the refusal without ``--stop-mirroring`` both list them."""
    shown = ", ".join(
        f"{r.group}:{r.source_topic}/{r.partition}@{r.source_offset}, MM2 at {r.mm2_next_offset}" for r in rows[:limit]
    )
    return shown + (f"; {len(rows) - limit} more" if len(rows) > limit else "")


def _wait_for_catch_up(
    b: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    source_connector: str,
    tps: Sequence[TP],
    s_bounds: Mapping[TP, Bounds],
) -> None:
    """The wait step: every partition in ``tps``, whether or not it gets a write, marked with its last record
    now (apply reads the source's last records again when it starts waiting)."""
    targets = []
    reader = PartitionReader(b.live.kafka_config(flow.source))
    try:
        for t, p in tps:
            if (t, p) not in s_bounds:
                continue
            last = last_record_offset(reader, t, p, s_bounds[(t, p)])
            targets.append(CatchUpTarget(topic=t, partition=p, upstream_offset=-1 if last is None else last))
    finally:
        reader.close()
    if not targets:
        return
    b.add(
        StepKind.WAIT_FOR_CATCH_UP,
        ConnectorTarget(connector=source_connector),
        WaitForCatchUp(source_cluster=flow.source, targets=tuple(targets), timeout_seconds=opts.catch_up_timeout_s),
        ConnectorStateIn(connector=source_connector, states=frozenset({ConnectorState.RUNNING})),
        before=None,
        after={"caught_up": len(targets)},
        description=f"wait until {source_connector} has copied the source's last records of {len(targets)} "
        f"partition(s) that the groups have offsets on, read again when the wait starts (timeout "
        f"{opts.catch_up_timeout_s:g}s); nothing is stopped or written before",
    )


#: Added to twice MM2's ``sync.group.offsets.interval.seconds``: the time its sync takes to read and write
#: the groups of one round on a loaded worker.
SETTLE_MARGIN_S = 2.0


def settle_window(flow: PairConfig) -> float:
    """How long a read-back watches a group MM2 may still sync (``GroupOffsetsVerify.settle_seconds``).

    MM2 reads the idle target groups' offsets in one scheduled round and writes what they lack in the next,
    one sync interval later; a round that read a group before our write can still write it after, once.
    0 when the flow does not sync group offsets."""
    if not flow.sync_group_offsets_enabled:
        return 0.0
    return 2 * flow.sync_group_offsets_interval_seconds + SETTLE_MARGIN_S


def write_group_offsets(
    b: PlanBuilder, dst: str, writes: Mapping[str, Sequence[FailoverRow]], *, settle_seconds: float = 0.0
) -> None:
    """A write step per group on ``dst`` (its rows' translated offsets, guarded), then a read-back step per
    group, watching ``settle_seconds`` for MM2's own sync; ``plan failback`` writes its groups the same way."""
    verifies = []
    currents = b.live.many_group_offsets(dst, writes)
    for group, rows in writes.items():
        target = GroupTarget(cluster=dst, group=group, group_type=b.live.group_type(dst, group))
        payload_rows = tuple(
            GroupOffsetRow(
                topic=r.target_topic,
                partition=r.partition,
                offset=r.target_offset,
                before_offset=r.before_offset,
                method=r.method,
                source_offset=r.source_offset,
            )
            for r in rows
            if r.target_offset is not None and r.method is not None
        )
        current = currents[group]
        # One tuple for the range check and the read-back: the same offsets, built once.
        planned = tuple(GroupOffset(topic=r.topic, partition=r.partition, offset=r.offset) for r in payload_rows)
        pre = AllOf(
            conditions=(
                GroupEmptyOrAbsent(cluster=dst, group=group),
                GroupOffsetsUnchanged(
                    cluster=dst,
                    group=group,
                    expected=tuple(
                        GroupOffset(topic=r.topic, partition=r.partition, offset=r.before_offset) for r in payload_rows
                    ),
                ),
                GroupOffsetsInRange(cluster=dst, offsets=planned),
            )
        )
        new_parts = [r for r in payload_rows if r.before_offset is None]
        if new_parts and current:
            b.notes.append(
                f"group {group}: {len(new_parts)} partition(s) get their first offset; " + NEW_PARTITIONS_NOTE
            )
        methods = _count(r.method.value for r in payload_rows)
        b.add(
            StepKind.GROUP_OFFSETS_WRITE,
            target,
            GroupOffsetsWrite(rows=payload_rows),
            pre,
            # Each row already carries its offset before and after (payload); the before/after here only
            # summarise, so a 100,000-row plan does not hold every offset twice more.
            before={"exists": bool(current), "committed_partitions": len(current)},
            after={"written_partitions": len(payload_rows)},
            description=f"write {len(payload_rows)} offset(s) of group {group} on {dst} in one call ({methods})",
        )
        verifies.append((target, planned))
    for target, planned in verifies:
        b.add(
            StepKind.GROUP_OFFSETS_VERIFY,
            target,
            GroupOffsetsVerify(expected=planned, settle_seconds=settle_seconds),
            NoPrecondition(),
            before=None,
            after=None,
            description=f"read the offsets of group {target.group} back and compare"
            + (f", for {settle_seconds:g}s while MM2 may still sync it" if settle_seconds else ""),
        )


def _count(items: Iterable[str]) -> str:
    seen: dict[str, int] = {}
    for i in items:
        seen[i] = seen.get(i, 0) + 1
    return ", ".join(f"{k}={v}" for k, v in sorted(seen.items()))
