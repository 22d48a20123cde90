"""Fixtures shared by unit and integration tests; the hypothesis profile; the extended shard a run keeps.

Hypothesis runs the ``ci`` profile when ``CI`` is set (``.ci/run`` runs with ``CI=true``) or
``HYPOTHESIS_PROFILE=ci``: derandomized, so a run's examples are the commit's, and ``CI_EXAMPLES`` of them
for every property test that does not pin its own count. The ``dev`` profile is hypothesis' default.

With ``MM2CTL_EXTENDED_SHARD=N``, a run keeps of the extended tests only those of shard N
(``tests/extended_shards.py``), and every other test its markers select.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import settings

from tests.extended_shards import SHARD_VARIABLE, SHARDS

CI_EXAMPLES = 200

settings.register_profile("ci", max_examples=CI_EXAMPLES, derandomize=True, database=None, print_blob=True)
settings.register_profile("dev")
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    chosen = os.environ.get(SHARD_VARIABLE)
    if not chosen:
        return
    kept = set(SHARDS[int(chosen)].tests)
    dropped = [item for item in items if item.get_closest_marker("extended") and item.nodeid not in kept]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        gone = {id(item) for item in dropped}
        items[:] = [item for item in items if id(item) not in gone]


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """One small local Spark session for every unit test that needs one (marked ``spark``).

    Two cores and two shuffle partitions keep tiny inline frames fast; the UI is off so parallel test runs do
    not fight over ports. Imported lazily so tests that never ask for Spark do not pay for a JVM.
    """
    from mm2ctl.inspector.spark.session import build_session

    # Built the way `mm2ctl inspect` builds it (Spark's Kafka source on the classpath), so the one session of
    # the test run serves the unit transforms and the integration reads of real topics alike.
    session = build_session(
        "local[2]",
        {
            "spark.app.name": "mm2ctl-tests",
            "spark.sql.shuffle.partitions": "2",
            "spark.default.parallelism": "2",
            "spark.driver.memory": "1g",
        },
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _two_shuffle_partitions(request: pytest.FixtureRequest) -> None:
    """Each test that uses the shared session starts with its two shuffle partitions: an inspection an earlier
    test ran sizes them to its own rows (one, for a small lab), and with one Spark plans a shuffle as a single
    partition, which a test of a plan's exchanges would not recognise."""
    if "spark" in request.fixturenames:
        request.getfixturevalue("spark").conf.set("spark.sql.shuffle.partitions", "2")
