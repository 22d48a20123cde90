"""How long work says how it is going, without printing: the one progress type of mm2ctl.

A ``Progress`` is any callable taking one message (``lambda m: ...`` or a list's ``append`` in a test). Work
that can count (partitions translated, steps applied) also calls ``count(progress, phase, done, total)``; it
reaches only reporters that have a ``count`` method (``CountingProgress``), which the CLI's renderer has and
draws as a bar. A plain callable hears the messages only, so passing one never costs a line per item.

The core calls these and never prints; ``mm2ctl.cli.progress_bar`` decides what a terminal, a log or ``--quiet``
gets.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class Progress(Protocol):
    """Takes one human-readable message per stage of long work."""

    def __call__(self, message: str, /) -> None: ...


@runtime_checkable
class CountingProgress(Protocol):
    """A ``Progress`` that can also show how far a phase is (``done`` of ``total`` items)."""

    def __call__(self, message: str, /) -> None: ...

    def count(self, phase: str, done: int, total: int, /) -> None: ...


def no_progress(message: str, /) -> None:
    """The reporter of callers that want no progress: it drops every message."""
    return None


def count(progress: Progress | None, phase: str, done: int, total: int) -> None:
    """Tell ``progress`` that ``done`` of ``total`` items of ``phase`` are finished, if it can count.

    Called once per item on hot loops (the failover planner's partitions), so it looks the method up
    instead of asking ``isinstance`` of a runtime protocol, which costs far more.
    """
    counter = getattr(progress, "count", None)
    if counter is not None:
        counter(phase, done, total)


__all__ = ["CountingProgress", "Progress", "count", "no_progress"]
