"""A real Kafka Streams application for the lab: one JVM running ``StreamsApp.java``, a member of a *streams
group* (KIP-1071, ``group.protocol=streams``) whose group id is its ``application.id``.

``mode="passthrough"`` copies each input record's key and value to the output topic; ``mode="count"`` re-keys
each record by its value and counts them, so the application also has a repartition topic and a changelog
topic (both named ``<application.id>-…``). The jars (kafka-streams and the SLF4J binding of the lab's Kafka
release) resolve once into the shared cache; the source compiles once with ``javac`` into a folder under the
cache named by a hash of what went into it, written under a temporary name and renamed when complete.

    with start_streams_app(bootstrap, "app-1", "in", "out", log_path=folder / "app-1.log") as app:
        ...  # the group is up and RUNNING here
    # stopped: it left the group, and app.returncode is 0
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

from mm2ctl.core.errors import LabError
from mm2ctl.core.java.programs import JavaProgram, program_classpath
from mm2ctl.lab.process import java_executable, tail
from mm2ctl.lab.releases import release

#: The Kafka release whose kafka-streams the application runs (it needs 4.1+ for ``group.protocol=streams``).
KAFKA_STREAMS_VERSION = "4.3.1"
MODES = ("passthrough", "count")
_READY_LINE = "RUNNING"

#: Everything at INFO to stdout (the process's log file), the clients' config dumps and internals at WARN.
#: Log4j2's own shutdown hook is off, so the application's close on SIGTERM still logs.
_LOG4J2 = """status = warn
shutdownHook = disable
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
""" + "".join(
    f"logger.q{i}.name = {name}\nlogger.q{i}.level = WARN\n"
    for i, name in enumerate(
        (
            "org.apache.kafka.clients.consumer.ConsumerConfig",
            "org.apache.kafka.clients.producer.ProducerConfig",
            "org.apache.kafka.clients.admin.AdminClientConfig",
            "org.apache.kafka.streams.StreamsConfig",
            "org.apache.kafka.common.utils.AppInfoParser",
            "org.apache.kafka.common.metrics",
            "org.apache.kafka.common.config.AbstractConfig",
        )
    )
)


def streams_app() -> JavaProgram:
    """The application as a program: kafka-streams' runtime jars with the SLF4J binding of its release."""
    group, artifact, binding_version = release(KAFKA_STREAMS_VERSION).slf4j_binding.split(":")
    return JavaProgram(
        source="StreamsApp.java",
        main_class="mm2ctl.lab.StreamsApp",
        pom="streams-app.pom.xml",
        jars_name=f"kafka-streams-{KAFKA_STREAMS_VERSION}",
        properties={
            "kafka.version": KAFKA_STREAMS_VERSION,
            "slf4j.binding.groupId": group,
            "slf4j.binding.artifactId": artifact,
            "slf4j.binding.version": binding_version,
        },
        cache_name="streams-app",
        resources={"log4j2.properties": _LOG4J2},
    )


def compiled_app() -> tuple[Path, str]:
    """(the folder holding the compiled application and its log config, the classpath to run it with)."""
    return program_classpath(streams_app(), error=LabError)


class StreamsAppProcess:
    """A running ``StreamsApp`` JVM. ``stop`` (or leaving the ``with`` block) ends it: SIGTERM, upon which it
    closes Kafka Streams and leaves its group, then SIGKILL if it has not exited in time."""

    def __init__(self, popen: subprocess.Popen[bytes], application_id: str, log_path: Path, state_dir: Path) -> None:
        self._popen = popen
        self.application_id = application_id
        self.log_path = log_path
        self._state_dir = state_dir

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit code once it has exited (0: closed cleanly, having left the group), else ``None``."""
        return self._popen.poll()

    def stop(self, timeout_s: float = 30.0) -> int:
        """SIGTERM, wait up to ``timeout_s``, SIGKILL if still running; return the exit code (negative: the
        signal that ended it)."""
        try:
            if self._popen.poll() is None:
                self._popen.send_signal(signal.SIGTERM)
                try:
                    self._popen.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    self._popen.kill()
                    self._popen.wait(10)
            return self._popen.returncode
        finally:
            shutil.rmtree(self._state_dir, ignore_errors=True)

    def __enter__(self) -> StreamsAppProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _announced(log_path: Path, start: int) -> bool:
    """Whether the log, past byte ``start`` (what an earlier run left in it), holds the ``RUNNING`` line."""
    try:
        with log_path.open("rb") as f:
            f.seek(start)
            text = f.read().decode(errors="replace")
    except OSError:
        return False
    return any(line.strip() == _READY_LINE for line in text.splitlines())


def start_streams_app(
    bootstrap: str,
    application_id: str,
    input_topic: str,
    output_topic: str,
    *,
    mode: str = "passthrough",
    log_path: Path,
    ready_timeout_s: float = 60.0,
) -> StreamsAppProcess:
    """Start the application as ``application_id`` (its streams group) and return once it is RUNNING.

    Its output (the ``RUNNING`` line and its logs) goes to ``log_path``, nothing to the terminal; its state
    folder (count mode's store) lies beside the log until ``stop`` removes it. Raises
    ``LabError`` naming the log when it exits first or is not RUNNING within ``ready_timeout_s``.
    """
    if mode not in MODES:
        raise LabError(f"unknown Kafka Streams app mode {mode!r}; choose one of: {', '.join(MODES)}")
    folder, classpath = compiled_app()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    state_dir = Path(tempfile.mkdtemp(prefix=f"{log_path.stem}-state-", dir=log_path.parent))
    argv = [
        java_executable(),
        "-Xms64m",
        "-Xmx256m",
        "-Djava.net.preferIPv4Stack=true",
        f"-Dlog4j2.configurationFile={folder / 'log4j2.properties'}",
        "-cp",
        classpath,
        streams_app().main_class,
        bootstrap,
        application_id,
        input_topic,
        output_topic,
        mode,
        str(state_dir),
    ]
    with log_path.open("ab") as log:
        start = log.tell()
        popen = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    app = StreamsAppProcess(popen, application_id, log_path, state_dir)
    deadline = time.monotonic() + ready_timeout_s
    while not _announced(log_path, start):
        code = popen.poll()
        if code is not None:
            app.stop()
            raise LabError(
                f"the Kafka Streams app {application_id} exited with {code} before it was RUNNING "
                f"(log: {log_path}):\n{tail(log_path)}"
            )
        if time.monotonic() > deadline:
            app.stop()
            raise LabError(
                f"the Kafka Streams app {application_id} was not RUNNING after {ready_timeout_s:.0f}s (log: {log_path})"
            )
        time.sleep(0.1)
    return app
