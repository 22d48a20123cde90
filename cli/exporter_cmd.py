"""``mm2ctl exporter``: serve the inspection's metrics to Prometheus, inspecting every interval in one warm
Spark session (``inspector.exporter``)."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from mm2ctl.core.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from mm2ctl.cli.options import (
    ConnectCa,
    ConnectCert,
    ConnectKey,
    ConnectOptions,
    ConnectPassword,
    ConnectUrls,
    ConnectUser,
    FromConnect,
    MM2Config,
    PolicyNaming,
    Secrets,
    SetupOptions,
    SparkConf,
    SparkMaster,
    SparkRemote,
    pair_option,
    parse_spark_conf,
)

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
    pair: Annotated[
        list[str] | None,
        pair_option("A flow to inspect, SOURCE->TARGET; repeatable. Default: every enabled flow of the MM2 file."),
    ] = None,
    groups: str | None = typer.Option(None, "--groups", help="Only groups matching this regex."),
    topics: str | None = typer.Option(None, "--topics", help="Only topics matching this regex."),
    lag_threshold: int = typer.Option(
        10_000, "--lag-threshold", min=0, metavar="RECORDS", help="Above this many records waiting, 'lagging'."
    ),
    spark_master: SparkMaster = None,
    spark_conf: SparkConf = None,
    remote: SparkRemote = None,
) -> None:
    """Serve MM2's replication health as Prometheus metrics, inspecting every --interval.

    Keeps one Spark session and runs the inspection one at a time. /metrics serves the last complete
    inspection (a failed one keeps it, counts mm2ctl_inspection_errors_total and logs one line); /healthz
    answers while the inspection loop runs. SIGTERM or Ctrl-C stops it within one interval, Spark's JVM
    included. On a Spark Connect server (--remote) it keeps one session, and makes a new one when the server
    restarted. The metrics and alert rules: README "Monitoring".
    """
    from mm2ctl.cli import run_log
    from mm2ctl.inspector.cluster_state import read_cluster_state
    from mm2ctl.inspector.driver_sizing import driver_java_options_for, driver_memory_for
    from mm2ctl.inspector.exporter import Exporter, Listen, MetricsServer, metrics_app
    from mm2ctl.inspector.inspection import InspectOptions, Inspector, preflight
    from mm2ctl.inspector.prometheus_output import InspectionCollector
    from mm2ctl.inspector.remote_session import build_remote_session, remote_url
    from mm2ctl.inspector.selection import Selection
    from mm2ctl.inspector.session import (
        DRIVER_JAVA_OPTIONS,
        DRIVER_MEMORY,
        SHUFFLE_PARTITIONS,
        build_session,
        stop_session,
    )

    address = Listen.parse(listen)
    url = remote_url(remote)
    if url is not None and spark_master is not None:
        raise ConfigError("--remote and --spark-master both name where Spark runs: give one")
    connect = ConnectOptions.of(connect_url, connect_user, connect_password, connect_ca, connect_cert, connect_key)
    config = SetupOptions.of(mm2_config, from_connect, secrets, policy_naming).resolve(connect)
    conf = parse_spark_conf(spark_conf)
    options = InspectOptions(
        pairs=tuple(pair or ()),
        selection=Selection(groups=groups, topics=topics),
        lag_threshold=lag_threshold,
        size_shuffles=SHUFFLE_PARTITIONS not in conf,
    )
    checked = preflight(config, options)  # a bad --pair or a dead broker fails now, not at the first run
    connect_client = connect.client((from_connect,) if from_connect else ())
    if url is None and (DRIVER_MEMORY not in conf or DRIVER_JAVA_OPTIONS not in conf):
        # The JVM is sized to what the inspection keeps, from a first read of the clusters.
        state = read_cluster_state(config, checked.pairs, options.selection, connect=connect_client)
        conf.setdefault(DRIVER_MEMORY, driver_memory_for(state))
        conf.setdefault(DRIVER_JAVA_OPTIONS, driver_java_options_for(state))
        log.info("Spark driver memory %s, Java options %s", conf[DRIVER_MEMORY], conf[DRIVER_JAVA_OPTIONS])
    collector = InspectionCollector()
    stopping = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopping.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
    if url is None:
        spark = build_session(spark_master, conf, jvm_log=run_log.jvm_log("exporter"))
        reconnect = None
    else:
        spark = build_remote_session(url, conf)

        def reconnect() -> SparkSession:
            return build_remote_session(url, conf)

    inspector = Inspector(spark, config, options, checked, connect=connect_client)
    try:
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
    finally:
        stop_session(inspector.spark)
        for s, handler in previous.items():
            signal.signal(s, handler)
    typer.echo("mm2ctl exporter: stopped", err=True)
