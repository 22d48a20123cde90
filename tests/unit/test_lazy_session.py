"""The Spark session an inspection on the driver engine starts only when a run asks for it."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from mm2ctl.inspector.spark.lazy_session import LazySession


class _Starts:
    """A start that counts its calls and gives a session whose settings are recorded (or fails ``failures`` times)."""

    def __init__(self, failures: int = 0) -> None:
        self.calls = 0
        self.failures = failures
        self.settings: dict[str, str] = {}

    def __call__(self) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise RuntimeError(f"start {self.calls} failed")
        return SimpleNamespace(conf=SimpleNamespace(set=self.settings.__setitem__))


def test_nothing_starts_until_asked_and_then_once_with_the_settings_given_before() -> None:
    starts = _Starts()
    session = LazySession(None, starts)
    session.set("spark.sql.shuffle.partitions", "3")
    assert session.started is None and starts.calls == 0
    threads = [threading.Thread(target=session.get) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert starts.calls == 1 and session.started is not None
    assert starts.settings == {"spark.sql.shuffle.partitions": "3"}
    session.set("spark.sql.shuffle.partitions", "5")  # up: applied at once
    assert starts.settings == {"spark.sql.shuffle.partitions": "5"}


def test_a_failed_start_is_not_tried_again_until_forgotten() -> None:
    starts = _Starts(failures=1)
    session = LazySession(None, starts)
    for _ in range(2):  # the other thread of the same run gets the same error, with no second start
        with pytest.raises(RuntimeError, match="start 1 failed"):
            session.get()
    assert starts.calls == 1
    session.forget_failure()  # the next run
    assert session.get() is session.started and starts.calls == 2


def test_a_session_given_started_is_used_and_one_is_needed() -> None:
    given: Any = SimpleNamespace(conf=SimpleNamespace(set=lambda _k, _v: None))
    assert LazySession(given).get() is given
    with pytest.raises(ValueError, match="needs a session or a way to start one"):
        LazySession(None)
