"""The failover drill's truth, counted by content: a real consumer resumes from each strategy's positions and
reads to the end (``measure``); per partition, the records it lost, read twice and read from aborted
transactions against the commit point (``score``), and the sync interval MM2 left around that point
(``sync_intervals``), which bounds what the conservative rule may replay."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence

from mm2ctl.core.kafka import records
from mm2ctl.core.translation.rule import Sync
from mm2ctl.drill.context import DrillContext
from mm2ctl.drill.load import ABORTED, is_aborted_record, resume_and_read
from mm2ctl.drill.result import LABELS, ON_SOURCE, PartitionOutcome, Strategy, StrategyOutcome
from mm2ctl.drill.strategies import Placement, commit
from mm2ctl.plans.kafka_records import normalize_each, read_sync_histories

#: (offset, sequence number) per partition: a cluster's log as the drill's reader sees it (``load.read_seqs``).
Log = Mapping[int, Sequence[tuple[int, int]]]


def score(
    strategy: Strategy,
    *,
    committed: Mapping[int, int],
    source_log: Mapping[int, Sequence[tuple[int, int]]],
    produced: Sequence[int],
    target_offsets: Mapping[int, int | None],
    seen: Mapping[int, Sequence[int]],
    offset_lag_max: int,
    sync_intervals: Mapping[int, int | None] | None = None,
    detail: str = "",
) -> StrategyOutcome:
    """Lost, duplicated and aborted records per partition for one strategy, and whether its goal was met.

    The commit point of a partition is the sequence number of the first source record at or after the
    committed offset (the offset may name a transaction marker), or everything produced when none is left.
    ``seen`` holds ``ABORTED`` for each record of an aborted transaction read: those read before the first
    record at or after the commit point count as ``aborted``.
    """
    parts = []
    for p in sorted(committed):
        c = committed[p]
        commit_seq = next((seq for off, seq in source_log[p] if off >= c), produced[p])
        read = list(seen.get(p, ()))
        first = next((i for i, x in enumerate(read) if x >= commit_seq), len(read))
        aborted = sum(1 for x in read[:first] if x == ABORTED)
        got = [x for x in read if x != ABORTED]
        after = [s for s in got if s >= commit_seq]
        lost = len(set(range(commit_seq, produced[p])) - set(after))
        duplicated = sum(1 for s in got if s < commit_seq) + (len(after) - len(set(after)))
        interval = (sync_intervals or {}).get(p)
        parts.append(
            PartitionOutcome(p, c, commit_seq, produced[p], target_offsets.get(p), lost, duplicated, interval, aborted)
        )
    goal: str | None = None
    met: bool | None = None
    if strategy in (Strategy.VERIFIED, Strategy.FAILBACK, Strategy.TIMESTAMP, Strategy.BEHIND):
        goal = "lost 0, duplicated 0, aborted 0"
        met = all(x.lost == 0 and x.duplicated == 0 and x.aborted == 0 for x in parts)
    elif strategy is Strategy.CONSERVATIVE:
        # The conservative rule resumes just after the newest sync at or below the commit point, so it can
        # replay at most the sync interval MM2 left there (records, and copies of aborted ones); MM2 aims to
        # keep that within offset.lag.max.
        goal = "lost 0, duplicated + aborted <= one sync interval per partition"
        met = all(
            x.lost == 0 and x.sync_interval is not None and x.duplicated + x.aborted <= x.sync_interval for x in parts
        )
    return StrategyOutcome(strategy, LABELS[strategy], tuple(parts), goal, met, detail)


def sync_intervals(
    syncs: Mapping[tuple[str, int], Sequence[Sync]],
    topic: str,
    committed: Mapping[int, int],
    source_end: Mapping[int, int],
    resume: Mapping[int, int] | None = None,
) -> dict[int, int | None]:
    """Per partition, the sync interval around the commit point: from the newest sync with upstream <= the
    committed offset to the upstream of the first sync at or after the record the group reads next (``resume``,
    its offset; else the first sync past the committed offset), or, past the last sync, the source partition's
    end. A sync between the two names a record of an aborted transaction MM2 copied: the replay a rule that
    never skips allows runs on to the next committed record's copy."""
    out: dict[int, int | None] = {}
    for p, c in committed.items():
        ups = sorted(s.upstream for s in syncs.get((topic, p), ()))
        below = [u for u in ups if u <= c]
        nxt = max(c + 1, (resume or {}).get(p, c + 1))
        above = [u for u in ups if u >= nxt]
        if not below:
            out[p] = None
            continue
        end = above[0] if above else max(c, source_end.get(p, c))
        out[p] = end - below[-1]
    return out


def upstream_decreases(
    written: Mapping[tuple[str, int], Sequence[Sync | None]], topic: str
) -> dict[int, tuple[Sync, Sync]]:
    """Per partition of ``topic``, the first pair of syncs (in write order) whose upstream offset decreases:
    where MM2's own OffsetSyncStore forgets every earlier sync of the partition."""
    out: dict[int, tuple[Sync, Sync]] = {}
    for (t, p), history in written.items():
        if t != topic:
            continue
        syncs = [s for s in history if s is not None]
        pair = next(((a, b) for a, b in itertools.pairwise(syncs) if b.upstream < a.upstream), None)
        if pair is not None:
            out[p] = pair
    return out


def measure(
    ctx: DrillContext,
    placements: Mapping[Strategy, Placement],
    *,
    committed: Mapping[int, int],
    source_log: Log,
    target_log: Log,
    produced: Sequence[int],
    intervals: Mapping[int, int | None],
) -> list[StrategyOutcome]:
    """Each strategy's offsets are committed to a copy of the group (``<group>.drill-<strategy>``), a real
    consumer resumes from them (on the target, or for a failback on the source) and reads to the end, and what
    it read is scored against the strategy's commit point (the group's on the source unless it has its own)."""
    outcomes = []
    for strategy in Strategy:
        placed = placements.get(strategy)
        if placed is None:
            continue
        copy = ctx.copy_of_group(strategy)
        on_source = strategy in ON_SOURCE
        cluster, conf, read_topic = (
            (ctx.src_admin, ctx.source_conf, ctx.topic) if on_source else (ctx.dst_admin, ctx.dst_conf, ctx.remote)
        )
        wanted = {(read_topic, p): off for p, off in placed.offsets.items() if off is not None}
        if wanted:
            commit(cluster, copy, wanted, f"({strategy.value})")
        ctx.progress(f"({strategy.value}) resuming a consumer on the {'source' if on_source else 'target'} from {copy}")
        seen = resume_and_read(conf, read_topic, copy, ctx.options.partitions)
        outcomes.append(
            score(
                strategy,
                committed=placed.commit_point if placed.commit_point is not None else committed,
                source_log=target_log if on_source else source_log,
                produced=produced,
                target_offsets=placed.offsets,
                seen=seen,
                offset_lag_max=ctx.flow.offset_lag_max,
                sync_intervals=intervals,
                detail=placed.detail,
            )
        )
    return outcomes


def intervals_at_commit(ctx: DrillContext, committed: Mapping[int, int], source_log: Log) -> dict[int, int | None]:
    """The sync interval MM2 left around each partition's commit point (``sync_intervals``) from the syncs it
    wrote; notes where the syncs go back upstream and where an interval is wider than ``offset.lag.max``."""
    topic, flow = ctx.topic, ctx.flow
    source_end = {p: (source_log[p][-1][0] + 1 if source_log[p] else 0) for p in committed}
    written = read_sync_histories(ctx.live, flow)
    resume = {p: next((off for off, _seq in source_log[p] if off >= c), c) for p, c in committed.items()}
    intervals = sync_intervals(normalize_each(written), topic, committed, source_end, resume)
    for p, (a, b) in sorted(upstream_decreases(written, topic).items()):
        ctx.notes.append(
            f"the syncs of p{p} go back upstream ({a.upstream}->{a.downstream}, then {b.upstream}->{b.downstream}: "
            "written out of order, or copied again after a restart); MM2's OffsetSyncStore drops a partition's "
            "history there, mm2ctl keeps every sync that agrees with the others"
        )
    wide = {p: i for p, i in intervals.items() if i is not None and i > flow.offset_lag_max}
    if wide:
        ctx.notes.append(
            f"MM2 left sync intervals wider than offset.lag.max={flow.offset_lag_max} at the commit point: {wide}"
        )
    return intervals


def aborted_copies(ctx: DrillContext) -> int:
    """How many records of aborted transactions MM2 copied to the target (noted when any)."""
    partitions = list(range(ctx.options.partitions))
    copied = sum(is_aborted_record(r.value) for r in records.read_partitions(ctx.dst_conf, ctx.remote, partitions))
    if copied:
        ctx.notes.append(
            f"MM2 copied {copied} record(s) of aborted transactions to {ctx.remote} as ordinary records (its "
            "source consumer reads uncommitted records): a consumer of the target reads those after its commit "
            "point whatever its position; source.consumer.isolation.level=read_committed on the flow stops it"
        )
    return copied
