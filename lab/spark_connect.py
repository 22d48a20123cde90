"""A Spark Connect server on loopback, from the installed pyspark, with Spark's Kafka source on its class path.

Spark Connect splits a Spark application in two: the server is a Spark driver that plans and runs the
queries, the client (``SparkSession.builder.remote("sc://HOST:PORT")``, ``pyspark[connect]``) only sends
plans over gRPC and receives Arrow batches. A query's data sources therefore load on the server: it needs
the Kafka source, the client nothing but pyspark. This is how Databricks, EMR and a shared Spark Connect
server are reached; the tests and benchmarks start a real one here.

The server is ``spark-submit --class org.apache.spark.sql.connect.service.SparkConnectServer``, with the
Kafka source as ``--packages`` from mm2ctl's Ivy home (``inspector.spark.packages``). pyspark 4.x wheels ship
the server's jar (``spark-connect_2.13``); for 3.5 it is a package too (``spark-connect_2.12``). Everything
lives in one folder: the server's log and the properties file it is given, whose path on its command line
marks the process as this server's. ``stop`` ends its process group and checks nothing of it is left.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.errors import LabError
from mm2ctl.core.polling import poll_until
from mm2ctl.inspector.spark.packages import SparkBuild, installed_build, submit_arguments
from mm2ctl.lab.process import free_port, is_alive, start_command, stop_pids, tail, wait_until

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
PORT_SETTING = "spark.connect.grpc.binding.port"
#: The server's listening address (Spark 4.0+; 3.5 listens on every interface at the port).
ADDRESS_SETTING = "spark.connect.grpc.binding.address"


@dataclass(frozen=True, slots=True)
class SparkConnectServer:
    folder: Path
    #: ``sc://127.0.0.1:PORT``: what ``SparkSession.builder.remote`` and ``SPARK_REMOTE`` take.
    url: str
    port: int
    #: spark-submit's pid, which leads the server's process group (the driver JVM is its ``exec``).
    pid: int

    @property
    def log(self) -> Path:
        return self.folder / "server.log"


def server_packages(build: SparkBuild) -> list[str]:
    """The packages the server needs besides the Kafka source: Spark Connect itself where pyspark's jars lack
    it (the 3.5 line)."""
    if list(build.jars.glob("spark-connect_*.jar")):
        return []
    return [f"org.apache.spark:spark-connect_{build.scala_version}:{build.spark_version}"]


def server_command(folder: Path, port: int, *, conf: Mapping[str, str] | None = None) -> list[str]:
    """``spark-submit`` of the Connect server: a ``local[*]`` driver on loopback, listening at ``port``."""
    build = installed_build()
    options = submit_arguments(build)
    extra = server_packages(build)
    if extra:
        at = options.index("--packages") + 1
        options[at] = ",".join([options[at], *extra])
    settings = {
        "spark.master": "local[*]",
        "spark.app.name": "mm2ctl-connect-server",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        PORT_SETTING: str(port),
        **({ADDRESS_SETTING: "127.0.0.1"} if build.spark_version.split(".")[0] != "3" else {}),
        **(conf or {}),
    }
    properties = folder / "conf" / "spark-connect.conf"
    properties.parent.mkdir(parents=True, exist_ok=True)
    properties.write_text("".join(f"{key} {value}\n" for key, value in settings.items()))
    return [
        str(build.home / "bin" / "spark-submit"),
        "--class", SERVER_CLASS,
        "--properties-file", str(properties),
        *options,
    ]  # fmt: skip


def _environment(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        {
            "SPARK_HOME": str(installed_build().home),
            "SPARK_CONF_DIR": str(folder / "conf"),  # no spark-defaults.conf of the machine's
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    return env


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on loopback at ``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def start(
    folder: Path, *, conf: Mapping[str, str] | None = None, port: int | None = None, timeout_s: float = 300.0
) -> SparkConnectServer:
    """Start a server in ``folder`` and wait until it accepts connections on its port (``port``, or a free one:
    a server started again at the same address is a restart, as its clients see it).

    The first start resolves the packages (a download, once per Ivy home), hence the generous deadline. A
    server that exits while starting is a ``LabError`` with the end of its log.
    """
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log = folder / "server.log"
    pid = start_command(server_command(folder, port, conf=conf), log, env=_environment(folder))
    server = SparkConnectServer(folder=folder, url=f"sc://127.0.0.1:{port}", port=port, pid=pid)
    try:
        wait_until(
            lambda: listening(port),
            what=f"the Spark Connect server in {folder}",
            timeout_s=timeout_s,
            interval_s=0.5,
            alive=lambda: is_alive(pid),
            log_file=log,
        )
    except BaseException:
        stop(server)
        raise
    return server


def stop(server: SparkConnectServer, *, timeout_s: float = 30.0) -> None:
    """SIGTERM the server's process group (Spark's shutdown hook stops the gRPC service and the driver), then
    SIGKILL what is left at the deadline, and wait until its port is closed: the JVM's main thread may be
    gone while its other threads still serve. A server still there after that is a ``LabError``."""
    stop_pids([server.pid], str(server.folder), timeout_s=timeout_s)
    if not poll_until(lambda: not listening(server.port) and not is_alive(server.pid), timeout_s=30.0, interval_s=0.2):
        raise LabError(f"the Spark Connect server {server.pid} in {server.folder} survived:\n{tail(server.log)}")


__all__ = ["SERVER_CLASS", "SparkConnectServer", "listening", "server_command", "server_packages", "start", "stop"]
