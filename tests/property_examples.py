"""Property tests over Spark, checked in one pass: hypothesis draws the examples (pure Python, under the running
profile of ``tests/conftest.py``: derandomized and 200 of them in CI), and the test checks them all with one
Spark job instead of a few jobs per example. Shrinking is lost; a failure reports its smallest example."""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

Example = TypeVar("Example")


def drawn(strategy: st.SearchStrategy[Example], at_least: int = 0) -> list[Example]:
    """The examples hypothesis draws from ``strategy`` under the running profile, as many as it asks for (and
    ``at_least`` that many)."""
    examples: list[Example] = []
    wanted = max(settings.default.max_examples, at_least)

    @settings(
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
        max_examples=wanted,
    )
    @given(strategy)
    def draw(example: Example) -> None:
        examples.append(example)

    draw()
    assert len(examples) >= wanted, (len(examples), wanted)
    return examples
