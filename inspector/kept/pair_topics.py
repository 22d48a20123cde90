"""What an inspection keeps of one pair's offset syncs and checkpoints, read once per run.

Each run reads each internal topic once, from the snapshot of its offsets the driver took with the admin
state (``inspector.reads.internal_topics``), and decodes it into the frames the run needs:

* the offset syncs into each source partition's current mapping, as runs of syncs (``inspector.transforms.sync_runs``),
  with each partition's newest record (replication health's ``newest_sync_*``) and the malformed records;
* the checkpoints into the live checkpoint of each key (``inspector.kept.kept_checkpoints``).

A live session keeps these frames (Spark's local checkpoints: materialized once, with no lineage back to the
reads, so a long-lived session's plans do not grow) and each later run reads only the records past the
previous snapshot and folds them in. It reads a topic again in full, and says why, when the topic changed
under it (``inspector.reads.internal_topics.plan_read``), when new syncs contradict the kept ones or a tombstone
arrives (the current mapping must then be found from the whole history), when a partition to inspect appears that the
kept syncs were not numbered for, or when the kept runs have grown to more than twice what the last full read
found (the topic's cleaner may have compacted what the session still keeps).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql.types import IntegerType, LongType, StructField, StructType

from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.progress import Progress
from mm2ctl.inspector import schemas
from mm2ctl.inspector.kept.changed_groups import TopicChanges
from mm2ctl.inspector.kept.kept_checkpoints import HELD_MAX_ROWS, KeptCheckpoints, held_or_collected
from mm2ctl.inspector.kept.topic_cache import SYNCS, SavedState, state_key
from mm2ctl.inspector.reads import kafka_read
from mm2ctl.inspector.reads.internal_topics import ReadPlan, TopicSnapshot, plan_read
from mm2ctl.inspector.reads.kafka_read import read_ranges, tasks_for
from mm2ctl.inspector.rules import decoding, sync_fold
from mm2ctl.inspector.spark.compat import frame_from_arrow, to_arrow
from mm2ctl.inspector.spark.frames import release
from mm2ctl.inspector.spark.lazy_session import SparkSource
from mm2ctl.inspector.transforms import decode, sync_runs

#: Kept runs may grow to this many times what the last full read found (plus ``RUNS_SLACK``) before the topic
#: is read in full again.
RUNS_GROWTH = 2
RUNS_SLACK = 10_000
#: ``sync_runs.RUN_COLUMNS`` as a schema.
RUNS_SCHEMA = StructType(
    [StructField(sync_runs.PART, IntegerType())]
    + [StructField(c, LongType()) for c in (sync_runs.U0, sync_runs.D0, sync_runs.N, sync_runs.RECORDS)]
)


@dataclass(frozen=True, slots=True)
class Numbering:
    """The small int (``_part``) of each source partition the kept syncs are numbered by: the partitions a
    run inspects or replicates, numbered in key order at a full read."""

    parts: Mapping[TP, int]

    @classmethod
    def of(cls, partitions: Iterable[TP]) -> Numbering:
        return cls({tp: i for i, tp in enumerate(sorted(set(partitions)), start=1)})

    def covers(self, partitions: Iterable[TP]) -> bool:
        return all(tp in self.parts for tp in partitions)

    def table(self, pair: str) -> pa.Table:
        keys = sorted(self.parts.items(), key=lambda kv: kv[1])
        return pa.table(
            {
                "cluster_pair": pa.array([pair] * len(keys), pa.string()),
                "topic": pa.array([tp[0] for tp, _ in keys], pa.string()),
                "partition": pa.array([tp[1] for tp, _ in keys], pa.int32()),
                "_part": pa.array([n for _, n in keys], pa.int32()),
            },
            schema=schemas.arrow_schema(schemas.PARTITION_NUMBERS_SCHEMA),
        )


def _utc(moment: dt.datetime | None) -> dt.datetime | None:
    """``moment`` in UTC. Spark gives timestamps back naive, in this process's local time; Arrow, in UTC."""
    return None if moment is None else moment.astimezone(dt.UTC)


@dataclass(frozen=True, slots=True)
class NewestSync:
    """A source partition's newest offset-sync record: a sync (``upstream -> downstream``), or a tombstone."""

    is_sync: bool
    upstream: int | None
    downstream: int | None
    timestamp: dt.datetime | None


class PairTopics:
    """One pair's decoded internal topics, kept between the runs of a session (``refresh``, ``release``)."""

    def __init__(self, pair: str) -> None:
        self.pair = pair
        self.numbering: Numbering | None = None
        #: ``sync_runs.RUN_COLUMNS``, a local checkpoint; None before the first read or when unreadable.
        self.runs: DataFrame | None = None
        self.newest: dict[TP, NewestSync] = {}
        self._syncs_read: TopicSnapshot | None = None
        self._syncs_malformed: Counter[str] = Counter()
        self._runs_at_full = 0
        self._runs = 0
        #: What changed since the session's rows were last classified (``inspector.kept.changed_groups``).
        self.changes = TopicChanges()
        self._hold = False
        #: The runs (``sync_fold.RUNS_SCHEMA``) held on the driver; when held, the frame above is made from them,
        #: and only when a Spark job needs it.
        self.held_runs: pa.Table | None = None
        self.live_checkpoints = KeptCheckpoints(pair, self.changes)

    @property
    def on_driver(self) -> bool:
        """Whether a read of a topic's whole history is made and folded on the driver while small (an inspection on
        the driver engine): then it needs no Spark session unless the history holds more than one mapping."""
        return self.live_checkpoints.on_driver

    @on_driver.setter
    def on_driver(self, value: bool) -> None:
        self.live_checkpoints.on_driver = value
        if value:
            self.hold = True

    @property
    def hold(self) -> bool:
        """Whether to hold the runs and live checkpoints on the driver (a live session's), while small."""
        return self._hold

    @hold.setter
    def hold(self, value: bool) -> None:
        self._hold = self.live_checkpoints.hold = value

    # --- offset syncs ---

    def refresh_syncs(
        self,
        spark: SparkSource,
        settings: Mapping[str, str],
        now: TopicSnapshot | None,
        partitions: Iterable[TP],
        say: Progress,
    ) -> str | None:
        """Bring the kept syncs to ``now`` (None: the topic cannot be read, so none are kept) for the source
        ``partitions`` the run inspects or replicates. Returns why the topic was read in full again, if it was.
        ``spark`` is asked for a session only when the read needs one.
        """
        if now is None:
            self._drop_syncs()
            return None
        wanted = set(partitions)
        reread = None
        if self.numbering is not None and not self.numbering.covers(wanted):
            reread = "partitions to inspect appeared that its kept syncs were not read for"
        elif self._runs > RUNS_GROWTH * self._runs_at_full + RUNS_SLACK:
            reread = f"its kept syncs grew from {self._runs_at_full} to {self._runs} runs since it was read in full"
        plan = plan_read(self._syncs_read, now, reread=reread)
        if not plan.full and not plan.empty:
            assert self.numbering is not None and (self.runs is not None or self.held_runs is not None)
            say(f"{self.pair}: {plan.describe(now.topic)}")
            reread = self._fold_in_syncs(spark, settings, now, plan, say)
            if reread is not None:
                plan = ReadPlan(dict(now.bounds), full=True, reason=reread)
        if plan.full:
            say(f"{self.pair}: {plan.describe(now.topic)}")
            known = wanted | set(self.numbering.parts if self.numbering is not None else ())
            if not self._read_syncs_in_full_on_driver(settings, now, plan, known):
                self._read_syncs_in_full(spark(), settings, now, plan, known, say)
        self._syncs_read = now
        return plan.reason if plan.full else None

    def _decoded_syncs(
        self, spark: SparkSession, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan
    ) -> DataFrame:
        assert self.numbering is not None
        raw = read_ranges(spark, settings, now.topic, plan.ranges, cluster_pair=self.pair)
        known = frame_from_arrow(spark, self.numbering.table(self.pair), schemas.PARTITION_NUMBERS_SCHEMA)
        return sync_runs.records(decode.decode_offset_syncs(raw, known=known))

    def _read_syncs_in_full(
        self,
        spark: SparkSession,
        settings: Mapping[str, str],
        now: TopicSnapshot,
        plan: ReadPlan,
        partitions: set[TP],
        say: Progress,
    ) -> None:
        self.numbering = Numbering.of(partitions)
        shuffle = tasks_for(now.records_span)
        records = sync_runs.sorted_records(self._decoded_syncs(spark, settings, now, plan), shuffle).cache()
        try:
            facts = sync_runs.partition_facts(records).collect()
            self._syncs_malformed = Counter()
            self.newest = {}  # a partition with no record left has no newest one
            self._take_facts(facts)
            tangled = sync_runs.tangled(facts)
            if tangled:
                say(
                    f"{self.pair}: the offset syncs of {len(tangled)} source partition(s) hold more than one "
                    "mapping (a rewound, recreated or re-copied topic): keeping the current one"
                )
            runs = sync_runs.current_runs(records, tangled)
            self._keep_runs(runs.localCheckpoint(eager=True))
            self._hold_runs()
        finally:
            release(records)
        self._runs_at_full = self._runs
        self.changes.all()

    def _read_syncs_in_full_on_driver(
        self, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan, partitions: set[TP]
    ) -> bool:
        """``_read_syncs_in_full`` on the driver (the driver engine's, while small): the whole history read
        through librdkafka and folded from no runs (``inspector.rules.sync_fold``). False when it is not made here:
        too large, or a partition's history holds more than one mapping (Spark's full read keeps the current one).
        """
        if not self.on_driver or plan.offsets > kafka_read.driver_max_offsets(on_driver=True):
            return False
        numbering = Numbering.of(partitions)
        folded = self._read_and_fold(settings, now, plan, numbering, sync_fold.RUNS_SCHEMA.empty_table())
        if folded.runs is None:
            return False
        self.numbering, self.newest, self._syncs_malformed = numbering, {}, Counter(folded.malformed)
        self._take_newest(folded.newest)
        self._set_held_runs(folded.runs)
        self._runs_at_full = self._runs
        self.changes.all()
        return True

    def _take_newest(self, newest: Mapping[int, sync_fold.Record]) -> set[TP]:
        """Keep each numbered partition's newest record of ``newest``; the partitions they were of."""
        assert self.numbering is not None
        key_of = {n: tp for tp, n in self.numbering.parts.items()}
        for part, record in newest.items():
            self.newest[key_of[part]] = NewestSync(
                record.upstream is not None, record.upstream, record.downstream, record.timestamp
            )
        return {key_of[part] for part in newest}

    def _hold_runs(self) -> None:
        """Hold the runs just kept on the driver too, while small (one Spark job collects them)."""
        runs = self.runs
        self.held_runs = (
            to_arrow(runs).cast(sync_fold.RUNS_SCHEMA) if runs is not None and self._holds(self._runs) else None
        )

    def _holds(self, rows: int) -> bool:
        return self.hold and rows <= HELD_MAX_ROWS

    def _fold_in_syncs(
        self, spark: SparkSource, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan, say: Progress
    ) -> str | None:
        """Fold the records past the kept snapshot into the kept runs; or why the topic must be read in full."""
        if self.held_runs is not None and plan.offsets <= kafka_read.driver_max_offsets(on_driver=self.on_driver):
            return self._fold_in_syncs_on_driver(settings, now, plan, say)
        records = self._decoded_syncs(spark(), settings, now, plan).cache()
        try:
            facts = sync_runs.partition_facts(sync_runs.sorted_records(records, 1)).collect()
            if sync_runs.tangled(facts):
                return "a tombstone or a contradicting sync arrived: the current mappings are found again"
            candidates = self.empty_runs(spark()).unionByName(sync_runs.new_syncs_as_runs(records))
            if sync_runs.disagreeing_runs(candidates).limit(1).count():
                return "new offset syncs contradict the kept ones: the current mappings are found again"
            self.changes.partitions.update(self._take_facts(facts))
            self._keep_runs(sync_runs.merge_runs(candidates).localCheckpoint(eager=True))
            self._hold_runs()
        finally:
            release(records)
        say(f"{self.pair}: {self._runs} run(s) of offset syncs kept")
        return None

    def _fold_in_syncs_on_driver(
        self, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan, say: Progress
    ) -> str | None:
        """``_fold_in_syncs`` on the driver, into the held runs: a live cycle's few new records, read through
        librdkafka and folded in Arrow (``inspector.rules.sync_fold``), with no Spark job."""
        assert self.held_runs is not None and self.numbering is not None
        folded = self._read_and_fold(settings, now, plan, self.numbering, self.held_runs)
        if folded.runs is None:
            return folded.reason
        self.changes.partitions.update(self._take_newest(folded.newest))
        self._syncs_malformed.update(folded.malformed)
        self._set_held_runs(folded.runs)
        say(f"{self.pair}: {self._runs} run(s) of offset syncs kept")
        return None

    def _read_and_fold(
        self, settings: Mapping[str, str], now: TopicSnapshot, plan: ReadPlan, numbering: Numbering, runs: pa.Table
    ) -> sync_fold.Folded:
        """``plan``'s records read through librdkafka, numbered by ``numbering`` and folded into ``runs``."""
        raw = kafka_read.read_on_driver(settings, now.topic, plan.ranges, cluster_pair=self.pair)
        found, malformed = sync_fold.records_of(decoding.decode_offset_syncs_table(raw), numbering.table(self.pair))
        return sync_fold.fold(runs, found, malformed)

    def _set_held_runs(self, runs: pa.Table) -> None:
        """Hold ``runs``; their frame is made again when a Spark job next needs it."""
        if self.runs is not None:
            release(self.runs)
        self.runs, self.held_runs, self._runs = None, runs, runs.num_rows

    def _take_facts(self, facts: Sequence[Row]) -> set[TP]:
        """Keep each partition's newest sync and the malformed counts of ``facts``; the partitions they were of."""
        assert self.numbering is not None
        key_of = {n: tp for tp, n in self.numbering.parts.items()}
        taken: set[TP] = set()
        for f in facts:
            row = f.asDict()
            if row["_part"] is None:
                self._syncs_malformed.update(
                    {r: n for r, n in zip(decode.MALFORMED_REASONS, row["malformed"], strict=True) if n}
                )
                continue
            taken.add(key_of[row["_part"]])
            self.newest[key_of[row["_part"]]] = NewestSync(
                row["newest_is_sync"], row["newest_upstream"], row["newest_downstream"], _utc(row["newest_timestamp"])
            )
        return taken

    def _keep_runs(self, runs: DataFrame) -> None:
        previous, self.runs = self.runs, runs
        self._runs = runs.count()
        if previous is not None:
            release(previous)

    def _drop_syncs(self) -> None:
        if self.runs is not None:
            release(self.runs)
        self.runs, self.numbering, self._syncs_read, self.held_runs = None, None, None, None
        self.newest = {}
        self._syncs_malformed = Counter()
        self._runs = self._runs_at_full = 0
        self.changes.all()

    # --- checkpoints (``inspector.kept.kept_checkpoints``) ---

    def refresh_checkpoints(
        self, spark: SparkSource, settings: Mapping[str, str], now: TopicSnapshot | None
    ) -> str | None:
        """``KeptCheckpoints.refresh``."""
        return self.live_checkpoints.refresh(spark, settings, now)

    def empty_checkpoints(self, spark: SparkSession) -> DataFrame:
        return self.live_checkpoints.frame_or_empty(spark)

    def empty_runs(self, spark: SparkSession) -> DataFrame:
        if self.runs is None and self.held_runs is not None:
            self.runs = frame_from_arrow(spark, self.held_runs, RUNS_SCHEMA)
        if self.runs is not None:
            return self.runs
        return spark.createDataFrame([], RUNS_SCHEMA)

    def held_state(self, partitions: Iterable[TP]) -> tuple[pa.Table, pa.Table, pa.Table] | None:
        """The numbering, runs and live checkpoints as the driver holds them (an unreadable topic holds none:
        empty); None when Spark holds either. ``partitions`` number the rows when no syncs were read."""
        runs, checkpoints = self.held_runs, self.live_checkpoints.held_or_empty()
        if runs is None and self.runs is None and self.numbering is None:
            runs = sync_fold.RUNS_SCHEMA.empty_table()
        if runs is None or checkpoints is None:
            return None
        numbering = self.numbering or Numbering.of(partitions)
        return numbering.table(self.pair), runs, checkpoints

    def malformed(self) -> tuple[Mapping[str, int], Mapping[str, int]]:
        """The malformed records skipped, per reason, in the kept offset syncs and checkpoints."""
        return dict(self._syncs_malformed), self.live_checkpoints.malformed

    # --- saved between processes (``inspector.kept.topic_cache``) ---

    @property
    def syncs_read(self) -> TopicSnapshot | None:
        """The snapshot the kept syncs were read up to."""
        return self._syncs_read

    @property
    def checkpoints_read(self) -> TopicSnapshot | None:
        """The snapshot the kept checkpoints were read up to."""
        return self.live_checkpoints.read

    def saved_syncs(self) -> SavedState | None:
        """The kept syncs as a file holds them (a Spark job collects the runs); None when there are none, or
        the topic's snapshot lacks the ids that key a file."""
        key = state_key(SYNCS, self.pair, self._syncs_read)
        if key is None or self.numbering is None or self._syncs_read is None:
            return None
        runs = held_or_collected(self.held_runs, self.runs)
        if runs is None:
            return None
        extra = {
            "numbering": [[t, p, n] for (t, p), n in sorted(self.numbering.parts.items())],
            "newest": [
                [t, p, s.is_sync, s.upstream, s.downstream, s.timestamp.isoformat() if s.timestamp else None]
                for (t, p), s in sorted(self.newest.items())
            ],
            "malformed": dict(self._syncs_malformed),
            "runs_at_full": self._runs_at_full,
        }
        read = self._syncs_read
        return SavedState(key, str(read.topic_id), dict(read.bounds), runs, extra)

    def restore_syncs(self, spark: SparkSource, saved: SavedState, now: TopicSnapshot) -> None:
        """Keep ``saved`` as if this session had read it; ``refresh_syncs`` then reads only past it (or the
        topic in full again, when ``now`` shows it no longer describes the topic)."""
        self._drop_syncs()
        extra = saved.extra
        self.numbering = Numbering({(str(t), int(p)): int(n) for t, p, n in extra["numbering"]})
        self.newest = {
            (str(t), int(p)): NewestSync(bool(s), u, d, _utc(dt.datetime.fromisoformat(ts)) if ts else None)
            for t, p, s, u, d, ts in extra["newest"]
        }
        self._syncs_malformed = Counter({str(r): int(n) for r, n in extra["malformed"].items()})
        self._runs_at_full = int(extra["runs_at_full"])
        self._runs = saved.table.num_rows
        self.held_runs = saved.table.cast(sync_fold.RUNS_SCHEMA) if self._holds(self._runs) else None
        if self.held_runs is None:  # else made from the held runs when a Spark job needs them (``empty_runs``)
            self.runs = frame_from_arrow(spark(), saved.table, RUNS_SCHEMA).localCheckpoint(eager=False)
        self._syncs_read = TopicSnapshot(now.cluster, now.topic, saved.topic_id, saved.bounds, now.cluster_id)
        self.changes.all()

    def saved_checkpoints(self) -> SavedState | None:
        return self.live_checkpoints.saved()

    def restore_checkpoints(self, spark: SparkSource, saved: SavedState, now: TopicSnapshot) -> None:
        self.live_checkpoints.restore(spark, saved, now)

    def release(self) -> None:
        """Drop everything kept (the session may go on without this pair)."""
        self._drop_syncs()
        self.live_checkpoints.drop()
