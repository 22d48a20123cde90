"""Where this run's library output goes: the terminal with ``-v``, otherwise a log file named on failure.

A command that starts a JVM in this process (``inspect`` starts Spark's driver) asks ``inspector.spark.jvm_log`` for a
file; everything the JVM prints goes there (``mm2ctl.inspector.spark.jvm_log``). librdkafka's own log lines
(``mm2ctl.core.kafka.client_log``) go to the same file, which the first of them creates when no JVM did. When the
command then fails, ``main`` prints the file's path as one line on stderr. With ``-v`` (``--verbose``) there
is no file: the JVM's and librdkafka's lines reach the terminal, as Python's INFO log lines do.

The files live in ``<state dir>/logs/<command>-<UTC time>-<pid>.log``, the state dir being the journals'
(``$MM2CTL_STATE_DIR``, else ``$XDG_STATE_HOME/mm2ctl``, else ``~/.local/state/mm2ctl``). Each new log
deletes all but the newest ``KEEP_LOGS`` there, so they stay bounded. Where that folder cannot be written,
the log is a temporary file.

The lab's JVMs log to the lab folder, and ``mvn``'s output is captured, so neither needs this. One CLI
invocation is one process, so the choice is kept here, set by the root callback for the command that runs.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mm2ctl.core.kafka.client_log import LIBRDKAFKA_LOGGER
from mm2ctl.remediate.journal import default_state_dir

#: How many log files the logs folder keeps.
KEEP_LOGS = 20


@dataclass
class _Run:
    verbose: bool = False
    command: str = "mm2ctl"
    log: Path | None = None
    #: The JVM writes to ``log`` (else only library lines do).
    jvm: bool = False


_run = _Run()


def start(*, verbose: bool, command: str | None = None) -> None:
    """Begin a command: ``verbose`` is ``-v``; no log file yet. Without ``-v``, librdkafka's log lines go to
    the command's log file instead of stderr."""
    _run.verbose = verbose
    _run.command = command or "mm2ctl"
    _run.log = None
    _run.jvm = False
    library = logging.getLogger(LIBRDKAFKA_LOGGER)
    for handler in [h for h in library.handlers if isinstance(h, _LibraryLog)]:
        library.removeHandler(handler)
    library.propagate = verbose
    if not verbose:
        library.addHandler(_LibraryLog())
    _route_py4j(verbose)


def _from_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" in record.pathname


class _NotPy4j(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not _from_py4j(record)


class _Py4jOnly(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _from_py4j(record)


def _route_py4j(verbose: bool) -> None:
    """py4j (PySpark's bridge to its JVM) logs through the root logger: a command cut off by a JVM that was
    stopped under it (a signal to the whole process group) logs a traceback there. Without ``-v`` its lines go
    to the log file, like the JVM's own."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, _LibraryLog):
            root.removeHandler(handler)
        for f in [f for f in handler.filters if isinstance(f, _NotPy4j)]:
            handler.removeFilter(f)
    if verbose:
        return
    for handler in root.handlers:
        handler.addFilter(_NotPy4j())
    to_file = _LibraryLog()
    to_file.addFilter(_Py4jOnly())
    root.addHandler(to_file)


class _LibraryLog(logging.Handler):
    """Appends library log lines to the run's log file, made by the first line (``_new_log``)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            path = _run.log or _new_log(_run.command)
            with path.open("a", encoding="utf-8") as out:
                out.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


def verbose() -> bool:
    return _run.verbose


def log_dir() -> Path:
    return default_state_dir() / "logs"


def jvm_log(command: str) -> Path | None:
    """The log file for the JVM ``command`` is about to start, or None with ``-v`` (the terminal). Library
    lines logged before it may have made it already; the JVM appends to it."""
    if _run.verbose:
        return None
    _run.jvm = True
    return _run.log or _new_log(command)


def _new_log(command: str) -> Path:
    """A fresh log file for this run, in ``log_dir`` (a temporary file where that cannot be written)."""
    when = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    name = f"{command}-{when}-{os.getpid()}.log"
    folder = log_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        prune(folder, keep=KEEP_LOGS - 1)
        path = folder / name
        path.touch(mode=0o600)
    except OSError:
        fd, temp = tempfile.mkstemp(prefix=f"mm2ctl-{command}-", suffix=".log")
        os.close(fd)
        path = Path(temp)
    _run.log = path
    return path


def prune(folder: Path, *, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` ``*.log`` files of ``folder``; returns those deleted."""
    logs = []
    for path in folder.glob("*.log"):
        with contextlib.suppress(OSError):  # another run may prune the same folder
            logs.append((path.stat().st_mtime, path))
    logs.sort(reverse=True)
    deleted = []
    for _mtime, path in logs[max(keep, 0) :]:
        with contextlib.suppress(OSError):
            path.unlink()
            deleted.append(path)
    return deleted


def failure_line() -> str | None:
    """The line that names the run's log when the command failed, if this run wrote something there."""
    if _run.log is None:
        return None
    if _run.jvm:
        with contextlib.suppress(OSError):
            if _run.log.stat().st_size == 0:
                return None  # no JVM started (the run failed before Spark): nothing to point at

        return f"mm2ctl: Spark's JVM wrote its output to {_run.log}"
    return f"mm2ctl: library log lines of this run are in {_run.log}"


__all__ = ["KEEP_LOGS", "failure_line", "jvm_log", "log_dir", "prune", "start", "verbose"]
