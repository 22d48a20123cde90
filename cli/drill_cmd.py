"""``mm2ctl drill`` and ``mm2ctl demo``: parse options, call ``drill.failover_drill`` / ``drill.demo``, render.

The demo drives the other commands as subprocesses (``python -m mm2ctl ...``) and shows each command
line before its output, so what it prints is exactly what an operator would type. With ``--json`` that
transcript goes to stderr and stdout holds one result: the commands run with their exit codes, the plan
and journal paths, the drill's result, ``exit_code`` and ``exit_meaning``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer

from mm2ctl.cli.options import (
    URL_ENV,
    FromConnect,
    JsonOutput,
    PolicyNaming,
    Quiet,
    Secrets,
    SetupOptions,
    mm2_config_option,
    pair_option,
)
from mm2ctl.cli.progress_bar import terminal_progress
from mm2ctl.cli.render import drill_table, result_json
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode, meaning_of
from mm2ctl.drill.context import DrillOptions
from mm2ctl.drill.result import DrillResult


def _say(quiet: bool) -> Callable[[str], None]:
    return (lambda _m: None) if quiet else (lambda m: typer.echo(f"drill: {m}", err=True))


def _finish(results: list[DrillResult], as_json: bool) -> None:
    if as_json:
        typer.echo(json.dumps([r.to_json() for r in results], indent=2))
    else:
        for r in results:
            typer.echo("\n".join(drill_table(r)))
    if not all(r.goals_met for r in results):
        typer.echo("mm2ctl: error: the drill missed a goal (see the goal column)", err=True)
        raise typer.Exit(int(ExitCode.DRILL_GOAL_MISSED))


def drill(
    lab_dir: Path = typer.Option(Path(".lab"), "--lab-dir", help="A running lab (default mode)."),
    replication_policy: list[str] = typer.Option(
        [], "--replication-policy", help="Lab mode: default | identity (repeatable; default: both)."
    ),
    mm2_config: Annotated[
        str | None,
        mm2_config_option(
            "Drill these clusters instead of the lab (with --pair and --connect-url): an MM2 properties file or a "
            "KafkaMirrorMaker2 resource."
        ),
    ] = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    pair: Annotated[str | None, pair_option("With --mm2-config: the flow to drill, SOURCE->TARGET.")] = None,
    connect_url: str | None = typer.Option(
        None,
        "--connect-url",
        envvar=URL_ENV,
        metavar="URL",
        help="With --mm2-config: the Connect worker running the flow (one URL, no authentication).",
    ),
    name_prefix: str = typer.Option(
        "mm2ctl-drill", "--name-prefix", help="With --mm2-config: topic/group name prefix the flow mirrors."
    ),
    stop_mirroring: bool = typer.Option(
        False,
        "--stop-mirroring",
        help="With --mm2-config: let (d) stop the pair's connectors (the lab's own drill flow always does).",
    ),
    partitions: int = typer.Option(3, "--partitions", min=1, help="Partitions of the drill's topic."),
    rate: float = typer.Option(150.0, "--rate", help="Transactional records per second while MM2 runs."),
    aborted_transactions: bool = typer.Option(
        False,
        "--aborted-transactions",
        help="Abort every other transaction of a partition, and commit the group just before an aborted one: "
        "(d), (e) and (f) must also read no record of an aborted transaction before their next record.",
    ),
    keep: bool = typer.Option(False, "--keep", help="Lab mode: keep the drill flow's connectors."),
    workdir: Path | None = typer.Option(None, "--workdir", help="Keep the plans and journals here."),
    group_types: bool = typer.Option(
        False,
        "--group-types",
        help="Lab mode, instead of the offset drill: per group type (classic, consumer, share, streams), one "
        "group failed over by MM2 alone and one by mm2ctl plan failover + apply, then the mm2ctl groups failed "
        "back; count by content what each loses and delivers again on real clients. Runs through a flow of its "
        "own with the lab's replication policy; needs a Kafka 4.2+ lab without security.",
    ),
    as_json: bool = typer.Option(
        False, "--json", help="The results as a JSON list, one object per drill (--group-types: one object)."
    ),
    quiet: Quiet = False,
) -> None:
    """Measure messages lost and duplicated at failover for (a) raw offsets, (b) MM2's sync.group.offsets,
    (c) mm2ctl conservative and (d) mm2ctl verified translation, on the same data; then (e) the way back
    (plan failback after (d)) and (f) a partition whose offset syncs were truncated (--fallback timestamp).

    Exit 17 when a goal is missed: (d), (e) and (f) lose and duplicate nothing, and read no record of an
    aborted transaction before their next record; (c) loses nothing and replays at most one sync interval per
    partition (the gap between the offset syncs MM2 wrote around the commit point).

    With --group-types, the drill per group type on the lab instead: MirrorMaker 2 syncs only classic and
    consumer groups, so left alone a share group starts at the target's log end (it loses what it had not
    acknowledged) and a Kafka Streams application starts at the earliest offset (it processes everything again).
    Exit 17 unless mm2ctl's failover and failback lose nothing for every type and deliver nothing again, but for
    a share group's records acknowledged past its start offset, exactly as many as the plan's note counts.
    """
    from mm2ctl.drill.failover_drill import drill_on_clusters, drill_on_lab

    if group_types:
        if mm2_config is not None or from_connect is not None:
            raise ConfigError("--group-types runs on the lab (--lab-dir), not on --mm2-config/--from-connect")
        _group_types_drill(lab_dir, workdir, as_json=as_json, quiet=quiet)
        return

    options = DrillOptions(partitions=partitions, rate=rate, aborted_transactions=aborted_transactions)
    results: list[DrillResult] = []
    setup = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming)
    if setup.given:
        connect_url = connect_url or from_connect
        if pair is None or connect_url is None:
            raise ConfigError("--mm2-config needs --pair A->B and --connect-url")
        with terminal_progress("drill", quiet=quiet) as say, _properties_file(setup) as path:
            results.append(
                drill_on_clusters(
                    path,
                    pair,
                    connect_url,
                    name_prefix=name_prefix,
                    stop_mirroring=stop_mirroring,
                    options=options,
                    workdir=workdir,
                    progress=say,
                )
            )
    else:
        from mm2ctl.lab.control import read_lab

        info = read_lab(lab_dir)
        with terminal_progress("drill", quiet=quiet) as say:
            for policy in replication_policy or ["default", "identity"]:
                if policy not in ("default", "identity"):
                    raise ConfigError(f"--replication-policy {policy!r}: choose default or identity")
                wd = None if workdir is None else workdir / policy
                results.append(
                    drill_on_lab(info, replication_policy=policy, options=options, keep=keep, workdir=wd, progress=say)
                )
    _finish(results, as_json)


def _group_types_drill(lab_dir: Path, workdir: Path | None, *, as_json: bool, quiet: bool) -> None:
    """``drill --group-types``: run ``drill.group_types`` on the lab, print its table (or JSON), exit 17 when
    mm2ctl missed its goal. Without ``--workdir`` the plans and logs stay in a new temporary folder."""
    from mm2ctl.drill.group_result import table
    from mm2ctl.drill.group_types import drill_group_types
    from mm2ctl.lab.control import read_lab

    info = read_lab(lab_dir)
    wd = workdir if workdir is not None else Path(tempfile.mkdtemp(prefix="mm2ctl-drill-group-types-"))
    with terminal_progress("drill", quiet=quiet) as say:
        say(f"plans, journals and logs in {wd}")
        result = drill_group_types(info, wd, progress=say)
    typer.echo(json.dumps(result.to_json(), indent=2) if as_json else "\n".join(table(result)))
    if not result.goals_met:
        typer.echo("mm2ctl: error: the group-types drill missed a goal (see the note column)", err=True)
        raise typer.Exit(int(ExitCode.DRILL_GOAL_MISSED))


@contextlib.contextmanager
def _properties_file(setup: SetupOptions) -> Iterator[str]:
    """The drill reads (and edits a copy of) an MM2 properties file: a properties file as given, any other
    setup resolved into a private one that lives as long as the drill."""
    from mm2ctl.core.config.sources import is_resource, write_properties_file

    config = setup.resolve()  # errors in any setup show here, before the drill starts
    if setup.mm2_config is not None and setup.policy_naming is None and not is_resource(setup.mm2_config):
        yield setup.mm2_config
        return
    with tempfile.TemporaryDirectory(prefix="mm2ctl-drill-setup-") as folder:
        yield str(write_properties_file(config, Path(folder) / "mm2.properties"))


class _StepFailed(Exception):
    """A command of the demo ended with an exit code the demo did not expect."""

    def __init__(self, code: int) -> None:
        super().__init__(f"exit {code}")
        self.code = code


@dataclass
class _Transcript:
    """What the demo runs, shown as it goes (on stderr when stdout is for ``--json``) and kept for the result."""

    to_stderr: bool
    steps: list[dict[str, Any]] = field(default_factory=list)

    def say(self, text: str) -> None:
        typer.echo(text, err=self.to_stderr)

    def record(self, command: str, code: int) -> None:
        self.steps.append({"command": command, "exit_code": code, "exit_meaning": meaning_of(code)})

    def run(self, args: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> None:
        """Run ``mm2ctl ARGS`` as an operator would, show its output, and stop the demo on an unexpected code."""
        command = f"mm2ctl {' '.join(args)}"
        self.say(f"\n$ {command}")
        proc = subprocess.run(
            [sys.executable, "-m", "mm2ctl", *args],
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=600,
        )
        self.say(proc.stdout.rstrip())
        self.record(command, proc.returncode)
        if proc.returncode not in ok:
            self.say(f"(exit {proc.returncode})")
            raise _StepFailed(proc.returncode)
        if proc.returncode:
            self.say(f"(exit {proc.returncode}, as expected)")


def demo(
    lab_dir: Path | None = typer.Option(None, "--lab-dir", help="Use this running lab (default: start one)."),
    keep: bool = typer.Option(False, "--keep", help="Leave the lab (and the demo flow) running."),
    no_drill: bool = typer.Option(False, "--no-drill", help="Skip the final drill."),
    as_json: JsonOutput = False,
) -> None:
    """Lab up, traffic and broken groups, inspect, plan failover, show, apply (dry run, then for real), drill.

    Exit 17 when the drill misses its goal, or the exit code of the first command that failed.
    """
    from mm2ctl.drill.demo import build_scenario, remove_flow
    from mm2ctl.drill.failover_drill import drill_on_lab
    from mm2ctl.lab import control as lab_core

    say = _say(False)
    out = _Transcript(to_stderr=as_json)
    started = lab_dir is None
    base = Path(tempfile.mkdtemp(prefix="mm2ctl-demo-"))
    if lab_dir is None:
        lab_dir = base / "lab"
        out.say(f"$ mm2ctl lab up --dir {lab_dir}")
        info = lab_core.up(lab_dir, progress=lambda m: typer.echo(f"lab: {m}", err=True))
        out.record(f"mm2ctl lab up --dir {lab_dir}", 0)
    else:
        info = lab_core.read_lab(lab_dir)
    env = {**os.environ, "MM2CTL_STATE_DIR": str(base / "state")}
    env.pop(URL_ENV, None)
    scenario = None
    plan = base / "failover.yaml"
    journal = base / "failover.journal.jsonl"
    drilled: DrillResult | None = None
    code = int(ExitCode.OK)
    try:
        scenario = build_scenario(info, progress=lambda m: typer.echo(f"demo: {m}", err=True))
        cfg, pair = scenario.flow.mm2_config, scenario.pair
        out.say("groups: " + ", ".join(f"{k}={g}" for k, g in scenario.groups.items()))
        out.run(["inspect", "--mm2-config", cfg, "--pair", pair, "--quiet"], env, ok=(0, 10))
        out.run(
            [
                "plan",
                "failover",
                "--mm2-config",
                cfg,
                "--pair",
                pair,
                "--stop-mirroring",
                "--allow-rewind",
                "--connect-url",
                info.connect_url,
                "--export-csv",
                str(base / "failover.csv"),
                "--out",
                str(plan),
            ],
            env,
        )
        out.run(["show", str(plan)], env)
        out.run(["apply", str(plan), "--dry-run"], env)
        out.run(["apply", str(plan), "--auto-approve", "--journal", str(journal)], env)
        if not no_drill:
            command = f"mm2ctl drill --lab-dir {lab_dir} --replication-policy {info.replication_policy}"
            out.say(f"\n$ {command}")
            drilled = drill_on_lab(info, replication_policy=info.replication_policy, keep=keep, progress=say)
            code = int(ExitCode.OK if drilled.goals_met else ExitCode.DRILL_GOAL_MISSED)
            out.record(command, code)
            if not as_json:
                typer.echo("\n".join(drill_table(drilled)))
    except _StepFailed as failed:
        code = failed.code
    finally:
        if not keep:
            if started:
                lab_core.down(lab_dir, remove_data=True)
                shutil.rmtree(base, ignore_errors=True)
            elif scenario is not None:
                remove_flow(info, scenario)
        else:
            out.say(f"kept: lab {lab_dir}, plans and journal in {base}")
    if as_json:
        fields = {
            "command": "demo",
            "lab_dir": str(lab_dir),
            "kept": keep,
            "groups": {} if scenario is None else dict(scenario.groups),
            "steps": out.steps,
            # Only paths still on disk: a demo that started its own lab removes its folder unless --keep.
            "workdir": str(base) if base.exists() else None,
            "plan": str(plan) if plan.exists() else None,
            "journal": str(journal) if journal.exists() else None,
            "drill": None if drilled is None else drilled.to_json(),
        }
        typer.echo(result_json(fields, code))
    if code == ExitCode.DRILL_GOAL_MISSED:
        typer.echo("mm2ctl: error: the drill missed a goal (see the goal column)", err=True)
    if code:
        raise typer.Exit(code)
