"""The inspection job: read MM2's topics and the clusters' admin state, then classify every group partition.

This module owns the I/O; ``inspector.decode`` and ``inspector.transforms`` are pure DataFrame → DataFrame.
Per pair it reads the offset-syncs topic (on whichever cluster ``offset-syncs.topic.location`` puts it)
and the checkpoints topic (on the target) with Spark's Kafka source, collects the admin state on the driver
(``inspector.admin_state``), turns it into DataFrames through Arrow, and runs the transforms. Pairs are
classified separately (each has its own ``sync.group.offsets.enabled`` and ``offset.lag.max``) and unioned.

It runs unchanged under ``spark-submit``: ``python -m mm2ctl.inspector.job`` and ``spark-submit`` of this
file take ``mm2ctl inspect``'s selection arguments (see README, "Running on a Spark cluster").
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.admin import ItemError, KafkaAdmin
from mm2ctl.core.authorization import denial_text, is_denial, principal_of
from mm2ctl.core.config import MM2Config, PairConfig
from mm2ctl.core.errors import ConfigError, InspectError, Mm2ctlError
from mm2ctl.core.flow_conditions import FlowCondition
from mm2ctl.core.progress import Progress
from mm2ctl.inspector import decode, exact, flow_states, replication_health, schemas, transforms
from mm2ctl.inspector.admin_state import PairState, Selection, collect_pair_state
from mm2ctl.inspector.kafka_read import empty_records, read_topic
from mm2ctl.inspector.mm2_position import Mm2Position
from mm2ctl.inspector.replication_state import ReplicationState, collect_replication_state
from mm2ctl.inspector.report import parquet_writer_options, write_distributed
from mm2ctl.inspector.task_progress import counting_tasks


@dataclass(frozen=True, slots=True)
class InspectOptions:
    pairs: tuple[str, ...] = ()
    selection: Selection = field(default_factory=Selection)
    only_problems: bool = False
    #: Read records on both clusters for every row whose translation is not exact (``inspector.exact``).
    exact: bool = False
    #: More records than this waiting to be copied makes a replicated partition ``lagging``.
    lag_threshold: int = replication_health.DEFAULT_LAG_THRESHOLD
    #: Spark tasks per internal topic read; the single Kafka partition is split by offset range.
    read_tasks: int = max(4, 2 * (os.cpu_count() or 2))


@dataclass(frozen=True, slots=True)
class TopicNote:
    """What the run noticed about an internal topic: missing, or malformed records counted and skipped."""

    cluster_pair: str
    topic: str
    cluster: str
    message: str


#: How long ``MalformedCounter.notes`` waits, in all, for observed metrics after the job ran. Spark hands them
#: over through its listener bus a moment after the action returns; a scan the optimizer pruned (a pair with
#: no group partition to translate) never hands any over.
OBSERVATION_WAIT_S = 10.0


class MalformedCounter:
    """Counts the malformed records of each decoded topic while the job runs, through Spark observations.

    ``watch`` wraps a decoded frame; once an action has run the plan, ``notes`` gives one note per topic and
    reason with a non-zero count. Counting this way costs no second read of the topic and no cache of it.
    """

    def __init__(self) -> None:
        self._watched: list[tuple[str, str, str, Observation, bool]] = []

    def watch(self, decoded: DataFrame, cluster_pair: str, topic: str, cluster: str, *, scanned: bool) -> DataFrame:
        """``decoded`` with its malformed records counted. ``scanned`` says whether the job will read it at all:
        not when the pair has no group partition, since Spark then prunes the read (and its observation)."""
        observation = Observation(f"malformed-{uuid.uuid4().hex}")  # names are unique per session
        self._watched.append((cluster_pair, topic, cluster, observation, scanned))
        reason = F.col("malformed_reason")
        return decoded.observe(
            observation, *[F.count(F.when(reason == r, True)).alias(r) for r in decode.MALFORMED_REASONS]
        )

    def notes(self) -> list[TopicNote]:
        out = []
        deadline = time.monotonic() + OBSERVATION_WAIT_S
        for cluster_pair, topic, cluster, observation, scanned in self._watched:
            for reason, count in _observed(observation, deadline if scanned else 0.0).items():
                if count:
                    message = f"{count} malformed record(s) skipped: {reason}"
                    out.append(TopicNote(cluster_pair, topic, cluster, message))
        return out


def _observed(observation: Observation, deadline: float) -> dict[str, Any]:
    """The observation's metrics once Spark delivered them, or nothing by ``deadline`` (``time.monotonic``).

    PySpark's ``Observation.get`` waits without a limit, and an observed scan the optimizer removed never
    completes; so this asks the JVM observation's future whether it is done before reading it.
    """
    future = observation._jo.future() if observation._jo is not None else None
    while future is not None and not future.isCompleted():
        if time.monotonic() >= deadline:
            return {}
        time.sleep(0.02)
    return observation.get if future is not None else {}


@dataclass(slots=True)
class InspectResult:
    #: replication_health.GROUP_ROWS_SCHEMA, cached or read from Parquet, in no order (writers that print sort it)
    rows: DataFrame
    summary: DataFrame  # SUMMARY_SCHEMA
    notes: list[TopicNote]
    pairs: list[str]
    group_partitions: int
    #: One row per replicated source partition (``replication_health.PARTITION_HEALTH_SCHEMA``), cached.
    partitions: DataFrame
    #: MM2's position per pair, with where it was read or why it could not be.
    positions: list[Mm2Position] = field(default_factory=list)

    def problem_count(self) -> int:
        return int(self.rows.where("NOT is_ok").count())

    def partition_problem_count(self) -> int:
        return int(self.partitions.where("NOT is_ok").count())


def select_pairs(config: MM2Config, names: Sequence[str]) -> list[PairConfig]:
    """``--pair`` values, or every enabled pair of the file."""
    if names:
        return [config.pair(n) for n in names]
    pairs = config.pairs()
    if not pairs:
        raise ConfigError("no enabled replication flow (set A->B.enabled = true)", path=config.path)
    return pairs


def _read_denial(config: MM2Config, pair: PairConfig, alias: str, topic: str) -> str | None:
    """The one-line denial when this principal may not READ ``topic`` (or even see it), else None.

    Without READ, Spark's read would fail the whole inspection; without DESCRIBE the topic would look missing
    and every row unsynced. Either way it is the pair's rows that are affected, and they say why.
    """
    kafka = config.kafka_config(alias, pair.name)
    answer = KafkaAdmin.connect(kafka, name=alias).authorized_operations(topics=[topic])[("topic", topic)]
    if isinstance(answer, ItemError):
        if not is_denial(answer.code):
            return None
    elif answer is None or "ALL" in answer or "READ" in answer:
        return None
    return denial_text(principal_of(kafka), "READ", "topic", topic, alias) + " [TOPIC_AUTHORIZATION_FAILED]"


def _read_internal(
    spark: SparkSession,
    config: MM2Config,
    pair: PairConfig,
    *,
    alias: str,
    topic: str,
    existing: frozenset[str],
    tasks: int,
    notes: list[TopicNote],
) -> tuple[DataFrame, str | None]:
    denied = _read_denial(config, pair, alias, topic)
    if denied is not None:
        notes.append(TopicNote(pair.name, topic, alias, denied))
        return empty_records(spark), denied
    if topic not in existing:
        notes.append(TopicNote(pair.name, topic, alias, "topic does not exist"))
        return empty_records(spark), None
    settings = config.client_settings(alias, pair.name)
    return read_topic(spark, settings, topic, cluster_pair=pair.name, min_partitions=tasks), None


def _with_error(table: pa.Table, error: str) -> pa.Table:
    """Every row of ``table`` marked with ``error`` (kept where a row already has one)."""
    column = table.column("error")
    errors = pa.array([e if e is not None else error for e in column.to_pylist()], pa.string())
    return table.set_column(table.schema.get_field_index("error"), "error", errors)


@dataclass(slots=True)
class _PairRun:
    """One pair's state and what the passes over it learnt: the start of the current mapping of each source
    partition whose offset syncs hold more than one (``transforms.mapping_starts``)."""

    pair: PairConfig
    state: PairState
    #: Where MM2 stands on each replicated source partition (``inspector.replication_state``).
    replication: ReplicationState
    cuts: list[tuple[int, int]] = field(default_factory=list)
    tangled: Observation | None = None
    #: Why this principal may not read the pair's offset-syncs or checkpoints topic (every row says so).
    denied: list[str] = field(default_factory=list)


def _read_syncs(
    spark: SparkSession, config: MM2Config, run: _PairRun, options: InspectOptions, notes: list[TopicNote]
) -> tuple[DataFrame, str | None]:
    pair, state = run.pair, run.state
    syncs_alias = pair.offset_syncs_cluster
    syncs_existing = state.source_topics if syncs_alias == pair.source else state.target_topics
    return _read_internal(
        spark,
        config,
        pair,
        alias=syncs_alias,
        topic=pair.offset_syncs_topic,
        existing=syncs_existing,
        tasks=options.read_tasks,
        notes=notes,
    )


def _translated(
    spark: SparkSession,
    config: MM2Config,
    run: _PairRun,
    options: InspectOptions,
    notes: list[TopicNote],
    counter: MalformedCounter,
) -> DataFrame:
    """The pair's group offsets translated by the one rule, watched for tangled partitions (``run.tangled``)."""
    pair, state = run.pair, run.state
    raw_syncs, syncs_denied = _read_syncs(spark, config, run, options, notes)
    checkpoints_denied = _read_denial(config, pair, pair.target, pair.checkpoints_topic)
    run.denied = [d for d in (syncs_denied, checkpoints_denied) if d is not None]
    source_group_offsets = state.source_group_offsets
    for denied in run.denied:  # every row of the pair needs the topic that cannot be read
        source_group_offsets = _with_error(source_group_offsets, denied)
    group_offsets = _frame(spark, source_group_offsets, schemas.SOURCE_GROUP_OFFSETS_SCHEMA)
    # The syncs are matched to the inspected partitions by their raw key bytes, so their keys are not parsed.
    numbers = partition_numbers_on_driver(spark, state.source_group_offsets)
    # No cache: the topic is read once, in the same pass that classifies, and its malformed records are
    # counted on the way (an observation, read after the job ran) instead of in a second read. Spark cannot
    # prune columns through an observation, so the syncs are narrowed to what translate reads first: the rows
    # materialized there carry no pair or topic strings.
    decoded = decode.decode_offset_syncs(raw_syncs, known=numbers).select(*transforms.NUMBERED_SYNC_COLUMNS)
    scanned = state.group_partitions > 0
    decoded = counter.watch(decoded, pair.name, pair.offset_syncs_topic, pair.offset_syncs_cluster, scanned=scanned)
    cuts = None
    if run.cuts:
        cuts = spark.createDataFrame(run.cuts, schema=f"_part int, {transforms.CUT} long")
    run.tangled = Observation(f"tangled-{uuid.uuid4().hex}")
    return transforms.translate(group_offsets, decoded, numbers=numbers, cuts=cuts, tangled=run.tangled)


def _frame(spark: SparkSession, table: pa.Table, schema: StructType) -> DataFrame:
    # Spark makes one partition per Arrow batch (10,000 rows): 100 tasks for a million group offsets, each
    # mostly scheduling overhead. One partition per core reads the same rows.
    df = spark.createDataFrame(table, schema=schema)
    return df.coalesce(spark.sparkContext.defaultParallelism)


def _classified(
    spark: SparkSession,
    config: MM2Config,
    run: _PairRun,
    translated: DataFrame,
    options: InspectOptions,
    notes: list[TopicNote],
    counter: MalformedCounter,
) -> DataFrame:
    pair, state = run.pair, run.state
    raw_checkpoints, _denied = _read_internal(
        spark,
        config,
        pair,
        alias=pair.target,
        topic=pair.checkpoints_topic,
        existing=state.target_topics,
        tasks=options.read_tasks,
        notes=notes,
    )
    decoded_checkpoints = counter.watch(
        decode.decode_checkpoints(raw_checkpoints),
        pair.name,
        pair.checkpoints_topic,
        pair.target,
        scanned=state.group_partitions > 0,
    )
    joined = transforms.join_target_state(
        translated,
        source_partitions=_frame(spark, state.source_partitions, schemas.SOURCE_PARTITIONS_SCHEMA),
        target_partitions=_frame(spark, state.target_partitions, schemas.TARGET_PARTITIONS_SCHEMA),
        target_group_offsets=_frame(spark, state.target_group_offsets, schemas.TARGET_GROUP_OFFSETS_SCHEMA),
        source_groups=_frame(spark, state.source_groups, schemas.GROUP_STATES_SCHEMA),
        target_groups=_frame(spark, state.target_groups, schemas.GROUP_STATES_SCHEMA),
        checkpoints=transforms.latest_checkpoints(decoded_checkpoints),
    )
    classified = transforms.classify(
        joined,
        sync_group_offsets_enabled=pair.sync_group_offsets_enabled,
        offset_lag_max=pair.offset_lag_max,
        as_of=state.read_at,
        fresh_checkpoint_age=fresh_checkpoint_age(pair),
    )
    if not pair.emit_offset_syncs_enabled:
        classified = flow_states.with_offset_syncs_disabled(classified)
    return replication_health.with_group_checkpoint_age(classified, as_of=state.read_at)


def _replicated_partitions(
    spark: SparkSession, config: MM2Config, run: _PairRun, options: InspectOptions, notes: list[TopicNote]
) -> DataFrame:
    """The pair's replicated-partition rows. The newest sync of every replicated partition comes from a read of
    the syncs of its own, aggregated by raw key in a hash table before its shuffle, so a row per key and task
    crosses it."""
    replication = run.replication
    raw_syncs, _denied = _read_syncs(spark, config, run, options, notes)
    replicated = spark.createDataFrame(replication.partitions, schema=replication_health.REPLICATED_PARTITIONS_SCHEMA)
    newest = replication_health.newest_syncs(raw_syncs, replicated)
    return replication_health.classify_partitions(
        replicated, newest, lag_threshold=options.lag_threshold, as_of=replication.read_at
    )


#: How long the job waits for the tangled-partition observation of a pair it scanned. Spark hands it over a
#: moment after the action returns; without it the job cannot tell whether its translations are final.
TANGLED_WAIT_S = 60.0
#: Passes over a pair before its offset syncs must have settled into one mapping per partition (MM2 may write
#: syncs between passes, and a rewind between them tangles a partition again).
MAX_PASSES = 3


def _tangled(run: _PairRun) -> list[int]:
    """The ``_part`` numbers the pass just run found tangled (``transforms.translate``)."""
    if run.tangled is None or run.state.group_partitions == 0:
        return []
    metrics = _observed(run.tangled, time.monotonic() + TANGLED_WAIT_S)
    if transforms.TANGLED_METRIC not in metrics:
        raise InspectError(
            f"{run.pair.name}: Spark did not report which partitions' offset syncs hold more than one mapping "
            f"within {TANGLED_WAIT_S:g}s, so the translations cannot be trusted; run inspect again"
        )
    return transforms.tangled_parts(metrics)


def _mapping_starts(
    spark: SparkSession, config: MM2Config, run: _PairRun, options: InspectOptions, parts: list[int]
) -> list[tuple[int, int]]:
    """Where the current mapping of each tangled partition starts (``transforms.mapping_starts``): a second
    read of the offset-syncs topic, keeping only those partitions' records."""
    numbers = partition_numbers_on_driver(spark, run.state.source_group_offsets)
    raw, _denied = _read_syncs(spark, config, run, options, [])
    decoded = decode.decode_offset_syncs(raw, known=numbers).select(*transforms.NUMBERED_SYNC_COLUMNS)
    wanted = decoded.where(F.col("_part").isin(parts))
    starts = transforms.mapping_starts(wanted).collect()
    return [(int(r["_part"]), int(r[transforms.CUT])) for r in starts if r[transforms.CUT] is not None]


def _again(
    spark: SparkSession,
    config: MM2Config,
    runs: list[_PairRun],
    options: InspectOptions,
    attempt: int,
    say: Progress,
) -> bool:
    """After a pass: whether a pair has tangled partitions and must be translated again; if so, each such
    partition's current mapping start is added to its pair's cuts."""
    tangled = {id(run): _tangled(run) for run in runs}
    if not any(tangled.values()):
        return False
    if attempt >= MAX_PASSES:
        raise InspectError(
            "the offset syncs of "
            + ", ".join(f"{r.pair.name} ({len(tangled[id(r)])} partition(s))" for r in runs if tangled[id(r)])
            + f" still hold more than one mapping after {MAX_PASSES} passes; is MM2 rewinding them now?"
        )
    for run in runs:
        parts = tangled[id(run)]
        if parts:
            say(
                f"{run.pair.name}: the offset syncs of {len(parts)} source partition(s) hold more than one mapping "
                "(a rewound, recreated or re-copied topic): translating again from the current one"
            )
            cuts = dict(run.cuts)
            cuts.update(_mapping_starts(spark, config, run, options, parts))  # over the whole history again
            run.cuts = sorted(cuts.items())
    return True


def _with_exact(
    spark: SparkSession,
    config: MM2Config,
    run: _PairRun,
    translated: DataFrame,
    progress: Progress | None,
) -> DataFrame:
    """``inspect --exact``: the rows whose translation is not exact, read on both clusters and replaced by
    their true positions (``inspector.exact``). ``translated`` must be cached: it is read twice."""
    rows = [r.asDict() for r in transforms.inexact(translated).toLocalIterator()]
    found = exact.exact_positions(
        config, run.pair, run.state, exact.inexact_rows(rows), progress=progress or (lambda _m: None)
    )
    table = exact.exact_table(run.pair.name, found)
    positions = spark.createDataFrame(table, schema=schemas.EXACT_POSITIONS_SCHEMA)
    return transforms.with_exact_positions(translated, positions)


def partition_numbers_on_driver(spark: SparkSession, group_offsets: pa.Table) -> DataFrame:
    """``transforms.partition_numbers`` of the group offsets, built on the driver from their Arrow table.

    A thousand rows or so, and no Spark job: the offset-syncs read, which joins them, starts at once instead
    of waiting for a job over the million group offsets.
    """
    keys = group_offsets.select(transforms.SYNC_KEY).group_by(transforms.SYNC_KEY).aggregate([])
    keys = keys.sort_by([(k, "ascending") for k in transforms.SYNC_KEY])
    numbered = keys.append_column("_part", pa.array(range(1, keys.num_rows + 1), pa.int32()))
    return spark.createDataFrame(numbered, schema=schemas.PARTITION_NUMBERS_SCHEMA)


def fresh_checkpoint_age(pair: PairConfig) -> dt.timedelta:
    """How recent a checkpoint must be to prove MM2 is keeping up: two of its own emit/sync intervals.

    A gap between the translation and the target offset inside that window is MM2's interval timing, not a
    stall; a checkpoint older than that while the group moved on means the checkpoint side has stopped.
    """
    interval = pair.emit_checkpoints_interval_seconds
    if pair.sync_group_offsets_enabled:
        interval = max(interval, pair.sync_group_offsets_interval_seconds)
    return dt.timedelta(seconds=2 * max(interval, 1))


#: The phase the classifying Spark job's tasks are counted in (``inspector.task_progress``).
CLASSIFY_PHASE = "Spark tasks"


@dataclass(frozen=True, slots=True)
class ClusterState:
    """What the inspection reads on the driver before Spark runs: per selected pair, the clusters' admin state
    and MM2's position (``read_cluster_state``)."""

    pairs: tuple[tuple[PairConfig, PairState, ReplicationState], ...]
    #: Per pair, what its configuration makes of it (``inspector.flow_states.observe``).
    conditions: dict[str, list[FlowCondition]] = field(default_factory=dict)


def read_cluster_state(
    config: MM2Config,
    options: InspectOptions,
    *,
    connect: ConnectClient | None = None,
    progress: Progress | None = None,
) -> ClusterState:
    """The admin state and MM2's position of every selected pair. It needs no Spark: a caller can read it
    while the session starts (``inspector.session.SessionStart``) and hand it to ``run_inspection``."""
    say = progress or (lambda _m: None)
    read = []
    conditions: dict[str, list[FlowCondition]] = {}
    for pair in select_pairs(config, options.pairs):
        say(f"{pair.name}: reading admin state")
        replication = collect_replication_state(config, pair, options.selection, connect, progress=say)
        state = collect_pair_state(config, pair, options.selection, progress=say)
        read.append((pair, state, replication))
        conditions[pair.name] = flow_states.observe(config, pair, state.source_partitions, progress=say)
    return ClusterState(tuple(read), conditions)


def run_inspection(
    spark: SparkSession,
    config: MM2Config,
    options: InspectOptions,
    *,
    progress: Progress | None = None,
    parquet_output: str | None = None,
    connect: ConnectClient | None = None,
    cluster_state: ClusterState | None = None,
) -> InspectResult:
    """Classify every group partition of the selected pairs.

    The rows are computed once. With ``parquet_output`` (a path or URI Spark can write) that one pass writes
    them there (Spark's writer, a folder of part files) and the result reads them back, so a large run is not
    also cached in memory; otherwise they are cached. Either way every writer and the summary reuse them
    without recomputing. ``connect`` is the Connect worker MM2's position is read from (``inspector.mm2_position``;
    without it, dedicated-mode MM2's offsets topic); the replicated-partition rows are cached. ``cluster_state``
    is the admin state when the caller read it already (``read_cluster_state``), else this reads it first.
    """
    say = progress or (lambda _m: None)
    if cluster_state is None:
        cluster_state = read_cluster_state(config, options, connect=connect, progress=progress)
    runs = [_PairRun(pair, state, replication) for pair, state, replication in cluster_state.pairs]
    pairs = [run.pair for run in runs]
    positions = [run.replication.position for run in runs]
    group_partitions = sum(r.state.group_partitions for r in runs)
    attempt = 0
    while True:
        attempt += 1
        notes: list[TopicNote] = []
        counter = MalformedCounter()
        translated: list[DataFrame] = []
        for run in runs:
            say(f"{run.pair.name}: reading {run.pair.offset_syncs_topic} and {run.pair.checkpoints_topic} with Spark")
            translated.append(_translated(spark, config, run, options, notes, counter))
        if options.exact:
            # --exact reads records for the translated rows: the translation runs (and is checked) first.
            translated = [t.cache() for t in translated]
            say("translating")
            for t in translated:
                t.count()
            if _again(spark, config, runs, options, attempt, say):
                for t in translated:
                    t.unpersist()
                continue
            translated = [_with_exact(spark, config, run, t, progress) for run, t in zip(runs, translated, strict=True)]
        classified = [
            _classified(spark, config, run, t, options, notes, counter) for run, t in zip(runs, translated, strict=True)
        ]
        rows = functools.reduce(DataFrame.unionByName, classified)
        if options.only_problems:
            rows = rows.where("NOT is_ok")
        rows = rows.select(*replication_health.GROUP_ROWS_SCHEMA.fieldNames())
        if parquet_output is not None:
            say(f"classifying into {parquet_output}")
            with counting_tasks(spark, progress, CLASSIFY_PHASE):
                rows.write.mode("overwrite").options(**parquet_writer_options()).parquet(parquet_output)
            rows = spark.read.schema(replication_health.GROUP_ROWS_SCHEMA).parquet(parquet_output)
        else:
            rows = rows.cache()
            say("classifying")
            with counting_tasks(spark, progress, CLASSIFY_PHASE):
                rows.count()  # materialize once; every writer and the summary reuse it (those that print sort then)
        if options.exact or not _again(spark, config, runs, options, attempt, say):
            break
        rows.unpersist()
    say("replication health")
    partitions = functools.reduce(
        DataFrame.unionByName, [_replicated_partitions(spark, config, run, options, []) for run in runs]
    )
    if options.only_problems:
        partitions = partitions.where("NOT is_ok")
    partitions = partitions.select(*replication_health.PARTITION_COLUMNS).cache()
    partitions.count()
    notes.extend(counter.notes())
    by_name = {p.name: p for p in pairs}
    notes = [n for n in notes if not flow_states.expected_absent(by_name[n.cluster_pair], n.topic)]
    notes.extend(TopicNote(*n) for c in cluster_state.conditions.values() for n in flow_states.condition_notes(c))
    summary = transforms.summarize(rows).orderBy("cluster_pair", "status").cache()
    return InspectResult(
        rows=rows,
        summary=summary,
        notes=notes,
        pairs=[p.name for p in pairs],
        group_partitions=group_partitions,
        partitions=partitions,
        positions=positions,
    )


def _parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="mm2ctl.inspector.job", description="mm2ctl inspect as a Spark application")
    parser.add_argument("--mm2-config")
    parser.add_argument("--from-connect")
    parser.add_argument("--secrets")
    parser.add_argument("--policy-naming", choices=["default", "identity"])
    parser.add_argument("--pair", action="append", default=[])
    parser.add_argument("--groups")
    parser.add_argument("--topics")
    parser.add_argument("--active-only", action="store_true")
    parser.add_argument("--only-problems", action="store_true")
    parser.add_argument("--exact", action="store_true")
    parser.add_argument("--format", choices=["csv", "json", "parquet"], default="parquet")
    parser.add_argument("--output", required=True)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """``spark-submit …/mm2ctl/inspector/job.py --mm2-config F --output PATH``: writes the rows with Spark's writers
    (a folder of part files, as a cluster job should) and exits 10 when any row is a problem."""
    from mm2ctl.core.exit_codes import ExitCode

    args = _parse_args(sys.argv[1:] if argv is None else argv)
    from mm2ctl.inspector.session import build_session

    spark = build_session()
    options = InspectOptions(
        pairs=tuple(args.pair),
        selection=Selection(groups=args.groups, topics=args.topics, active_only=args.active_only),
        only_problems=args.only_problems,
        exact=args.exact,
    )
    parquet_output = args.output if args.format == "parquet" else None
    try:
        from mm2ctl.connect_client.factory import connector_config_reader
        from mm2ctl.core.config_source import ConfigSource, resolve_config

        source = ConfigSource(
            mm2_config=args.mm2_config,
            from_connect=args.from_connect,
            secrets=args.secrets,
            policy_naming=args.policy_naming,
        )
        result = run_inspection(
            spark,
            resolve_config(source, read_connectors=connector_config_reader()),
            options,
            progress=lambda m: print(m, file=sys.stderr),
            parquet_output=parquet_output,
        )
    except Mm2ctlError as exc:
        print(f"mm2ctl.inspector.job: error: {exc}", file=sys.stderr)
        return int(exc.exit_code)
    if parquet_output is None:
        write_distributed(result.rows, args.format, args.output)
    problems = result.problem_count() + result.partition_problem_count()
    return int(ExitCode.PROBLEMS_FOUND if problems else ExitCode.OK)


if __name__ == "__main__":
    sys.exit(main())
