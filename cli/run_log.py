"""Where this run's JVM output goes: the terminal with ``-v``, otherwise a log file named on failure.

A command that starts a JVM in this process (``inspect`` starts Spark's driver) asks ``jvm_log`` for a
file; everything the JVM prints goes there (``mm2ctl.inspector.jvm_log``). When the command then fails,
``main`` prints the file's path as one line on stderr. With ``-v`` (``--verbose``) there is no file: the
JVM's lines reach the terminal, as Python's INFO log lines do.

The files live in ``<state dir>/logs/<command>-<UTC time>-<pid>.log``, the state dir being the journals'
(``$MM2CTL_STATE_DIR``, else ``$XDG_STATE_HOME/mm2ctl``, else ``~/.local/state/mm2ctl``). Each new log
deletes all but the newest ``KEEP_LOGS`` there, so they stay bounded. Where that folder cannot be written,
the log is a temporary file.

The lab's JVMs log to the lab folder, and ``mvn``'s output is captured, so neither needs this. One CLI
invocation is one process, so the choice is kept here, set by the root callback for the command that runs.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from mm2ctl.remediate.journal import default_state_dir

#: How many log files the logs folder keeps.
KEEP_LOGS = 20


@dataclass
class _Run:
    verbose: bool = False
    log: Path | None = None


_run = _Run()


def start(*, verbose: bool) -> None:
    """Begin a command: ``verbose`` is ``-v``; no log file yet."""
    _run.verbose = verbose
    _run.log = None


def verbose() -> bool:
    return _run.verbose


def log_dir() -> Path:
    return default_state_dir() / "logs"


def jvm_log(command: str) -> Path | None:
    """A fresh log file for the JVM ``command`` is about to start, or None with ``-v`` (the terminal)."""
    if _run.verbose:
        return None
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
    """The line that names the JVM's log when the command failed, if this run wrote one."""
    if _run.log is None:
        return None
    return f"mm2ctl: Spark's JVM wrote its output to {_run.log}"


__all__ = ["KEEP_LOGS", "failure_line", "jvm_log", "log_dir", "prune", "start", "verbose"]
