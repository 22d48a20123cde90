"""The ``mm2ctl`` command line: parse options, call the core, render; nothing else.

One handler (``main``) maps every ``Mm2ctlError`` to a one-line message on stderr and its documented exit
code (core/exit_codes.py); anything else is a bug and exits 1 with the exception's one-line summary
(``MM2CTL_DEBUG=1`` shows the traceback). When the failed command had started a JVM, a second line names the
log file that holds the JVM's output (``cli/run_log.py``; ``-v`` sends that output to the terminal instead).
"""

from __future__ import annotations

import logging
import os
import sys

import typer

from mm2ctl.cli import run_log
from mm2ctl.cli.drill_cmd import demo, drill
from mm2ctl.cli.inspect_cmd import inspect
from mm2ctl.cli.lab_cmd import lab_app
from mm2ctl.cli.plan_cmd import apply, plan_app, rollback, show
from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.exit_codes import ExitCode

app = typer.Typer(
    name="mm2ctl",
    help=(
        "Inspect, plan and repair MirrorMaker 2 offsets.\n\n"
        "inspect classifies every consumer-group partition as synced or not, and says why; "
        "plan/apply/rollback reset MM2 and write translated offsets with a crash-safe journal; "
        "lab runs a real Kafka + Connect + MM2 setup on this machine."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(lab_app, name="lab")
app.command("inspect")(inspect)
app.add_typer(plan_app, name="plan")
app.command("show")(show)
app.command("apply")(apply)
app.command("rollback")(rollback)
app.command("drill")(drill)
app.command("demo")(demo)


@app.callback()
def _root(
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Log progress and retries to stderr, and let Spark's JVM print there too."
    ),
) -> None:
    run_log.start(verbose=verbose)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


@app.command()
def version() -> None:
    """Print mm2ctl's version."""
    from importlib.metadata import version as dist_version

    typer.echo(dist_version("mm2ctl"))


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and turn our errors into one line and an exit code.

    Click handles usage errors itself (exit 2, with the usage line) and exits through ``SystemExit``.
    """
    try:
        app(args=argv)
    except Mm2ctlError as exc:
        typer.echo(f"mm2ctl: error: {exc}", err=True)
        _name_the_jvm_log()
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        typer.echo("mm2ctl: interrupted", err=True)
        _name_the_jvm_log()
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("MM2CTL_DEBUG"):
            _name_the_jvm_log()
            raise
        typer.echo(f"mm2ctl: internal error: {type(exc).__name__}: {exc} (MM2CTL_DEBUG=1 shows where)", err=True)
        _name_the_jvm_log()
        sys.exit(int(ExitCode.ERROR))


def _name_the_jvm_log() -> None:
    line = run_log.failure_line()
    if line is not None:
        typer.echo(line, err=True)


if __name__ == "__main__":
    main()
