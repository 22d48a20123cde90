"""Fixtures shared by unit and integration tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


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
