"""The embedded driver JVM's class-data-sharing archive: Spark's classes, parsed and verified once.

A cold ``mm2ctl inspect`` spends seconds loading and verifying the classes of Spark, Kafka's client and
their dependencies, in the JVM's start and again in the first query it plans. Java's application class-data
sharing keeps those classes in a file the JVM maps at its next start instead (``-XX:SharedArchiveFile``).
The first embedded run without an archive asks the JVM to write one when it exits
(``-XX:ArchiveClassesAtExit``), then waits for that exit; later runs map it.

The archive is only valid for the Java binary and the class path it was made with, so its name carries a
digest of both: the ``java`` Spark's launcher runs, the pyspark release and its jars, and the settings that
add jars to the driver (``inspector.spark.packages.class_path_request``: the Kafka source's package, its Ivy home, a
user's ``spark.jars``). The packages' jars are only known once Ivy resolved them inside the JVM, after its
options are fixed; for a released version they follow from the request. Classes of those jars come through
Spark's own class loader, and the JVM maps an archived one only when its class file's size and checksum
match, so even a jar changed under the same name costs speed, never correctness.
It lives in the jar cache (``$MM2CTL_CACHE``, else ``~/.cache/mm2ctl``) under ``class-archives/``; a new
one replaces the others there. A JVM that cannot map an archive (another JDK build, a changed jar) runs
without it. ``MM2CTL_CLASS_ARCHIVE=off`` turns the whole thing off.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.java.maven import cache_root

#: The environment switch: ``off`` runs every JVM without an archive.
SWITCH = "MM2CTL_CLASS_ARCHIVE"
#: Java options that already choose class-data sharing; with one of them the user's choice stands.
_CDS_OPTIONS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "-Xshare")


@dataclass(frozen=True, slots=True)
class ClassArchive:
    """One archive: ``path`` once it exists; while this run makes it, the JVM writes ``pending`` first."""

    path: Path
    #: Whether this run's JVM writes the archive when it exits (there was none to map).
    create: bool

    @property
    def pending(self) -> Path:
        return self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")

    def java_option(self) -> str:
        if self.create:
            return f"-XX:ArchiveClassesAtExit={self.pending}"
        return f"-XX:SharedArchiveFile={self.path}"

    def keep(self) -> bool:
        """After the JVM exited cleanly: put the archive it wrote in place, and remove the older ones."""
        if not self.create:
            return False
        written = self.pending
        if not written.is_file() or written.stat().st_size == 0:
            written.unlink(missing_ok=True)
            return False
        written.replace(self.path)
        for other in self.path.parent.glob("*.jsa"):
            if other != self.path:
                other.unlink(missing_ok=True)
        return True


def chooses_sharing(java_options: str | None) -> bool:
    """Whether ``java_options`` already say how the JVM shares classes."""
    return any(option in (java_options or "") for option in _CDS_OPTIONS)


def _java_binary() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the first on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def _digest(java: Path, class_path: Sequence[str]) -> str:
    import pyspark

    from mm2ctl.inspector.spark.packages import spark_home

    spark_jars = sorted((spark_home() / "jars").glob("*.jar"))
    digest = hashlib.sha256()
    java_stat = java.stat()
    digest.update(f"{java}\0{java_stat.st_size}\0{java_stat.st_mtime_ns}\0{pyspark.__version__}\0".encode())
    for jar in spark_jars:
        digest.update(f"{jar}\0{jar.stat().st_size}\0".encode())
    for word in class_path:
        digest.update(f"{word}\0".encode())
    return digest.hexdigest()[:20]


def class_archive(class_path: Sequence[str], *, create: bool = True) -> ClassArchive | None:
    """The archive for this Java and the extra ``class_path`` (``inspector.spark.packages.class_path_request``): to map
    when it exists, to make when ``create``, or None (switched off, no ``java`` found, a cache that cannot be
    written, or nothing to map)."""
    if os.environ.get(SWITCH, "").strip().lower() == "off":
        return None
    java = _java_binary()
    if java is None:
        return None
    folder = cache_root() / "class-archives"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"spark-{_digest(java, class_path)}.jsa"
    except OSError:
        return None
    if path.is_file():
        return ClassArchive(path, create=False)
    if not create or not os.access(folder, os.W_OK):
        return None
    for stale in folder.glob("*.tmp"):  # left by a JVM that was killed while writing
        with contextlib.suppress(OSError):
            if _pid_gone(stale):
                stale.unlink()
    return ClassArchive(path, create=True)


def _pid_gone(pending: Path) -> bool:
    """Whether the process that named ``pending`` (``<archive>.<pid>.tmp``) has exited."""
    try:
        pid = int(pending.name.rsplit(".", 2)[-2])
    except (IndexError, ValueError):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


__all__ = ["SWITCH", "ClassArchive", "chooses_sharing", "class_archive"]
