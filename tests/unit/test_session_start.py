"""``SessionStart.gateway``: the admin reads get the driver JVM's gateway as soon as the JVM is up, while its
SparkContext still starts, and None when the start fails (the reads then go through librdkafka)."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from mm2ctl.core.errors import InspectError
from mm2ctl.inspector.spark import session


def test_the_gateway_comes_while_the_session_still_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    jvm: dict[str, Any] = {"gateway": None}
    context_up = threading.Event()

    def build(*_args: Any, **_kwargs: Any) -> str:
        jvm["gateway"] = "the gateway"  # the JVM is up; its SparkContext is not yet
        assert context_up.wait(30)
        return "the session"

    monkeypatch.setattr(session, "driver_gateway", lambda: jvm["gateway"])
    monkeypatch.setattr(session, "build_session", build)
    start = session.SessionStart(None, {}, jvm_log=None, share_classes=False)
    assert start.gateway() == "the gateway"
    context_up.set()
    assert start.result() == "the session"
    assert start.gateway() == "the gateway"


def test_no_gateway_when_the_start_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def build(*_args: Any, **_kwargs: Any) -> str:
        raise InspectError("Spark's driver JVM exited while starting")

    monkeypatch.setattr(session, "driver_gateway", lambda: None)
    monkeypatch.setattr(session, "build_session", build)
    start = session.SessionStart(None, {}, jvm_log=None, share_classes=False)
    assert start.gateway() is None
    with pytest.raises(InspectError):
        start.result()
