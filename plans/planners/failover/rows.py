"""The per-partition translation of a failover: a ``FailoverRow`` per group partition, its target position
found by ``core.translation.positions.locate`` (or MM2's checkpoint) over what ``PartitionState`` read once. The planner
and apply's translation after MM2's catch-up (``remediate.executors.after_catch_up``) both translate here."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.kafka.records import PartitionReader
from mm2ctl.core.progress import Progress, count, no_progress
from mm2ctl.core.translation.positions import Fallback, Sides, locate
from mm2ctl.core.translation.record_sources import KafkaRecords, OffsetsForTimes
from mm2ctl.core.translation.rule import Bounds, Sync, Translation
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.payloads import TranslationMethod

#: The phase ``plan_failover`` counts (``core.progress.count``): source partitions whose groups are translated.
TRANSLATE_PHASE = "partitions translated"


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


@dataclass(frozen=True)
class PartitionState:
    """What translating a flow's group partitions reads once: the offset syncs, both sides' bounds, and MM2's
    next offset to copy per source partition (None: not known, or the source cannot be read)."""

    syncs: Mapping[TP, Sequence[Sync]]
    source_bounds: Mapping[TP, Bounds]
    target_bounds: Mapping[TP, Bounds]
    copied: Mapping[TP, int] | None = None


#: Partitions translated side by side, each worker with a consumer per cluster of its own: most of a
#: partition's time is the fetch round trips of its first reads, which overlap across partitions.
TRANSLATORS = 4


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
    target position (``core.translation.positions.locate``), or MM2's checkpoint when ``checkpoints`` is given. Both
    sides' records are read when both bounds are known; the planner and apply's translation after the
    catch-up both translate here.

    Partitions are independent: up to ``TRANSLATORS`` are translated at once, each partition's groups in one
    pass by one thread; the rows come back in ``todo``'s order whatever order the partitions finish in."""
    by_partition: dict[TP, list[tuple[int, str]]] = {}
    for tp, c, group in todo:
        by_partition.setdefault(tp, []).append((c, group))
    partitions = len(by_partition)
    progress(f"translating {len(todo)} group partition(s) on {partitions} source partition(s)")
    made: list[PartitionReader] = []
    local = threading.local()  # each translating thread's own consumers, one per cluster
    lock = threading.Lock()
    finished = [0]

    def one(tp: TP, items: list[tuple[int, str]]) -> list[FailoverRow]:
        readers: tuple[PartitionReader, PartitionReader] | None = getattr(local, "readers", None)
        if readers is None:
            # The source's reader also returns the records of aborted transactions, marked: MM2 may have
            # copied them to the target as ordinary records.
            readers = (
                PartitionReader(live.kafka_config(flow.source), mark_aborted=True),
                PartitionReader(live.kafka_config(flow.target)),
            )
            local.readers = readers
            with lock:
                made.extend(readers)
        rows = _translate_partition(live, flow, tp, items, state, readers, fallback, checkpoints)
        with lock:
            finished[0] += 1
            count(progress, TRANSLATE_PHASE, finished[0], partitions)
        return rows

    count(progress, TRANSLATE_PHASE, 0, partitions)
    try:
        with ThreadPoolExecutor(max_workers=TRANSLATORS, thread_name_prefix="translate") as pool:
            done = [pool.submit(one, tp, items) for tp, items in by_partition.items()]
            out = [row for fut in done for row in fut.result()]
    finally:
        for reader in made:
            reader.close()
    count(progress, TRANSLATE_PHASE, partitions, partitions)
    return out


def _translate_partition(
    live: LiveState,
    flow: PairConfig,
    tp: TP,
    items: Sequence[tuple[int, str]],
    state: PartitionState,
    readers: tuple[PartitionReader, PartitionReader],
    fallback: Fallback,
    checkpoints: Mapping[str, Mapping[TP, tuple[int, int]]] | None,
) -> list[FailoverRow]:
    """The rows of one source partition's ``(committed offset, group)`` items, in their order; its records
    are read ahead once for all its groups (``KafkaRecords``)."""
    topic, p = tp
    src, dst = flow.source, flow.target
    remote = flow.remote_topic(topic)
    next_copy = None if state.copied is None else state.copied.get(tp)
    sides: Sides | None = None
    sb, tb = state.source_bounds.get(tp), state.target_bounds.get((remote, p))
    if sb is not None and tb is not None:
        sides = Sides(
            source=KafkaRecords(readers[0], topic, p, sb.end),
            target=KafkaRecords(readers[1], remote, p, tb.end),
            source_bounds=sb,
            target_bounds=tb,
            offset_for_time=OffsetsForTimes(live.admin(dst), remote, p),
            source_offset_for_time=OffsetsForTimes(live.admin(src), topic, p),
            copied_end=next_copy,
        )
    rows: list[FailoverRow] = []
    # Groups of a few applications sit at a few positions: ``locate`` depends on the partition and the offset
    # only (the syncs, the records and the bounds read once), so the groups at the offset before share its answer.
    last: tuple[int, tuple[Translation | None, str]] | None = None
    for c, group in items:
        tr: Translation | None
        if (remote, p) not in state.target_bounds:
            tr, why = None, f"{remote}/{p} does not exist on {dst}"
        elif checkpoints is not None:
            tr, why = (
                _from_checkpoint(checkpoints.get(group, {}).get((remote, p)), c),
                "no checkpoint for this partition",
            )
        elif last is not None and last[0] == c:
            tr, why = last[1]
        else:
            tr, why = locate(state.syncs.get(tp, []), c, sides, fallback)
            last = c, (tr, why)
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
    return rows


def _from_checkpoint(cp: tuple[int, int] | None, c: int) -> Translation | None:
    if cp is None:
        return None
    seen = "" if cp[0] == c else f" (the group is at {c} now)"
    return Translation(cp[1], TranslationMethod.CHECKPOINT, f"checkpoint {cp[0]}->{cp[1]}{seen}")
