"""The failover drill's strategies: each puts the group (or a copy of it) where one way of failing over would,
and returns those positions (``Placement``). mm2ctl's strategies plan and apply for real.

- (b) ``mm2_alone``: what MM2's own ``sync.group.offsets`` wrote on the target;
- (c) ``conservative``: ``plan failover --source-unavailable``, the source's address replaced by a closed port;
- (d) ``verified``: ``plan failover --stop-mirroring``;
- (e) ``failback``: a copy resumes where (d) put it, consumes more on the target, and is failed back;
- (f) ``timestamp``: a copy fails over with ``--fallback timestamp`` after p0's offset syncs are truncated;
- (g) ``behind``: a copy is planned with ``--stop-mirroring`` while MM2 is throttled behind it.

(a), the raw source offset, needs no step: it is the group's commit on the source.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.admin import TP, KafkaAdmin
from mm2ctl.core.polling import poll_until
from mm2ctl.core.progress import Progress
from mm2ctl.core.translation.positions import Fallback
from mm2ctl.drill.context import DrillContext
from mm2ctl.drill.load import consume_part_and_commit
from mm2ctl.drill.result import Strategy
from mm2ctl.drill.sync_truncation import truncate_partition_syncs
from mm2ctl.inspector.reads.mm2_position import read_position
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.live_state import LiveState, open_live_state
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.failback import FailbackOptions, plan_failback
from mm2ctl.plans.planners.failover.cluster_reads import read_checkpoints
from mm2ctl.plans.planners.failover.planner import FailoverOptions, FailoverReport, Source, plan_failover
from mm2ctl.plans.planners.find_connectors import ALL_ROLES, find_pair_connectors
from mm2ctl.plans.serialize import write_plan_file
from mm2ctl.remediate import engine

#: A planner run on a fresh builder: the plan and its per-row report.
PlanFunction = Callable[[PlanBuilder], tuple[Plan, FailoverReport]]

#: A port nothing listens on: the source's address in the ``--source-unavailable`` plan's config copy.
UNREACHABLE_BOOTSTRAP = "127.0.0.1:1"


@dataclass(frozen=True)
class Placement:
    """Where a strategy put the group: per partition the offset a consumer resumes from (None: none), how
    (the plan's translation methods, or a sentence), and the commit point when it is not the group's on the
    source."""

    offsets: dict[int, int | None]
    detail: str
    commit_point: Mapping[int, int] | None = None


def commit(admin: KafkaAdmin, group: str, offsets: Mapping[TP, int], what: str) -> None:
    """Commit ``offsets`` to ``group``; raise ``KafkaClusterError`` on any partition's error."""
    res = admin.alter_group_offsets({group: dict(offsets)})[group]
    bad = [r for r in res if r.error is not None]
    if bad:
        raise KafkaClusterError(f"committing {what} offsets to {group}: {bad[0].error}")


def mm2_alone(ctx: DrillContext, committed: Mapping[int, int]) -> Placement:
    """(b): wait until MM2 checkpointed the group at the source commit point and synced it to the target (or
    the deadline), then read what it wrote."""
    group, remote = ctx.group, ctx.remote

    def mm2_synced() -> bool:
        cps = read_checkpoints(ctx.live, ctx.flow).get(group, {})
        got = ctx.dst_admin.committed_offsets([group])[group].offsets
        return all(
            cps.get((remote, p), (-1, -1))[0] == c and got.get((remote, p)) == cps[(remote, p)][1]
            for p, c in committed.items()
        )

    timeout_s = ctx.options.settle_timeout_s
    ctx.progress("waiting for MM2 to checkpoint the group and sync its offsets to the target")
    if not poll_until(mm2_synced, timeout_s=timeout_s, interval_s=1.0):
        ctx.notes.append(
            "MM2 had not checkpointed and synced every partition of the group at the source commit "
            f"point within {timeout_s:g}s; (b) is what it had written by then"
        )
    mm2_written = ctx.dst_admin.committed_offsets([group])[group].offsets
    return Placement(
        {p: mm2_written.get((remote, p)) for p in committed}, "read from the target group before the failover"
    )


def verified(ctx: DrillContext, committed: Mapping[int, int]) -> Placement:
    """(d): ``plan failover --stop-mirroring`` on the group itself, applied, read back."""
    ctx.progress("(d) plan failover --stop-mirroring (verified), apply")
    opts = FailoverOptions(
        pair=ctx.target.pair,
        groups=re.escape(ctx.group),
        topics=re.escape(ctx.topic),
        stop_mirroring=ctx.target.stop_mirroring,
        allow_rewind=True,
    )
    _planned, detail = plan_and_apply(ctx.live, _failover(ctx.progress, opts), ctx.workdir, "verified", ctx.progress)
    after = ctx.dst_admin.committed_offsets([ctx.group])[ctx.group].offsets
    return Placement({p: after.get((ctx.remote, p)) for p in committed}, detail)


def conservative(ctx: DrillContext, committed: Mapping[int, int]) -> Placement:
    """(c): ``plan failover --source-unavailable`` on the group itself, planned with the source's address a
    closed port, applied, read back. From the syncs, or from MM2's checkpoints where the syncs live on the
    source."""
    ctx.progress("(c) plan failover --source-unavailable (conservative) with the source unreachable, apply")
    flow = ctx.flow
    down_cfg = _unreachable_source_config(ctx.target.mm2_config, flow.source, ctx.workdir)
    down_live = open_live_state(down_cfg, connect_urls=[ctx.target.connect_url])
    source_choice = Source.SYNCS
    if flow.offset_syncs_cluster == flow.source:
        source_choice = Source.CHECKPOINTS
        ctx.notes.append(
            "the offset syncs live on the source, so (c) uses --from checkpoints (MM2's own "
            "conservative translations) instead of the syncs"
        )
    opts = FailoverOptions(
        pair=ctx.target.pair,
        groups=re.escape(ctx.group),
        topics=re.escape(ctx.topic),
        source=source_choice,
        source_unavailable=True,
        allow_rewind=True,
    )
    _planned, detail = plan_and_apply(
        down_live, _failover(ctx.progress, opts), ctx.workdir, "conservative", ctx.progress
    )
    after = ctx.dst_admin.committed_offsets([ctx.group])[ctx.group].offsets
    return Placement({p: after.get((ctx.remote, p)) for p in committed}, detail)


def failback(
    ctx: DrillContext, start: Mapping[int, int | None], target_log: Mapping[int, Sequence[tuple[int, int]]]
) -> Placement | None:
    """(e) The round trip: a copy of the group resumes on the target at ``start`` (where (d) put it), consumes
    half of what is left there, and is failed back. Its commit point is where it stopped on the target. None
    (and a note) when the flow's group filter does not take the copy."""
    copy = ctx.copy_of_group(Strategy.FAILBACK)
    if not ctx.flow.group_filter.matches(copy):
        ctx.notes.append(f"(e) not run: {ctx.target.pair}'s group filter does not take the copy {copy}")
        return None
    remote = ctx.remote
    ctx.progress("(e) a copy of the group consumes more on the target from (d)'s position, plan failback, apply")
    start_e = {p: off for p, off in start.items() if off is not None}
    commit(ctx.dst_admin, copy, {(remote, p): off for p, off in start_e.items()}, "(e)")
    more = {p: sum(1 for off, _ in target_log[p] if off >= s) // 2 for p, s in start_e.items()}
    consume_part_and_commit(ctx.dst_conf, remote, copy, {p: n for p, n in more.items() if n}, from_committed=True)
    on_target = ctx.dst_admin.committed_offsets([copy])[copy].offsets
    e_committed = {p: on_target[(remote, p)] for p in start_e if (remote, p) in on_target}
    opts = FailbackOptions(pair=ctx.target.pair, groups=re.escape(copy), topics=re.escape(ctx.topic))
    _planned, detail = plan_and_apply(
        ctx.live, lambda b: plan_failback(b, opts, progress=ctx.progress), ctx.workdir, "failback", ctx.progress
    )
    back = ctx.src_admin.committed_offsets([copy])[copy].offsets
    return Placement({p: back.get((ctx.topic, p)) for p in e_committed}, detail, e_committed)


def timestamp(ctx: DrillContext, committed: Mapping[int, int]) -> Placement | None:
    """(f) Partition 0 loses its offset syncs (truncated), so no sync lies at or below the commit point there;
    a copy of the group committed at the source commit point fails over with the timestamp fallback. None
    (and a note) unless the drill owns the flow and its group filter takes the copy."""
    copy = ctx.copy_of_group(Strategy.TIMESTAMP)
    if not (ctx.target.owns_flow and ctx.flow.group_filter.matches(copy)):
        ctx.notes.append(
            "(f) not run: it truncates offset syncs, so it runs only on a flow the drill creates (the lab)"
        )
        return None
    topic = ctx.topic
    ctx.progress("(f) truncating p0's offset syncs; a copy of the group fails over with --fallback timestamp, apply")
    truncate_partition_syncs(ctx.live, ctx.flow, topic, 0)
    commit(ctx.src_admin, copy, {(topic, p): c for p, c in committed.items()}, "(f)")
    opts = FailoverOptions(
        pair=ctx.target.pair, groups=re.escape(copy), topics=re.escape(topic), fallback=Fallback.TIMESTAMP
    )
    _planned, detail = plan_and_apply(ctx.live, _failover(ctx.progress, opts), ctx.workdir, "timestamp", ctx.progress)
    after = ctx.dst_admin.committed_offsets([copy])[copy].offsets
    return Placement({p: after.get((ctx.remote, p)) for p in committed}, detail)


def behind(
    ctx: DrillContext, committed: Mapping[int, int], source_log: Mapping[int, Sequence[tuple[int, int]]]
) -> Placement:
    """(g): a copy of the group stops in the middle of the burst, which MM2 is far from having copied; it is
    planned with ``--stop-mirroring`` while MM2 is throttled behind it, then applied once the throttle is
    lifted (apply waits for MM2, stops it, translates what it had not copied, writes). The flow's connectors
    run again afterwards."""
    assert ctx.target.throttle is not None
    burst = {p: source_log[p][-(ctx.options.behind_records // 2)][0] for p in committed}
    live, flow, topic, progress = ctx.live, ctx.flow, ctx.topic, ctx.progress
    copy = ctx.copy_of_group(Strategy.BEHIND)
    commit(live.admin(flow.source), copy, {(topic, p): c for p, c in burst.items()}, "(g)")
    position = read_position(live.mm2, flow, live.connect)
    starts = live.admin(flow.source).partition_bounds([(topic, p) for p in burst])
    copied = {p: (position.next_offsets or {}).get((topic, p), starts[(topic, p)].earliest or 0) for p in burst}
    behind_by = {p: c - copied[p] for p, c in burst.items() if position.known}
    progress(f"(g) MM2 is behind the commit point by {behind_by} source offsets: plan failover --stop-mirroring")
    opts = FailoverOptions(pair=ctx.target.pair, groups=re.escape(copy), topics=re.escape(topic), stop_mirroring=True)
    throttle = ctx.target.throttle
    _planned, methods = plan_and_apply(
        live, _failover(progress, opts), ctx.workdir, "behind", progress, before_apply=lambda: throttle(None)
    )
    client = live.require_connect()
    for name in find_pair_connectors(live, flow.source, flow.target, ALL_ROLES).values():
        client.resume(name)
        client.wait_for_state(name, ["RUNNING"], timeout=120, poll_interval=0.25)
    lagging = {p: n for p, n in behind_by.items() if n > 0}
    said = f"MM2 behind the commit point at planning by {lagging}" if lagging else "MM2 was not behind at planning"
    written = ctx.dst_admin.committed_offsets([copy])[copy].offsets
    return Placement({p: written.get((ctx.remote, p)) for p in burst}, f"{said}; {methods}", burst)


def plan_and_apply(
    live: LiveState,
    plan: PlanFunction,
    workdir: Path,
    name: str,
    progress: Progress,
    before_apply: Callable[[], None] = lambda: None,
) -> tuple[dict[TP, int | None], str]:
    """Plan and apply one mm2ctl strategy for real; the planned offsets and the methods used."""
    b = PlanBuilder(live, PlanKind.FAILOVER)
    made, report = plan(b)
    plan_path = workdir / f"{name}.yaml"
    write_plan_file(made, plan_path)
    before_apply()
    if made.steps:
        engine.apply_plan(
            made,
            live,
            journal_path=workdir / f"{name}.journal.jsonl",
            plan_path=str(plan_path),
            progress=progress,
            state_dir=workdir,
            allow_untranslatable=True,  # the drill measures what an untranslatable partition costs
        )
    methods: dict[str, int] = {}
    for r in report.rows:
        key = "untranslatable" if r.method is None else r.method.value
        methods[key] = methods.get(key, 0) + 1
    detail = ", ".join(f"{k}={v}" for k, v in sorted(methods.items()))
    return {(r.target_topic, r.partition): r.target_offset for r in report.rows}, detail


def _failover(progress: Progress, opts: FailoverOptions) -> PlanFunction:
    return lambda b: plan_failover(b, opts, progress=progress)


def _unreachable_source_config(mm2_config: str, source_alias: str, workdir: Path) -> str:
    """A copy of the MM2 properties file whose source bootstrap is a closed port (the key set last wins,
    as in Java's Properties), so the --source-unavailable plan provably reads nothing from the source."""
    text = Path(mm2_config).read_text(encoding="utf-8")
    path = workdir / "source-unavailable.properties"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # the copy may hold the file's secrets
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(
            text.rstrip("\n") + "\n\n# mm2ctl drill: the source is unavailable\n"
            f"{source_alias}.bootstrap.servers = {UNREACHABLE_BOOTSTRAP}\n"
        )
    return str(path)
