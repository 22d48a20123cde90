"""A Spark session started when first needed: an inspection on the driver engine starts none unless it must.

An inspection whose inputs are small runs every rule in-process over Arrow (``inspector.kept.driver_rows``) and
reads the internal topics through librdkafka, so it never needs Spark; one whose state turns out larger, or a
topic that must be read again from its whole history with Spark's rules, asks for the session then. The session
is started once, by whichever thread asks first; the others wait for it. A start that failed is not tried again
by the other threads of the same run (each would wait as long, to fail the same way): the caller lets the next
run try again (``forget_failure``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from pyspark.sql import SparkSession

#: What gives a Spark session when one is needed (started on first call if it is not yet).
SparkSource = Callable[[], SparkSession]


class LazySession:
    """A session that ``start`` makes on the first call to ``get`` (or the one given, already started);
    ``settings`` are applied to it as it starts, and ``set`` applies one now if it is up, else at its start."""

    def __init__(self, started: SparkSession | None, start: SparkSource | None = None) -> None:
        if started is None and start is None:
            raise ValueError("a lazy session needs a session or a way to start one")
        self._session = started
        self._start = start
        self._lock = threading.Lock()
        self._pending: dict[str, str] = {}
        self._failed: BaseException | None = None

    @property
    def started(self) -> SparkSession | None:
        """The session if it was started, else None (asking does not start it)."""
        return self._session

    def get(self) -> SparkSession:
        """The session, started now if it was not; the error of a start that failed since ``forget_failure``."""
        with self._lock:
            if self._session is None:
                if self._failed is not None:
                    raise self._failed
                assert self._start is not None
                try:
                    session = self._start()
                except BaseException as exc:
                    self._failed = exc
                    raise
                for key, value in self._pending.items():
                    session.conf.set(key, value)
                self._session = session
            return self._session

    def forget_failure(self) -> None:
        """Let the next ``get`` try to start the session again, after a start that failed."""
        with self._lock:
            self._failed = None

    def set(self, key: str, value: str) -> None:
        """A runtime setting for the session: applied now when it is up, else when it starts."""
        with self._lock:
            if self._session is None:
                self._pending[key] = value
                return
        self._session.conf.set(key, value)

    def replace(self, session: SparkSession) -> None:
        """Use ``session`` from now on (a Spark Connect server restarted)."""
        with self._lock:
            self._session = session
