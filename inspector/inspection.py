"""The inspection, orchestrated once for every caller: ``mm2ctl inspect``, the spark-submit job, the exporter.

Callers open one with ``inspector.opening.open_inspection``, which checks the setup first (``preflight``: the
flows exist, the clusters answer; the ``--groups`` and ``--topics`` regexes were checked when the
``Selection`` was made), makes an ``Inspector`` on a Spark session, and hands it the cluster state it read;
the caller calls ``run`` once, or again and again in one live session. Each run:

1. reads the admin state, MM2's position and a snapshot of each internal topic's offsets on the driver
   (``inspector.reads.run_reads``; the first run's was read while Spark started);
2. reads each internal topic once, up to its snapshot, into what the run needs (``inspector.kept.pair_topics``);
   a live session reads only what is past the previous run's snapshot; on the driver engine (a small setup) the
   reads and every rule below run in this process, over Arrow, and Spark starts only if a run needs it;
3. translates and classifies every group partition (``inspector.transforms.translated_offsets``,
   ``inspector.transforms.classify``), the rows cached (a live session keeps them, and classifies again only
   the groups that changed: ``inspector.kept.kept_rows``); and runs one final aggregation of them
   (``inspector.transforms.summary``) and the replicated-partition rows (``inspector.transforms.replication_health``),
   whose values come back as an ``InspectionResult``.

``InspectionResult.close`` releases the run's rows; ``Inspector.close`` what the session kept.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config.flow_conditions import FlowCondition
from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.progress import Progress, no_progress
from mm2ctl.inspector import exact, schemas
from mm2ctl.inspector.kept import driver_rows
from mm2ctl.inspector.kept.changed_groups import ClassifyInputs, changed_groups, worth_merging
from mm2ctl.inspector.kept.kept_rows import KeptRows, group_keys
from mm2ctl.inspector.kept.pair_topics import Numbering, PairTopics
from mm2ctl.inspector.kept.saved_topics import SavedTopics
from mm2ctl.inspector.output.inspection_result import ORDER, PARTITION_ORDER, InspectionResult, TopicNote, summarize
from mm2ctl.inspector.reads import flow_notes
from mm2ctl.inspector.reads.internal_topics import TopicSnapshot, Unreadable
from mm2ctl.inspector.reads.kafka_read import tasks_for
from mm2ctl.inspector.reads.pair_admin import reach_clusters
from mm2ctl.inspector.reads.run_reads import ClusterState, PairRead, read_cluster_state, select_pairs
from mm2ctl.inspector.reads.spark_query_rows import read_queries
from mm2ctl.inspector.reads.typed_groups import GroupListings
from mm2ctl.inspector.rules import admin_facts
from mm2ctl.inspector.rules.partition_health import partition_health
from mm2ctl.inspector.selection import InspectOptions
from mm2ctl.inspector.spark.compat import frame_from_arrow, to_arrow
from mm2ctl.inspector.spark.frames import release
from mm2ctl.inspector.spark.lazy_session import LazySession, SparkSource
from mm2ctl.inspector.spark.task_progress import counting_tasks
from mm2ctl.inspector.transforms import classify, replication_health, summary
from mm2ctl.inspector.transforms.sql_text import literal
from mm2ctl.inspector.transforms.translated_offsets import translate

#: How long a live session keeps the flows' observed conditions (``inspector.reads.flow_notes.observe``).
CONDITIONS_TTL_S = 900.0
#: Group partitions per shuffle partition of a run's joins (at most four per core, at least one).
ROWS_PER_SHUFFLE_PARTITION = 100_000
#: The phase the final aggregation's Spark tasks are counted in (``inspector.spark.task_progress``).
CLASSIFY_PHASE = "Spark tasks"


@dataclass(frozen=True, slots=True)
class Preflight:
    """A setup that passed the checks every entry point makes before Spark starts: its pairs."""

    pairs: tuple[PairConfig, ...]


def preflight(config: MM2Config, options: InspectOptions) -> Preflight:
    """The flows asked for exist and are enabled, and every cluster of theirs answers (a dead broker or a
    mistyped address fails in seconds, not after Spark's start-up and the admin calls' longer timeout)."""
    pairs = select_pairs(config, options.pairs)
    reach_clusters(pairs)
    return Preflight(tuple(pairs))


def _with_error(table: pa.Table, error: str) -> pa.Table:
    """Every row of ``table`` marked with ``error`` (kept where a row already has one)."""
    errors = pa.array([e if e is not None else error for e in table.column("error").to_pylist()], pa.string())
    return table.set_column(table.schema.get_field_index("error"), "error", errors)


def _write_rows(frame: DataFrame, fmt: str, path: str) -> None:
    """The group-partition rows of ``frame`` written by Spark to the directory ``path`` as ``fmt``."""
    from mm2ctl.inspector.output.row_files import parquet_writer_options

    writer = frame.select(*schemas.GROUP_ROWS_SCHEMA.fieldNames()).write.mode("overwrite")
    if fmt == "parquet":
        writer.options(**parquet_writer_options()).parquet(path)
    elif fmt == "csv":
        writer.option("header", "true").option("quoteAll", "true").csv(path)
    else:
        writer.json(path)


class SparkRows:
    """``result.RowSet`` over a run's cached rows."""

    def __init__(self, frame: DataFrame) -> None:
        self._frame = frame

    def to_arrow(self) -> pa.Table:
        table = to_arrow(self._frame.select(*schemas.GROUP_ROWS_SCHEMA.fieldNames()))
        return table.sort_by([(c, "ascending", "at_start") for c in ORDER])

    def write(self, fmt: str, path: str) -> None:
        _write_rows(self._frame, fmt, path)


class DriverRows:
    """``result.RowSet`` over a run's rows classified on the driver (``driver_rows.FINAL_ROWS_SCHEMA``). Written
    to files by Spark, started then, so that the files are the same whichever engine classified the rows."""

    def __init__(self, table: pa.Table, spark: SparkSource) -> None:
        self._table = table
        self._spark = spark

    def to_arrow(self) -> pa.Table:
        table = self._table.select(schemas.GROUP_ROWS_SCHEMA.fieldNames())
        return table.sort_by([(c, "ascending", "at_start") for c in ORDER])

    def write(self, fmt: str, path: str) -> None:
        _write_rows(frame_from_arrow(self._spark(), self._table, driver_rows.FINAL_ROWS_SCHEMA), fmt, path)


class Inspector:
    """Runs the inspection of ``preflight``'s pairs in ``spark``: once (``inspect``), or every interval in one
    live session that keeps the decoded internal topics between runs (the exporter, ``inspect --watch``).

    On the driver engine (``on_driver``: small inputs, chosen by ``inspector.opening``) the internal topics are read
    through librdkafka and every rule runs in-process over Arrow (``inspector.kept.driver_rows``); ``spark`` is
    then a ``LazySession`` that starts Spark only if a run needs it (a topic whose history holds more than one
    mapping, a change larger than the driver classifies, rows written to files)."""

    def __init__(
        self,
        spark: SparkSession | LazySession,
        config: MM2Config,
        options: InspectOptions,
        checked: Preflight,
        *,
        connect: ConnectClient | None = None,
        live: bool = False,
        listings: GroupListings | None = None,
        on_driver: bool = False,
    ) -> None:
        self._session = spark if isinstance(spark, LazySession) else LazySession(spark)
        #: A live session keeps each pair's classified rows and classifies again only the groups that changed.
        self.live = live
        #: Whether small runs work on the driver, with no Spark session unless one is needed (class docstring).
        self.on_driver = on_driver and not options.exact
        self.config = config
        self.options = options
        self.pairs = checked.pairs
        self.connect = connect
        self._kept = {pair.name: self._pair_topics(pair.name) for pair in self.pairs}
        self._conditions: dict[str, tuple[FlowCondition, ...]] = {}
        self._conditions_at = -float("inf")
        #: The state the first run reads, when the caller read it while Spark started (``prime``).
        self._primed: ClusterState | None = None
        #: Reads the checkpoints topic while the calling thread reads the offset syncs: two small reads are
        #: each one task, and each waits on its own Kafka consumer. One thread for the inspector's life.
        self._beside = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mm2ctl-checkpoints")
        self._listings = listings or GroupListings()  # the Java client and its listings, kept between runs
        self._saved = SavedTopics()
        self._rows: dict[str, KeptRows] = {}

    @property
    def spark(self) -> SparkSession:
        """The Spark session, started now if it was not (``on_driver``)."""
        return self._session.get()

    @property
    def started_spark(self) -> SparkSession | None:
        """The Spark session if it was started (asking does not start it)."""
        return self._session.started

    def rebind(self, spark: SparkSession) -> None:
        """Run on a new session from now on (a Spark Connect server restarted): what the old session kept went
        with it, so the next run starts from the saved files (``inspector.kept.saved_topics``), or reads the topics in
        full."""
        self._session.replace(spark)
        self._kept = {name: self._pair_topics(name) for name in self._kept}
        self._rows = {}

    def _pair_topics(self, pair: str) -> PairTopics:
        """What the session keeps of ``pair``'s internal topics: held on the driver while small, in a session
        that classifies only what changed (``inspector.kept.driver_rows``)."""
        topics = PairTopics(pair)
        topics.hold = self._incremental
        topics.on_driver = self.on_driver
        return topics

    def kept(self, pair: str) -> PairTopics:
        """What the session keeps of ``pair``'s internal topics."""
        return self._kept[pair]

    def read_cluster_state(self, progress: Progress = no_progress) -> ClusterState:
        """What a run reads on the driver. The flows' conditions are observed again once they are
        ``CONDITIONS_TTL_S`` old: finding them samples the source topics, and they change with the setup. The
        group types' listings are reused as ``inspector.reads.typed_groups.GroupListings`` says. The Structured
        Streaming checkpoints are read again: their queries move on."""
        fresh = time.monotonic() - self._conditions_at < CONDITIONS_TTL_S
        queries = read_queries(self.options.spark_checkpoints, lambda: self.spark)
        state = read_cluster_state(
            self.config,
            self.pairs,
            self.options.selection,
            connect=self.connect,
            progress=progress,
            conditions=self._conditions if fresh else None,
            queries=queries,
            listings=self._listings,
        )
        if not fresh:
            self._conditions = {read.pair.name: read.conditions for read in state.pairs}
            self._conditions_at = time.monotonic()
        return state

    def prime(self, state: ClusterState) -> None:
        """The next run works on ``state``, read by the caller (``opening.open_inspection``), and the flows'
        conditions it observed are kept as if this inspector had read them."""
        self._primed = state
        self._conditions = {read.pair.name: read.conditions for read in state.pairs}
        self._conditions_at = time.monotonic()

    def run(self, *, progress: Progress = no_progress, cluster_state: ClusterState | None = None) -> InspectionResult:
        """One inspection of every pair; ``inspector.reads.run_reads`` when the caller read it already (else the primed
        state, once, else a fresh read). A live session's result reads rows the session keeps until its next
        run: close it before that."""
        state, self._primed = cluster_state or self._primed or self.read_cluster_state(progress), None
        self._session.forget_failure()  # a Spark start that failed in an earlier run is tried again
        if self.options.size_shuffles:
            group_partitions = sum(p.state.group_partitions for p in state.pairs)
            partitions = tasks_for(group_partitions, per_task=ROWS_PER_SHUFFLE_PARTITION)
            self._session.set("spark.sql.shuffle.partitions", str(partitions))
        notes: list[TopicNote] = []
        cached: list[DataFrame] = []
        for read in state.pairs:
            notes += self._refresh(read, progress)
        saving = (
            [self._saved.save_soon(self._kept[r.pair.name], self._beside) for r in state.pairs]
            if self.options.state_cache
            else []
        )
        progress("classifying")
        try:
            in_process = self._driver_rows(state) if self.on_driver and not self._incremental else None
            with self._counting_tasks(progress, spark_certain=in_process is None and not self._incremental):
                if in_process is not None:
                    rows, figures = in_process
                elif self._incremental:
                    parts = [self._live_rows(read, progress, cached) for read in state.pairs]
                    rows = self._joined([rows for rows, _ in parts])
                    figures = [f for _, pair_figures in parts for f in pair_figures]
                else:
                    rows, figures = self._all_rows(state, progress, cached)
            progress("replication health")
            partitions = self._replicated_partitions(state)
            for done in saving:
                notes += done.result()
        except BaseException:
            for frame in cached:
                release(frame)
            raise
        names = tuple(read.pair.name for read in state.pairs)
        return InspectionResult(
            pairs=names,
            summary=summarize(figures, names),
            partitions=partitions,
            positions=tuple(read.replication.position for read in state.pairs),
            notes=tuple(notes),
            rows=SparkRows(rows) if isinstance(rows, DataFrame) else DriverRows(rows, self._session.get),
            release=_releaser(cached),
        )

    def _counting_tasks(self, progress: Progress, *, spark_certain: bool) -> contextlib.AbstractContextManager[object]:
        """Spark's tasks counted in ``progress`` while in the block, when Spark runs (``on_driver``: it may not, unless
        ``spark_certain``: the block classifies in Spark)."""
        spark = self.spark if spark_certain or not self.on_driver else self.started_spark
        return counting_tasks(spark, progress, CLASSIFY_PHASE) if spark is not None else contextlib.nullcontext()

    def _joined(self, parts: Sequence[DataFrame | pa.Table]) -> DataFrame | pa.Table:
        """The pairs' rows together: Arrow when the driver holds every pair's, else one frame."""
        if all(isinstance(p, pa.Table) for p in parts):
            return pa.concat_tables([p for p in parts if isinstance(p, pa.Table)])
        frames = [
            p if isinstance(p, DataFrame) else frame_from_arrow(self.spark, p, driver_rows.FINAL_ROWS_SCHEMA)
            for p in parts
        ]
        return functools.reduce(DataFrame.unionByName, frames)

    def _refresh(self, read: PairRead, progress: Progress) -> list[TopicNote]:
        """Bring the pair's kept internal topics to this run's snapshots; what the run noticed about them."""
        pair, kept = read.pair, self._kept[read.pair.name]
        notes = [
            TopicNote(pair.name, t.topic, t.cluster, t.message)
            for t in (read.syncs, read.checkpoints)
            if isinstance(t, Unreadable) and (t.denied or not flow_notes.expected_absent(pair, t.topic))
        ]
        notes += [TopicNote(*n) for n in flow_notes.condition_notes(read.conditions)]
        if read.replication.waiting_note:  # the lag in seconds and the retention margins are null
            notes.append(TopicNote(pair.name, "(replicated topics)", pair.source, read.replication.waiting_note))
        engine = "on the driver" if self.on_driver else "with Spark"
        progress(f"{pair.name}: reading {pair.offset_syncs_topic} and {pair.checkpoints_topic} {engine}")
        checkpoints = read.checkpoints if isinstance(read.checkpoints, TopicSnapshot) else None
        syncs = read.syncs if isinstance(read.syncs, TopicSnapshot) else None
        if self.options.state_cache:
            notes += self._saved.restore(self._session.get, kept, syncs, checkpoints)
        settings = self.config.client_settings(pair.target, pair.name)
        spark = self._session.get
        checkpoints_read = self._beside.submit(kept.refresh_checkpoints, spark, settings, checkpoints)
        try:
            settings = self.config.client_settings(pair.offset_syncs_cluster, pair.name)
            reason = kept.refresh_syncs(spark, settings, syncs, read.source_partitions(), progress)
        except BaseException:
            checkpoints_read.exception()  # waits for it: the syncs' error is the one raised
            raise
        checkpoints_reason = checkpoints_read.result()
        for topic, cluster, why in (
            (pair.offset_syncs_topic, pair.offset_syncs_cluster, reason),
            (pair.checkpoints_topic, pair.target, checkpoints_reason),
        ):
            if why is not None:
                notes.append(TopicNote(pair.name, topic, cluster, f"read again in full: {why}"))
        syncs_bad, checkpoints_bad = kept.malformed()
        for topic, cluster, bad in (
            (pair.offset_syncs_topic, pair.offset_syncs_cluster, syncs_bad),
            (pair.checkpoints_topic, pair.target, checkpoints_bad),
        ):
            notes += [
                TopicNote(pair.name, topic, cluster, f"{n} malformed record(s) skipped: {r}") for r, n in bad.items()
            ]
        return notes

    @property
    def _incremental(self) -> bool:
        """Whether runs keep the rows and classify again only what changed: a live session's, unless it filters
        its rows (``--only-problems``: the figures must be of the kept rows) or reads true positions (``--exact``)."""
        return self.live and not self.options.only_problems and not self.options.exact

    def _all_rows(
        self, state: ClusterState, progress: Progress, cached: list[DataFrame]
    ) -> tuple[DataFrame, list[dict[str, Any]]]:
        """Every pair's rows classified, and their figures (``summary.group_figures``): one aggregation."""
        frames = [
            replication_health.with_group_checkpoint_age(
                self._classified(read, _classify_inputs(read), progress, cached), as_of=read.state.read_at
            )
            for read in state.pairs
        ]
        rows = functools.reduce(DataFrame.unionByName, frames)
        if self.options.only_problems:
            rows = rows.where("NOT is_ok")
        # Kept as a local checkpoint, not cached: each SQL statement that reads a frame drops the temporary view
        # PySpark made of it, and Spark uncaches a view's plan when it is dropped, so a cache of the rows would be
        # gone before the output read them again.
        rows = rows.localCheckpoint()  # schemas.KEPT_ROWS_SCHEMA's columns
        cached.append(rows)
        figures = [r.asDict(recursive=True) for r in summary.group_figures(rows).collect()]
        if not self.options.exact:
            return replication_health.without_checkpoint_lag(rows), figures
        return self._with_checkpoint_lag(state.pairs, rows), figures

    def _live_rows(
        self, read: PairRead, progress: Progress, cached: list[DataFrame]
    ) -> tuple[DataFrame | pa.Table, list[dict[str, Any]]]:
        """The pair's rows and figures, from what the session kept of them (``inspector.kept.kept_rows``): only the
        groups that changed since the last run are classified again (``inspector.kept.changed_groups``). Arrow
        (``driver_rows.FINAL_ROWS_SCHEMA``) while the driver holds all the pair's rows, else a frame."""
        pair, topics, as_of = read.pair.name, self._kept[read.pair.name], read.state.read_at
        inputs, before = _classify_inputs(read), self._rows.get(pair)
        changed = changed_groups(before.inputs, inputs, topics.changes) if before is not None else None
        if before is not None and changed is not None:
            changed |= before.stale(as_of, classify.fresh_checkpoint_age(read.pair))
        if before is not None and changed is not None and worth_merging(changed | before.replaced, inputs):
            if changed:
                some = inputs.of_groups(changed)
                held = self._held(read, some)
                if held is not None:
                    now = before.again_on_driver(changed, held, inputs, as_of)
                else:
                    with self._shuffles_for(some.group_offsets.num_rows):
                        only = group_keys(self.spark, pair, changed)
                        again = self._classified(read, some, progress, cached, only=only)
                        now = before.again(pair, changed, again, inputs, as_of)
            else:
                now = before.with_inputs(inputs)
        else:
            # A first run is Spark's, unless on the driver engine.
            held = self._held(read, inputs) if before is not None or self.on_driver else None
            if held is not None:
                now = KeptRows.on_driver(held, inputs, as_of)
            else:
                now = KeptRows.classified(self._classified(read, inputs, progress, cached), inputs, as_of)
        topics.changes.clear()
        self._rows[pair] = now
        if before is not None:
            before.release_unshared(now)
        table = now.held_only()
        if table is not None:
            return driver_rows.final_rows(table, as_of), now.figures_at(as_of)
        rows = replication_health.with_group_checkpoint_age(now.rows(self.spark, pair), as_of=as_of)
        return replication_health.without_checkpoint_lag(rows), now.figures_at(as_of)  # no --exact here

    def _driver_rows(self, state: ClusterState) -> tuple[pa.Table, list[dict[str, Any]]] | None:
        """A one-off run's rows and figures on the driver engine, every pair classified in-process (``_held``), with
        ``--only-problems`` applied; None when some pair's are Spark's."""
        tables: list[pa.Table] = []
        figures: list[dict[str, Any]] = []
        for read in state.pairs:
            held = self._held(read, _classify_inputs(read))
            if held is None:
                return None
            if self.options.only_problems:
                held = held.filter(pc.invert(held.column("is_ok")))
            as_of = read.state.read_at
            tables.append(driver_rows.final_rows(held, as_of))
            figures += [f for fs in driver_rows.figures(held, as_of).values() for f in fs]
        return pa.concat_tables(tables), figures

    def _held(self, read: PairRead, inputs: ClassifyInputs) -> pa.Table | None:
        """``inputs``' rows classified on the driver (``inspector.kept.driver_rows``) when the pair's runs and
        checkpoints are held there and the rows are few; else None (Spark classifies them)."""
        kept = self._kept[read.pair.name]
        state = kept.held_state(read.source_partitions())
        if state is None or inputs.group_offsets.num_rows > driver_rows.DRIVER_MAX_ROWS:
            return None
        if not read.pair.emit_offset_syncs_enabled:
            return None  # its rows' override is Spark's (``flow_notes.with_offset_syncs_disabled``)
        numbering, runs, checkpoints = state
        return driver_rows.classified(
            read.pair, inputs, numbering=numbering, runs=runs, checkpoints=checkpoints, as_of=read.state.read_at
        )

    def _with_checkpoint_lag(self, reads: Sequence[PairRead], rows: DataFrame) -> DataFrame:
        """``rows`` with what a failover now would replay, in time, where the position is exact: the records at
        the exact rows' positions read on both clusters (``inspector.reads.replay_time``). Only ``--exact``
        runs read them: a run without it pays no record read per row, and a live session none per cycle."""
        from mm2ctl.inspector.reads.replay_time import MAX_PROBES, ReplayProbe, replay_seconds

        names = [f.name for f in fields(ReplayProbe)]
        found: list[dict[str, Any]] = []
        for read in reads:
            pair = read.pair
            wanted = rows.where(f"cluster_pair = {literal(pair.name)} AND {replication_health.REPLAY_PROBES}")
            probes = [
                ReplayProbe(**{n: r[n] for n in names}) for r in wanted.select(*names).limit(MAX_PROBES).collect()
            ]
            try:
                seconds = replay_seconds(pair.source_kafka_config, pair.target_kafka_config, probes)
            except KafkaClusterError:
                continue  # unreadable: those rows' replay in time stays null
            found += [{"cluster_pair": pair.name, "group": g, "topic": t, "partition": p, "seconds": v}
                      for (g, t, p), v in seconds.items()]  # fmt: skip
        table = pa.Table.from_pylist(found, schema=schemas.arrow_schema(schemas.REPLAY_SECONDS_SCHEMA))
        lags = frame_from_arrow(self.spark, table, schemas.REPLAY_SECONDS_SCHEMA)
        return replication_health.with_checkpoint_lag(rows, lags)

    @contextlib.contextmanager
    def _shuffles_for(self, rows: int) -> Iterator[None]:
        """Spark's shuffle partitions sized to ``rows`` (unless the user chose them) while in the block: a few
        groups classified again are a few tasks, not those of every group partition."""
        if not self.options.size_shuffles:
            yield
            return
        setting = "spark.sql.shuffle.partitions"
        was = self.spark.conf.get(setting)
        self.spark.conf.set(setting, str(tasks_for(rows, per_task=ROWS_PER_SHUFFLE_PARTITION)))
        try:
            yield
        finally:
            self.spark.conf.set(setting, str(was))

    def _classified(
        self,
        read: PairRead,
        inputs: ClassifyInputs,
        progress: Progress,
        cached: list[DataFrame],
        *,
        only: DataFrame | None = None,
    ) -> DataFrame:
        """The pair's rows classified from ``inputs``; ``only`` (a pair and group per row) when the inputs hold only
        those groups' rows."""
        spark, pair, state, kept = self.spark, read.pair, read.state, self._kept[read.pair.name]
        numbering = kept.numbering or Numbering.of(read.source_partitions())
        numbers = frame_from_arrow(spark, numbering.table(pair.name), schemas.PARTITION_NUMBERS_SCHEMA)
        with_remote = admin_facts.with_remote_topics(inputs.group_offsets, inputs.source_partitions)
        offsets = frame_from_arrow(spark, with_remote, schemas.REMOTE_GROUP_OFFSETS_SCHEMA)
        target_offsets = frame_from_arrow(spark, inputs.target_group_offsets, schemas.TARGET_GROUP_OFFSETS_SCHEMA)
        checkpoints = kept.empty_checkpoints(spark)
        if only is not None:  # the kept checkpoints of those groups only (``inputs`` hold only theirs)
            checkpoints = checkpoints.join(only, on=["cluster_pair", "group"], how="left_semi")
        translated = translate(offsets, kept.empty_runs(spark), numbers)
        if self.options.exact:
            translated = self._with_exact(read, translated, progress, cached)
        joined = classify.join_target_state(translated, target_group_offsets=target_offsets, checkpoints=checkpoints)
        admin = inputs.admin_facts()
        classified = classify.classify(
            joined,
            admin=admin,
            sync_group_offsets_enabled=pair.sync_group_offsets_enabled,
            offset_lag_max=pair.offset_lag_max,
            as_of=state.read_at,
            fresh_checkpoint_age=classify.fresh_checkpoint_age(pair),
        )
        if not pair.emit_offset_syncs_enabled:
            classified = flow_notes.with_offset_syncs_disabled(classified)
        return replication_health.with_group_newest_checkpoint(classified)

    def _with_exact(
        self, read: PairRead, translated: DataFrame, progress: Progress, cached: list[DataFrame]
    ) -> DataFrame:
        """``inspect --exact``: the rows whose translation is not exact, read on both clusters and replaced by
        their true positions (``inspector.exact``)."""
        from mm2ctl.inspector.transforms.translated_offsets import inexact, with_exact_positions

        translated = translated.cache()
        cached.append(translated)
        progress(f"{read.pair.name}: translating")
        rows = [r.asDict() for r in inexact(translated).toLocalIterator()]
        found = exact.exact_positions(self.config, read.pair, read.state, exact.inexact_rows(rows), progress=progress)
        table = exact.exact_table(read.pair.name, found)
        positions = frame_from_arrow(self.spark, table, schemas.EXACT_POSITIONS_SCHEMA)
        return with_exact_positions(translated, positions)

    def _replicated_partitions(self, state: ClusterState) -> pa.Table:
        """Every pair's replicated-partition rows, as values (a row per replicated source partition): computed
        on the driver, which holds their inputs."""
        tables = [
            partition_health(
                read.replication.partitions,
                _newest_table(read.pair.name, self._kept[read.pair.name]),
                lag_threshold=self.options.lag_threshold,
                lag_seconds_threshold=self.options.lag_seconds_threshold,
                as_of=read.replication.read_at,
            )
            for read in state.pairs
        ]
        rows = pa.concat_tables(tables).sort_by([(c, "ascending", "at_start") for c in PARTITION_ORDER])
        return rows.filter(pc.invert(rows.column("is_ok"))) if self.options.only_problems else rows

    def close(self) -> None:
        """Release everything the session kept for these pairs."""
        self._beside.shutdown(wait=True)
        self._listings.close()
        for kept in self._kept.values():
            kept.release()
        for rows in self._rows.values():
            rows.release_unshared(None)
        self._rows = {}


def _classify_inputs(read: PairRead) -> ClassifyInputs:
    """What the pair's classification reads on the driver; every row of the pair carries the error of an
    internal topic it cannot read."""
    state = read.state
    group_offsets = state.source_group_offsets
    for denied in read.denied:
        group_offsets = _with_error(group_offsets, denied)
    return ClassifyInputs(
        group_offsets=group_offsets,
        source_partitions=state.source_partitions,
        target_partitions=state.target_partitions,
        target_group_offsets=state.target_group_offsets,
        source_groups=state.source_groups,
        target_groups=state.target_groups,
        mm2_positions=read.replication.partitions.select(schemas.MM2_POSITIONS_SCHEMA.names),
    )


def _newest_table(pair: str, kept: PairTopics) -> pa.Table:
    """The pair's newest offset sync per source partition (``schemas.NEWEST_SYNCS_SCHEMA``); a partition whose
    newest record is a tombstone has none."""
    items = sorted((tp, n) for tp, n in kept.newest.items() if n.is_sync)
    return pa.table(
        {
            "cluster_pair": pa.array([pair] * len(items), pa.string()),
            "topic": pa.array([tp[0] for tp, _ in items], pa.string()),
            "partition": pa.array([tp[1] for tp, _ in items], pa.int32()),
            "newest_sync_upstream": pa.array([n.upstream for _, n in items], pa.int64()),
            "newest_sync_downstream": pa.array([n.downstream for _, n in items], pa.int64()),
            "newest_sync_timestamp": pa.array([n.timestamp for _, n in items], pa.timestamp("us", tz="UTC")),
        },
        schema=schemas.arrow_schema(schemas.NEWEST_SYNCS_SCHEMA),
    )


def _releaser(frames: Sequence[DataFrame]) -> Callable[[], None]:
    def release_all() -> None:
        for frame in frames:
            release(frame)

    return release_all


__all__ = ["InspectOptions", "Inspector", "Preflight", "preflight"]
