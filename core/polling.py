"""Waiting for a condition: poll it until a deadline, never sleep a fixed time (docs/design.md, "The lab").

A Kafka cluster, a Connect worker or MM2 reaches a state when it does; a fixed sleep is either too short on a
loaded machine or wasted on a quick one. Every wait in mm2ctl is this loop: check, give up once the deadline
has passed, sleep a short interval, check again. The condition is always checked once more after the last
sleep, so a state reached just before the deadline is never reported as a timeout. What a timeout means
(an error, a fallback, a skipped step) is the caller's to decide.
"""

from __future__ import annotations

import time
from collections.abc import Callable


def poll_until(check: Callable[[], bool], *, timeout_s: float, interval_s: float) -> bool:
    """Call ``check`` every ``interval_s`` seconds until it returns true (True) or ``timeout_s`` has passed
    (False). Exceptions from ``check`` propagate: a check that can tell the wait is hopeless raises."""
    deadline = time.monotonic() + timeout_s
    while True:
        if check():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)
