"""A Java program kept running, answering batch after batch: a live session's client that starts no process
per cycle.

The program reads its settings once (a block of lines ended by ``%%``), then each batch of calls (a block ended
by ``%%``), and answers each batch with lines up to a line ``done``. A reader thread moves the program's output
into a queue, so a batch waits for its answer with a deadline; another keeps the last lines of its stderr for
an error message. A batch that does not finish in time, or a program that exits, ends the process: the next
batch starts a new one. Batches are answered one at a time (a lock), as the program reads them.
"""

from __future__ import annotations

import contextlib
import queue
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import IO

#: The line that ends a block of input.
END_OF_BLOCK = "%%"
#: The line that ends an answer.
DONE = "done"
_EOF = None


class Unanswered(Exception):
    """The served program did not answer a batch: it exited, or did not finish in time (``timed_out``).
    ``output`` holds what it wrote of that batch, ``stderr_tail`` the last lines of its stderr. The caller turns
    it into an error of mm2ctl's tree."""

    def __init__(self, message: str, output: list[str], stderr_tail: str, *, timed_out: bool = False) -> None:
        super().__init__(message)
        self.output = output
        self.stderr_tail = stderr_tail
        self.timed_out = timed_out


class ServedProgram:
    """The command ``argv()`` makes (asked on each start: finding the program may resolve and compile it),
    started on the first batch, given ``settings`` (a text of lines) first, and kept running."""

    def __init__(self, argv: Callable[[], Sequence[str]], settings: str) -> None:
        self._argv = argv
        self._settings = settings
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=20)
        #: How many processes this program started: one unless one died or timed out.
        self.starts = 0

    def call(self, batch: Sequence[str], timeout_s: float) -> list[str]:
        """The answer to ``batch`` (lines without line ends), up to and without its ``done`` line."""
        with self._lock:
            proc = self._running()
            deadline = time.monotonic() + timeout_s
            try:
                self._send(proc, [*batch, END_OF_BLOCK])
                return self._answer(deadline)
            except Unanswered as exc:
                self._stop(kill=exc.timed_out)
                raise

    @property
    def running(self) -> bool:
        """Whether the process is up (it starts again on the next batch when not)."""
        return self._proc is not None and self._proc.poll() is None

    def close(self) -> None:
        """End the process (its input closed, then killed if it lingers); the next batch starts a new one."""
        with self._lock:
            self._stop()

    def _running(self) -> subprocess.Popen[bytes]:
        if self._proc is not None and self._proc.poll() is None:
            return self._proc
        self._stop()
        self._lines = queue.Queue()
        proc = subprocess.Popen(
            list(self._argv()), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.starts += 1
        self._proc = proc
        assert proc.stdout is not None and proc.stderr is not None
        lines = self._lines
        threading.Thread(target=_pump, args=(proc.stdout, lines.put, lambda: lines.put(_EOF)), daemon=True).start()
        threading.Thread(target=_pump, args=(proc.stderr, self._stderr.append, None), daemon=True).start()
        self._send(proc, [*self._settings.splitlines(), END_OF_BLOCK])
        return proc

    def _send(self, proc: subprocess.Popen[bytes], lines: Sequence[str]) -> None:
        assert proc.stdin is not None
        try:
            proc.stdin.write("".join(f"{line}\n" for line in lines).encode("utf-8"))
            proc.stdin.flush()
        except OSError as exc:
            raise Unanswered(f"the program exited ({exc})", [], self._tail()) from exc

    def _answer(self, deadline: float) -> list[str]:
        out: list[str] = []
        while True:
            try:
                line = self._lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise Unanswered("the program did not answer in time", out, self._tail(), timed_out=True) from None
            if line is _EOF:
                raise Unanswered("the program exited", out, self._tail())
            if line == DONE:
                return out
            out.append(line)

    def _tail(self) -> str:
        return "\n".join(self._stderr)

    def _stop(self, *, kill: bool = False) -> None:
        """End the process: its input closed and a few seconds to exit, or ``kill``ed at once (it hangs)."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            with contextlib.suppress(OSError):  # a process that died took its pipe with it
                proc.stdin.close()
        try:
            proc.wait(timeout=0 if kill else 5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _pump(stream: IO[bytes], put: Callable[[str], object], at_end: Callable[[], object] | None) -> None:
    """Each line of ``stream``, decoded, to ``put``; then ``at_end`` (stdout's reader waits for its end)."""
    for raw in stream:
        put(raw.decode("utf-8", "replace").rstrip("\r\n"))
    if at_end is not None:
        at_end()
