"""An inspector's use of ``inspector.kept.topic_cache``: each pair's kept topics restored from the last process's
files before its first read, and saved again after a read that moved them.

A one-shot run saves after its read, beside the classification (a Spark job collects the kept rows). A live
session (the exporter, ``--watch``) saves after its first read, then at most every ``SAVE_EVERY_S``: the
files are for the next process, and a session reading every few seconds need not rewrite them each time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, Future

from mm2ctl.inspector.kept import topic_cache
from mm2ctl.inspector.kept.pair_topics import PairTopics
from mm2ctl.inspector.kept.topic_cache import CHECKPOINTS, SYNCS, SavedState, Unusable, state_key
from mm2ctl.inspector.output.inspection_result import TopicNote
from mm2ctl.inspector.reads.internal_topics import TopicSnapshot
from mm2ctl.inspector.spark.lazy_session import SparkSource

#: A live session saves its kept topics at most this often.
SAVE_EVERY_S = 300.0


class SavedTopics:
    """Restores and saves the kept topics of an inspector's pairs."""

    def __init__(self) -> None:
        self._saved_at: dict[tuple[str, str], float] = {}
        #: The snapshot each pair's topic was last saved (or restored) at: a save that would write the same
        #: bounds is skipped.
        self._saved_bounds: dict[tuple[str, str], object] = {}

    def restore(
        self,
        spark: SparkSource,
        kept: PairTopics,
        syncs: TopicSnapshot | None,
        checkpoints: TopicSnapshot | None,
    ) -> list[TopicNote]:
        """Restore what ``kept`` does not hold yet from the saved files; a note for each file thrown away."""
        notes = []
        restores: tuple[tuple[str, TopicSnapshot | None, TopicSnapshot | None, Callable[..., None]], ...] = (
            (SYNCS, syncs, kept.syncs_read, kept.restore_syncs),
            (CHECKPOINTS, checkpoints, kept.checkpoints_read, kept.restore_checkpoints),
        )
        for kind, now, held, restore in restores:
            key = state_key(kind, kept.pair, now)
            if key is None or held is not None or now is None:
                continue
            found = topic_cache.load(key)
            if isinstance(found, Unusable):
                notes.append(TopicNote(kept.pair, now.topic, now.cluster, f"read again in full: {found.reason}"))
            elif found is not None:
                try:
                    restore(spark, found, now)
                except (KeyError, TypeError, ValueError) as exc:  # a readable file holding something else
                    topic_cache.discard(key)
                    kept.release()
                    why = f"read again in full: its saved state does not hold what mm2ctl saves ({exc!r})"
                    notes.append(TopicNote(kept.pair, now.topic, now.cluster, why))
                    continue
                self._saved_bounds[(kept.pair, kind)] = (found.topic_id, dict(found.bounds))
        return notes

    def save_soon(self, kept: PairTopics, executor: Executor) -> Future[list[TopicNote]]:
        """Save ``kept``'s topics on ``executor`` where they moved since they were last saved or restored (and,
        after this process's first save, ``SAVE_EVERY_S`` passed); the future holds a note for each save that
        failed."""
        due = []
        for kind, read in ((SYNCS, kept.syncs_read), (CHECKPOINTS, kept.checkpoints_read)):
            if read is None:
                continue
            where = (kept.pair, kind)
            if self._saved_bounds.get(where) == (read.topic_id, dict(read.bounds)):
                continue
            if time.monotonic() - self._saved_at.get(where, -float("inf")) < SAVE_EVERY_S:
                continue
            self._saved_at[where] = time.monotonic()
            self._saved_bounds[where] = (read.topic_id, dict(read.bounds))
            due.append(kind)
        return executor.submit(_save, kept, due)


def _save(kept: PairTopics, kinds: list[str]) -> list[TopicNote]:
    failures = []
    for kind in kinds:
        read = kept.syncs_read if kind == SYNCS else kept.checkpoints_read
        try:
            saved: SavedState | None = kept.saved_syncs() if kind == SYNCS else kept.saved_checkpoints()
            if saved is not None:
                topic_cache.save(saved)
        except Exception as exc:  # the run stands without its files; the note says why
            if read is not None:
                why = f"its decoded state could not be saved for the next run: {type(exc).__name__}: {exc}"
                failures.append(TopicNote(kept.pair, read.topic, read.cluster, why))
    return failures
