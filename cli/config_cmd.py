"""``mm2ctl config show`` and ``config diff``: the resolved MM2 setup, and how a file differs from live MM2."""

from __future__ import annotations

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
    MM2Config,
    PolicyNaming,
    Secrets,
    SetupOptions,
)
from mm2ctl.cli.render import config_diff_lines, config_show_lines, result_json
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode

config_app = typer.Typer(
    help="The MM2 setup as mm2ctl resolves it, from a file, a KafkaMirrorMaker2 resource or live connectors.",
    no_args_is_help=True,
)


@config_app.command("show")
def show(
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    as_json: JsonOutput = False,
) -> None:
    """Print each flow, its topic names (offset syncs, checkpoints, heartbeats, the remote-topic rule) and
    settings, and where each value came from. Secrets are masked."""
    from mm2ctl.core.config.describe import describe_setup

    c = ConnectOptions.of(None, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    report = describe_setup(SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).resolve(c))
    if as_json:
        typer.echo(result_json({"command": "config show", **report.to_json()}))
    else:
        typer.echo("\n".join(config_show_lines(report)))


@config_app.command("diff")
def diff(
    mm2_config: MM2Config = None,
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
    """Report every difference between an MM2 file (properties or KafkaMirrorMaker2) and the MM2 connectors
    running on Connect: flows and aliases, policy and separator, offset-syncs location, filters, settings,
    and each cluster's address and security protocol (not credentials). Exit 18 when they differ."""
    from mm2ctl.core.config.describe import diff_setups

    if mm2_config is None:
        raise ConfigError("config diff compares a file with live connectors: give --mm2-config FILE")
    c = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    urls = c.resolved_urls()
    if not urls:
        raise ConfigError("config diff needs the Connect worker running the connectors: give --connect-url URL")
    file_setup = SetupOptions.of(mm2_config, None, secrets, policy_naming)
    live_setup = SetupOptions.of(None, urls[0], None, policy_naming)
    differences = diff_setups(file_setup.resolve(c), live_setup.resolve(c))
    code = ExitCode.CONFIG_DIFFERS if differences else ExitCode.OK
    left, right = file_setup.source().describe(), live_setup.source().describe()
    if as_json:
        fields = {"command": "config diff", "file": left, "live": right}
        typer.echo(result_json({**fields, "differences": [d.to_json() for d in differences]}, code))
    else:
        typer.echo("\n".join(config_diff_lines(differences, left, right)))
    if code:
        raise typer.Exit(int(code))
