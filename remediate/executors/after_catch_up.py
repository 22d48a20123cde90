"""The ``group_offsets_translate`` step: translate the rows MM2 had not copied up to when the plan was made.

It runs after the catch-up wait and after the flow's connectors are stopped, so the records at every group's
position are on the target and nothing moves them any more. Each row is translated as planning translates
(``plans.planners.failover.rows.translate_partitions``: the log end, the offset syncs verified by content, the
timestamp fallback), and the answers go to the journal as the step's outcome (``plans.deferred``); the group
writes after it write those answers. A row that stays untranslatable, still lies past MM2's position, or
would move a target offset back without the plan's ``allow_rewind`` fails the step, before any write.
"""

from __future__ import annotations

from mm2ctl.core.errors import ApplyError
from mm2ctl.core.translation.positions import Fallback
from mm2ctl.plans.deferred import translated_json
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.kafka_records import read_syncs, syncs_disabled_note
from mm2ctl.plans.payloads import EXACT_METHODS, TranslateAfterCatchUp, TranslationMethod
from mm2ctl.plans.planners.failover.cluster_reads import bounds_of, mm2_copy_positions
from mm2ctl.plans.planners.failover.mirroring import not_copied
from mm2ctl.plans.planners.failover.rows import FailoverRow, PartitionState, translate_partitions
from mm2ctl.plans.steps import Step
from mm2ctl.remediate.executors.base import ExecContext, ReadOnlyStep


def _payload(step: Step) -> TranslateAfterCatchUp:
    assert isinstance(step.payload, TranslateAfterCatchUp)
    return step.payload


def _problems(rows: list[FailoverRow], current: dict[str, dict[tuple[str, int], int]], allow_rewind: bool) -> list[str]:
    out = []
    for r in rows:
        where = f"{r.group}:{r.target_topic}/{r.partition} (source offset {r.source_offset})"
        before = current.get(r.group, {}).get((r.target_topic, r.partition))
        if r.target_offset is None:
            out.append(f"{where} is still untranslatable: {r.detail.removeprefix('untranslatable: ')}")
        elif not_copied(r):
            out.append(f"{where}: MM2 has still copied only up to {r.mm2_next_offset}")
        elif before is not None and r.target_offset < before and not allow_rewind:
            out.append(f"{where}: {r.target_offset} would move the target offset back from {before}")
    return out


class TranslateAfterCatchUpExecutor(ReadOnlyStep):
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return {"rows": len(_payload(step).rows)}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        return False  # reads only: translating again gives the answers for the writes that follow

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        p = _payload(step)
        live = ctx.live
        flow = live.mm2.pair(p.pair)
        ctx.progress(f"translating {len(p.rows)} group partition(s) MM2 has now copied")
        syncs = {} if syncs_disabled_note(flow) is not None else read_syncs(live, flow)
        s_bounds = bounds_of(live, flow.source, sorted({(r.source_topic, r.partition) for r in p.rows}))
        t_bounds = bounds_of(live, flow.target, sorted({(r.target_topic, r.partition) for r in p.rows}))
        copied = mm2_copy_positions(live, flow, s_bounds, frozenset(live.admin(flow.target).list_topics()), [])
        todo = sorted(((r.source_topic, r.partition), r.source_offset, r.group) for r in p.rows)
        rows = translate_partitions(
            live,
            flow,
            todo,
            PartitionState(syncs=syncs, source_bounds=s_bounds, target_bounds=t_bounds, copied=copied),
            fallback=Fallback(p.fallback),
            progress=ctx.progress,
        )
        current = live.many_group_offsets(flow.target, sorted({r.group for r in rows}))
        problems = _problems(rows, current, p.allow_rewind)
        if problems:
            more = f"; {len(problems) - 10} more" if len(problems) > 10 else ""
            raise ApplyError(
                f"translating after the catch-up failed for {len(problems)} group partition(s), so no group was "
                "written: " + "; ".join(problems[:10]) + more
            )
        found: dict[tuple[str, str, str, int], tuple[int, TranslationMethod]] = {}
        for r in rows:
            assert r.target_offset is not None and r.method is not None
            found[(flow.target, r.group, r.target_topic, r.partition)] = (r.target_offset, r.method)
        unproven = sum(1 for _o, m in found.values() if m.value not in EXACT_METHODS)
        ctx.progress(
            f"translated {len(found)} group partition(s) after the catch-up"
            + (f"; {unproven} by the cautious rule only (not proven by content)" if unproven else "")
        )
        return translated_json(flow.target, found)
