"""The ``mm2ctl`` command line: the root app, which gathers one module per command group, and its one error
handler.

``main`` maps every ``Mm2ctlError`` to a one-line message on stderr and its documented exit code
(``core/exit_codes.py``); anything else is a bug and exits 1 with the exception's one-line summary
(``MM2CTL_DEBUG=1`` shows the traceback). Under ``--json`` an error prints nothing on stdout, so a script
reads either one JSON result or an exit code and a message.

The program is named ``mm2ctl`` however it was started (the console script, or ``python -m mm2ctl``), so
usage lines read ``mm2ctl …`` and shell completion answers to ``_MM2CTL_COMPLETE``:
``mm2ctl --install-completion`` installs it for the current shell.

When the failed command had started a JVM, or librdkafka logged, a second line names the log file that holds
that output (``cli/run_log.py``; ``-v`` sends it to the terminal instead).
"""

from __future__ import annotations

import logging
import os
import sys

import typer

from mm2ctl.cli import run_log
from mm2ctl.cli.apply_cmd import apply, rollback, show
from mm2ctl.cli.config_cmd import config_app
from mm2ctl.cli.drill_cmd import demo, drill
from mm2ctl.cli.exporter_cmd import exporter
from mm2ctl.cli.inspect_cmd import inspect
from mm2ctl.cli.lab_cmd import lab_app
from mm2ctl.cli.options import JsonOutput
from mm2ctl.cli.plan_cmd import plan_app
from mm2ctl.cli.render import result_json
from mm2ctl.cli.report_cmd import report
from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.exit_codes import INTERRUPTED, ExitCode
from mm2ctl.core.security.redaction import redact_text

#: The program's name in usage lines and for shell completion, however it was started.
PROG_NAME = "mm2ctl"

app = typer.Typer(
    name=PROG_NAME,
    help=(
        "Inspect, plan and repair MirrorMaker 2 offsets.\n\n"
        "inspect classifies every consumer-group partition as synced or not, and says why; "
        "plan/apply/rollback reset MM2 and write translated offsets with a crash-safe journal; "
        "lab runs a real Kafka + Connect + MM2 setup on this machine."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(lab_app, name="lab")
app.command("inspect")(inspect)
app.command("exporter")(exporter)
app.command("report")(report)
app.add_typer(plan_app, name="plan")
app.add_typer(config_app, name="config")
app.command("show")(show)
app.command("apply")(apply)
app.command("rollback")(rollback)
app.command("drill")(drill)
app.command("demo")(demo)


@app.callback()
def _root(
    ctx: typer.Context,
    verbose: bool = typer.Option(
        False,
        "--verbose",
        "-v",
        help="Log progress and retries to stderr, and let Spark's JVM and librdkafka print there too.",
    ),
) -> None:
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    run_log.start(verbose=verbose, command=ctx.invoked_subcommand)


@app.command()
def version(as_json: JsonOutput = False) -> None:
    """Print mm2ctl's version."""
    from mm2ctl import __version__

    if as_json:
        python = ".".join(str(n) for n in sys.version_info[:3])
        typer.echo(result_json({"command": "version", "version": __version__, "python": python}))
    else:
        typer.echo(__version__)


def main(argv: list[str] | None = None) -> None:
    """Console-script entry point: run the app and turn our errors into one line and an exit code.

    Click handles usage errors itself (exit 2, with the usage line) and exits through ``SystemExit``.
    """
    try:
        app(args=argv, prog_name=PROG_NAME)
    except Mm2ctlError as exc:
        typer.echo(f"mm2ctl: error: {exc}", err=True)
        _name_the_jvm_log()
        sys.exit(int(exc.exit_code))
    except KeyboardInterrupt:
        typer.echo("mm2ctl: interrupted", err=True)
        _name_the_jvm_log()
        sys.exit(INTERRUPTED)
    except Exception as exc:
        if os.environ.get("MM2CTL_DEBUG"):
            _name_the_jvm_log()
            raise
        # An exception we did not expect may quote a URL or setting it was given: mask secrets in it.
        detail = redact_text(str(exc))
        typer.echo(f"mm2ctl: internal error: {type(exc).__name__}: {detail} (MM2CTL_DEBUG=1 shows where)", err=True)
        _name_the_jvm_log()
        sys.exit(int(ExitCode.ERROR))


def _name_the_jvm_log() -> None:
    line = run_log.failure_line()
    if line is not None:
        typer.echo(line, err=True)


if __name__ == "__main__":
    main()
