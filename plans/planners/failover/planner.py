"""``mm2ctl plan failover``: write each consumer group's translated position to the target before its
consumers move there, then read it back. MM2 copies records, not offsets: a group's offset number copied as
it is replays or skips records on the target, so it is translated.

Where a row's position comes from (``core.translation.rule`` has the rules and why):

- ``--from syncs`` (default): the flow's offset syncs, with the conservative rule (docs/design.md,
  "Translation"), or, when the source is readable, the verified exact translation (records compared on both
  sides). This works under both replication policies whatever MM2's checkpoints say.
- ``--from checkpoints``: MM2's own checkpoint, the newest per group and remote partition.
- The group's committed source offset is read on the source; with ``--source-unavailable`` it is the
  ``upstreamOffset`` of MM2's newest checkpoint (the last one MM2 saw), and only the conservative rule runs.
- Where no offset sync lies at or below a group's offset (MM2 dropped syncs under back-pressure, the syncs
  were truncated, the topic was mirrored by another tool), ``--fallback timestamp`` (the default when the
  source is readable) finds the position by the next record's timestamp and proves it by content
  (``core.translation.timestamp_lookup``); ``core.translation.positions`` runs every method in that order.

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
group has no members (``remediate.precondition_checks``), and each read-back watches its group for
``settle_window`` after the write, writing the plan again over anything MM2's next sync round puts back below
it. ``--stop-mirroring`` stops the checkpoint connector (with the others) after the catch-up wait and before
the first write, so nothing moves and no read-back waits.

Rollback restores the previous offsets. Partitions that had no offset before can only be removed by deleting
the whole group (confluent-kafka has no OffsetDelete): done when the group had no offsets at all before,
otherwise left in place and reported (``NEW_PARTITIONS_NOTE``).

This module runs the planning in named steps (``plan_failover``); the parts live beside it:
``failover.request`` (what is asked), ``failover.cluster_reads`` (checkpoints, bounds, MM2's position, the groups'
committed positions), ``failover.rows`` (a row per group partition), ``failover.mirroring`` (rows MM2
has not copied up to; the catch-up wait and the stop), ``failover.checks`` (the target groups' state, the
untranslatable rows, streams and share groups) and ``failover.writes`` (the write and read-back steps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import PlanError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.patterns import NameRegex
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.core.spark_checkpoints.query_sources import query_positions, refuse_named_like_queries
from mm2ctl.core.translation.positions import Fallback
from mm2ctl.core.translation.rule import Sync
from mm2ctl.inspector.reads.mm2_position import read_position
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.kafka_records import read_syncs, syncs_disabled_note
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failover.checks import (
    TargetState,
    note_share_groups,
    note_untranslatable,
    read_target_state,
    streams_internal_topics,
    with_target_state,
)
from mm2ctl.plans.planners.failover.cluster_reads import (
    bounds_of,
    copy_positions,
    listed_positions,
    mm2_copy_positions,
    read_checkpoints,
    source_positions,
)
from mm2ctl.plans.planners.failover.mirroring import (
    defer_if_not_copied,
    deferred_summary,
    not_copied,
    refuse_not_copied,
    stop_mirroring,
)
from mm2ctl.plans.planners.failover.request import FailoverOptions, Source
from mm2ctl.plans.planners.failover.rows import (
    TRANSLATE_PHASE,
    FailoverRow,
    PartitionState,
    translate_partitions,
)
from mm2ctl.plans.planners.failover.spark_queries import (
    PlannedQuery,
    methods_note,
    plan_queries,
    read_queries,
    split_rows,
)
from mm2ctl.plans.planners.failover.writes import (
    NEW_PARTITIONS_NOTE,
    SETTLE_MARGIN_S,
    needs_write,
    settle_window,
    write_group_offsets,
)

# The names other modules have imported from here, each now owned by the module named above.
__all__ = [
    "NEW_PARTITIONS_NOTE",
    "SETTLE_MARGIN_S",
    "TRANSLATE_PHASE",
    "FailoverOptions",
    "FailoverReport",
    "FailoverRow",
    "PartitionState",
    "Source",
    "bounds_of",
    "deferred_summary",
    "mm2_copy_positions",
    "needs_write",
    "not_copied",
    "note_share_groups",
    "note_untranslatable",
    "plan_failover",
    "read_checkpoints",
    "settle_window",
    "translate_partitions",
    "write_group_offsets",
]


#: Threads reading for one plan at once: the offset syncs, a cluster's bounds, MM2's position.
READERS = 4


@dataclass
class FailoverReport:
    """Everything ``plan failover`` decided, for rendering and ``--export-csv`` (the plan holds the steps)."""

    rows: list[FailoverRow] = field(default_factory=list)
    #: The Spark queries (``--spark-checkpoint``) and what the plan writes for each.
    queries: list[PlannedQuery] = field(default_factory=list)

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


def plan_failover(
    builder: PlanBuilder, opts: FailoverOptions, *, progress: Progress = no_progress
) -> tuple[Plan, FailoverReport]:
    """The failover plan and the per-row report. Raises ``PreconditionError`` when a group cannot be written
    safely (active members, out of range, a rewind without ``allow_rewind``), listing every problem.

    ``progress`` hears each reading stage and counts the source partitions translated (``TRANSLATE_PHASE``):
    verifying reads records on both clusters partition by partition, the long part of a large failover.

    Independent reads run side by side (``READERS`` threads): the offset syncs beside the groups' offsets,
    both clusters' bounds beside MM2's position. With the source readable, the groups librdkafka lists are
    translated before the listing of every group type (a JVM, ``LiveState.start_listing``) has answered;
    that translation is kept only when the groups the listing then selects are exactly those. Their members
    and offsets on the target are read beside the translation, which they do not depend on.
    """
    live = builder.live
    flow = live.mm2.pair(opts.pair)
    _begin(builder, flow, opts)
    if opts.spark.checkpoints and opts.source is Source.CHECKPOINTS:
        raise PlanError("--spark-checkpoint: MM2 keeps no checkpoint of a Spark query; translate it --from syncs")
    queries = read_queries(opts.spark, flow.replicates_topic, flow) if opts.spark.checkpoints else []
    for alias in builder.aliases | {flow.target} | (set() if opts.source_unavailable else {flow.source}):
        live.admin(alias)  # each client made once, before the threads share it
    with ThreadPoolExecutor(max_workers=READERS, thread_name_prefix="failover-read") as pool:
        syncs_read = _offset_syncs(builder, flow, opts, progress, pool)
        checkpoints: dict[str, dict[TP, tuple[int, int]]] = {}
        if opts.source is Source.CHECKPOINTS or opts.source_unavailable:
            progress(f"reading MM2's checkpoints ({flow.checkpoints_topic} on {flow.target})")
            checkpoints = read_checkpoints(live, flow)
        selected = NameRegex(opts.groups, "--groups"), NameRegex(opts.topics, "--topics")
        early = _translated_early(builder, flow, opts, selected, syncs_read, pool, progress) if not queries else None
        progress("reading the groups' committed offsets" + ("" if opts.source_unavailable else f" on {flow.source}"))
        committed = source_positions(
            builder,
            flow,
            opts,
            *selected,
            checkpoints,
            required=not queries,
            prefetched=early.parts if early is not None else frozenset(),
        )
        if not opts.source_unavailable:
            committed = streams_internal_topics(builder, flow, committed)
        refuse_named_like_queries(queries, committed, flow.source)
        committed = {**committed, **query_positions(queries)}
        syncs = syncs_read.result()
        if early is not None and early.committed == committed:
            state, rows = early.state, early.rows
            builder.notes.extend(early.notes)
        else:
            state = _partition_state(builder, flow, opts, committed, syncs, progress, pool, builder.notes)
            rows = _translate(builder, flow, opts, committed, state, checkpoints, progress)
    report = FailoverReport()
    for row in rows:
        report.rows.append(defer_if_not_copied(row, state.target_bounds, opts))
    report.rows.sort(key=lambda row: (row.group, row.source_topic, row.partition))
    report.rows, query_rows = split_rows(report.rows, queries)
    if not report.rows and not query_rows:
        raise PlanError(
            f"no committed offsets of groups matching {opts.groups or '.*'!r} on replicated topics matching "
            f"{opts.topics or '.*'!r} in {opts.pair}"
        )
    refuse_not_copied(builder, [*report.rows, *query_rows], syncs, opts)
    progress(f"reading the groups' state and offsets on {flow.target}")
    report.rows, currents = with_target_state(
        builder,
        flow.target,
        report.rows,
        state.target_bounds,
        opts.allow_rewind,
        prefetched=early.target if early is not None else None,
    )
    writes = _write_steps(builder, flow, opts, committed, report, state, currents)
    report.queries = plan_queries(builder, flow.target, opts.spark, queries, query_rows)
    builder.notes.append(methods_note([*report.rows, *query_rows]))
    what = f"{len(writes)} group(s)" + (f" and {len(report.queries)} Spark query(ies)" if report.queries else "")
    return builder.build(f"fail {what} over from {flow.source} to {flow.target}"), report


@dataclass(frozen=True)
class _Early:
    """The librdkafka-listed groups' offsets and their translation, made while the typed listing runs."""

    committed: dict[str, dict[TP, int]]
    parts: frozenset[str]
    state: PartitionState
    rows: list[FailoverRow]
    notes: list[str]
    #: The listed groups' state on the target, read meanwhile (``failover.checks.read_target_state``).
    target: Future[TargetState]


def _translated_early(
    builder: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    selected: tuple[NameRegex, NameRegex],
    syncs_read: Future[dict[TP, list[Sync]]],
    pool: ThreadPoolExecutor,
    progress: Progress,
) -> _Early | None:
    """With the source readable and translating through the syncs: the groups librdkafka lists, read and
    translated at once (``failover.cluster_reads.listed_positions``). Their notes are held back: ``plan_failover``
    adds them where the full path would, when it keeps this translation. None when that does not apply."""
    if opts.source_unavailable or opts.source is not Source.SYNCS:
        return None
    progress(f"reading the offsets of the classic and consumer groups on {flow.source}")
    committed, parts = listed_positions(builder, flow, *selected)
    if not committed:
        return None
    # The target groups' members and offsets do not depend on the translation: read them beside it.
    target = pool.submit(read_target_state, builder.live, flow.target, sorted(committed))
    notes: list[str] = []
    state = _partition_state(builder, flow, opts, committed, syncs_read.result(), progress, pool, notes)
    rows = _translate(builder, flow, opts, committed, state, {}, progress)
    return _Early(committed=committed, parts=parts, state=state, rows=rows, notes=notes, target=target)


def _translate(
    builder: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    committed: Mapping[str, Mapping[TP, int]],
    state: PartitionState,
    checkpoints: Mapping[str, Mapping[TP, tuple[int, int]]],
    progress: Progress,
) -> list[FailoverRow]:
    return translate_partitions(
        builder.live,
        flow,
        sorted((tp, offset, group) for group, parts in committed.items() for tp, offset in parts.items()),
        state,
        fallback=Fallback.NONE if opts.source_unavailable else opts.fallback,
        checkpoints=checkpoints if opts.source is Source.CHECKPOINTS else None,
        progress=progress,
    )


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
    builder: PlanBuilder, flow: PairConfig, opts: FailoverOptions, progress: Progress, pool: ThreadPoolExecutor
) -> Future[dict[TP, list[Sync]]]:
    """The flow's offset syncs when the plan translates through them (none with ``--from checkpoints``, or
    when MM2 emits none: a note then, or an error when nothing else could translate), read on ``pool``."""
    done: Future[dict[TP, list[Sync]]] = Future()
    done.set_result({})
    if opts.source is not Source.SYNCS:
        return done
    disabled = syncs_disabled_note(flow)
    if disabled is not None:
        if opts.source_unavailable:
            raise PlanError(
                f"offset syncs are disabled on {opts.pair} (emit.offset-syncs.enabled=false) and the source is "
                "unavailable, so no record can be compared: use --from checkpoints (checkpoints MM2 wrote while "
                "its offset syncs were on)"
            )
        builder.notes.append(disabled)
        return done
    if opts.source_unavailable and flow.offset_syncs_cluster == flow.source:
        raise PlanError(
            f"the offset syncs of {opts.pair} live on the source ({flow.offset_syncs_topic}), "
            "which is unavailable: use --from checkpoints"
        )
    progress(f"reading the offset syncs of {opts.pair} ({flow.offset_syncs_topic} on {flow.offset_syncs_cluster})")
    return pool.submit(read_syncs, builder.live, flow)


def _partition_state(
    builder: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    committed: Mapping[str, Mapping[TP, int]],
    syncs: Mapping[TP, Sequence[Sync]],
    progress: Progress,
    pool: ThreadPoolExecutor,
    notes: list[str],
) -> PartitionState:
    """Both sides' bounds of the groups' partitions and MM2's position on them, read once, side by side on
    ``pool``; a note (MM2's position unknown) goes to ``notes``."""
    live = builder.live
    source_tps = sorted({tp for parts in committed.values() for tp in parts})
    source_read = None if opts.source_unavailable else pool.submit(bounds_of, live, flow.source, source_tps)
    target_topics = frozenset(live.admin(flow.target).list_topics())
    position_read = None
    if not opts.source_unavailable and opts.source is Source.SYNCS:
        progress(f"reading MM2's position on {opts.pair}")
        position_read = pool.submit(read_position, live.mm2, flow, live.connect, target_topics=target_topics)
    remote_partitions = {
        (flow.remote_topic(topic), partition)
        for parts in committed.values()
        for topic, partition in parts
        if flow.remote_topic(topic) in target_topics
    }
    target_bounds = bounds_of(live, flow.target, sorted(remote_partitions))
    if source_read is None:
        return PartitionState(syncs=syncs, source_bounds={}, target_bounds=target_bounds)
    source_bounds = source_read.result()
    note_share_groups(builder, flow.source, flow.target, committed, source_bounds)
    copied = None if position_read is None else copy_positions(position_read.result(), flow, source_bounds, notes)
    return PartitionState(syncs=syncs, source_bounds=source_bounds, target_bounds=target_bounds, copied=copied)


def _write_steps(
    builder: PlanBuilder,
    flow: PairConfig,
    opts: FailoverOptions,
    committed: Mapping[str, Mapping[TP, int]],
    report: FailoverReport,
    state: PartitionState,
    currents: Mapping[str, Mapping[TP, int]],
) -> dict[str, list[FailoverRow]]:
    """The plan's steps (the mirroring stopped when asked, then each group's writes) and its notes; the rows
    to write, by group."""
    live, target = builder.live, flow.target
    writes: dict[str, list[FailoverRow]] = {}
    for row in report.rows:  # sorted by group: each group's rows in one pass
        if needs_write(live, target, row):
            writes.setdefault(row.group, []).append(row)
    stops_checkpoints = opts.stop_mirroring and stop_mirroring(
        builder, flow, opts, committed, report.rows, state.source_bounds
    )
    settle = 0.0 if stops_checkpoints else settle_window(flow)
    write_group_offsets(builder, target, writes, settle_seconds=settle, currents=currents)
    note_untranslatable(builder, report.untranslatable)
    unchanged = sum(1 for row in report.rows if row.target_offset is not None and not needs_write(live, target, row))
    if unchanged:
        builder.notes.append(f"{unchanged} group partition(s) are already at their translated position")
    if not writes and not opts.spark.checkpoints:
        builder.notes.append("nothing to write")
    return writes
