"""The real lab for integration tests: one lab per (Kafka version, replication policy, offset-syncs location,
security, exactly-once source support).

Tests ask for ``lab`` and, when they need a non-default setup, mark themselves
``@pytest.mark.lab(version=..., policy=..., location=..., security=..., exactly_once=...)``. Collection groups
the tests by lab, so each lab boots once per session and only one runs at a time (the previous one is stopped
before the next starts). Every test uses unique topic and group names, so tests share a lab without seeing each other.
Tests that break their lab (kill a broker or the Connect worker) mark themselves ``own="<name>"`` and get
a lab of their own, which no other test shares.

``spark_cluster`` is a Spark standalone cluster (``mm2ctl.lab.spark_cluster``: a master and two workers of
one core and 1 GB each, on loopback), started once for the tests that submit the inspection to it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mm2ctl.lab import control as lab_core
from mm2ctl.lab import spark_cluster as spark_cluster_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.releases import DEFAULT_KAFKA_VERSION


@dataclass(frozen=True, order=True)
class LabKey:
    version: str = DEFAULT_KAFKA_VERSION
    policy: str = "default"
    location: str = "source"
    security: str = "none"
    own: str = ""  # "": a shared lab; a name: a lab of its own, for tests that break it
    exactly_once: bool = False

    @property
    def slug(self) -> str:
        secured = "" if self.security == "none" else f"-{self.security}"
        eos = "-exactly-once" if self.exactly_once else ""
        return f"kafka-{self.version}-{self.policy}-{self.location}{secured}{eos}" + (
            f"-{self.own}" if self.own else ""
        )


DEFAULT_KEY = LabKey()


def _key_of(item: pytest.Item) -> LabKey | None:
    if "lab" not in getattr(item, "fixturenames", ()):
        return None
    marker = item.get_closest_marker("lab")
    if marker is None:
        return DEFAULT_KEY
    return LabKey(
        version=marker.kwargs.get("version", DEFAULT_KAFKA_VERSION),
        policy=marker.kwargs.get("policy", "default"),
        location=marker.kwargs.get("location", "source"),
        security=marker.kwargs.get("security", "none"),
        own=marker.kwargs.get("own", ""),
        exactly_once=marker.kwargs.get("exactly_once", False),
    )


def _order(key: LabKey | None) -> tuple[int, LabKey]:
    if key is None:
        return (0, DEFAULT_KEY)
    if key == DEFAULT_KEY:
        return (1, key)
    return (2 if key.version == DEFAULT_KAFKA_VERSION else 3, key)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "lab(version, policy, location, security, own, exactly_once): which lab setup the test needs"
    )


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    # Stable sort: tests that need no lab first, then the default lab, then the others, one lab at a time.
    items.sort(key=lambda it: _order(_key_of(it)))


class LabPool:
    """Keeps at most one lab running; boots the one asked for, stopping the previous one first."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.current: tuple[LabKey, LabInfo] | None = None
        self.boot_seconds: dict[LabKey, float] = {}
        self.released: list[LabInfo] = []

    def get(self, key: LabKey) -> LabInfo:
        if self.current is not None and self.current[0] == key:
            return self.current[1]
        self.release()
        info = lab_core.up(
            self.base / key.slug,
            kafka_version=key.version,
            replication_policy=key.policy,
            offset_syncs_location=key.location,
            security_mode=key.security,
            exactly_once=key.exactly_once,
        )
        self.boot_seconds[key] = info.boot_seconds
        self.current = (key, info)
        return info

    def release(self) -> None:
        if self.current is None:
            return
        _, info = self.current
        self.current = None
        lab_core.down(Path(info.dir))
        self.released.append(info)


@pytest.fixture(scope="session")
def lab_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabPool]:
    base = Path(os.environ.get("MM2CTL_TEST_LAB_DIR") or tmp_path_factory.mktemp("labs"))
    pool = LabPool(base)
    try:
        yield pool
    finally:
        pool.release()


def _connectors(info: LabInfo) -> set[str] | None:
    """The connectors on the lab's Connect worker, or None when it cannot be asked (a secured or stopped lab)."""
    from mm2ctl.connect_client import build_connect_client
    from mm2ctl.core.errors import Mm2ctlError

    try:
        with build_connect_client([info.connect_url]) as connect:
            return set(connect.list_connectors())
    except Mm2ctlError:
        return None


@pytest.fixture(scope="module", autouse=True)
def _module_flows_removed(lab_pool: LabPool) -> Iterator[None]:
    """Delete the connectors a test module added to the running lab (``lab.add_flow``'s flows) when the module
    ends. Every flow's MirrorSource, checkpoint and heartbeat tasks run until deleted, so a session that kept
    them all would load the lab's brokers and worker more with every module. The lab's own flow stays."""
    at_start = lab_pool.current[1] if lab_pool.current else None
    before = (_connectors(at_start) or set()) if at_start else set()
    yield
    if lab_pool.current is None:
        return
    info = lab_pool.current[1]
    now = _connectors(info)
    if now is None:
        return
    keep = set(info.connectors.values()) | (before if at_start is not None and at_start.dir == info.dir else set())
    from mm2ctl.connect_client import build_connect_client
    from mm2ctl.core.errors import Mm2ctlError

    with build_connect_client([info.connect_url]) as connect:
        for name in sorted(now - keep):
            with contextlib.suppress(Mm2ctlError):  # gone already, or the worker is busy: the next module's end
                connect.delete(name)


@pytest.fixture
def lab(request: pytest.FixtureRequest, lab_pool: LabPool) -> LabInfo:
    key = _key_of(request.node) or DEFAULT_KEY
    return lab_pool.get(key)


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_cluster_core.SparkCluster]:
    """A master and two one-core workers, their logs and work folders beside the labs; stopped at the end
    with every executor, and no process of theirs left."""
    base = os.environ.get("MM2CTL_TEST_LAB_DIR")
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="spark-cluster-", dir=base))
    else:
        folder = tmp_path_factory.mktemp("spark-cluster")
    cluster = spark_cluster_core.start(folder, workers=2, cores_per_worker=1, memory_per_worker="1g")
    try:
        yield cluster
    finally:
        spark_cluster_core.stop(cluster)
