"""``mm2ctl plan failback``: move consumer groups that consume on B after a failover over the flow A->B back to
A, writing on A the position each group has reached on B (docs/design.md, "Failback and timestamps").

A group's committed offset ``t`` on B, on a remote topic of A->B (``A.t`` under the default policy, ``t``
under the identity policy), is in one of two places:

- **Inside the mirrored range** (at or before the position right after the last record MM2 copied from A):
  A->B's offset syncs read backwards (``core.translation.rule.inverted``) map it to A, and the records prove it.
  The record the group reads next on B is found on A, preceded by the one it read last, from the inverse
  rule's answer on (``verified_*``). When A's records cannot be read, the inverse rule alone answers:
  the sync with the greatest downstream ``<= t`` gives its upstream when equal, else upstream + 1, which
  never skips and replays at most one sync interval. Where no sync lies at or below ``t``, the timestamp
  fallback (``--fallback timestamp``) finds and proves the position by content.
- **Beyond it**: the group has read records produced on B after the failover, which are not on A unless
  something mirrors them back. With a reverse flow B->A in the MM2 file that replicates the topic (the
  identity policy; the default policy never replicates a topic back to the cluster it came from), those
  positions translate through B->A's own offset syncs, the ordinary forward rule. Otherwise the row is
  untranslatable, and says that B's new records must first be mirrored to A.

Proof by content comes first whichever way a record reached A: when a reverse flow copied B's records
into the same topic on A (the identity policy), the inverse translation's search finds them there too.
Where the mirrored range ends is found per partition by content (the copy on B of A's last record); an
unproven answer beyond it is never used.

The plan writes each group's offsets on A through the same steps as a failover (``write_group_offsets``:
the group must be empty on A, its A offsets unchanged since planning, every offset within A's bounds, a
read-back). It refuses groups with members on A (``PreconditionError``, exit 8), and does not write, but
reports, group partitions whose A offset would move backwards unless ``allow_rewind``. The groups' offsets on
B are in the fingerprint: if they consume on B after planning, apply refuses the plan as stale.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import PlanError, PreconditionError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.kafka.records import PartitionReader
from mm2ctl.core.patterns import NameRegex
from mm2ctl.core.progress import Progress, count, no_progress
from mm2ctl.core.spark_checkpoints.query_sources import query_positions, refuse_named_like_queries
from mm2ctl.core.translation.positions import Fallback, Sides, locate
from mm2ctl.core.translation.record_sources import KafkaRecords, OffsetsForTimes
from mm2ctl.core.translation.rule import DEFAULT_WINDOW, Bounds, Sync, inverted, verified
from mm2ctl.core.translation.timestamp_lookup import by_timestamp
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.kafka_records import read_syncs, syncs_disabled_note
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.payloads import TranslationMethod
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failover.checks import note_share_groups, note_untranslatable
from mm2ctl.plans.planners.failover.cluster_reads import bounds_of, committed_positions
from mm2ctl.plans.planners.failover.planner import FailoverReport
from mm2ctl.plans.planners.failover.rows import FailoverRow
from mm2ctl.plans.planners.failover.spark_queries import (
    SparkRequest,
    methods_note,
    plan_queries,
    read_queries,
    split_rows,
)
from mm2ctl.plans.planners.failover.writes import needs_write, write_group_offsets

#: The phase ``plan_failback`` counts (``core.progress.count``): partitions on B whose groups are translated.
FAILBACK_PHASE = "partitions translated back"

#: Methods that prove a position by content.
PROVEN = frozenset(
    {TranslationMethod.VERIFIED_DELTA, TranslationMethod.VERIFIED_SEARCH, TranslationMethod.TIMESTAMP_VERIFIED}
)


@dataclass(frozen=True)
class FailbackOptions:
    #: The flow the failover went over (``A->B``): its groups move from B back to A.
    pair: str
    #: ``--groups``, and ``--topics`` of the topics' names on A (``core.patterns``: whole names); None: all.
    groups: str | None = None
    topics: str | None = None
    allow_rewind: bool = False
    #: What translates a position no offset sync lies at or below (A's and B's records must be readable).
    fallback: Fallback = Fallback.TIMESTAMP
    #: The Spark queries reading B's remote topics to move back with the groups (``--spark-checkpoint``).
    spark: SparkRequest = field(default_factory=SparkRequest)


@dataclass
class FailbackReport(FailoverReport):
    """``plan failback``'s rows (``source_*`` on B, ``target_*`` on A) and those it does not write."""

    #: Rows whose A offset would move backwards, not written (no ``allow_rewind``).
    rewinds: list[FailoverRow] = field(default_factory=list)


def reverse_flow(live: LiveState, flow: PairConfig) -> PairConfig | None:
    """The enabled flow B->A of the MM2 file, if there is one."""
    return next((p for p in live.mm2.pairs() if p.source == flow.target and p.target == flow.source), None)


def mirrored_end(syncs: Sequence[Sync], a: Sides) -> int | None:
    """The position on B right after the copy of A's last record: where the mirrored range ends. ``a`` reads A
    (source) and B (target). None when that copy cannot be found (so the range is not known)."""
    bounds = a.source_bounds
    tail = a.source.read(max(bounds.start, bounds.end - DEFAULT_WINDOW), bounds.end)
    if not tail:
        return None
    last = tail[-1].offset
    tr = verified(syncs, last, source=a.source, target=a.target, source_bounds=bounds, target_bounds=a.target_bounds)
    if tr is not None and tr.method in PROVEN:
        return tr.offset + 1
    if a.offset_for_time is not None:
        by_time, _why = by_timestamp(
            last,
            source=a.source,
            target=a.target,
            source_bounds=bounds,
            target_bounds=a.target_bounds,
            offset_for_time=a.offset_for_time,
            source_offset_for_time=a.source_offset_for_time,
        )
        if by_time is not None and by_time.method in PROVEN:
            return by_time.offset + 1
    return None


@dataclass
class _Partition:
    """One partition of a remote topic of A->B, as the planner reads it on both clusters."""

    a_topic: str
    b_topic: str
    partition: int
    inverse: list[Sync]
    back: Sides | None  # B (source) -> A (target)
    there: Sides | None = None  # A (source) -> B (target), to find where the mirrored range ends
    forward: Sides | None = None  # through B->A, for positions beyond the mirrored range
    forward_topic: str | None = None
    forward_syncs: list[Sync] = field(default_factory=list)
    _end: int | None = None
    _end_known: bool = False

    @property
    def end(self) -> int | None:
        """``mirrored_end``, read once and only if a row needs it (a position that is not proven)."""
        if not self._end_known and self.there is not None:
            self._end = mirrored_end(inverted(self.inverse), self.there)
        self._end_known = True
        return self._end


def plan_failback(
    b: PlanBuilder, opts: FailbackOptions, *, progress: Progress = no_progress
) -> tuple[Plan, FailbackReport]:
    """The failback plan and its per-row report (see the module docstring)."""
    live = b.live
    flow = live.mm2.pair(opts.pair)
    a, bb = flow.source, flow.target
    selected_groups, selected_topics = NameRegex(opts.groups, "--groups"), NameRegex(opts.topics, "--topics")
    b.kind = PlanKind.FAILBACK
    b.pair = opts.pair

    queries = read_queries(opts.spark, partial(_remote_of, flow), flow) if opts.spark.checkpoints else []
    progress(f"reading the groups' committed offsets on {bb}")
    groups_on_b = _positions_on_b(b, flow, selected_groups, selected_topics)
    refuse_named_like_queries(queries, groups_on_b, bb)
    positions = {**groups_on_b, **query_positions(queries)}
    if not positions:
        raise PlanError(
            f"no committed offsets on {bb} of groups matching {opts.groups!r} on remote topics of {opts.pair} "
            f"whose source topic matches {opts.topics!r}"
        )
    disabled = syncs_disabled_note(flow)
    if disabled is not None:
        b.notes.append(disabled)
    else:
        progress(f"reading the offset syncs of {opts.pair} ({flow.offset_syncs_topic} on {flow.offset_syncs_cluster})")
    syncs = read_syncs(live, flow)
    rev = reverse_flow(live, flow)
    rev_syncs: dict[TP, list[Sync]] = {}
    if rev is not None:
        progress(f"reading the offset syncs of the reverse flow {rev.name}")
        try:
            rev_syncs = read_syncs(live, rev)
        except PlanError:
            rev_syncs = {}  # the reverse flow has not run yet: nothing of B is on A through it
    b_parts = sorted({(r, p) for parts in positions.values() for r, p in parts})
    a_of = {r: _upstream_name(flow, r) for r, _p in b_parts}
    b_bounds = bounds_of(live, bb, b_parts)
    note_share_groups(b, bb, a, positions, b_bounds)
    a_topics = live.admin(a).list_topics()
    a_parts = sorted({(a_of[r], p) for r, p in b_parts if a_of[r] in a_topics})
    rev_parts = sorted({(rev.remote_topic(r), p) for r, p in b_parts if rev and rev.replicates_topic(r)})
    a_bounds = bounds_of(live, a, sorted({*a_parts, *[tp for tp in rev_parts if tp[0] in a_topics]}))

    todo = sorted((tp, t, group) for group, parts in positions.items() for tp, t in parts.items())
    progress(f"translating {len(todo)} group partition(s) on {len(b_parts)} partition(s) of {bb} back to {a}")
    report = FailbackReport()
    current: _Partition | None = None
    done = 0
    # One consumer per cluster, re-assigned from partition to partition. A's reader also returns the records of
    # aborted transactions, marked: MM2 may have copied them to B, where a consumer read them as ordinary records.
    with (
        PartitionReader(live.kafka_config(a), mark_aborted=True) as on_a,
        PartitionReader(live.kafka_config(bb)) as on_b,
    ):
        readers = {a: on_a, bb: on_b}
        for (r, p), t, group in todo:
            if current is None or (current.b_topic, current.partition) != (r, p):
                if current is not None:
                    done += 1
                count(progress, FAILBACK_PHASE, done, len(b_parts))
                current = _open_partition(live, flow, rev, syncs, rev_syncs, r, p, a_of[r], a_bounds, b_bounds, readers)
            report.rows.append(_translate_back(current, group, t, flow, rev, opts.fallback))
    count(progress, FAILBACK_PHASE, len(b_parts), len(b_parts))
    report.rows.sort(key=lambda row: (row.group, row.source_topic, row.partition))
    report.rows, query_rows = split_rows(report.rows, queries)

    progress(f"reading the groups' state and offsets on {a}")
    report.rows = _with_state_on_a(b, a, report, a_bounds, opts.allow_rewind)
    held_back = {(x.group, x.target_topic, x.partition) for x in report.rewinds}
    writes: dict[str, list[FailoverRow]] = {}
    for row in report.rows:
        key = (row.group, row.target_topic, row.partition)
        if needs_write(live, a, row) and key not in held_back:
            writes.setdefault(row.group, []).append(row)
    write_group_offsets(b, a, writes)
    note_untranslatable(b, report.untranslatable)
    if report.rewinds:
        b.notes.append(
            f"{len(report.rewinds)} group partition(s) would move backwards on {a} and are not written "
            "(pass --allow-rewind to write them): "
            + ", ".join(
                f"{x.group}:{x.target_topic}/{x.partition} {x.before_offset}->{x.target_offset}"
                for x in report.rewinds[:20]
            )
            + (" ..." if len(report.rewinds) > 20 else "")
        )
    report.queries = plan_queries(b, a, opts.spark, queries, query_rows)
    b.notes.append(methods_note([*report.rows, *query_rows]))
    if not writes and not report.queries:
        b.notes.append("nothing to write")
    what = f"{len(writes)} group(s)" + (f" and {len(report.queries)} Spark query(ies)" if report.queries else "")
    return b.build(f"fail {what} back from {bb} to {a}"), report


def _upstream_name(flow: PairConfig, remote: str) -> str:
    return flow.upstream_topic(remote) or remote


def _remote_of(flow: PairConfig, remote: str) -> bool:
    """Is ``remote`` a topic of B that ``flow`` (A->B) mirrored from A?"""
    upstream = flow.upstream_topic(remote)
    return upstream is not None and flow.remote_topic(upstream) == remote and flow.replicates_topic(upstream)


def _positions_on_b(
    b: PlanBuilder, flow: PairConfig, selected_groups: NameRegex, selected_topics: NameRegex
) -> dict[str, dict[TP, int]]:
    """group -> {(remote topic on B, partition): committed offset on B}, for the remote topics of the flow."""

    def wanted_topic(remote: str) -> bool:
        return _remote_of(flow, remote) and selected_topics.matches(_upstream_name(flow, remote))

    def wanted_group(group: str) -> bool:
        return flow.group_filter.matches(group) and selected_groups.matches(group)

    return committed_positions(b, flow.target, flow.source, wanted_group, wanted_topic)


def _open_partition(
    live: LiveState,
    flow: PairConfig,
    rev: PairConfig | None,
    syncs: Mapping[TP, list[Sync]],
    rev_syncs: Mapping[TP, list[Sync]],
    b_topic: str,
    p: int,
    a_topic: str,
    a_bounds: Mapping[TP, Bounds],
    b_bounds: Mapping[TP, Bounds],
    readers: Mapping[str, PartitionReader],
) -> _Partition:
    a, bb = flow.source, flow.target
    forward_syncs = syncs.get((a_topic, p), [])
    part = _Partition(a_topic, b_topic, p, inverted(forward_syncs), None)
    ab, bbd = a_bounds.get((a_topic, p)), b_bounds.get((b_topic, p))
    if ab is None or bbd is None:
        return part
    a_records = KafkaRecords(readers[a], a_topic, p, ab.end)
    b_records = KafkaRecords(readers[bb], b_topic, p, bbd.end)
    on_a, on_b = OffsetsForTimes(live.admin(a), a_topic, p), OffsetsForTimes(live.admin(bb), b_topic, p)
    part.back = Sides(b_records, a_records, bbd, ab, on_a, on_b)
    part.there = Sides(a_records, b_records, ab, bbd, on_b, on_a)
    if rev is not None and rev.replicates_topic(b_topic):
        f_topic = rev.remote_topic(b_topic)
        fb = a_bounds.get((f_topic, p))
        if fb is not None:
            part.forward_topic = f_topic
            part.forward_syncs = rev_syncs.get((b_topic, p), [])
            part.forward = Sides(
                KafkaRecords(readers[bb], b_topic, p, bbd.end),
                KafkaRecords(readers[a], f_topic, p, fb.end),
                bbd,
                fb,
                OffsetsForTimes(live.admin(a), f_topic, p),
                on_b,
            )
    return part


def _translate_back(
    part: _Partition, group: str, t: int, flow: PairConfig, rev: PairConfig | None, fallback: Fallback
) -> FailoverRow:
    """Where ``t`` on B lies on A. Proof by content comes first, whichever way the records reached A (A->B
    read backwards, or a reverse flow that copied B's records into the same topic); an unproven answer is used
    only inside the mirrored range."""
    a, bb = flow.source, flow.target
    a_topic = part.a_topic
    tr, why = locate(part.inverse, t, part.back, fallback)
    if tr is not None and tr.method in (TranslationMethod.OFFSET_SYNC_EXACT, TranslationMethod.OFFSET_SYNC_NEXT):
        tr = dataclasses.replace(tr, detail=f"{flow.name}'s sync read backwards: {tr.detail}")
    if (tr is None or tr.method not in PROVEN) and (end := part.end) is not None and t > end:
        beyond = f"the group read records produced on {bb} after the failover ({part.b_topic}/{part.partition} "
        beyond += f"offsets {end} to {t})"
        tr = None
        if part.forward is not None and part.forward_topic is not None and rev is not None:
            tr, rev_why = locate(part.forward_syncs, t, part.forward, fallback)
            if tr is not None:
                a_topic = part.forward_topic
                tr = dataclasses.replace(tr, detail=f"through {rev.name}'s offset syncs: {tr.detail}")
            else:
                why = f"{beyond}, and {rev.name} has not mirrored them to {a} yet ({rev_why})"
        elif rev is not None and not rev.replicates_topic(part.b_topic):
            why = (
                f"{beyond}; they are not on {a}, and the reverse flow {rev.name} does not replicate "
                f"{part.b_topic} back to {a} (the default replication policy never replicates a topic to the "
                "cluster it came from)"
            )
        else:
            why = f"{beyond}; they are not on {a}: mirror them to {a} first (a {bb}->{a} flow), then plan again"
    return FailoverRow(
        group=group,
        source_topic=part.b_topic,
        target_topic=a_topic,
        partition=part.partition,
        source_offset=t,
        target_offset=None if tr is None else tr.offset,
        before_offset=None,
        method=None if tr is None else tr.method,
        detail=f"untranslatable: {why}" if tr is None else tr.detail,
        delta_candidate=None if tr is None else tr.delta_candidate,
    )


def _with_state_on_a(
    b: PlanBuilder, a: str, report: FailbackReport, a_bounds: Mapping[TP, Bounds], allow_rewind: bool
) -> list[FailoverRow]:
    """Rows with the groups' current offsets on A; refuse groups active on A, set rewinds aside."""
    rows = report.rows
    groups = sorted({r.group for r in rows})
    described = b.live.describe_groups(a, groups)
    current = b.live.many_group_offsets(a, groups)
    problems = [
        f"group {g} has {described[g].members} active member(s) on {a} ({described[g].state}); stop its "
        f"consumers on {a} before failing it back"
        for g in groups
        if described[g].members
    ]
    out = []
    for r in rows:
        r = dataclasses.replace(r, before_offset=current[r.group].get((r.target_topic, r.partition)))
        out.append(r)
        if r.target_offset is None or r.target_offset == r.before_offset:
            continue
        bounds = a_bounds.get((r.target_topic, r.partition))
        if bounds is not None and not bounds.start <= r.target_offset <= bounds.end:
            problems.append(
                f"{r.group}:{r.target_topic}/{r.partition}: translated offset {r.target_offset} is outside "
                f"[{bounds.start}, {bounds.end}] on {a}"
            )
        if r.before_offset is not None and r.target_offset < r.before_offset and not allow_rewind:
            report.rewinds.append(r)
    if problems:
        raise PreconditionError("refusing to plan the failback:\n  " + "\n  ".join(problems))
    return out
