"""``mm2ctl lab``: run a real Kafka + Connect + MirrorMaker 2 setup on this machine, from Maven Central jars.

The lab's own modules (``mm2ctl.lab.control`` and the TLS it makes) are imported by the commands that use them,
not here: every ``mm2ctl`` process imports this module, and a plan or an apply never runs a lab."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from mm2ctl.cli.options import JsonOutput
from mm2ctl.cli.progress_bar import terminal_progress
from mm2ctl.cli.render import lab_status_json, lab_status_lines, lab_up_lines, result_json
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.lab.releases import DEFAULT_KAFKA_VERSION, RELEASES

lab_app = typer.Typer(
    help=(
        "A local MM2 lab: two single-node KRaft clusters ('primary', 'backup') and a distributed Connect "
        "worker running MirrorSource, MirrorCheckpoint and MirrorHeartbeat connectors for primary->backup."
    ),
    no_args_is_help=True,
)

_DIR = typer.Option(Path(".lab"), "--dir", help="Lab folder: lab.json, mm2.properties, data and logs.")


@lab_app.command("up")
def up(
    lab_dir: Path = _DIR,
    kafka_version: str = typer.Option(
        DEFAULT_KAFKA_VERSION,
        "--kafka-version",
        help=f"Kafka release to run: {', '.join(sorted(RELEASES, reverse=True))}.",
    ),
    replication_policy: str = typer.Option(
        "default", "--replication-policy", help="MM2 replication policy: default | identity."
    ),
    offset_syncs_location: str = typer.Option(
        "source", "--offset-syncs-location", help="Where MM2 keeps its offset-syncs topic: source | target."
    ),
    security: str = typer.Option(
        "none",
        "--security",
        help="none, or sasl-ssl: SASL_SSL with SCRAM-SHA-512 users, an OAUTHBEARER listener validating the lab's own "
        "OAuth tokens, TLS certificates made at boot, ACLs; MM2 runs as an admin principal, mm2.properties "
        "(and mm2-oauth.properties) connect as the least-privilege mm2ctl principal.",
    ),
    exactly_once: bool = typer.Option(
        False,
        "--exactly-once",
        help="Run the Connect worker with exactly-once source support (exactly.once.source.support=enabled): "
        "MM2 writes the target in transactions.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print lab.json instead of a summary."),
) -> None:
    """Resolve the jars, start both clusters and the Connect worker, create the MM2 connectors, wait."""
    from mm2ctl.lab import control as lab_core

    with terminal_progress("lab", quiet=as_json) as progress:
        info = lab_core.up(
            lab_dir,
            kafka_version=kafka_version,
            replication_policy=replication_policy,
            offset_syncs_location=offset_syncs_location,
            security_mode=security,
            exactly_once=exactly_once,
            progress=progress,
        )
    if as_json:
        typer.echo(info.to_json(), nl=False)
        return
    typer.echo("\n".join(lab_up_lines(info)))


@lab_app.command("status")
def status(lab_dir: Path = _DIR, as_json: bool = typer.Option(False, "--json", help="The status as JSON.")) -> None:
    """Show the clusters and the connector states. Exit 6 when anything is not healthy."""
    from mm2ctl.lab import control as lab_core

    st = lab_core.status(lab_dir)
    if as_json:
        typer.echo(json.dumps(lab_status_json(st), indent=2, sort_keys=True))
    else:
        typer.echo("\n".join(lab_status_lines(st)))
    if not st.healthy:
        raise typer.Exit(int(ExitCode.LAB))


@lab_app.command("jars")
def jars(
    kafka_version: list[str] = typer.Option(
        [], "--kafka-version", help="Release(s) to resolve; repeatable. Default: every lab release."
    ),
    spark: bool = typer.Option(
        True, "--spark/--no-spark", help="Also have Spark resolve its Kafka source for the installed pyspark."
    ),
) -> None:
    """Resolve the pinned jars into the cache now (CI and offline preparation): the lab's Kafka jars and the
    Java Kafka client of share and streams groups (compiled with it) with mvn, Spark's Kafka source with Spark's
    own package resolution."""
    from mm2ctl.core.kafka.group_admin import group_admin_classpath
    from mm2ctl.inspector.spark.packages import PACKAGES, installed_build, resolve_kafka_source, with_kafka_source
    from mm2ctl.lab.jars import kafka_jars

    for version in kafka_version or sorted(RELEASES, reverse=True):
        typer.echo(f"kafka {version}: {kafka_jars(version)}")
    typer.echo(f"share and streams groups' client: {group_admin_classpath()}")
    if spark:
        folder = resolve_kafka_source()  # the release that resolves: the installed one's, or a fallback
        typer.echo(f"spark kafka source {with_kafka_source({}, installed_build())[PACKAGES]}: {folder}")


@lab_app.command("down")
def down(
    lab_dir: Path = _DIR,
    remove: bool = typer.Option(False, "--rm", help="Also delete the lab folder (data and logs)."),
    as_json: JsonOutput = False,
) -> None:
    """Stop every process the lab started (SIGTERM, then SIGKILL at a deadline). Exit 6 when there is no lab."""
    from mm2ctl.lab import control as lab_core

    stopped = lab_core.down(lab_dir, remove_data=remove)
    if as_json:
        fields = {"command": "lab down", "dir": str(lab_dir.resolve()), "stopped_pids": stopped, "removed": remove}
        typer.echo(result_json(fields))
    else:
        typer.echo(f"lab down: stopped {len(stopped)} process(es)")
