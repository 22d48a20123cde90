"""``mm2ctl show``, ``apply`` and ``rollback``: load a plan or journal, call the engine, render the result.

The engine (``remediate.engine``) owns every check, the lock and the journal; this module asks for
confirmation, picks the MM2 file and the Connect workers, and reports.

With ``--json`` the result goes to stdout as one document (``render.result_json``: the steps done, the
journal, ``exit_code`` and ``exit_meaning``), and the plan review and progress stay on stderr. An error
prints nothing on stdout: its one-line message on stderr and the exit code are the whole answer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from mm2ctl.cli.options import (
    ConnectCa,
    ConnectCert,
    ConnectKey,
    ConnectOptions,
    ConnectPassword,
    ConnectUrls,
    ConnectUser,
    FromConnect,
    JsonOutput,
    MM2ConfigOverride,
    PolicyNaming,
    Secrets,
    SetupOptions,
)
from mm2ctl.cli.progress_bar import terminal_progress
from mm2ctl.cli.render import (
    apply_line,
    dry_run_lines,
    render_plan,
    result_json,
    rollback_lines,
    run_fields,
)
from mm2ctl.core.config.properties import load_properties
from mm2ctl.core.errors import ApprovalRequiredError, ConfigError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.plans.document import Plan
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.serialize import dump_plan_json, load_plan, load_plan_document
from mm2ctl.remediate import engine

_AUTO_APPROVE = typer.Option(False, "--auto-approve", help="Do not ask for confirmation (scripts, CI).")
_PARALLELISM = typer.Option(
    engine.DEFAULT_PARALLELISM,
    "--parallelism",
    min=1,
    max=engine.MAX_PARALLELISM,
    help="Consumer-group requests in flight at once when writing and reading back a failover's groups "
    f"(1-{engine.MAX_PARALLELISM}; 1 writes one group at a time).",
)
_SECRETS = typer.Option(
    None,
    "--secrets-file",
    help="Properties file with the secret connector config values a re-created connector needs "
    "(plans never hold secrets).",
)


def show(
    plan_file: Path = typer.Argument(..., help="A plan file written by `mm2ctl plan`."),
    as_json: bool = typer.Option(False, "--json", help="The plan document as JSON."),
) -> None:
    """Render a plan for review: what it was made for, each step, what rollback cannot undo."""
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
    if not typer.confirm(question, default=False, err=True):
        raise typer.Exit(int(ExitCode.DECLINED))


def _secrets(path: Path | None) -> dict[str, str]:
    return {} if path is None else load_properties(path).as_dict()


def _live(plan: Plan, setup: SetupOptions, c: ConnectOptions) -> LiveState:
    """Live state over the plan's MM2 setup (or the one the options give) and workers (``--connect-url`` wins)."""
    workers = plan.connect.urls if plan.connect else ()
    if setup.given:
        return setup.live_state(c, workers)
    if plan.mm2_source is not None:
        source = plan.mm2_source.config_source()
        for path in (source.mm2_config, source.secrets):
            if path is not None and not os.path.exists(path):
                raise ConfigError(f"{path}, which the plan was made from, is gone; pass --mm2-config or --from-connect")
        return c.live_state(setup.resolve(c, source), workers)
    path = plan.mm2_config
    if not path:
        raise ConfigError("the plan does not name its MM2 setup; pass --mm2-config or --from-connect")
    if not os.path.exists(path):
        raise ConfigError(f"the MM2 properties file {path} is gone; pass --mm2-config")
    return c.live_state(setup.resolve(c, SetupOptions.of(path, None, None, None).source()), workers)


def apply(
    plan_file: Path | None = typer.Argument(None, help="The plan to apply (omit with --resume)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Every read and check, no write, no journal, no lock."),
    auto_approve: bool = _AUTO_APPROVE,
    journal: Path | None = typer.Option(
        None, "--journal", help="Where to write the journal (default: under $MM2CTL_STATE_DIR)."
    ),
    resume: Path | None = typer.Option(None, "--resume", help="Continue the apply recorded in this journal."),
    detailed: bool = typer.Option(
        False, "--detailed-exitcode", help="With --dry-run: exit 14 when the plan has changes, 0 when none."
    ),
    secrets_file: Path | None = _SECRETS,
    allow_untranslatable: bool = typer.Option(
        False,
        "--allow-untranslatable",
        help="Apply a failover or failback plan that leaves group partitions untranslatable (their consumers "
        "resume at auto.offset.reset).",
    ),
    parallelism: int = _PARALLELISM,
    override_mm2_sync: bool = typer.Option(
        False,
        "--override-mm2-sync",
        help="Write a failover's planned offsets over those MirrorMaker 2's own group-offset sync moved since "
        "planning (MM2 only writes its cautious answer). Without it such a move refuses the apply, and no group "
        "is written.",
    ),
    mm2_config: MM2ConfigOverride = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    as_json: JsonOutput = False,
) -> None:
    """Apply a plan: refuse stale or foreign plans, lock, journal every step, stop at the first failure."""
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    progress = terminal_progress()
    if resume is not None:
        from mm2ctl.remediate.journal import Journal

        with Journal.open(resume) as j:
            plan = j.state.plan
        live = _live(plan, SetupOptions.of(mm2_config, from_connect, secrets, policy_naming), c)
        _confirm(f"Resume applying plan {plan.plan_id}?", auto_approve)
        with progress:
            result = engine.resume_apply(
                resume,
                live,
                progress=progress,
                operator_secrets=_secrets(secrets_file),
                parallelism=parallelism,
                override_mm2_sync=override_mm2_sync,
            )
        if as_json:
            typer.echo(result_json(run_fields("apply", result, plan, resumed=True)))
        else:
            typer.echo(apply_line(result, resumed=True))
        return
    if plan_file is None:
        raise ConfigError("give a plan file, or --resume JOURNAL")
    plan, document = load_plan_document(plan_file)
    plan.check_untranslatable(allowed=allow_untranslatable)
    live = _live(plan, SetupOptions.of(mm2_config, from_connect, secrets, policy_naming), c)
    if dry_run:
        with progress:
            result = engine.dry_run(
                plan, live, progress=progress, allow_untranslatable=allow_untranslatable, parallelism=parallelism
            )
        code = ExitCode.CHANGES_PRESENT if detailed and result.changes else ExitCode.OK
        if as_json:
            typer.echo(result_json(run_fields("apply", result, plan, plan_file=str(plan_file)), code))
        else:
            typer.echo("\n".join(dry_run_lines(plan, result)))
        if code:
            raise typer.Exit(int(code))
        return
    if not plan.steps:
        if as_json:
            nothing = engine.RunResult(journal=None, dry_run=False)
            typer.echo(result_json(run_fields("apply", nothing, plan, plan_file=str(plan_file))))
        else:
            typer.echo("the plan has no steps: nothing to apply")
        return
    typer.echo(render_plan(plan), err=True)
    _confirm(f"Apply these {len(plan.steps)} step(s)?", auto_approve)
    with progress:
        result = engine.apply_plan(
            plan,
            live,
            journal_path=journal,
            plan_path=str(plan_file.resolve()),
            progress=progress,
            operator_secrets=_secrets(secrets_file),
            allow_untranslatable=allow_untranslatable,
            parallelism=parallelism,
            plan_document=document,
            override_mm2_sync=override_mm2_sync,
        )
    if as_json:
        typer.echo(
            result_json(
                run_fields(
                    "apply",
                    result,
                    plan,
                    plan_file=str(plan_file),
                    rollback_command=f"mm2ctl rollback {result.journal}",
                )
            )
        )
    else:
        typer.echo(apply_line(result, resumed=False))


def rollback(
    journal: Path = typer.Argument(..., help="The journal of the apply to undo."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Check every guard, undo nothing."),
    auto_approve: bool = _AUTO_APPROVE,
    secrets_file: Path | None = _SECRETS,
    mm2_config: MM2ConfigOverride = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    as_json: JsonOutput = False,
) -> None:
    """Undo the completed steps of an apply, newest first, each behind a check that nothing moved since."""
    from mm2ctl.remediate.journal import Journal

    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    with Journal.open(journal) as j:
        plan = j.state.plan
    live = _live(plan, SetupOptions.of(mm2_config, from_connect, secrets, policy_naming), c)
    if not dry_run:
        _confirm(f"Roll back the apply recorded in {journal}?", auto_approve)
    with terminal_progress() as progress:
        result = engine.rollback(
            journal, live, dry_run_only=dry_run, progress=progress, operator_secrets=_secrets(secrets_file)
        )
    if as_json:
        typer.echo(result_json(run_fields("rollback", result, plan)))
    else:
        typer.echo("\n".join(rollback_lines(result)))
