"""Every group write of a run checked before the first one is sent, so a failover writes all its groups or
none.

A run of group writes is applied in batches (``remediate.group_batches``), each checked just before it is
sent. Alone, that would leave the groups of earlier batches written when a later group's precondition fails:
half a failover. So before the first batch, every write of the run is checked against one read of its
groups, and any failure refuses the whole run, naming each group, what moved, where, and by whom:

- the group's own consumers (it has members now);
- MirrorMaker 2's group-offset sync: the offset equals MM2's newest checkpoint for that group partition
  (MM2 writes exactly its checkpoint's downstream offset, and only to a group with no members);
- otherwise a commit that is not MM2's (an application, or another tool).

MM2's sync only writes its conservative answer, never past the exact position, so writing the plan over a
move of MM2's loses nothing; ``apply --override-mm2-sync`` lets it (those partitions are returned, and the
batches accept them). By default such a move is refused like any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mm2ctl.core.errors import Mm2ctlError, PreconditionError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.plans.payloads import GroupOffsetsWrite
from mm2ctl.plans.planners.failover.cluster_reads import read_checkpoints
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import GroupTarget
from mm2ctl.remediate.executors.base import ExecContext
from mm2ctl.remediate.precondition_checks import StateView, advanced_by_mm2, planned_offsets, step_failures

#: (cluster, group) -> the partitions whose move ``--override-mm2-sync`` accepted.
Accepted = Mapping[tuple[str, str], frozenset[TP]]


@dataclass(frozen=True, slots=True)
class Move:
    """A target offset that changed since planning, outside what a write accepts by itself."""

    topic: str
    partition: int
    before: int | None
    now: int | None
    planned: int
    by_mm2: bool

    def __str__(self) -> str:
        who = "MirrorMaker 2's group-offset sync" if self.by_mm2 else "a commit that is not MM2's"
        was = "no offset" if self.before is None else str(self.before)
        now = "none" if self.now is None else str(self.now)
        return (
            f"{self.topic}/{self.partition} changed from {was} to {now} since planning (plan: {self.planned}), by {who}"
        )


def _mm2_checkpoints(ctx: ExecContext, cluster: str) -> dict[str, dict[TP, int]]:
    """group -> {(topic, partition): MM2's newest checkpoint downstream offset}, over every flow into
    ``cluster`` whose checkpoints topic can be read."""
    out: dict[str, dict[TP, int]] = {}
    for flow in ctx.live.mm2.pairs():
        if flow.target != cluster:
            continue
        try:
            found = read_checkpoints(ctx.live, flow)
        except Mm2ctlError:
            continue
        for group, parts in found.items():
            for tp, (_up, down) in parts.items():
                out.setdefault(group, {})[tp] = down
    return out


def _moves(step: Step, view: StateView, checkpoints: Mapping[str, Mapping[TP, int]]) -> list[Move]:
    t, p = step.target, step.payload
    assert isinstance(t, GroupTarget) and isinstance(p, GroupOffsetsWrite)
    current = view.group_offsets(t.cluster, t.group)
    ceiling = planned_offsets(step) or {}
    mm2 = checkpoints.get(t.group, {})
    out = []
    for r in p.rows:
        tp = (r.topic, r.partition)
        now = current.get(tp)
        if now == r.before_offset or advanced_by_mm2(r.before_offset, now, ceiling.get(tp)):
            continue
        out.append(Move(r.topic, r.partition, r.before_offset, now, r.offset, now is not None and mm2.get(tp) == now))
    return out


class WritesRefused(PreconditionError):
    """Some group writes of a run would be refused; ``index`` is the first such step."""

    def __init__(self, message: str, *, index: int) -> None:
        super().__init__(message)
        self.index = index


def check_writes(
    steps: Sequence[Step], ctx: ExecContext, *, parallelism: int, view: StateView | None = None
) -> dict[tuple[str, str], frozenset[TP]]:
    """Check every write of ``steps`` against one read of their groups; raise ``WritesRefused`` naming every
    group that cannot be written. Returns the moves ``ctx.override_mm2_sync`` accepted. ``view``: where the
    read goes (the caller may check its first batch against the same read)."""
    view = StateView(ctx.live) if view is None else view
    by_cluster: dict[str, list[Step]] = {}
    for s in steps:
        assert isinstance(s.target, GroupTarget)
        by_cluster.setdefault(s.target.cluster, []).append(s)
    for cluster, group_steps in by_cluster.items():
        partitions = sorted({(r.topic, r.partition) for s in group_steps for r in getattr(s.payload, "rows", ())})
        view.prefetch_groups(
            cluster, [getattr(s.target, "group", "") for s in group_steps], partitions, concurrency=parallelism
        )
    problems: list[str] = []
    first: int | None = None
    accepted: dict[tuple[str, str], frozenset[TP]] = {}
    checkpoints: dict[str, dict[str, dict[TP, int]]] = {}
    for s in steps:
        if not step_failures(s, view):
            continue
        t = s.target
        assert isinstance(t, GroupTarget)
        if t.cluster not in checkpoints:
            checkpoints[t.cluster] = _mm2_checkpoints(ctx, t.cluster)
        moves = _moves(s, view, checkpoints[t.cluster])
        ours = frozenset((m.topic, m.partition) for m in moves if m.by_mm2) if ctx.override_mm2_sync else frozenset()
        rest = step_failures(s, view, accepted=ours)
        members = view.group_members(t.cluster, t.group)
        if not rest:
            accepted[(t.cluster, t.group)] = ours
            continue
        said = [str(m) for m in moves if (m.topic, m.partition) not in ours]
        if members:
            said.append(f"it has {members} member(s): its consumers run on {t.cluster}")
        problems.append(f"group {t.group} on {t.cluster}: " + "; ".join(said or rest))
        first = s.index if first is None else first
    if problems:
        assert first is not None
        hint = (
            " (MM2's own sync only writes its cautious answer: --override-mm2-sync writes the plan over it)"
            if any("MirrorMaker 2's" in p for p in problems) and not ctx.override_mm2_sync
            else ""
        )
        more = f"; {len(problems) - 10} more" if len(problems) > 10 else ""
        raise WritesRefused(
            f"{len(problems)} of {len(steps)} group write(s) would be refused, so none was written: "
            + "; ".join(problems[:10])
            + more
            + hint,
            index=first,
        )
    return accepted
