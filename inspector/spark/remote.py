"""The inspection on a Spark Connect server: ``--remote sc://HOST:PORT``, or ``SPARK_REMOTE`` as Spark defines it.

A Spark Connect client has no driver JVM of its own: the queries, the Kafka source and the kept frames are the
server's, so the server needs Spark's Kafka source on its class path (README, "Running on a Spark cluster").
What an embedded session does in its own JVM is then the server's, or not done: there is no class archive and
no JVM log of mm2ctl's, Spark's task progress is not counted, and a Parquet folder is written on the server's
filesystem. The driver-side reads (the admin state, MM2's position, ``--exact``'s records) stay in this
process, as in every mode.

The session settings an inspection runs with are set on the remote session where Spark allows a client to set
them (its runtime SQL settings); a ``--spark-conf`` of a server setting is refused with its name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from pyspark.sql import SparkSession

from mm2ctl.core.errors import ConfigError, InspectError

#: Spark's own variable naming the Connect server a client uses.
REMOTE_ENV = "SPARK_REMOTE"

#: The embedded session's settings a Connect client may set on its session (``inspector.spark.session``'s reasons).
RUNTIME_SETTINGS = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    "spark.sql.windowExec.buffer.in.memory.threshold": "1000000",
}
_V1_SOURCES = "spark.sql.sources.useV1SourceList"


def remote_url(option: str | None) -> str | None:
    """The Connect server to run on: ``--remote``, else ``SPARK_REMOTE``, else none (an embedded session)."""
    url = option or os.environ.get(REMOTE_ENV) or None
    if url is not None and not url.startswith("sc://"):
        what = "--remote" if option else REMOTE_ENV
        raise ConfigError(f"{what} expects a Spark Connect address, sc://HOST:PORT; got {url!r}")
    return url


def is_remote(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect client session (no driver JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def build_remote_session(url: str, conf: Mapping[str, str] | None = None) -> SparkSession:
    """A new session on the Connect server at ``url``, with the inspection's runtime settings and ``conf``
    (``--spark-conf``) over them. An unreachable server is an ``InspectError``; a setting the server keeps
    for itself a ``ConfigError``."""
    try:
        spark: SparkSession = SparkSession.builder.remote(url).create()
        listed = [s.strip() for s in str(spark.conf.get(_V1_SOURCES)).split(",")]
        defaults = {**RUNTIME_SETTINGS, _V1_SOURCES: ",".join(s for s in listed if s and s.lower() != "kafka")}
    except Exception as exc:  # grpc's errors, as PySpark raises them
        raise InspectError(f"cannot reach the Spark Connect server at {url}: {_first_line(exc)}") from exc
    _make_current(spark)
    for key, value in defaults.items():
        spark.conf.set(key, value)
    for key, value in (conf or {}).items():
        try:
            spark.conf.set(key, value)
        except Exception as exc:
            raise ConfigError(
                f"--spark-conf {key}: a Spark Connect client cannot set it ({_first_line(exc)}); set it on the server"
            ) from exc
    return spark


def _make_current(spark: SparkSession) -> None:
    """Make ``spark`` the client's default session, and this thread's active one. PySpark's Connect client
    binds some frames (a local checkpoint's) to its active or default session rather than to the session that
    made them, and it sets those only when none is set: a session made after a server restart would build
    plans on itself over frames the client bound to the old one."""
    cls = type(spark)
    lock, active = getattr(cls, "_lock", None), getattr(cls, "_active_session", None)
    if lock is None or active is None:  # a client that keeps no such state
        return
    with lock:
        cls._default_session = spark  # type: ignore[attr-defined]
    active.session = spark


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
