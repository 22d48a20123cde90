"""Property tests over Spark, checked in one pass: hypothesis draws the examples (pure Python, under the running
profile of ``tests/conftest.py``: derandomized and 200 of them in CI), and the test checks them all with one
Spark job instead of a few jobs per example. Shrinking is lost; a failure reports its smallest example."""

from __future__ import annotations

from typing import TypeVar

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

Example = TypeVar("Example")


def drawn(strategy: st.SearchStrategy[Example], max_examples: int | None = None) -> list[Example]:
    """The examples hypothesis draws from ``strategy`` under the running profile, as many as it asks for, or
    ``max_examples`` (the test's own count, as ``@settings(max_examples=...)`` pins it)."""
    examples: list[Example] = []
    count = settings.default.max_examples if max_examples is None else max_examples

    @settings(
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate],
        max_examples=count,
    )
    @given(strategy)
    def draw(example: Example) -> None:
        examples.append(example)

    draw()
    assert len(examples) >= count, (len(examples), count)
    return examples
