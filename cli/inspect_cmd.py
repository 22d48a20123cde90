"""``mm2ctl inspect``: classify every MM2 consumer-group partition as synced or not, and say why."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from enum import StrEnum
from pathlib import Path
from typing import Annotated, TextIO

import typer

from mm2ctl.cli.options import (
    ConnectCa,
    ConnectCert,
    ConnectKey,
    ConnectOptions,
    ConnectPassword,
    ConnectUser,
    FromConnect,
    MM2Config,
    PolicyNaming,
    Secrets,
    SetupOptions,
    pair_option,
)
from mm2ctl.cli.render import inspect_summary_lines
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"
    parquet = "parquet"


def _spark_conf(pairs: list[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for item in pairs:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--spark-conf expects key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    return conf


def inspect(
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    pair: Annotated[
        list[str] | None,
        pair_option("A flow to inspect, SOURCE->TARGET; repeatable. Default: every enabled flow of the MM2 file."),
    ] = None,
    groups: str | None = typer.Option(
        None, "--groups", help="Only groups matching this regex (after MM2's groups filter)."
    ),
    topics: str | None = typer.Option(
        None, "--topics", help="Only topics matching this regex (after MM2's topics filter)."
    ),
    active_only: bool = typer.Option(
        False, "--active-only", help="Only groups with active members (default: every group with committed offsets)."
    ),
    only_problems: bool = typer.Option(False, "--only-problems", help="Only rows that are not ok."),
    fmt: Format = typer.Option(
        Format.table,
        "--format",
        help=(
            "table (summary + problem rows), csv (RFC 4180), json (one object per line), "
            "parquet (a folder; needs --output)."
        ),
    ),
    output: str | None = typer.Option(
        None, "--output", help="Write the rows here instead of stdout (parquet: a folder, path or URI)."
    ),
    spark_master: str | None = typer.Option(
        None, "--spark-master", help="Spark master URL (default: local[*], embedded)."
    ),
    spark_conf: list[str] = typer.Option([], "--spark-conf", help="Extra Spark setting k=v; repeatable."),
    exact: bool = typer.Option(
        False,
        "--exact",
        help="Read records on both clusters for every row whose translation is not exact, so "
        "replay_if_failover_now and skip_if_failover_now are true counts (slower: it reads per partition).",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
) -> None:
    """Run the Spark inspection over an MM2 setup.

    Reads the offset-syncs and checkpoints topics with Spark and the groups' offsets on both clusters, and
    gives every (pair, group, topic, partition) a status: Aiven's six messages verbatim, plus target_ahead,
    stale_sync, no_offset_syncs, remote_topic_missing and target_group_active.

    Exit code 0 when every row is ok, 10 when any row is a problem (see README "Exit codes").
    """
    import re

    from mm2ctl.cli import run_log
    from mm2ctl.cli.progress import terminal_progress
    from mm2ctl.inspector.admin_state import Selection, reach_clusters
    from mm2ctl.inspector.job import InspectOptions, run_inspection, select_pairs
    from mm2ctl.inspector.report import write_csv, write_json_lines
    from mm2ctl.inspector.session import build_session

    for name, regex in (("--groups", groups), ("--topics", topics)):
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as exc:
                raise ConfigError(f"{name} {regex!r} is not a valid regex: {exc}") from exc
    if fmt is Format.parquet and output is None:
        raise ConfigError("--format parquet writes a folder: give it with --output PATH")
    c = ConnectOptions.of(None, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    config = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).resolve(c)
    conf = _spark_conf(spark_conf)
    options = InspectOptions(
        pairs=tuple(pair or ()),
        selection=Selection(groups=groups, topics=topics, active_only=active_only),
        only_problems=only_problems,
        exact=exact,
    )
    parquet_output = output if fmt is Format.parquet else None
    with terminal_progress(quiet=quiet) as say:  # closed before any row reaches stdout
        say("reaching the clusters")
        reach_clusters(select_pairs(config, pair or []))
        say("starting Spark")
        spark = build_session(spark_master, conf, jvm_log=run_log.jvm_log("inspect"))
        result = run_inspection(spark, config, options, progress=say, parquet_output=parquet_output)
    problems = result.problem_count()
    if parquet_output is not None:
        say(f"wrote {parquet_output}")
    else:
        say(f"writing the rows ({fmt.value}) to {output or 'stdout'}")
        target: TextIO
        with Path(output).open("w", newline="", encoding="utf-8") if output else nullcontext(sys.stdout) as target:
            if fmt is Format.table:
                for line in inspect_summary_lines(result):
                    target.write(line + "\n")
            elif fmt is Format.csv:
                write_csv(result.rows, target)
            else:
                write_json_lines(result.rows, target)
    for note in result.notes:
        if fmt is not Format.table:
            say(f"note: {note.cluster_pair}: {note.topic} on {note.cluster}: {note.message}")
    say(f"{result.group_partitions} group partition(s) inspected, {problems} problem(s)")
    if problems:
        raise typer.Exit(int(ExitCode.PROBLEMS_FOUND))
