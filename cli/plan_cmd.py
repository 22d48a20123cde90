"""``mm2ctl plan …``: parse options, call a planner, write the plan file, render it.

Every subcommand checks what it was given (flows, roles, positions) before it reads the MM2 file or reaches
a cluster, then opens the live state once and hands it to its planner. Nothing here talks Kafka or HTTP;
``plan failover`` also writes the ``--export-csv`` file through ``plans.failover_csv``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from mm2ctl.cli.options import (
    ConnectCa,
    ConnectCert,
    ConnectKey,
    ConnectOptions,
    ConnectorsPair,
    ConnectPassword,
    ConnectUrls,
    ConnectUser,
    FromConnect,
    Groups,
    JsonOutput,
    MM2Config,
    Pair,
    PolicyNaming,
    Secrets,
    SetupOptions,
    SparkCheckpoints,
    SparkForm,
    SparkOutput,
    Topics,
)
from mm2ctl.cli.progress_bar import terminal_progress
from mm2ctl.cli.render import failover_rows, failover_rows_json, render_plan, spark_queries_json, spark_queries_table
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.translation.positions import Fallback
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.planners import (
    Action,
    Method,
    PartitionSelection,
    PlanBuilder,
    parse_roles,
    plan_connectors,
    plan_reset_connector_offsets,
    plan_reset_mm2,
    plan_truncate_offset_syncs,
)
from mm2ctl.plans.serialize import dump_plan_json, write_plan_file

plan_app = typer.Typer(
    help="Make a reviewable plan from live state; nothing changes until `mm2ctl apply`.", no_args_is_help=True
)

_OUT = typer.Option(..., "--out", "-o", help="Where to write the plan (YAML); review it with `mm2ctl show`.")
_DETAILED = typer.Option(
    False, "--detailed-exitcode", help="Exit 14 when the plan has changes to make, 0 when it has none."
)
_OFFSETS_TOPIC = typer.Option(
    None,
    "--offsets-topic",
    help="The worker's offset.storage.topic "
    "(tombstone method; default connect-offsets, or mm2-offsets.<source>.internal).",
)
_OFFSETS_CLUSTER = typer.Option(
    None,
    "--offsets-cluster",
    help="Alias of the cluster holding the offsets topic (default: the one whose id the Connect worker reports).",
)


def _finish_plan(plan: Plan, out: Path, as_json: bool, detailed: bool) -> None:
    write_plan_file(plan, out)
    typer.echo(dump_plan_json(plan) if as_json else render_plan(plan) + f"\n  written to {out}")
    _exit(plan, detailed)


def _exit(plan: Plan, detailed: bool) -> None:
    """A plan that leaves group partitions untranslatable exits 19 (before ``--detailed-exitcode``'s 14)."""
    if plan.untranslatable:
        raise typer.Exit(int(ExitCode.UNTRANSLATABLE))
    if detailed and any(s.writes for s in plan.steps):
        raise typer.Exit(int(ExitCode.CHANGES_PRESENT))


_EXPORT_CSV = typer.Option(
    None,
    "--export-csv",
    help="Also write group,topic,partition,offset (kafka-consumer-groups --reset-offsets --from-file).",
)
_FALLBACK = typer.Option(
    "timestamp",
    "--fallback",
    help="Where no offset sync lies at or below a group's position: timestamp (find it by the next record's "
    "timestamp, proven by content) | none (leave it untranslatable).",
)


def _fallback(value: str) -> Fallback:
    try:
        return Fallback(value)
    except ValueError:
        raise ConfigError(f"--fallback {value!r}: choose timestamp or none") from None


@plan_app.command("connectors")
def plan_connectors_cmd(
    action: Annotated[Action, typer.Argument(help="stop | pause | resume | restart")],
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    connector: list[str] = typer.Option([], "--connector", help="A connector by name (repeatable)."),
    pair: ConnectorsPair = None,
    role: str = typer.Option(
        "source,checkpoint,heartbeat", "--role", help="With --pair: which MM2 connectors (comma separated)."
    ),
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    out: Path = _OUT,
    as_json: JsonOutput = False,
    detailed: bool = _DETAILED,
) -> None:
    """Stop, pause, resume or restart connectors; each step waits until the state is reached."""
    roles = parse_roles(role)
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(
        SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).live_state(c), PlanKind.CONNECTORS
    )
    plan = plan_connectors(b, action, connectors=connector, pair=pair, roles=roles)
    _finish_plan(plan, out, as_json, detailed)


def _positions(items: list[str]) -> dict[tuple[str, int], int]:
    out = {}
    for item in items:
        try:
            tp, _, off = item.rpartition("=")
            topic, _, part = tp.rpartition(":")
            out[(topic, int(part))] = int(off)
        except ValueError:
            raise ConfigError(f"--position {item!r}: expected TOPIC:PARTITION=OFFSET") from None
        if not topic:
            raise ConfigError(f"--position {item!r}: expected TOPIC:PARTITION=OFFSET")
    return out


@plan_app.command("reset-connector-offsets")
def plan_reset_offsets_cmd(
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    connector: list[str] = typer.Option([], "--connector", help="A connector by name (repeatable)."),
    pair: ConnectorsPair = None,
    role: str = typer.Option("source", "--role", help="With --pair: which MM2 connectors (comma separated)."),
    topic: list[str] = typer.Option([], "--topic", help="Only this source topic (repeatable)."),
    partition: list[int] = typer.Option([], "--partition", help="Only this partition (repeatable)."),
    position: list[str] = typer.Option(
        [], "--position", help="TOPIC:PARTITION=OFFSET: replicate from this upstream offset next (REST method)."
    ),
    preset: str | None = typer.Option(
        None, "--preset", help="resume-at-target: set each position to where the target already is."
    ),
    method: Method = typer.Option(
        Method.AUTO, "--method", help="auto (REST on Connect 3.6+, else tombstones) | rest | tombstone"
    ),
    offsets_topic: str | None = _OFFSETS_TOPIC,
    offsets_cluster: str | None = _OFFSETS_CLUSTER,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    out: Path = _OUT,
    as_json: JsonOutput = False,
    detailed: bool = _DETAILED,
) -> None:
    """Reset (or set) connector source offsets by REST (Connect 3.6+) or byte-exact tombstones."""
    if preset not in (None, "resume-at-target"):
        raise ConfigError(f"--preset {preset!r}: the only preset is resume-at-target")
    roles = parse_roles(role)
    selection = PartitionSelection(topics=tuple(topic), partitions=tuple(partition), positions=_positions(position))
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(
        SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).live_state(c),
        PlanKind.RESET_CONNECTOR_OFFSETS,
    )
    plan = plan_reset_connector_offsets(
        b,
        connectors=connector,
        pair=pair,
        roles=roles,
        selection=selection,
        method=method,
        offsets_topic=offsets_topic,
        offsets_cluster=offsets_cluster,
        resume_at_target=preset == "resume-at-target",
    )
    _finish_plan(plan, out, as_json, detailed)


@plan_app.command("truncate-offset-syncs")
def plan_truncate_cmd(
    pair: Pair,
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    out: Path = _OUT,
    as_json: JsonOutput = False,
    detailed: bool = _DETAILED,
) -> None:
    """Back up, then delete the records of the flow's offset-syncs topic (MirrorSourceConnector stopped)."""
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(
        SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).live_state(c), PlanKind.TRUNCATE_OFFSET_SYNCS
    )
    _finish_plan(plan_truncate_offset_syncs(b, pair), out, as_json, detailed)


@plan_app.command("reset-mm2")
def plan_reset_mm2_cmd(
    pair: Pair,
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    role: str = typer.Option(
        "source,checkpoint,heartbeat", "--role", help="Which MM2 connectors to include (comma separated)."
    ),
    offsets_topic: str | None = _OFFSETS_TOPIC,
    offsets_cluster: str | None = _OFFSETS_CLUSTER,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    out: Path = _OUT,
    as_json: JsonOutput = False,
    detailed: bool = _DETAILED,
) -> None:
    """Stop the flow's connectors, back up and truncate offset-syncs, reset connector offsets, resume."""
    roles = parse_roles(role)
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    live = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).live_state(c)
    b = PlanBuilder(live, PlanKind.RESET_MM2)
    plan = plan_reset_mm2(b, pair, roles=roles, offsets_topic=offsets_topic, offsets_cluster=offsets_cluster)
    _finish_plan(plan, out, as_json, detailed)


@plan_app.command("failover")
def plan_failover_cmd(
    pair: Pair,
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    groups: Groups = None,
    topics: Topics = None,
    source: str = typer.Option(
        "syncs",
        "--from",
        help="syncs (the one translation rule, verified when the source is readable) | checkpoints (MM2's own).",
    ),
    source_unavailable: bool = typer.Option(
        False,
        "--source-unavailable",
        help="The source cluster is down: positions from checkpoints, conservative rule only.",
    ),
    stop_mirroring: bool = typer.Option(
        False,
        "--stop-mirroring",
        help="Wait until MM2 has copied every partition the groups have offsets on, stop the pair's connectors, "
        "translate the groups MM2 had not copied up to at planning, then write.",
    ),
    allow_rewind: bool = typer.Option(False, "--allow-rewind", help="Allow moving a target offset backwards."),
    catch_up_timeout: float = typer.Option(
        300.0, "--catch-up-timeout", help="Seconds to wait for MM2 to catch up (with --stop-mirroring)."
    ),
    accept_cautious: bool = typer.Option(
        False,
        "--accept-cautious",
        help="Without --stop-mirroring: plan MM2's cautious answer (last offset sync + 1, which replays) for "
        "groups whose position MM2 has not copied yet, instead of refusing with exit 21.",
    ),
    fallback: str = _FALLBACK,
    spark_checkpoint: SparkCheckpoints = None,
    spark_form: SparkForm = "auto",
    spark_output: SparkOutput = None,
    export_csv: Path | None = _EXPORT_CSV,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    out: Path = _OUT,
    as_json: JsonOutput = False,
    detailed: bool = _DETAILED,
) -> None:
    """Write each group's translated (and, source readable, verified) position to the target, then verify."""
    from mm2ctl.plans.failover_csv import write_failover_csv
    from mm2ctl.plans.planners.failover.planner import FailoverOptions, Source, plan_failover
    from mm2ctl.plans.planners.failover.spark_queries import SparkRequest

    try:
        src = Source(source)
    except ValueError:
        raise ConfigError(f"--from {source!r}: choose syncs or checkpoints") from None
    spark = SparkRequest(tuple(spark_checkpoint or ()), spark_form, None if spark_output is None else str(spark_output))
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    live = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).live_state(c)
    b = PlanBuilder(live, PlanKind.FAILOVER)
    if stop_mirroring and b.live.connect is None:
        raise ConfigError("--stop-mirroring needs the Connect REST API: pass --connect-url")
    with terminal_progress() as progress:
        plan, report = plan_failover(
            b,
            FailoverOptions(
                pair=pair,
                groups=groups,
                topics=topics,
                source=src,
                source_unavailable=source_unavailable,
                stop_mirroring=stop_mirroring,
                allow_rewind=allow_rewind,
                catch_up_timeout_s=catch_up_timeout,
                fallback=_fallback(fallback),
                accept_cautious=accept_cautious,
                spark=spark,
            ),
            progress=progress,
        )
    write_plan_file(plan, out)
    exported = None if export_csv is None else write_failover_csv(report, export_csv)
    if as_json:
        doc = json.loads(dump_plan_json(plan))
        queries = spark_queries_json(report.queries)
        typer.echo(json.dumps({"plan": doc, "rows": failover_rows_json(report), "spark_queries": queries}, indent=2))
    else:
        typer.echo(
            render_plan(plan)
            + "\n"
            + failover_rows(report)
            + spark_queries_table(report.queries)
            + f"\n  written to {out}"
        )
        if exported is not None:
            typer.echo(f"  {exported} row(s) exported to {export_csv}")
    _exit(plan, detailed)


@plan_app.command("failback")
def plan_failback_cmd(
    pair: Pair,
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    groups: Groups = None,
    topics: Topics = None,
    allow_rewind: bool = typer.Option(
        False, "--allow-rewind", help="Also write group partitions whose offset on A would move backwards."
    ),
    fallback: str = _FALLBACK,
    spark_checkpoint: SparkCheckpoints = None,
    spark_form: SparkForm = "auto",
    spark_output: SparkOutput = None,
    export_csv: Path | None = _EXPORT_CSV,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    out: Path = _OUT,
    as_json: JsonOutput = False,
    detailed: bool = _DETAILED,
) -> None:
    """Move groups that consume on B after a failover over A->B back to A: their B positions, translated
    through A->B's offset syncs read backwards (or a reverse flow B->A for records produced on B), written on A."""
    from mm2ctl.plans.failover_csv import write_failover_csv
    from mm2ctl.plans.planners.failback import FailbackOptions, plan_failback
    from mm2ctl.plans.planners.failover.spark_queries import SparkRequest

    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    live = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).live_state(c)
    b = PlanBuilder(live, PlanKind.FAILBACK)
    spark = SparkRequest(tuple(spark_checkpoint or ()), spark_form, None if spark_output is None else str(spark_output))
    options = FailbackOptions(
        pair=pair, groups=groups, topics=topics, allow_rewind=allow_rewind, fallback=_fallback(fallback), spark=spark
    )
    with terminal_progress() as progress:
        plan, report = plan_failback(b, options, progress=progress)
    write_plan_file(plan, out)
    exported = None if export_csv is None else write_failover_csv(report, export_csv)
    if as_json:
        doc = json.loads(dump_plan_json(plan))
        rewinds = [{"group": r.group, "topic": r.target_topic, "partition": r.partition} for r in report.rewinds]
        rows = failover_rows_json(report)
        queries = spark_queries_json(report.queries)
        typer.echo(
            json.dumps({"plan": doc, "rows": rows, "rewinds_not_written": rewinds, "spark_queries": queries}, indent=2)
        )
    else:
        header = "offset on the target -> offset on the source"
        rows_text = failover_rows(report, header=header) + spark_queries_table(report.queries)
        typer.echo(render_plan(plan) + "\n" + rows_text + f"\n  written to {out}")
        if exported is not None:
            typer.echo(f"  {exported} row(s) exported to {export_csv}")
    _exit(plan, detailed)
