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
from mm2ctl.core.config import MM2Config, PairConfig, load_mm2_config
from mm2ctl.core.errors import ConfigError, Mm2ctlError
from mm2ctl.core.progress import Progress
from mm2ctl.inspector import decode, replication_health, schemas, transforms
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
) -> DataFrame:
    if topic not in existing:
        notes.append(TopicNote(pair.name, topic, alias, "topic does not exist"))
        return empty_records(spark)
    settings = config.client_settings(alias, pair.name)
    return read_topic(spark, settings, topic, cluster_pair=pair.name, min_partitions=tasks)


def _inspect_pair(
    spark: SparkSession,
    config: MM2Config,
    pair: PairConfig,
    state: PairState,
    replication: ReplicationState,
    options: InspectOptions,
    notes: list[TopicNote],
    counter: MalformedCounter,
) -> tuple[DataFrame, DataFrame]:
    """The pair's group-partition rows and its replicated-partition rows."""

    def frame(table: pa.Table, schema: StructType) -> DataFrame:
        # Spark makes one partition per Arrow batch (10,000 rows): 100 tasks for a million group offsets, each
        # mostly scheduling overhead. One partition per core reads the same rows.
        df = spark.createDataFrame(table, schema=schema)
        return df.coalesce(spark.sparkContext.defaultParallelism)

    syncs_alias = pair.offset_syncs_cluster
    syncs_existing = state.source_topics if syncs_alias == pair.source else state.target_topics
    raw_syncs = _read_internal(
        spark,
        config,
        pair,
        alias=syncs_alias,
        topic=pair.offset_syncs_topic,
        existing=syncs_existing,
        tasks=options.read_tasks,
        notes=notes,
    )
    raw_checkpoints = _read_internal(
        spark,
        config,
        pair,
        alias=pair.target,
        topic=pair.checkpoints_topic,
        existing=state.target_topics,
        tasks=options.read_tasks,
        notes=notes,
    )
    group_offsets = frame(state.source_group_offsets, schemas.SOURCE_GROUP_OFFSETS_SCHEMA)
    # The syncs are matched to the inspected partitions by their raw key bytes, so their keys are not parsed.
    numbers = partition_numbers_on_driver(spark, state.source_group_offsets)
    # No cache: each topic is read once, in the same pass that classifies, and its malformed records are
    # counted on the way (an observation, read after the job ran) instead of in a second read. Spark cannot
    # prune columns through an observation, so the syncs are narrowed to what translate reads first: the rows
    # materialized there carry no pair or topic strings.
    decoded_syncs = decode.decode_offset_syncs(raw_syncs, known=numbers).select(*transforms.NUMBERED_SYNC_COLUMNS)
    scanned = state.group_partitions > 0
    decoded_syncs = counter.watch(decoded_syncs, pair.name, pair.offset_syncs_topic, syncs_alias, scanned=scanned)
    decoded_checkpoints = counter.watch(
        decode.decode_checkpoints(raw_checkpoints), pair.name, pair.checkpoints_topic, pair.target, scanned=scanned
    )
    translated = transforms.translate(group_offsets, decoded_syncs, numbers=numbers)
    joined = transforms.join_target_state(
        translated,
        source_partitions=frame(state.source_partitions, schemas.SOURCE_PARTITIONS_SCHEMA),
        target_partitions=frame(state.target_partitions, schemas.TARGET_PARTITIONS_SCHEMA),
        target_group_offsets=frame(state.target_group_offsets, schemas.TARGET_GROUP_OFFSETS_SCHEMA),
        source_groups=frame(state.source_groups, schemas.GROUP_STATES_SCHEMA),
        target_groups=frame(state.target_groups, schemas.GROUP_STATES_SCHEMA),
        checkpoints=transforms.latest_checkpoints(decoded_checkpoints),
    )
    classified = transforms.classify(
        joined,
        sync_group_offsets_enabled=pair.sync_group_offsets_enabled,
        offset_lag_max=pair.offset_lag_max,
        as_of=state.read_at,
        fresh_checkpoint_age=fresh_checkpoint_age(pair),
    )
    # The newest sync of every replicated partition: a read of the syncs of its own, aggregated by raw key in
    # a hash table before its shuffle, so a row per key and task crosses it.
    replicated = spark.createDataFrame(replication.partitions, schema=replication_health.REPLICATED_PARTITIONS_SCHEMA)
    newest = replication_health.newest_syncs(raw_syncs, replicated)
    partitions = replication_health.classify_partitions(
        replicated, newest, lag_threshold=options.lag_threshold, as_of=replication.read_at
    )
    return replication_health.with_group_checkpoint_age(classified, as_of=state.read_at), partitions


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


def run_inspection(
    spark: SparkSession,
    config: MM2Config,
    options: InspectOptions,
    *,
    progress: Progress | None = None,
    parquet_output: str | None = None,
    connect: ConnectClient | None = None,
) -> InspectResult:
    """Classify every group partition of the selected pairs.

    The rows are computed once. With ``parquet_output`` (a path or URI Spark can write) that one pass writes
    them there (Spark's writer, a folder of part files) and the result reads them back, so a large run is not
    also cached in memory; otherwise they are cached. Either way every writer and the summary reuse them
    without recomputing. ``connect`` is the Connect worker MM2's position is read from (``inspector.mm2_position``;
    without it, dedicated-mode MM2's offsets topic); the replicated-partition rows are cached.
    """
    say = progress or (lambda _m: None)
    pairs = select_pairs(config, options.pairs)
    notes: list[TopicNote] = []
    counter = MalformedCounter()
    classified: list[DataFrame] = []
    partition_frames: list[DataFrame] = []
    positions: list[Mm2Position] = []
    group_partitions = 0
    for pair in pairs:
        say(f"{pair.name}: reading admin state")
        replication = collect_replication_state(config, pair, options.selection, connect, progress=say)
        positions.append(replication.position)
        state = collect_pair_state(config, pair, options.selection, progress=say)
        group_partitions += state.group_partitions
        say(f"{pair.name}: reading {pair.offset_syncs_topic} and {pair.checkpoints_topic} with Spark")
        pair_rows, pair_partitions = _inspect_pair(spark, config, pair, state, replication, options, notes, counter)
        classified.append(pair_rows)
        partition_frames.append(pair_partitions)
    rows = functools.reduce(DataFrame.unionByName, classified)
    partitions = functools.reduce(DataFrame.unionByName, partition_frames)
    if options.only_problems:
        rows = rows.where("NOT is_ok")
        partitions = partitions.where("NOT is_ok")
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
    say("replication health")
    partitions = partitions.select(*replication_health.PARTITION_COLUMNS).cache()
    partitions.count()
    notes.extend(counter.notes())
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
    parser.add_argument("--mm2-config", required=True)
    parser.add_argument("--pair", action="append", default=[])
    parser.add_argument("--groups")
    parser.add_argument("--topics")
    parser.add_argument("--active-only", action="store_true")
    parser.add_argument("--only-problems", action="store_true")
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
    )
    parquet_output = args.output if args.format == "parquet" else None
    try:
        result = run_inspection(
            spark,
            load_mm2_config(args.mm2_config),
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
