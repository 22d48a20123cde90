"""``mm2ctl plan …``, ``show``, ``apply`` and ``rollback``: parse options, call planners and the engine, render.

Thin on purpose: no Kafka or HTTP here. Secrets (``--connect-password`` / ``MM2CTL_CONNECT_PASSWORD``) go
straight into the client factory and are never echoed, written or logged.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import typer

from mm2ctl.core.errors import ApprovalRequiredError, ConfigError, Mm2ctlError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.flows import parse_flow
from mm2ctl.core.properties import load_properties
from mm2ctl.plans.document import Plan, PlanKind
from mm2ctl.plans.live_state import LiveState, open_live_state
from mm2ctl.plans.planners import (
    Action,
    Method,
    PlanBuilder,
    Selection,
    parse_roles,
    plan_connectors,
    plan_reset_connector_offsets,
    plan_reset_mm2,
    plan_truncate_offset_syncs,
)
from mm2ctl.plans.serialize import dump_plan_json, load_plan, write_plan_file
from mm2ctl.remediate import engine

plan_app = typer.Typer(help="Make a reviewable plan (nothing is changed until `mm2ctl apply`).", no_args_is_help=True)

PASSWORD_ENV = "MM2CTL_CONNECT_PASSWORD"

_MM2 = typer.Option(..., "--mm2-config", help="The MM2 properties file (as `inspect` reads it).")
_URL = typer.Option(
    [], "--connect-url", help="Connect worker URL (repeatable; env MM2CTL_CONNECT_URL). Omit for dedicated-mode MM2."
)
_USER = typer.Option(None, "--connect-user", help="Basic-auth user for Connect.")
_PASSWORD = typer.Option(
    None,
    "--connect-password",
    envvar=PASSWORD_ENV,
    show_default=False,
    show_envvar=True,
    help="Basic-auth password for Connect (prefer the environment variable).",
)
_CA = typer.Option(None, "--connect-ca", help="CA bundle (PEM) to verify the Connect workers.")
_CERT = typer.Option(None, "--connect-cert", help="Client certificate (PEM) for mutual TLS.")
_KEY = typer.Option(None, "--connect-key", help="Client key (PEM) for mutual TLS.")
_OUT = typer.Option(..., "--out", "-o", help="Where to write the plan (YAML).")
_DETAILED = typer.Option(False, "--detailed-exitcode", help="Exit 14 when the plan has changes, 0 when none.")
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


@dataclass(frozen=True)
class ConnectOptions:
    urls: list[str]
    user: str | None
    password: str | None
    ca: str | None
    cert: str | None
    key: str | None

    def resolved_urls(self, fallback: tuple[str, ...] = ()) -> list[str]:
        from mm2ctl.connect_client.factory import connect_urls_from_env

        return list(self.urls) or connect_urls_from_env() or list(fallback)


def _live(mm2_config: str, c: ConnectOptions, fallback_urls: tuple[str, ...] = ()) -> LiveState:
    return open_live_state(
        mm2_config,
        connect_urls=c.resolved_urls(fallback_urls),
        username=c.user,
        password=c.password,
        ca_file=c.ca,
        cert_file=c.cert,
        key_file=c.key,
    )


def _progress() -> Callable[[str], None]:
    return lambda msg: typer.echo(f"mm2ctl: {msg}", err=True)


def render_plan(plan: Plan) -> str:
    """The human view of a plan: what it was made for, each step, what cannot be undone."""
    lines = [f"plan {plan.plan_id} ({plan.kind.value}{', pair ' + plan.pair if plan.pair else ''})"]
    if plan.description:
        lines.append(f"  {plan.description}")
    lines.append("  clusters: " + ", ".join(f"{a}={cid}" for a, cid in plan.clusters.items()))
    if plan.connect is not None:
        lines.append(
            f"  connect: {', '.join(plan.connect.urls)} (Kafka {plan.connect.version}, "
            f"cluster {plan.connect.kafka_cluster_id})"
        )
    if not plan.steps:
        lines.append("  no changes: nothing to apply")
    for s in plan.steps:
        flag = "" if s.reversible else "  [cannot be undone by rollback]"
        lines.append(f"  {s.index:>2}. {s.kind.value:<26} {s.description}{flag}")
    for note in plan.notes:
        lines.append(f"  note: {note}")
    return "\n".join(lines)


def _finish_plan(plan: Plan, out: Path, as_json: bool, detailed: bool) -> None:
    write_plan_file(plan, out)
    typer.echo(dump_plan_json(plan) if as_json else render_plan(plan) + f"\n  written to {out}")
    if detailed and any(s.writes for s in plan.steps):
        raise typer.Exit(int(ExitCode.CHANGES_PRESENT))


def _pair(pair: str | None) -> str | None:
    if pair is not None:
        parse_flow(pair)
    return pair


@plan_app.command("connectors")
def plan_connectors_cmd(
    action: Action = typer.Argument(..., help="stop | pause | resume | restart"),
    connector: list[str] = typer.Option([], "--connector", help="A connector by name (repeatable)."),
    pair: str | None = typer.Option(None, "--pair", help="The MM2 connectors of flow A->B."),
    role: str = typer.Option("source,checkpoint,heartbeat", "--role", help="With --pair: which MM2 connectors."),
    mm2_config: str = _MM2,
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
    out: Path = _OUT,
    as_json: bool = typer.Option(False, "--json"),
    detailed: bool = _DETAILED,
) -> None:
    """Stop, pause, resume or restart connectors; each step waits until the state is reached."""
    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(_live(mm2_config, c), PlanKind.CONNECTORS)
    plan = plan_connectors(b, action, connectors=connector, pair=_pair(pair), roles=parse_roles(role))
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
    connector: list[str] = typer.Option([], "--connector", help="A connector by name (repeatable)."),
    pair: str | None = typer.Option(None, "--pair", help="The MM2 connectors of flow A->B."),
    role: str = typer.Option("source", "--role", help="With --pair: which MM2 connectors."),
    topic: list[str] = typer.Option([], "--topic", help="Only this source topic (repeatable)."),
    partition: list[int] = typer.Option([], "--partition", help="Only this partition (repeatable)."),
    position: list[str] = typer.Option(
        [], "--position", help="TOPIC:PARTITION=OFFSET: replicate from this upstream offset next (REST method)."
    ),
    preset: str | None = typer.Option(None, "--preset", help="resume-at-target: positions where the target is."),
    method: Method = typer.Option(Method.AUTO, "--method", help="auto | rest | tombstone"),
    offsets_topic: str | None = _OFFSETS_TOPIC,
    offsets_cluster: str | None = _OFFSETS_CLUSTER,
    mm2_config: str = _MM2,
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
    out: Path = _OUT,
    as_json: bool = typer.Option(False, "--json"),
    detailed: bool = _DETAILED,
) -> None:
    """Reset (or set) connector source offsets by REST (Connect 3.6+) or byte-exact tombstones."""
    if preset not in (None, "resume-at-target"):
        raise ConfigError(f"--preset {preset!r}: the only preset is resume-at-target")
    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(_live(mm2_config, c), PlanKind.RESET_CONNECTOR_OFFSETS)
    plan = plan_reset_connector_offsets(
        b,
        connectors=connector,
        pair=_pair(pair),
        roles=parse_roles(role),
        selection=Selection(topics=tuple(topic), partitions=tuple(partition), positions=_positions(position)),
        method=method,
        offsets_topic=offsets_topic,
        offsets_cluster=offsets_cluster,
        resume_at_target=preset == "resume-at-target",
    )
    _finish_plan(plan, out, as_json, detailed)


@plan_app.command("truncate-offset-syncs")
def plan_truncate_cmd(
    pair: str = typer.Option(..., "--pair", help="The flow A->B."),
    mm2_config: str = _MM2,
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
    out: Path = _OUT,
    as_json: bool = typer.Option(False, "--json"),
    detailed: bool = _DETAILED,
) -> None:
    """Back up, then delete the records of the flow's offset-syncs topic (MirrorSourceConnector stopped)."""
    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(_live(mm2_config, c), PlanKind.TRUNCATE_OFFSET_SYNCS)
    _finish_plan(plan_truncate_offset_syncs(b, str(_pair(pair))), out, as_json, detailed)


@plan_app.command("reset-mm2")
def plan_reset_mm2_cmd(
    pair: str = typer.Option(..., "--pair", help="The flow A->B."),
    role: str = typer.Option("source,checkpoint,heartbeat", "--role", help="Which MM2 connectors to include."),
    offsets_topic: str | None = _OFFSETS_TOPIC,
    offsets_cluster: str | None = _OFFSETS_CLUSTER,
    mm2_config: str = _MM2,
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
    out: Path = _OUT,
    as_json: bool = typer.Option(False, "--json"),
    detailed: bool = _DETAILED,
) -> None:
    """Stop the flow's connectors, back up and truncate offset-syncs, reset connector offsets, resume."""
    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(_live(mm2_config, c), PlanKind.RESET_MM2)
    plan = plan_reset_mm2(
        b, str(_pair(pair)), roles=parse_roles(role), offsets_topic=offsets_topic, offsets_cluster=offsets_cluster
    )
    _finish_plan(plan, out, as_json, detailed)


@plan_app.command("failover")
def plan_failover_cmd(
    pair: str = typer.Option(..., "--pair", help="The flow A->B to fail over from A to B."),
    groups: str = typer.Option(".*", "--groups", help="Regex of consumer groups (full match)."),
    topics: str = typer.Option(".*", "--topics", help="Regex of source topics (full match)."),
    source: str = typer.Option(
        "syncs", "--from", help="syncs (DESIGN §5, verified when the source is readable) | checkpoints (MM2's own)."
    ),
    source_unavailable: bool = typer.Option(
        False,
        "--source-unavailable",
        help="The source cluster is down: positions from checkpoints, conservative rule only.",
    ),
    stop_mirroring: bool = typer.Option(
        False, "--stop-mirroring", help="Wait for MM2 to catch up, then stop the pair's connectors before writing."
    ),
    allow_rewind: bool = typer.Option(False, "--allow-rewind", help="Allow moving a target offset backwards."),
    catch_up_timeout: float = typer.Option(300.0, "--catch-up-timeout", help="Seconds to wait for catch-up."),
    export_csv: Path | None = typer.Option(
        None,
        "--export-csv",
        help="Also write group,topic,partition,offset (kafka-consumer-groups --reset-offsets --from-file).",
    ),
    mm2_config: str = _MM2,
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
    out: Path = _OUT,
    as_json: bool = typer.Option(False, "--json"),
    detailed: bool = _DETAILED,
) -> None:
    """Write each group's translated (and, source readable, verified) position to the target, then verify."""
    from mm2ctl.cli.failover_cmd import run_plan_failover

    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    b = PlanBuilder(_live(mm2_config, c), PlanKind.FAILOVER)
    changes = run_plan_failover(
        b,
        pair=pair,
        groups=groups,
        topics=topics,
        source=source,
        source_unavailable=source_unavailable,
        stop_mirroring=stop_mirroring,
        allow_rewind=allow_rewind,
        catch_up_timeout=catch_up_timeout,
        export=export_csv,
        out=out,
        as_json=as_json,
    )
    if detailed and changes:
        raise typer.Exit(int(ExitCode.CHANGES_PRESENT))


def show(
    plan_file: Path = typer.Argument(..., help="A plan file."),
    as_json: bool = typer.Option(False, "--json", help="The plan as JSON."),
) -> None:
    """Render a plan for review."""
    plan = load_plan(plan_file)
    typer.echo(dump_plan_json(plan) if as_json else render_plan(plan))


def _confirm(question: str, auto_approve: bool) -> None:
    if auto_approve:
        return
    if not sys.stdin.isatty():
        raise ApprovalRequiredError(
            "this changes live clusters and there is no terminal to confirm on; "
            "review the plan, then pass --auto-approve"
        )
    if not typer.confirm(question, default=False):
        raise typer.Exit(int(ExitCode.DECLINED))


def _secrets(path: Path | None) -> dict[str, str]:
    return {} if path is None else load_properties(path).as_dict()


def apply(
    plan_file: Path | None = typer.Argument(None, help="The plan to apply (omit with --resume)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Every read and check, no write."),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Do not ask for confirmation."),
    journal: Path | None = typer.Option(None, "--journal", help="Where to write the journal."),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the apply recorded in this journal."),
    detailed: bool = typer.Option(
        False, "--detailed-exitcode", help="With --dry-run: exit 14 when the plan has changes, 0 when none."
    ),
    secrets_file: Path | None = typer.Option(
        None, "--secrets-file", help="Properties file with secret connector config values a re-create needs."
    ),
    mm2_config: str | None = typer.Option(None, "--mm2-config", help="Default: the file the plan was made from."),
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
) -> None:
    """Apply a plan: refuse stale or foreign plans, lock, journal every step, stop at the first failure."""
    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    progress = _progress()
    if resume is not None:
        from mm2ctl.remediate.journal import Journal

        with Journal.open(resume) as j:
            plan = j.state.plan
        live = _live(_mm2_of(plan, mm2_config), c, plan.connect.urls if plan.connect else ())
        _confirm(f"Resume applying plan {plan.plan_id}?", auto_approve)
        result = engine.resume_apply(resume, live, progress=progress, operator_secrets=_secrets(secrets_file))
        typer.echo(f"apply resumed and finished: {len(result.steps)} step(s); journal {result.journal}")
        return
    if plan_file is None:
        raise ConfigError("give a plan file, or --resume JOURNAL")
    plan = load_plan(plan_file)
    live = _live(_mm2_of(plan, mm2_config), c, plan.connect.urls if plan.connect else ())
    if dry_run:
        result = engine.dry_run(plan, live, progress=progress)
        typer.echo(render_plan(plan))
        typer.echo(
            f"dry run: every check passed; {result.changes} step(s) would change live state; nothing was written"
        )
        if detailed and result.changes:
            raise typer.Exit(int(ExitCode.CHANGES_PRESENT))
        return
    if not plan.steps:
        typer.echo("the plan has no steps: nothing to apply")
        return
    typer.echo(render_plan(plan), err=True)
    _confirm(f"Apply these {len(plan.steps)} step(s)?", auto_approve)
    result = engine.apply_plan(
        plan,
        live,
        journal_path=journal,
        plan_path=str(plan_file.resolve()),
        progress=progress,
        operator_secrets=_secrets(secrets_file),
    )
    typer.echo(
        f"apply succeeded: {len(result.steps)} step(s); journal {result.journal} "
        f"(undo with: mm2ctl rollback {result.journal})"
    )


def _mm2_of(plan: Plan, override: str | None) -> str:
    path = override or plan.mm2_config
    if not path:
        raise ConfigError("the plan does not name its MM2 properties file; pass --mm2-config")
    if not os.path.exists(path):
        raise ConfigError(f"the MM2 properties file {path} is gone; pass --mm2-config")
    return path


def rollback(
    journal: Path = typer.Argument(..., help="The journal of the apply to undo."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check every guard, undo nothing."),
    auto_approve: bool = typer.Option(False, "--auto-approve", help="Do not ask for confirmation."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    secrets_file: Path | None = typer.Option(None, "--secrets-file"),
    mm2_config: str | None = typer.Option(None, "--mm2-config", help="Default: the file the plan was made from."),
    connect_url: list[str] = _URL,
    connect_user: str | None = _USER,
    connect_password: str | None = _PASSWORD,
    connect_ca: str | None = _CA,
    connect_cert: str | None = _CERT,
    connect_key: str | None = _KEY,
) -> None:
    """Undo the completed steps of an apply, newest first, each behind a check that nothing moved since."""
    from mm2ctl.remediate.journal import Journal

    c = ConnectOptions(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    with Journal.open(journal) as j:
        plan = j.state.plan
    live = _live(_mm2_of(plan, mm2_config), c, plan.connect.urls if plan.connect else ())
    if not dry_run:
        _confirm(f"Roll back the apply recorded in {journal}?", auto_approve)
    try:
        result = engine.rollback(
            journal, live, dry_run_only=dry_run, progress=_progress(), operator_secrets=_secrets(secrets_file)
        )
    except Mm2ctlError:
        raise
    if as_json:
        typer.echo(json.dumps({"journal": str(journal), "dry_run": dry_run, "steps": result.steps}, indent=2))
    else:
        for line in result.steps:
            typer.echo(line)
        typer.echo("rollback dry run: nothing was changed" if dry_run else "rollback finished")
