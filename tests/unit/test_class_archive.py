"""The driver JVM's class archive: named for its Java and class path, made once, kept only when written."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mm2ctl.inspector.spark import class_archive as ca
from mm2ctl.inspector.spark.packages import class_path_request


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MM2CTL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(ca.SWITCH, raising=False)


def _jar(tmp_path: Path, name: str, size: int) -> list[str]:
    """The class path request of a session given one local jar (``--spark-conf spark.jars=…``)."""
    jar = tmp_path / name
    jar.write_bytes(b"x" * size)
    return class_path_request({"spark.jars": str(jar)})


def test_the_first_run_writes_the_archive_and_later_runs_map_it(tmp_path: Path) -> None:
    jars = _jar(tmp_path, "a.jar", 3)
    first = ca.class_archive(jars)
    assert first is not None and first.create
    assert first.java_option() == f"-XX:ArchiveClassesAtExit={first.pending}"
    assert str(os.getpid()) in first.pending.name and not first.path.exists()
    first.pending.write_bytes(b"archive")  # what the JVM writes as it exits
    assert first.keep()
    assert first.path.read_bytes() == b"archive" and not first.pending.exists()
    later = ca.class_archive(jars)
    assert later is not None and not later.create and later.path == first.path
    assert later.java_option() == f"-XX:SharedArchiveFile={first.path}"
    assert not later.keep()  # nothing to keep for a run that only maps it


def test_an_archive_the_jvm_did_not_write_is_not_kept(tmp_path: Path) -> None:
    archive = ca.class_archive(_jar(tmp_path, "a.jar", 3))
    assert archive is not None
    assert not archive.keep() and not archive.path.exists()
    archive.pending.write_bytes(b"")  # killed before writing anything
    assert not archive.keep() and not archive.pending.exists() and not archive.path.exists()


def test_another_class_path_gets_another_archive_and_replaces_the_old(tmp_path: Path) -> None:
    one = ca.class_archive(_jar(tmp_path, "a.jar", 3))
    two = ca.class_archive(_jar(tmp_path, "a.jar", 4))  # the same jar, rebuilt
    assert one is not None and two is not None and one.path != two.path
    one.pending.write_bytes(b"1")
    assert one.keep()
    two.pending.write_bytes(b"2")
    assert two.keep()
    assert sorted(p.name for p in two.path.parent.glob("*.jsa")) == [two.path.name]


def test_switched_off_or_asked_only_to_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    jars = _jar(tmp_path, "a.jar", 3)
    assert ca.class_archive(jars, create=False) is None  # nothing to map yet
    monkeypatch.setenv(ca.SWITCH, "off")
    assert ca.class_archive(jars) is None


def test_a_pending_file_of_a_dead_process_is_cleared(tmp_path: Path) -> None:
    archive = ca.class_archive(_jar(tmp_path, "a.jar", 3))
    assert archive is not None
    dead = archive.path.with_name(f"{archive.path.name}.999999999.tmp")
    mine = archive.pending
    dead.write_bytes(b"half")
    mine.write_bytes(b"writing")
    ca.class_archive(_jar(tmp_path, "a.jar", 3))
    assert not dead.exists() and mine.exists()


def test_the_users_own_sharing_options_stand() -> None:
    assert ca.chooses_sharing("-Xshare:off")
    assert ca.chooses_sharing("-XX:+UseParallelGC -XX:SharedArchiveFile=/x.jsa")
    assert not ca.chooses_sharing("-XX:+UseParallelGC")
    assert not ca.chooses_sharing(None)


def test_another_kafka_source_request_gets_another_archive() -> None:
    """The packages' jars are resolved inside the JVM, after the archive is chosen: the request names it."""
    ours = class_path_request({"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0"})
    other = class_path_request({"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1"})
    one, two = ca.class_archive(ours), ca.class_archive(other)
    assert one is not None and two is not None and one.path != two.path
