"""Progress on stderr: a bar on a terminal, plain lines in a log or a pipe, nothing with ``--quiet``.

The core reports through ``mm2ctl.core.progress`` (messages, and counts of a phase's items). This renders
them, in one of three modes chosen once per command (``choose_mode``):

- ``bar``: stderr is a terminal. Each message is printed as a line (``mm2ctl: …``) above a live line that
  shows the current stage with a spinner, or a bar and ``done/total`` for a counted phase, and the time
  taken. The live line disappears when the reporter closes, so nothing is left but the messages.
- ``lines``: stderr is a file or a pipe, or ``-v`` is given (Python's log lines would tear a live bar). One
  line per message. Counts become ``mm2ctl: <phase>: done/total`` lines: when a phase starts, when it
  ends, and in between at most every ``LINE_EVERY_S`` seconds; no carriage returns, so a log reads cleanly.
- ``off``: ``--quiet``.

A reporter is a context manager: the live line runs only inside it, and output meant for stdout is written
after it closes (a live line and stdout on one terminal would garble each other). Messages after the close
print as lines. The bar writes to its own copy of the stderr descriptor, so it keeps drawing while
``inspector.spark.jvm_log`` lends fds 1 and 2 to Spark's starting JVM.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from enum import StrEnum
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from mm2ctl.cli import run_log

if TYPE_CHECKING:
    from rich.progress import Progress as RichProgress
    from rich.progress import TaskID

#: In ``lines`` mode, the longest a counted phase goes without a line.
LINE_EVERY_S = 10.0


class Mode(StrEnum):
    BAR = "bar"
    LINES = "lines"
    OFF = "off"


def choose_mode(*, quiet: bool, verbose: bool, stream: TextIO) -> Mode:
    """``off`` with ``--quiet``; ``bar`` on a terminal (unless ``-v`` or ``TERM=dumb``); else ``lines``."""
    if quiet:
        return Mode.OFF
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if tty and not verbose and os.environ.get("TERM") != "dumb":
        return Mode.BAR
    return Mode.LINES


class TerminalProgress:
    """A ``core.progress.CountingProgress`` that renders on stderr (see the module docstring)."""

    def __init__(
        self,
        prefix: str = "mm2ctl",
        *,
        mode: Mode = Mode.LINES,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        line_every_s: float = LINE_EVERY_S,
    ) -> None:
        self.prefix = prefix
        self.mode = mode
        self._stream = stream
        self._clock = clock
        self._line_every_s = line_every_s
        self._lock = threading.Lock()
        self._closed = False
        # lines mode: the counted phase last shown, its last count and when it was printed
        self._phase: str | None = None
        self._last: tuple[int, int] = (0, 0)
        self._printed_at = 0.0
        # bar mode
        self._bar: RichProgress | None = None
        self._task: TaskID | None = None
        self._bar_file: TextIO | None = None

    @property
    def stream(self) -> TextIO:
        return self._stream if self._stream is not None else sys.stderr

    # ------------------------------------------------------------------------------------ reporting

    def __call__(self, message: str, /) -> None:
        if self.mode is Mode.OFF:
            return
        with self._lock:
            line = f"{self.prefix}: {message}"
            if self.mode is Mode.BAR and not self._closed:
                bar, task = self._started()
                bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
                if self._counting():  # a message inside a counted phase (apply's steps): keep its bar
                    bar.update(task, description=message)
                else:
                    bar.update(task, description=message, total=None, completed=0, counts="")
            else:
                self._write(line)

    def count(self, phase: str, done: int, total: int, /) -> None:
        if self.mode is Mode.OFF:
            return
        with self._lock:
            new_phase = phase != self._phase or done < self._last[0]
            if self.mode is Mode.BAR and not self._closed:
                bar, task = self._started()
                if new_phase:
                    bar.update(task, description=phase)
                bar.update(task, total=max(total, 1), completed=done, counts=f"{done}/{total}")
            else:
                self._count_line(phase, done, total, new_phase=new_phase)
            self._phase, self._last = phase, (done, total)

    # ------------------------------------------------------------------------------------ lifecycle

    def close(self) -> None:
        """Stop the live line (the messages stay); later messages print as lines."""
        with self._lock:
            self._closed = True
            if self._bar is not None:
                self._bar.stop()
                self._bar = None
            if self._bar_file is not None:
                self._bar_file.close()
                self._bar_file = None

    def __enter__(self) -> TerminalProgress:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # ------------------------------------------------------------------------------------ internals

    def _write(self, line: str) -> None:
        stream = self.stream
        stream.write(line + "\n")
        stream.flush()

    def _counting(self) -> bool:
        return self._phase is not None and self._last[0] < self._last[1]

    def _count_line(self, phase: str, done: int, total: int, *, new_phase: bool) -> None:
        now = self._clock()
        finished = done >= total and (new_phase or self._last != (done, total))
        due = now - self._printed_at >= self._line_every_s and (done, total) != self._last
        if new_phase or finished or due:
            self._write(f"{self.prefix}: {phase}: {done}/{total}")
            self._printed_at = now

    def _started(self) -> tuple[RichProgress, TaskID]:
        if self._bar is None or self._task is None:
            from rich.console import Console
            from rich.progress import BarColumn, SpinnerColumn, TextColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress

            # Its own descriptor: fds 1 and 2 may be lent to a starting JVM while the live line refreshes.
            self._bar_file = open(  # noqa: SIM115 - closed by close()
                os.dup(self.stream.fileno()), "w", encoding="utf-8", errors="replace", closefd=True
            )
            console = Console(file=self._bar_file, force_terminal=True)
            self._bar = RichProgress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[counts]}"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._task = self._bar.add_task("", total=None, counts="")
            self._bar.start()
        return self._bar, self._task


def terminal_progress(prefix: str = "mm2ctl", *, quiet: bool = False) -> TerminalProgress:
    """The reporter a command gives the core: its mode follows ``--quiet``, ``-v`` and whether stderr is a
    terminal."""
    stream = sys.stderr
    return TerminalProgress(prefix, mode=choose_mode(quiet=quiet, verbose=run_log.verbose(), stream=stream))


__all__ = ["LINE_EVERY_S", "Mode", "TerminalProgress", "choose_mode", "terminal_progress"]
