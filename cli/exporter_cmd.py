"""``mm2ctl exporter``: serve the inspection's metrics to Prometheus, inspecting every interval in one warm
Spark session (``inspector.exporter``)."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from mm2ctl.inspector.exporter import Listen
    from mm2ctl.inspector.inspection import Inspector
    from mm2ctl.inspector.opening import SparkPlace

from mm2ctl.cli.options import (
    ConnectCa,
    ConnectCert,
    ConnectKey,
    ConnectOptions,
    ConnectPassword,
    ConnectUrls,
    ConnectUser,
    Engine,
    FromConnect,
    Groups,
    InspectPairs,
    LagSecondsThreshold,
    LagThreshold,
    MM2Config,
    NoCache,
    PolicyNaming,
    Secrets,
    SetupOptions,
    SparkConf,
    SparkMaster,
    SparkRemote,
    Topics,
    parse_spark_conf,
)
from mm2ctl.inspector.selection import DEFAULT_LAG_SECONDS_THRESHOLD, DEFAULT_LAG_THRESHOLD

log = logging.getLogger("mm2ctl.exporter")


def exporter(
    mm2_config: MM2Config = None,
    from_connect: FromConnect = None,
    secrets: Secrets = None,
    policy_naming: PolicyNaming = None,
    listen: str = typer.Option(
        ..., "--listen", metavar="HOST:PORT", help="Where to serve /metrics and /healthz, e.g. 127.0.0.1:9464."
    ),
    interval: float = typer.Option(
        60.0, "--interval", min=1.0, metavar="SECONDS", help="Start an inspection this often (one at a time)."
    ),
    connect_url: ConnectUrls = None,
    connect_user: ConnectUser = None,
    connect_password: ConnectPassword = None,
    connect_ca: ConnectCa = None,
    connect_cert: ConnectCert = None,
    connect_key: ConnectKey = None,
    pair: InspectPairs = None,
    groups: Groups = None,
    topics: Topics = None,
    lag_threshold: LagThreshold = DEFAULT_LAG_THRESHOLD,
    lag_seconds_threshold: LagSecondsThreshold = DEFAULT_LAG_SECONDS_THRESHOLD,
    no_cache: NoCache = False,
    spark_master: SparkMaster = None,
    spark_conf: SparkConf = None,
    remote: SparkRemote = None,
    engine: Engine = None,
) -> None:
    """Serve MM2's replication health as Prometheus metrics, inspecting every --interval.

    Keeps one Spark session and runs the inspection one at a time. /metrics serves the last complete
    inspection (a failed one keeps it, counts mm2ctl_inspection_errors_total and logs one line); /healthz
    answers while the inspection loop runs. SIGTERM or Ctrl-C stops it within one interval, Spark's JVM
    included. On a Spark Connect server (--remote) it keeps one session, and makes a new one when the server
    restarted. The metrics and alert rules: README "Monitoring".
    """
    from mm2ctl.cli import run_log
    from mm2ctl.inspector.exporter import Listen
    from mm2ctl.inspector.inspection import InspectOptions
    from mm2ctl.inspector.opening import SparkPlace, open_inspection
    from mm2ctl.inspector.selection import Selection

    address = Listen.parse(listen)
    place = SparkPlace.of(spark_master, parse_spark_conf(spark_conf), remote, engine)
    connect = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    config = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).resolve(connect)
    options = InspectOptions(
        pairs=tuple(pair or ()),
        selection=Selection(groups=groups, topics=topics),
        lag_threshold=lag_threshold,
        lag_seconds_threshold=lag_seconds_threshold,
        state_cache=not no_cache,
    )
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with open_inspection(
            config,
            options,
            place,
            connect=connect.client((from_connect,) if from_connect else ()),
            live=True,
            jvm_log=run_log.jvm_log("exporter"),
        ) as inspector:
            _serve(inspector, place, address, interval, stopping)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    typer.echo("mm2ctl exporter: stopped", err=True)


def _serve(
    inspector: Inspector, place: SparkPlace, address: Listen, interval: float, stopping: threading.Event
) -> None:
    """Inspect every ``interval`` and serve the metrics until ``stopping`` is set or the loop dies."""
    from mm2ctl.inspector.exporter import Exporter, MetricsServer, metrics_app
    from mm2ctl.inspector.output.prometheus import InspectionCollector
    from mm2ctl.inspector.spark.remote import build_remote_session

    collector = InspectionCollector()
    reconnect = None
    if place.remote is not None:
        url = place.remote

        def reconnect() -> SparkSession:
            return build_remote_session(url, place.conf)

    runner = Exporter(inspector, interval_s=interval, collector=collector, reconnect=reconnect)
    server = MetricsServer(address, metrics_app(collector, runner.alive))
    runner.start()
    server.start()
    typer.echo(
        f"mm2ctl exporter: serving http://{address.host}:{server.port}/metrics, inspecting every {interval:g}s",
        err=True,
    )
    while not stopping.wait(1.0):
        if not runner.alive():
            break
    stopped_in_time = runner.stop(timeout_s=max(1.0, interval / 2))
    server.stop()
    if not stopped_in_time:
        log.warning("the inspection did not stop in time; stopping Spark under it")
