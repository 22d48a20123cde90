"""What an inspection keeps of one pair's checkpoints topic between runs: the live checkpoint of each key.

A run reads the topic once, up to its snapshot (``inspector.reads.internal_topics``), and keeps the newest
record of each (group, topic, partition) (``inspector.transforms.live_checkpoints``) as a Spark local
checkpoint. A live session holds them on its driver too, as Arrow, while small (``held``): a later run's few new
records are then read through librdkafka and folded in there (``inspector.rules.checkpoint_fold``), with no
Spark job. Larger deltas are folded in Spark; a topic that changed under the session is read in full again.
An inspection on the driver engine (``on_driver``) reads a small topic's whole history on the driver too, and
folds it into no checkpoints: it needs no Spark session.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession

from mm2ctl.inspector import schemas
from mm2ctl.inspector.kept.changed_groups import TopicChanges
from mm2ctl.inspector.kept.topic_cache import CHECKPOINTS, SavedState, state_key
from mm2ctl.inspector.reads import kafka_read
from mm2ctl.inspector.reads.internal_topics import ReadPlan, TopicSnapshot, plan_read
from mm2ctl.inspector.reads.kafka_read import read_ranges
from mm2ctl.inspector.rules import checkpoint_fold, decoding
from mm2ctl.inspector.spark.compat import frame_from_arrow, to_arrow
from mm2ctl.inspector.spark.frames import release
from mm2ctl.inspector.spark.lazy_session import SparkSource
from mm2ctl.inspector.transforms import decode, live_checkpoints

#: A live session holds a pair's runs and live checkpoints on its driver, as Arrow, while each has at most this
#: many rows: a cycle's few new records then fold in there, and its changed groups classify there, with no
#: Spark job (``inspector.kept.driver_rows``).
HELD_MAX_ROWS = 250_000


def held_or_collected(held: pa.Table | None, frame: DataFrame | None) -> pa.Table | None:
    """What the driver holds, else the kept frame collected (a Spark job), else None."""
    if held is not None:
        return held
    return None if frame is None else to_arrow(frame)


class KeptCheckpoints:
    """One pair's live checkpoints, kept between the runs of a session (module docstring). ``changes`` is the
    pair's record of what changed since its rows were last classified, shared with its offset syncs."""

    def __init__(self, pair: str, changes: TopicChanges) -> None:
        self.pair = pair
        self.changes = changes
        #: ``schemas.CHECKPOINTS_SCHEMA``, a local checkpoint; None when held only, unread or unreadable.
        self.frame: DataFrame | None = None
        #: The same rows held on the driver (a live session's, while small); the frame is made from them only
        #: when a Spark job needs it.
        self.held: pa.Table | None = None
        #: Whether to hold them on the driver.
        self.hold = False
        #: Whether a small topic's whole history is read and folded on the driver too (the driver engine).
        self.on_driver = False
        self._read: TopicSnapshot | None = None
        self._malformed: Counter[str] = Counter()

    @property
    def read(self) -> TopicSnapshot | None:
        """The snapshot the kept checkpoints were read up to."""
        return self._read

    @property
    def malformed(self) -> Mapping[str, int]:
        """The malformed records skipped, per reason."""
        return dict(self._malformed)

    def refresh(self, spark: SparkSource, settings: Mapping[str, str], now: TopicSnapshot | None) -> str | None:
        """Bring the kept live checkpoints to ``now`` (None: unreadable, none kept); why it was read in full
        again, if it was. ``spark`` is asked for a session only when the read needs one."""
        if now is None:
            self.drop()
            return None
        plan = plan_read(self._read, now)
        kept = self.frame is not None or self.held is not None
        if plan.empty and kept:
            self._read = now
            return None
        most = kafka_read.driver_max_offsets(on_driver=self.on_driver)
        if kept and not plan.full and self.held is not None and plan.offsets <= most:
            self._fold_on_driver(settings, now, plan, into=self.held)
            return None
        if self.on_driver and (plan.full or not kept) and plan.offsets <= most:
            self._fold_on_driver(settings, now, plan, into=None)
            return plan.reason if plan.full else None
        self._fold_in_spark(spark(), settings, now, plan)
        self._read = now
        return plan.reason if plan.full else None

    def _fold_in_spark(
        self, spark: SparkSession, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan
    ) -> None:
        """Read ``plan``'s records with Spark and fold them into the kept frame (or keep them, read in full)."""
        if self.held is not None and self.frame is None:
            self.frame = self._held_frame(spark)
        raw = read_ranges(spark, settings, now.topic, plan.ranges, cluster_pair=self.pair)
        decoded = decode.decode_checkpoints(raw).cache()
        try:
            facts = live_checkpoints.read_facts(decoded).collect()
            if plan.full or self.frame is None:
                self._malformed = Counter()
                live = live_checkpoints.live_checkpoints(decoded)
                self.changes.all()
            else:
                records = sum(r["records"] for r in facts)
                live = live_checkpoints.merged_checkpoints(self.frame, decoded, records)
                self.changes.groups.update(g for r in facts if r["malformed_reason"] is None for g in r["groups"])
            malformed = [r for r in facts if r["malformed_reason"] is not None]
            self._malformed.update({r["malformed_reason"]: r["records"] for r in malformed})
            previous, self.frame = self.frame, live.localCheckpoint(eager=True)
            if previous is not None:
                release(previous)
            self.held = None
            if self.hold:
                held = to_arrow(self.frame)
                self.held = held if held.num_rows <= HELD_MAX_ROWS else None
        finally:
            release(decoded)

    def _fold_on_driver(
        self, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan, *, into: pa.Table | None
    ) -> None:
        """``plan``'s records read through librdkafka and folded in Arrow (``inspector.rules.checkpoint_fold``) into
        the held live checkpoints ``into`` (a live cycle's few new records), or into none (``None``: the topic's
        whole history, on the driver engine); the result held."""
        raw = kafka_read.read_on_driver(settings, now.topic, plan.ranges, cluster_pair=self.pair)
        base = into if into is not None else schemas.arrow_schema(schemas.CHECKPOINTS_SCHEMA).empty_table()
        folded = checkpoint_fold.fold_checkpoints(base, decoding.decode_checkpoints_table(raw))
        if into is None:
            self._malformed = Counter()
            self.changes.all()
        else:
            self.changes.groups.update(folded.groups)
        self._malformed.update(folded.malformed)
        if self.frame is not None:
            release(self.frame)
        self.frame, self.held, self._read = None, folded.live, now

    def _held_frame(self, spark: SparkSession) -> DataFrame:
        assert self.held is not None
        return frame_from_arrow(spark, self.held, schemas.CHECKPOINTS_SCHEMA)

    def frame_or_empty(self, spark: SparkSession) -> DataFrame:
        """The kept live checkpoints as a frame (made from the held ones if need be), or an empty one."""
        if self.frame is None and self.held is not None:
            self.frame = self._held_frame(spark)
        return self.frame if self.frame is not None else spark.createDataFrame([], schemas.CHECKPOINTS_SCHEMA)

    def held_or_empty(self) -> pa.Table | None:
        """The live checkpoints as the driver holds them (empty when the topic was never read); None when Spark
        holds them."""
        if self.held is None and self.frame is None and self._read is None:
            return schemas.arrow_schema(schemas.CHECKPOINTS_SCHEMA).empty_table()
        return self.held

    def saved(self) -> SavedState | None:
        """The kept live checkpoints as a file holds them (a Spark job collects them unless held); None when
        there are none, or the topic's snapshot lacks the ids that key a file."""
        key = state_key(CHECKPOINTS, self.pair, self._read)
        if key is None or self._read is None:
            return None
        table = held_or_collected(self.held, self.frame)
        if table is None:
            return None
        read = self._read
        return SavedState(key, str(read.topic_id), dict(read.bounds), table, {"malformed": dict(self._malformed)})

    def restore(self, spark: SparkSource, saved: SavedState, now: TopicSnapshot) -> None:
        """Keep ``saved`` as if this session had read it (``refresh`` reads past it)."""
        if self.frame is not None:
            release(self.frame)
        table = saved.table
        self.held = table if self.hold and table.num_rows <= HELD_MAX_ROWS else None
        self.frame = None  # made from the held rows when a Spark job needs them (``frame_or_empty``)
        if self.held is None:
            self.frame = frame_from_arrow(spark(), table, schemas.CHECKPOINTS_SCHEMA).localCheckpoint(eager=False)
        self._malformed = Counter({str(r): int(n) for r, n in saved.extra["malformed"].items()})
        self._read = TopicSnapshot(now.cluster, now.topic, saved.topic_id, saved.bounds, now.cluster_id)
        self.changes.all()

    def drop(self) -> None:
        """Keep nothing (the topic cannot be read, or the session goes on without this pair)."""
        if self.frame is not None:
            release(self.frame)
        self.frame, self.held, self._read, self._malformed = None, None, None, Counter()
        self.changes.all()
