"""The Spark session the inspection runs in: embedded ``local[*]`` by default, or whatever spark-submit gave.

Under ``spark-submit`` (the driver's Python was started by Spark: ``PYSPARK_GATEWAY_PORT`` is set) the
session, master and jars are Spark's, passed with ``--master`` and ``--packages``; nothing here overrides
them, and the JVM's output is spark-submit's. Embedded, the session asks Spark for its Kafka source as a
package, resolved by Spark's Ivy into mm2ctl's cache (``inspector.spark.packages``), and the JVM it starts
writes to a log file when given one (``inspector.spark.jvm_log``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkRuntimeError
from pyspark.sql import SparkSession

from mm2ctl.core.errors import InspectError
from mm2ctl.core.progress import Progress
from mm2ctl.inspector.spark import class_archive as archives
from mm2ctl.inspector.spark import packages
from mm2ctl.inspector.spark.class_archive import ClassArchive, chooses_sharing
from mm2ctl.inspector.spark.compat import error_condition
from mm2ctl.inspector.spark.jvm_log import log4j_java_option
from mm2ctl.inspector.spark.remote import build_remote_session, is_remote

DEFAULT_MASTER = "local[*]"
APP_NAME = "mm2ctl-inspect"

_EMBEDDED_DEFAULTS = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    # At most four tasks per core: the sorts' tasks then even out across the cores (the default 200 would be
    # overhead). Each run sizes it to its rows (``InspectOptions.size_shuffles``).
    "spark.sql.shuffle.partitions": str(4 * (os.cpu_count() or 2)),
    # Adaptive execution plans each stage as a job of its own after the one before it ran: on an inspection's
    # small frames that is more planning and more jobs than work, and its coalescing merges equal tasks into
    # fewer tasks than there are cores, leaving a core idle for a whole task's time.
    "spark.sql.adaptive.enabled": "false",
    # Joins on (pair, group, topic, partition) reuse a clustering by (pair, group) instead of reshuffling.
    "spark.sql.requireAllClusterKeysForCoPartition": "false",
    # A window buffers one source partition's syncs (10,000+ rows in an un-compacted topic) in memory.
    "spark.sql.windowExec.buffer.in.memory.threshold": "1000000",
    "spark.driver.memory": "4g",
    # Spark keeps each finished job, stage, task and SQL query in its status store, the UI off or not: a
    # thousand of each by default, which a live session (the exporter, ``--watch``) reaches after about a
    # hundred runs, its heap growing until then. A run is about a dozen of each; these keep several runs.
    "spark.ui.retainedJobs": "100",
    "spark.ui.retainedStages": "100",
    "spark.ui.retainedTasks": "2000",
    "spark.sql.ui.retainedExecutions": "50",
    "spark.ui.dagGraph.retainedRootRDDs": "100",
    # Broadcast joins build their tables on a pool that starts a new thread per broadcast until it holds this
    # many (Spark's default 128), each idle thread ending after a minute: a live session's JVM held 128 more
    # threads after a few runs. A run's dozen small broadcasts need few.
    "spark.sql.broadcastExchange.maxThreadThreshold": "16",
    # The classification runs on Spark's Python workers (``inspector.spark.arrow_rules``). A reused worker stays
    # resident between runs with pyarrow and the last partition's buffers, about 200 MiB each, for a live
    # session's whole life; a worker per task ends with its task, for the cost of starting one
    # (``bench/exporter_live.py`` compares the two).
    "spark.python.worker.reuse": "false",
}

#: PySpark's DataFrame call-site capture. On (PySpark's default), every DataFrame and Column call also asks the
#: JVM for the active session and a setting and sets and clears the call site there, so building the
#: inspection's plan takes many more py4j round trips. It only adds the Python line to the message
#: of a Spark SQL error raised while a query runs, and the transforms raise none (``try_add`` and the like). A
#: SparkContext setting, read by PySpark once per process: it is given to the builder, before any context.
_DATAFRAME_DEBUGGING = "spark.python.sql.dataFrameDebugging.enabled"


#: The embedded driver's JVM options: Java's throughput collector instead of its default G1. With ``local[*]``
#: the driver JVM is also the executor, and a batch job of short-lived rows wants throughput, not pause times:
#: on two cores G1's concurrent threads and write barriers compete with the task threads
#: (``bench/inspect_scale.py`` compares the two). A ``--spark-conf spark.driver.extraJavaOptions=…`` replaces it (the
#: log4j2 option of ``inspector.spark.jvm_log`` is still added to the user's options, unless they choose a log4j2
#: configuration themselves).
_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_LOCAL_DRIVER_JAVA_OPTIONS = (_DRIVER_JAVA_OPTIONS, "-XX:+UseParallelGC")


#: Spark's SQL setting that names the sources read through their V1 (``BaseRelation``) path.
_V1_SOURCES = "spark.sql.sources.useV1SourceList"


def under_spark_submit() -> bool:
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _read_kafka_through_v2(spark: SparkSession, conf: Mapping[str, str] | None) -> None:
    """Take ``kafka`` off Spark's V1 source list, unless the user set that list themselves (``--spark-conf``,
    or ``spark-submit --conf``).

    Spark reads Kafka in batch through its V1 relation by default, which hands every record to the scan as an
    external ``Row`` and converts it back (a copy of its key and value each way); the V2 ``KafkaTable`` reads
    the same options into ``UnsafeRow`` directly. The offset-syncs read is then faster
    (``tests/integration/test_spark_read.py`` proves the V2 read against a compacted topic as before).
    """
    if _V1_SOURCES in (conf or {}) or spark.sparkContext.getConf().contains(_V1_SOURCES):
        return
    listed = [s.strip() for s in str(spark.conf.get(_V1_SOURCES)).split(",")]
    spark.conf.set(_V1_SOURCES, ",".join(s for s in listed if s and s.lower() != "kafka"))


def embedded_settings(master: str, conf: Mapping[str, str] | None, *, log_to_file: bool) -> dict[str, str]:
    """The settings an embedded session is built with: the defaults, then ``conf`` over them, then Spark's
    Kafka source added to the packages they ask for (unless they name one: ``inspector.spark.packages``), then (the
    JVM's output going to a file) the log4j2 option added to the driver's Java options, whichever they are."""
    settings = dict(_EMBEDDED_DEFAULTS)
    settings[_DATAFRAME_DEBUGGING] = "false"
    if master.startswith("local"):
        # Embedded: the driver and its executor threads talk over loopback only. Without this the driver
        # advertises the host's first address, which a sandbox may not route to itself.
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
        key, options = _LOCAL_DRIVER_JAVA_OPTIONS
        settings[key] = options
    settings.update(conf or {})
    settings = packages.with_kafka_source(settings)
    if log_to_file:
        settings[_DRIVER_JAVA_OPTIONS] = log4j_java_option(settings.get(_DRIVER_JAVA_OPTIONS))
    return settings


_log = logging.getLogger(__name__)


def _quiet_accumulator_server() -> None:
    """PySpark's accumulator server, which the Python workers' connections reach, prints a traceback on stderr
    when a connection ends mid-read, as when a signal to the process group stops the JVM before the session:
    it goes to the log instead (a library prints nothing on the terminal unless ``-v``).

    The server's class is ``AccumulatorServer`` up to pyspark 4.1.3; 4.1.4 splits it into a TCP and a Unix
    socket server. Whichever of them the installed pyspark has is quieted.
    """
    from pyspark import accumulators

    def handle_error(self: object, request: object, client_address: object) -> None:
        _log.debug("Spark's accumulator connection from %s ended", client_address, exc_info=True)

    for name in _ACCUMULATOR_SERVERS:
        server = getattr(accumulators, name, None)
        if isinstance(server, type):
            server.handle_error = handle_error  # type: ignore[attr-defined]


# The accumulator server's classes across the pyspark releases mm2ctl admits.
_ACCUMULATOR_SERVERS = ("AccumulatorServer", "AccumulatorTCPServer", "AccumulatorUnixServer")


def build_session(
    master: str | None = None,
    conf: Mapping[str, str] | None = None,
    *,
    jvm_log: Path | None = None,
    class_archive: ClassArchive | None = None,
) -> SparkSession:
    """A session with Spark's Kafka source on the classpath; ``conf`` (``--spark-conf``) wins over defaults.

    With ``inspector.spark.jvm_log``, an embedded driver JVM writes everything it prints to that file instead of this
    process's stdout and stderr. Without it, the JVM shares the terminal and Spark's log level is set to ERROR
    once the session exists. An embedded driver this call starts maps ``inspector.spark.class_archive`` (or writes it
    when it exits: ``inspector.spark.class_archive``), unless its Java options already choose how it shares classes. A
    JVM that dies while starting is an ``InspectError``.
    """
    builder = SparkSession.builder.appName(APP_NAME)
    if under_spark_submit():
        from pyspark import SparkConf

        submitted = SparkConf()  # what spark-submit was given (--conf, spark-defaults.conf)
        if not submitted.contains(_DATAFRAME_DEBUGGING):
            builder = builder.config(_DATAFRAME_DEBUGGING, "false")
        for key, value in (conf or {}).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        _read_kafka_through_v2(spark, conf)
        return spark
    master = master or DEFAULT_MASTER
    settings = embedded_settings(master, conf, log_to_file=jvm_log is not None)
    if class_archive is not None and not chooses_sharing(settings.get(_DRIVER_JAVA_OPTIONS)):
        settings[_DRIVER_JAVA_OPTIONS] = f"{settings.get(_DRIVER_JAVA_OPTIONS, '')} {class_archive.java_option()}"
    _quiet_accumulator_server()
    if master.startswith("local"):
        # The executor threads' Python workers run the Arrow rules (``inspector.spark.arrow_rules``): this
        # interpreter, which has pyarrow, rather than the ``python3`` first on the PATH. PySpark reads it once,
        # when the context starts.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        if not _driver_running():
            _start_driver(master, settings, jvm_log)
        builder = builder.master(master)
        for key, value in settings.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
    except PySparkRuntimeError as exc:
        if error_condition(exc) != "JAVA_GATEWAY_EXITED":
            raise
        raise InspectError("Spark's driver JVM exited while starting (its own output says why)") from exc
    except Py4JJavaError as exc:  # the JVM is up but refused to make the SparkContext (a setting, memory)
        cause = str(exc.java_exception).strip().splitlines()
        raise InspectError(f"Spark could not start: {cause[0] if cause else exc}") from exc
    if jvm_log is None:
        spark.sparkContext.setLogLevel("ERROR")
    _read_kafka_through_v2(spark, conf)
    return spark


#: The driver JVM's options (the embedded default is the throughput collector: ``_LOCAL_DRIVER_JAVA_OPTIONS``).
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
#: The driver JVM's heap: 4 GiB for a one-off ``inspect``; the exporter sizes it to what it keeps.
DRIVER_MEMORY = "spark.driver.memory"
#: The setting an inspection sizes for each run unless the user chose it (``InspectOptions.size_shuffles``).
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"


def submitted_shuffle_partitions(spark: SparkSession) -> bool:
    """Whether ``spark-submit`` (``--conf``, spark-defaults.conf) chose ``spark.sql.shuffle.partitions``."""
    return under_spark_submit() and bool(spark.sparkContext.getConf().contains(SHUFFLE_PARTITIONS))


def driver_gateway() -> Any:
    """The py4j gateway of this process's driver JVM, as soon as the JVM is up (before its SparkContext is), or
    None when the process has none: no session yet, or Spark Connect (no JVM in the Python process)."""
    from pyspark import SparkContext

    return SparkContext._gateway


def _driver_running() -> bool:
    """Whether this process already has a driver JVM (a session built before, stopped or not)."""
    from pyspark import SparkContext

    return SparkContext._gateway is not None


def _start_driver(master: str, settings: Mapping[str, str], jvm_log: Path | None) -> None:
    """Start the driver JVM and its SparkContext, the JVM's output going to ``inspector.spark.jvm_log`` when given,
    else to this process's stderr.

    PySpark starts the JVM (``bin/spark-submit``, then ``java``) with ``Popen``; given the log file as the
    child's stdout and stderr, the JVM writes there for its whole life: the launcher's own warnings,
    log4j's lines, and anything its Python workers print. This process's own descriptors are never touched,
    so the JVM can start on a thread while this process goes on writing to the terminal.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    spark_conf = SparkConf().setMaster(master).setAppName(APP_NAME).setAll(list(settings.items()))
    with packages.resolution_lock(settings):  # the JVM resolves the packages before it answers
        if jvm_log is None:
            # The JVM's stdout goes to this process's stderr (descriptor 2): stdout is the report's (a CSV or
            # JSON report printed there), and the JVM prints there too: Spark 3.5's Ivy its settings line, the
            # JVM its class-sharing warnings.
            gateway = launch_gateway(spark_conf, popen_kwargs={"stdout": 2})  # type: ignore[no-untyped-call]
        else:
            with jvm_log.open("ab") as out:  # the JVM gets its own copy of the descriptor
                popen = {"stdout": out, "stderr": subprocess.STDOUT}
                gateway = launch_gateway(spark_conf, popen_kwargs=popen)  # type: ignore[no-untyped-call]
    SparkContext(conf=spark_conf, gateway=gateway)


#: How often ``SessionStart.gateway`` looks whether the JVM's gateway is up.
_GATEWAY_POLL_S = 0.05


class SessionStart:
    """A session being built on a thread of its own, so the driver JVM starts (or the Spark Connect server
    answers: ``remote``) while the caller reads the clusters; ``result`` waits for it. With ``share_classes``,
    an embedded ``local`` driver this start launches maps the class archive (``inspector.spark.class_archive``), or
    writes it: then ``finish`` stops the JVM and keeps the archive it wrote."""

    def __init__(
        self,
        master: str | None,
        conf: Mapping[str, str] | None,
        *,
        jvm_log: Path | None,
        share_classes: bool,
        remote: str | None = None,
    ) -> None:
        self._done = threading.Event()
        self._session: SparkSession | None = None
        self._error: BaseException | None = None
        #: The archive this start's JVM writes at exit, once the thread has chosen it (``finish`` keeps it).
        self.archive: ClassArchive | None = None

        def build() -> None:
            try:
                if remote is not None:  # a Spark Connect server: no JVM here, nothing to archive
                    self._session = build_remote_session(remote, conf)
                    return
                # Chosen on the thread too: digesting the class path stays off the caller's path. An existing
                # driver is reused as it is: only a JVM this start launches maps or writes an archive.
                local = (master or DEFAULT_MASTER).startswith("local")
                launches = share_classes and local and not under_spark_submit() and not _driver_running()
                archive = None
                if launches:
                    settings = embedded_settings(master or DEFAULT_MASTER, conf, log_to_file=jvm_log is not None)
                    archive = archives.class_archive(packages.class_path_request(settings))
                self.archive = archive if archive is not None and archive.create else None
                self._session = build_session(master, conf, jvm_log=jvm_log, class_archive=archive)
            except BaseException as exc:  # handed to the thread that waits in result()
                self._error = exc
            finally:
                self._done.set()

        # A daemon: a failed admin read ends the process without waiting for the JVM.
        threading.Thread(target=build, name="mm2ctl-spark-start", daemon=True).start()

    def gateway(self) -> Any:
        """The py4j gateway of the driver JVM as soon as it is up, while the SparkContext still starts in it
        (``driver_gateway``); None when the start failed before (``result`` raises why) or gave no JVM."""
        while not self._done.wait(_GATEWAY_POLL_S):
            gateway = driver_gateway()
            if gateway is not None:
                return gateway
        return None if self._error is not None else driver_gateway()

    def result(self) -> SparkSession:
        self._done.wait()
        if self._error is not None:
            raise self._error
        assert self._session is not None
        return self._session

    def finish(self, progress: Progress | None = None) -> bool:
        """When this start makes the class archive: stop the session, wait while the JVM writes the archive,
        and keep it. Whether an archive was kept."""
        self._done.wait()
        if self.archive is None or self._session is None:
            return False
        if progress is not None:
            progress("saving Spark's classes to an archive for faster starts (once)")
        exited = stop_session(self._session, timeout_s=ARCHIVE_WRITE_TIMEOUT_S)
        return exited and self.archive.keep()


#: How long the JVM may take to write the class archive when it exits (generous: a busy machine is slower).
ARCHIVE_WRITE_TIMEOUT_S = 180.0


def cancel_jobs(spark: SparkSession) -> None:
    """Cancel the Spark jobs in flight, if Spark is still there to ask (a signal to the whole process group
    stops its JVM too, and then there is nothing left to cancel)."""
    try:
        if is_remote(spark):
            spark.interruptAll()
        else:
            spark.sparkContext.cancelAllJobs()
    except Exception:  # the JVM, its gateway or the server is gone: no job runs any more
        return


def stop_session(spark: SparkSession, *, timeout_s: float = 20.0) -> bool:
    """Stop the session and, when this process started its driver JVM, wait for that JVM to exit; whether it
    exited by itself (rather than killed after ``timeout_s``).

    ``spark.stop()`` ends the SparkContext but leaves the JVM alive until this process exits; a long-running
    command (``mm2ctl exporter``) stopping on a signal ends it here, so nothing outlives it. Under
    ``spark-submit`` the JVM is Spark's, and only the session is stopped; on a Spark Connect server, only this
    client's session.
    """
    if is_remote(spark):
        with contextlib.suppress(Exception):  # the server went away first
            spark.stop()
        return False
    gateway = spark.sparkContext._gateway
    proc = getattr(gateway, "proc", None)
    with contextlib.suppress(Exception):  # the JVM stopped first (a signal to the process group)
        spark.stop()
    if gateway is None or proc is None or under_spark_submit():
        return False
    gateway.shutdown()
    if proc.stdin is not None:
        proc.stdin.close()  # the JVM exits when its parent's pipe closes
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=timeout_s)
        return False
    return bool(proc.returncode == 0)
