"""A failover's rows MM2 has not copied up to, and stopping the mirroring: without ``--stop-mirroring``
such a row is refused (or gets MM2's cautious answer with ``--accept-cautious``); with it, the plan waits
for MM2's catch-up, stops the pair's connectors, and translates those rows then (apply's
``TranslateAfterCatchUp`` step)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import NotCopiedError, PlanError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.translation.record_sources import last_record_offsets
from mm2ctl.core.translation.rule import Bounds, Sync, newest_sync_at_or_below
from mm2ctl.plans.payloads import (
    EXACT_METHODS,
    CatchUpTarget,
    DeferredRow,
    TranslateAfterCatchUp,
    TranslationMethod,
    WaitForCatchUp,
)
from mm2ctl.plans.planners.builder import PlanBuilder
from mm2ctl.plans.planners.connectors import Action, lifecycle_step, observed_state
from mm2ctl.plans.planners.failover.request import FailoverOptions
from mm2ctl.plans.planners.failover.rows import FailoverRow
from mm2ctl.plans.planners.find_connectors import ALL_ROLES, find_pair_connectors
from mm2ctl.plans.preconditions import ConnectorStateIn, ConnectorStopped
from mm2ctl.plans.steps import StepKind
from mm2ctl.plans.targets import ConnectorTarget


def not_copied(row: FailoverRow) -> bool:
    """Does the group's position lie past what MM2 had copied, unproven by the records? A position proven by
    content (an exact method) has its records on the target, whatever MM2's stored position (which trails
    the copy by up to one offset flush) says."""
    if row.mm2_next_offset is None or row.source_offset <= row.mm2_next_offset:
        return False
    return row.method is None or row.method.value not in EXACT_METHODS


def defer_if_not_copied(row: FailoverRow, t_bounds: Mapping[TP, Bounds], opts: FailoverOptions) -> FailoverRow:
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


def refuse_not_copied(
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


def deferred_summary(rows: Sequence[FailoverRow], limit: int = 3) -> str:
    """The first ``limit`` rows MM2 had not copied up to, on one line (``group:topic/partition@offset, MM2 at
    next``): the translation step's description and the refusal without ``--stop-mirroring`` both list them."""
    shown = ", ".join(
        f"{r.group}:{r.source_topic}/{r.partition}@{r.source_offset}, MM2 at {r.mm2_next_offset}" for r in rows[:limit]
    )
    return shown + (f"; {len(rows) - limit} more" if len(rows) > limit else "")


def stop_mirroring(
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
    known = {tp: s_bounds[tp] for tp in tps if tp in s_bounds}
    lasts = last_record_offsets(b.live.kafka_config(flow.source), known) if known else {}
    targets = [
        CatchUpTarget(topic=t, partition=p, upstream_offset=-1 if last is None else last)
        for (t, p), last in lasts.items()
    ]
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
