"""``mm2ctl inspect``: classify every MM2 consumer-group partition as synced or not, and say why; and every
replicated source partition as keeping up or not."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from contextlib import nullcontext
from enum import StrEnum
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO

import typer

from mm2ctl.cli.options import (
    ActiveOnly,
    ConnectCa,
    ConnectCert,
    ConnectKey,
    ConnectOptions,
    ConnectPassword,
    ConnectUrls,
    ConnectUser,
    Engine,
    Exact,
    FromConnect,
    Groups,
    InspectPairs,
    LagSecondsThreshold,
    LagThreshold,
    MM2Config,
    NoCache,
    PolicyNaming,
    Quiet,
    Secrets,
    SetupOptions,
    SparkCheckpoints,
    SparkConf,
    SparkMaster,
    SparkRemote,
    Topics,
    parse_spark_conf,
)
from mm2ctl.cli.render import inspect_summary_lines, replication_summary_lines
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import INTERRUPTED, ExitCode
from mm2ctl.core.progress import Progress, count
from mm2ctl.inspector.selection import DEFAULT_LAG_SECONDS_THRESHOLD, DEFAULT_LAG_THRESHOLD, InspectOptions

if TYPE_CHECKING:
    from mm2ctl.core.config.mm2_config import MM2Config as MM2Setup
    from mm2ctl.inspector.inspection import Inspector
    from mm2ctl.inspector.output.inspection_result import InspectionResult


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"
    prometheus = "prometheus"


class Rows(StrEnum):
    groups = "groups"
    partitions = "partitions"


def inspect(
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    pair: InspectPairs = None,
    groups: Groups = None,
    topics: Topics = None,
    active_only: ActiveOnly = False,
    only_problems: bool = typer.Option(False, "--only-problems", help="Only rows that are not ok."),
    fmt: Format = typer.Option(
        Format.table,
        "--format",
        help=(
            "table (summary + problem rows), csv (RFC 4180), json (one object per line), "
            "parquet (a folder; needs --output), prometheus (the text exposition, written atomically to --output)."
        ),
    ),
    rows: Rows = typer.Option(
        Rows.groups,
        "--rows",
        help="csv/json/parquet: the group-partition rows, or one row per replicated source partition.",
    ),
    lag_threshold: LagThreshold = DEFAULT_LAG_THRESHOLD,
    lag_seconds_threshold: LagSecondsThreshold = DEFAULT_LAG_SECONDS_THRESHOLD,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    output: str | None = typer.Option(
        None, "--output", help="Write the rows here instead of stdout (parquet: a folder, path or URI)."
    ),
    spark_master: SparkMaster = None,
    spark_conf: SparkConf = None,
    remote: SparkRemote = None,
    engine: Engine = None,
    exact: Exact = False,
    no_cache: NoCache = False,
    spark_checkpoint: SparkCheckpoints = None,
    watch: float | None = typer.Option(
        None,
        "--watch",
        min=1.0,
        metavar="SECONDS",
        help="Inspect again every SECONDS in one live session, printing the table each time, until Ctrl-C; "
        "each run after the first reads only what MM2 wrote since.",
    ),
    quiet: Quiet = False,
) -> None:
    """Run the Spark inspection over an MM2 setup.

    Reads the offset-syncs and checkpoints topics with Spark and the groups' offsets on both clusters, and
    gives every (pair, group, topic, partition) a status: Aiven's six messages verbatim, plus target_ahead,
    stale_sync, no_offset_syncs, remote_topic_missing, target_group_active and not_yet_copied (MM2 has not
    copied up to the group's position; needs MM2's position, see below).

    A Structured Streaming query reading Kafka keeps its position in its checkpoint, not in a group: each
    --spark-checkpoint gives its Kafka sources rows like a group's, named spark:<query id>.

    Every replicated source partition gets a row too: MM2's next offset to copy (from the Connect worker's
    MirrorSourceConnector offsets, or dedicated-mode MM2's offsets topic), its lag in records and in seconds
    (the age of the oldest record waiting), the time before retention deletes that record, the records lost
    to retention, a source reset, and the age of its newest offset sync. The table gives each flow's
    recovery point: the records and the time losing its source now would lose.

    Exit code 0 when every row is ok, 10 when any row is a problem (see README "Exit codes").
    """
    from mm2ctl.cli import run_log
    from mm2ctl.cli.progress_bar import terminal_progress
    from mm2ctl.inspector.opening import SparkPlace, open_inspection
    from mm2ctl.inspector.selection import Selection

    if fmt in (Format.parquet, Format.prometheus) and output is None:
        what = (
            "a folder" if fmt is Format.parquet else "a file (atomically: node_exporter's textfile collector reads it)"
        )
        raise ConfigError(f"--format {fmt.value} writes {what}: give it with --output PATH")
    if watch is not None and fmt is not Format.table:
        raise ConfigError("--watch prints the table again and again: it takes no --format other than table")
    place = SparkPlace.of(spark_master, parse_spark_conf(spark_conf), remote, engine)
    connect = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    config = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).resolve(connect)
    options = InspectOptions(
        pairs=tuple(pair or ()),
        selection=Selection(groups=groups, topics=topics, active_only=active_only),
        only_problems=only_problems,
        exact=exact,
        lag_threshold=lag_threshold,
        lag_seconds_threshold=lag_seconds_threshold,
        state_cache=not no_cache,
        spark_checkpoints=tuple(spark_checkpoint or ()),
    )
    say = terminal_progress(quiet=quiet)
    with contextlib.ExitStack() as stack:
        with say:  # closed before any row reaches stdout
            inspector = stack.enter_context(
                open_inspection(
                    config,
                    options,
                    place,
                    connect=connect.client((from_connect,) if from_connect else ()),
                    progress=say,
                    live=watch is not None,
                    jvm_log=run_log.jvm_log("inspect"),
                )
            )
            if watch is None:
                started = time.monotonic()
                result = inspector.run(progress=say)
        if watch is not None:
            _watch(inspector, watch, quiet=quiet, options=options)
            typer.echo("mm2ctl: interrupted", err=True)
            raise typer.Exit(INTERRUPTED)  # the inspection's opener closes the inspector (Spark's JVM) first
        try:
            _write(
                result,
                fmt,
                by_partition=rows is Rows.partitions,
                output=output,
                say=say,
                config=config,
                started=started,
                options=options,
            )
            for note in result.notes:
                if fmt is not Format.table:
                    say(f"note: {note.cluster_pair}: {note.topic} on {note.cluster}: {note.message}")
        finally:
            result.close()
    say(
        f"{result.group_partitions} group partition(s) inspected, {result.problems} problem(s); "
        f"{result.replicated_partitions} replicated partition(s), {result.partition_problems} problem(s)"
    )
    if result.problems or result.partition_problems:
        raise typer.Exit(int(ExitCode.PROBLEMS_FOUND))


def _write(
    result: InspectionResult,
    fmt: Format,
    *,
    by_partition: bool,
    output: str | None,
    say: Progress,
    config: MM2Setup,
    started: float,
    options: InspectOptions,
) -> None:
    """The result in ``fmt``, to ``output`` or stdout."""
    from mm2ctl.inspector.output.row_files import write_csv, write_json_lines, write_parquet

    if fmt is Format.prometheus:
        from mm2ctl.inspector.output.health_metrics import inspection_metrics
        from mm2ctl.inspector.output.prometheus import InspectionCollector, write_textfile

        assert output is not None
        collector = InspectionCollector()
        duration = time.monotonic() - started
        collector.succeeded(inspection_metrics(result, config), duration_seconds=duration, finished_at=time.time())
        write_textfile(output, collector)
        say(f"wrote {output}")
        return
    if fmt is Format.parquet:
        assert output is not None
        if by_partition:
            write_parquet(result.partitions, output)
        else:
            result.rows.write("parquet", output)
        say(f"wrote {output}")
        return
    say(f"writing the rows ({fmt.value}) to {output or 'stdout'}")
    target: TextIO
    with Path(output).open("w", newline="", encoding="utf-8") if output else nullcontext(sys.stdout) as target:
        if fmt is Format.table:
            for line in [*inspect_summary_lines(result), *replication_summary_lines(result, options)]:
                target.write(line + "\n")
            return
        table = result.partitions if by_partition else result.rows.to_arrow()
        (write_csv if fmt is Format.csv else write_json_lines)(table, target)


class _Interrupted(Exception):
    """Raised inside a watch's inspection at its next step once Ctrl-C was pressed."""


class _WatchProgress:
    """A run's progress that ends the run at its next step once ``stopping`` is set (``count`` is passed on)."""

    def __init__(self, say: Progress, stopping: threading.Event) -> None:
        self._say = say
        self._stopping = stopping

    def __call__(self, message: str, /) -> None:
        if self._stopping.is_set():
            raise _Interrupted
        self._say(message)

    def count(self, phase: str, done: int, total: int, /) -> None:
        count(self._say, phase, done, total)


def _watch(inspector: Inspector, seconds: float, *, quiet: bool, options: InspectOptions) -> None:
    """Inspect, print the table, and again every ``seconds`` in the same session, until Ctrl-C.

    Ctrl-C does not raise in the middle of a Spark call here (py4j's connection would be left half-read, and
    the session's stop waiting behind it): it cancels the Spark jobs in flight from a thread of its own, and
    the run ends at its next step or with its cancelled job. Returns once interrupted."""
    from mm2ctl.cli.progress_bar import terminal_progress
    from mm2ctl.inspector.spark.session import cancel_jobs

    stopping = threading.Event()

    def on_interrupt(_signum: int, _frame: FrameType | None) -> None:
        if not stopping.is_set():
            stopping.set()
            spark = inspector.started_spark
            if spark is not None:
                threading.Thread(target=cancel_jobs, args=(spark,), name="mm2ctl-cancel", daemon=True).start()

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        while not stopping.is_set():
            try:
                with terminal_progress(quiet=quiet) as say:
                    result = inspector.run(progress=_WatchProgress(say, stopping))
            except Exception:
                if stopping.is_set():
                    return  # the run ended by the interrupt: its jobs cancelled, or its next step refused
                raise
            try:
                typer.echo(f"-- {time.strftime('%Y-%m-%d %H:%M:%S')} --")
                for line in [*inspect_summary_lines(result), *replication_summary_lines(result, options)]:
                    typer.echo(line)
            finally:
                result.close()
            stopping.wait(seconds)
    finally:
        signal.signal(signal.SIGINT, previous)
