"""``mm2ctl exporter``: the inspection on a timer in one warm Spark session, its metrics served over HTTP.

One thread runs the inspections, one at a time: each starts an interval after the previous one started (at
once when it took longer). A run that completes replaces the metrics ``/metrics`` serves; a run that fails
keeps the last good ones, counts ``mm2ctl_inspection_errors_total`` and logs one line. ``/healthz`` answers
200 while the inspection thread lives (liveness, not the inspection's outcome: the metrics say that).

``stop`` (the CLI calls it on SIGTERM or SIGINT) ends the loop: the thread stops at the next step of the run
(``Progress`` is how a run reports its steps, and raises here once stopping), and the Spark jobs in flight
are cancelled, so a stop takes seconds, not a whole inspection. Each run's rows are released when its metrics
are made; what the inspector keeps between runs is the decoded internal topics, sized to what they hold.
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app
from pyspark.sql import SparkSession

from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.redaction import redact_text
from mm2ctl.inspector.inspection import Inspector
from mm2ctl.inspector.output.health_metrics import inspection_metrics
from mm2ctl.inspector.output.prometheus import InspectionCollector, registry_of
from mm2ctl.inspector.spark.session import cancel_jobs

log = logging.getLogger("mm2ctl.exporter")

Environ = dict[str, Any]
StartResponse = Callable[..., Any]


class _Stopping(Exception):
    """Raised inside a run once the exporter is stopping: the run ends at its next step."""


@dataclass(frozen=True, slots=True)
class Listen:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Listen:
        """``HOST:PORT`` (``[::1]:9400`` for IPv6; port 0 picks a free one)."""
        host, sep, port = text.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port.isdigit() or int(port) > 65535:
            raise ConfigError(f"--listen expects HOST:PORT, got {text!r}")
        return cls(host, int(port))


def one_line(exc: BaseException) -> str:
    """An error as one log line: its first line (a JVM error's stack trace is not), secrets masked."""
    text = str(exc).strip().splitlines()
    return redact_text(f"{type(exc).__name__}: {text[0] if text else ''}")


class Exporter:
    """Runs ``inspector``'s inspection every ``interval_s`` and records each outcome in ``collector``. The
    inspector keeps the decoded internal topics between runs, so each run after the first reads only what
    MM2 wrote since."""

    def __init__(
        self,
        inspector: Inspector,
        *,
        interval_s: float,
        collector: InspectionCollector,
        reconnect: Callable[[], SparkSession] | None = None,
    ) -> None:
        self.inspector = inspector
        self.interval_s = interval_s
        self.collector = collector
        #: Makes a new session on a Spark Connect server (``--remote``), for when the server restarted.
        self.reconnect = reconnect
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _step(self, message: str) -> None:
        if self._stop.is_set():
            raise _Stopping
        log.info("%s", message)

    def run_once(self) -> bool:
        """One inspection; True when it completed and its metrics replaced the previous ones."""
        started = time.monotonic()
        try:
            result = self.inspector.run(progress=self._step)
            try:
                metrics = inspection_metrics(result, self.inspector.config)
            finally:
                result.close()
        except _Stopping:
            return False
        except Exception as exc:  # any failure keeps the last good metrics; the exporter goes on
            if self._stop.is_set():
                return False  # a job cancelled by stop(), or Spark's JVM stopping under a signal
            self.collector.failed()
            errors = self.collector.errors
            log.error("inspection failed (%d so far), keeping the last good metrics: %s", errors, one_line(exc))
            self._reconnect()
            return False
        duration = time.monotonic() - started
        self.collector.succeeded(metrics, duration_seconds=duration, finished_at=time.time())
        log.info("inspection took %.1fs", duration)
        return True

    def _reconnect(self) -> None:
        """After a failed run on a Spark Connect server: a new session, in case the server restarted (the next
        run reads everything again); the server still down, the next run fails and tries again."""
        if self.reconnect is None:
            return
        try:
            spark = self.reconnect()
        except Exception as exc:
            log.error("the Spark Connect server does not answer: %s", one_line(exc))
            return
        self.inspector.rebind(spark)
        log.warning("a new Spark Connect session; the next inspection reads MM2's topics in full")

    def loop(self) -> None:
        """Inspect until ``stop``: each run starts an interval after the previous one started."""
        next_start = time.monotonic()
        while not self._stop.is_set():
            self.run_once()
            next_start = max(next_start + self.interval_s, time.monotonic())
            self._stop.wait(max(0.0, next_start - time.monotonic()))

    def start(self) -> None:
        self._thread = threading.Thread(target=self.loop, name="mm2ctl-exporter", daemon=True)
        self._thread.start()

    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def stop(self, *, timeout_s: float) -> bool:
        """End the loop: cancel the Spark jobs in flight and wait up to ``timeout_s`` for the thread.
        True when it ended in time. Spark's JVM may be gone already (a signal to the whole process group)."""
        self._stop.set()
        spark = self.inspector.started_spark
        if spark is not None:
            cancel_jobs(spark)
        if self._thread is None:
            return True
        self._thread.join(timeout_s)
        return not self._thread.is_alive()


WsgiApp = Callable[[Environ, StartResponse], Iterable[bytes]]


def metrics_app(collector: InspectionCollector, alive: Callable[[], bool]) -> WsgiApp:
    """The WSGI app: ``/metrics`` (prometheus_client's exposition of ``collector``), ``/healthz``."""
    metrics = make_wsgi_app(registry_of(collector))

    def app(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return metrics(environ, start_response)  # type: ignore[no-any-return]
        if path == "/healthz":
            ok = alive()
            start_response("200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"ok\n" if ok else b"the inspection thread has stopped\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain")])
        return [b"mm2ctl exporter: /metrics, /healthz\n"]

    return app


class _MetricsServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _MetricsServer6(_MetricsServer):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes are not logged."""


class MetricsServer:
    """An HTTP server for ``metrics_app`` on its own threads."""

    def __init__(self, listen: Listen, app: WsgiApp) -> None:
        server_class = _MetricsServer6 if ":" in listen.host else _MetricsServer
        try:
            self._server = make_server(listen.host, listen.port, app, server_class, _QuietHandler)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {listen.host}:{listen.port}: {exc.strerror or exc}") from exc
        self._thread = threading.Thread(target=self._server.serve_forever, name="mm2ctl-metrics", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
