"""``mm2ctl report``: an inspection as one self-contained HTML page (``mm2ctl.report``).

The rows come from a saved inspection (``--group-rows``, ``--partition-rows``: what ``inspect --format
parquet|json`` wrote) or from an inspection this command runs with ``inspect``'s setup and selection options.
"""

from __future__ import annotations

import datetime as dt
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

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
    JsonOutput,
    MM2Config,
    NoCache,
    PolicyNaming,
    Quiet,
    Secrets,
    SetupOptions,
    SparkConf,
    SparkMaster,
    SparkRemote,
    Topics,
    parse_spark_conf,
)
from mm2ctl.cli.render import result_json
from mm2ctl.core.errors import ConfigError
from mm2ctl.inspector.selection import DEFAULT_LAG_THRESHOLD, InspectOptions, Selection

if TYPE_CHECKING:
    from mm2ctl.core.config.mm2_config import MM2Config as ResolvedMM2Config
    from mm2ctl.core.progress import Progress
    from mm2ctl.inspector.opening import SparkPlace
    from mm2ctl.report.inputs import InspectionTables

DEFAULT_OUTPUT = "mm2ctl-report.html"


def report(
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    group_rows: str | None = typer.Option(
        None,
        "--group-rows",
        metavar="PATH",
        help="A saved inspection's group-partition rows: the Parquet folder or JSON lines of "
        "`inspect --format parquet|json`. With --partition-rows (or alone), no inspection runs.",
    ),
    partition_rows: str | None = typer.Option(
        None,
        "--partition-rows",
        metavar="PATH",
        help="A saved inspection's replicated-partition rows: `inspect --rows partitions --format parquet|json`.",
    ),
    output: str = typer.Option(DEFAULT_OUTPUT, "--output", "-o", metavar="FILE", help="Where to write the page."),
    open_page: bool = typer.Option(False, "--open", help="Open the page in your web browser once written."),
    pair: InspectPairs = None,
    groups: Groups = None,
    topics: Topics = None,
    active_only: ActiveOnly = False,
    exact: Exact = False,
    no_cache: NoCache = False,
    lag_threshold: int = typer.Option(
        DEFAULT_LAG_THRESHOLD,
        "--lag-threshold",
        min=0,
        metavar="RECORDS",
        help="A group is ready to cut over only if MM2 lags at most this many records on each of its partitions.",
    ),
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    spark_master: SparkMaster = None,
    spark_conf: SparkConf = None,
    remote: SparkRemote = None,
    engine: Engine = None,
    quiet: Quiet = False,
    as_json: JsonOutput = False,
) -> None:
    """Write an inspection as one HTML page that needs no network: per flow, the partitions by status, what a
    failover now would replay or skip, MM2's lag and records lost, the age of offset syncs and checkpoints;
    and per group whether it is ready to cut over, or why not (a sortable, filterable table).

    Without --group-rows/--partition-rows it runs the inspection (inspect's setup and selection options);
    with them it reads a saved one, and --mm2-config (or --from-connect), if given, only fills the setup
    header. Secrets in the setup are masked.
    """
    from mm2ctl import __version__
    from mm2ctl.cli.progress_bar import terminal_progress
    from mm2ctl.core.config.describe import describe_setup
    from mm2ctl.report.inputs import read_saved
    from mm2ctl.report.page import render, write_report

    setup = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming)
    connect = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    saved = group_rows is not None or partition_rows is not None
    options = InspectOptions(
        pairs=tuple(pair or ()),
        selection=Selection(groups=groups, topics=topics, active_only=active_only),  # checks the regexes
        exact=exact,
        lag_threshold=lag_threshold,
        state_cache=not no_cache,
    )
    conf = parse_spark_conf(spark_conf)
    if saved:
        inspection_only = {"--pair": pair, "--groups": groups, "--topics": topics, "--active-only": active_only,
                           "--exact": exact, "--spark-master": spark_master, "--spark-conf": conf,
                           "--remote": remote, "--engine": engine}  # fmt: skip
        given = [name for name, value in inspection_only.items() if value]
        if given:
            raise ConfigError(f"{', '.join(given)} only apply when report runs the inspection, not to saved rows")
    elif not (setup.mm2_config or setup.from_connect):
        raise ConfigError("give the setup to inspect (--mm2-config or --from-connect), or saved rows (--group-rows)")
    with terminal_progress(quiet=quiet) as say:
        config = setup.resolve(connect) if (setup.mm2_config or setup.from_connect) else None
        if saved:
            say("reading the saved inspection")
            tables = read_saved(group_rows, partition_rows)
        else:
            from mm2ctl.inspector.opening import SparkPlace  # Spark: only when the inspection runs

            assert config is not None
            place = SparkPlace.of(spark_master, conf, remote, engine)
            tables = _run_inspection(config, options, place, connect, from_connect, say)
        say("drawing the report")
        page = render(
            tables,
            setup=describe_setup(config) if config is not None else None,
            lag_threshold=lag_threshold,
            generated_at=dt.datetime.now(dt.UTC),
            version=__version__,
        )
        path = write_report(output, page.html)
    size = path.stat().st_size
    t = page.totals
    if as_json:
        typer.echo(result_json({"command": "report", "output": str(path), "bytes": size, **t}))
    else:
        typer.echo(
            f"wrote {path} ({size / 1_048_576:.1f} MiB): {t['ready_groups']} of {t['groups']} group(s) ready to "
            f"cut over; {t['group_partition_problems']} of {t['group_partitions']} group partition(s) with a problem",
            err=True,
        )
    if open_page:
        webbrowser.open(Path(path).resolve().as_uri())


def _run_inspection(
    config: ResolvedMM2Config,
    options: InspectOptions,
    place: SparkPlace,
    connect: ConnectOptions,
    from_connect: str | None,
    say: Progress,
) -> InspectionTables:
    from mm2ctl.cli import run_log
    from mm2ctl.report.inspection_run import inspect_for_report

    client = connect.client((from_connect,) if from_connect else ())
    return inspect_for_report(config, options, place, connect=client, jvm_log=run_log.jvm_log("report"), progress=say)
