"""Spark's own progress, as counts a terminal can draw: tasks finished of the tasks of the stages running.

The inspection's long phase is one Spark action (classify, or the Parquet write), which tells Python nothing
until it returns. Spark's status tracker knows its stages' task counts, so a background thread polls it
while the action runs and reports ``core.progress.count(phase, done, total)``. Only a reporter that counts
gets the thread; Spark's own console progress bar stays off (it writes to the JVM's stderr).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from mm2ctl.core.progress import CountingProgress, Progress
from mm2ctl.inspector.spark.remote import is_remote


class _StageTally:
    """Task counts of every stage seen running since the tally began (a finished stage keeps its last)."""

    def __init__(self) -> None:
        self._stages: dict[int, tuple[int, int]] = {}

    def update(self, stage_id: int, completed: int, tasks: int) -> None:
        self._stages[stage_id] = (min(completed, tasks), tasks)

    def mark_finished(self, active: set[int]) -> None:
        """Stages no longer active ran all their tasks (the tracker forgets them only after they end)."""
        for stage_id, (_done, tasks) in list(self._stages.items()):
            if stage_id not in active:
                self._stages[stage_id] = (tasks, tasks)

    def counts(self) -> tuple[int, int]:
        return sum(d for d, _t in self._stages.values()), sum(t for _d, t in self._stages.values())


@contextmanager
def counting_tasks(
    spark: SparkSession, progress: Progress | None, phase: str, *, interval_s: float = 0.5
) -> Iterator[None]:
    """Count the tasks of the Spark jobs the body runs, as ``phase``, every ``interval_s`` seconds."""
    if not isinstance(progress, CountingProgress) or is_remote(spark):  # a Connect client has no status tracker
        yield
        return
    reporter = progress
    tracker = spark.sparkContext.statusTracker()
    tally = _StageTally()
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(interval_s):
            try:
                active = set(tracker.getActiveStageIds())
                tally.mark_finished(active)
                for stage_id in active:
                    info = tracker.getStageInfo(stage_id)
                    if info is not None:
                        tally.update(stage_id, info.numCompletedTasks, info.numTasks)
            except Exception:  # the session stopping under us ends the counting, never the inspection
                return
            done, total = tally.counts()
            if total:
                reporter.count(phase, done, total)

    thread = threading.Thread(target=poll, name="mm2ctl-task-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
    _done, total = tally.counts()
    if total:
        reporter.count(phase, total, total)


__all__ = ["counting_tasks"]
