"""Property tests over Spark, checked in one pass: hypothesis draws the examples (pure Python, under the running
profile of ``tests/conftest.py``: derandomized and 200 of them in CI), and the test checks them all with one
Spark job instead of a few jobs per example. Shrinking is lost; a failure reports its smallest example."""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

Example = TypeVar("Example")


def drawn(strategy: st.SearchStrategy[Example]) -> list[Example]:
    """The examples hypothesis draws from ``strategy`` under the running profile, as many as it asks for."""
    examples: list[Example] = []

    @settings(database=None, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(strategy)
    def draw(example: Example) -> None:
        examples.append(example)

    draw()
    assert len(examples) >= settings.default.max_examples, (len(examples), settings.default.max_examples)
    return examples
