"""Spark's Kafka source for the installed Spark, resolved by Spark itself rather than by Maven.

The Kafka source (``org.apache.spark:spark-sql-kafka-0-10_<scala>:<spark>``) is published once per Spark
release and Scala binary version, and only the one matching the Spark that runs it works. Both are read from
the jars that Spark actually runs (``spark-core_<scala>-<spark>.jar`` under the Spark home pyspark launches
from), not guessed from pyspark's version: the 3.5 line is Scala 2.12, the 4.x line Scala 2.13.

The embedded session asks Spark for it as a package (``spark.jars.packages``): Spark resolves it with Ivy
from Maven Central (or the user's ``~/.m2``) when its driver JVM starts, into an Ivy home under mm2ctl's cache
(``spark.jars.ivy``), where later starts find it without the network. So ``inspect`` needs only Java and the
installed wheel. What pyspark already ships (Hadoop's client, lz4, snappy, slf4j…) is excluded from the
resolution: it is not downloaded, and no class is on the class path twice.

A user's own choice wins: a Kafka source named in ``spark.jars.packages`` or ``spark.jars`` (``--spark-conf``)
replaces ours, and other packages they name are resolved beside it; ``spark.jars.ivySettings`` (a mirror, a
proxy), ``spark.jars.repositories``, ``spark.jars.ivy`` and ``spark.jars.excludes`` of theirs are Spark's to
honour as given.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.errors import InspectError
from mm2ctl.core.maven import cache_root

PACKAGES = "spark.jars.packages"
JARS = "spark.jars"
IVY_HOME = "spark.jars.ivy"
EXCLUDES = "spark.jars.excludes"
#: Every setting that decides which jars Spark adds to the driver's class path.
CLASS_PATH_SETTINGS = (JARS, PACKAGES, EXCLUDES, IVY_HOME, "spark.jars.repositories", "spark.jars.ivySettings")

KAFKA_SOURCE_ARTIFACT = "spark-sql-kafka-0-10"

#: The Kafka source's own dependencies that pyspark may ship too, as ``group:artifact`` (``{scala}``: the
#: Scala binary version). Each is excluded only when the installed Spark's jars hold that artifact.
_SHIPPED_CANDIDATES = (
    "org.apache.hadoop:hadoop-client-api",
    "org.apache.hadoop:hadoop-client-runtime",
    "org.lz4:lz4-java",
    "org.xerial.snappy:snappy-java",
    "org.slf4j:slf4j-api",
    "com.google.code.findbugs:jsr305",
    "org.scala-lang.modules:scala-parallel-collections_{scala}",
)

_SPARK_CORE = re.compile(r"^spark-core_(?P<scala>\d+\.\d+)-(?P<spark>\d[\w.\-]*)\.jar$")
_VERSIONED_JAR = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


@dataclass(frozen=True, slots=True)
class SparkBuild:
    """The Spark a session of this process runs: its release and Scala binary version, and its home."""

    spark_version: str
    scala_version: str
    home: Path

    @property
    def jars(self) -> Path:
        return self.home / "jars"

    @property
    def kafka_source(self) -> str:
        """The Kafka source's Maven coordinates for this build."""
        return f"org.apache.spark:{KAFKA_SOURCE_ARTIFACT}_{self.scala_version}:{self.spark_version}"

    def shipped_dependencies(self) -> list[str]:
        """The Kafka source's dependencies this build already ships (``group:artifact``), to exclude."""
        shipped = {m["artifact"] for j in self.jars.glob("*.jar") if (m := _VERSIONED_JAR.match(j.name))}
        candidates = (c.format(scala=self.scala_version) for c in _SHIPPED_CANDIDATES)
        return [c for c in candidates if c.split(":", 1)[1] in shipped]


def spark_home() -> Path:
    """The Spark home pyspark launches its driver from: ``$SPARK_HOME``, else pyspark's own folder."""
    from pyspark.find_spark_home import _find_spark_home

    return Path(_find_spark_home())  # type: ignore[no-untyped-call]


def installed_build(home: Path | None = None) -> SparkBuild:
    """The Spark release and Scala version of the jars under ``home`` (default: ``spark_home()``).

    A pyspark without Spark's jars (``pyspark-client``, a Spark Connect client only) is an ``InspectError``.
    """
    home = home or spark_home()
    for jar in sorted((home / "jars").glob("spark-core_*.jar")):
        if match := _SPARK_CORE.match(jar.name):
            return SparkBuild(match["spark"], match["scala"], home)
    raise InspectError(
        f"no Spark jars (spark-core_*.jar) in {home / 'jars'}: the embedded session needs the full pyspark "
        "package, not a Spark Connect client alone"
    )


def ivy_home() -> Path:
    """Where Spark's Ivy keeps what it resolved for mm2ctl: ``<cache>/ivy`` (``cache/`` and ``jars/``)."""
    return cache_root() / "ivy"


def _words(value: str | None) -> list[str]:
    return [w.strip() for w in (value or "").split(",") if w.strip()]


def _names_kafka_source(settings: Mapping[str, str]) -> bool:
    """Whether ``settings`` already put a Kafka source on the class path (``group:artifact:version`` among
    the packages, or a jar of that artifact)."""
    artifacts = [p.split(":")[1] for p in _words(settings.get(PACKAGES)) if p.count(":") >= 2]
    jars = [Path(j).name for j in _words(settings.get(JARS))]
    return any(name.startswith(KAFKA_SOURCE_ARTIFACT) for name in (*artifacts, *jars))


def with_kafka_source(settings: Mapping[str, str], build: SparkBuild | None = None) -> dict[str, str]:
    """``settings`` (the defaults with the user's over them) with Spark's Kafka source added as a package.

    Unchanged when they name a Kafka source already (in ``spark.jars.packages`` or ``spark.jars``); otherwise
    ours goes first in ``spark.jars.packages``, and the Ivy home and the exclusions are ours unless set.
    """
    result = dict(settings)
    if _names_kafka_source(settings):
        return result
    build = build or installed_build()
    result[PACKAGES] = ",".join([build.kafka_source, *_words(settings.get(PACKAGES))])
    result.setdefault(IVY_HOME, str(ivy_home()))
    excluded = build.shipped_dependencies()
    if excluded:
        result.setdefault(EXCLUDES, ",".join(excluded))
    return result


def class_path_request(settings: Mapping[str, str]) -> list[str]:
    """What in ``settings`` decides the driver's extra class path, as ``key=value`` words to digest.

    The jars themselves are only known once Ivy resolved them inside the JVM, after its options (the class
    archive among them) are fixed; for released coordinates they follow from this request alone.
    """
    words = [f"{key}={settings[key]}" for key in CLASS_PATH_SETTINGS if settings.get(key)]
    for jar in _words(settings.get(JARS)):  # a local jar of the user's, rebuilt under the same name
        path = Path(jar.removeprefix("file://"))
        if path.is_file():
            words.append(f"{path}:{path.stat().st_size}")
    return words


@contextlib.contextmanager
def resolution_lock(settings: Mapping[str, str]) -> Iterator[None]:
    """Held while a driver JVM resolves packages into an Ivy home: two mm2ctl processes starting at once
    (the exporter and an ``inspect``) would otherwise download and copy the same jars over each other.

    Ivy's own cache takes no lock. Nothing is held when no package is asked for; a lock file that cannot be
    made (a read-only cache) is not a reason to fail the start.
    """
    ivy = settings.get(IVY_HOME)
    if not settings.get(PACKAGES) or not ivy:
        yield
        return
    try:
        Path(ivy).mkdir(parents=True, exist_ok=True)
        handle = open(Path(ivy) / ".mm2ctl-resolve.lock", "a+b")  # noqa: SIM115 (held across the yield)
    except OSError:
        yield
        return
    with handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def submit_arguments(build: SparkBuild | None = None) -> list[str]:
    """The ``spark-submit`` arguments that give an application the Kafka source, from the same Ivy home
    (``--packages``, ``--exclude-packages``, ``--conf spark.jars.ivy=…``)."""
    build = build or installed_build()
    settings = with_kafka_source({}, build)
    arguments = ["--packages", settings[PACKAGES], "--conf", f"{IVY_HOME}={settings[IVY_HOME]}"]
    if EXCLUDES in settings:
        arguments += ["--exclude-packages", settings[EXCLUDES]]
    return arguments


def resolve_kafka_source(*, timeout_s: float = 900.0) -> Path:
    """Resolve the Kafka source into the Ivy home now, as a session start would (``mm2ctl lab jars``: to work
    offline later, or to pay the download before a timed run); the folder holding the jars.

    ``spark-submit`` resolves ``--packages`` before it runs anything; its application here is a Python file
    that does nothing, so no Spark context starts.
    """
    build = installed_build()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update({"SPARK_HOME": str(build.home), "PYSPARK_PYTHON": sys.executable})
    with tempfile.TemporaryDirectory(prefix="mm2ctl-resolve-") as folder:
        noop = Path(folder) / "resolved.py"
        noop.write_text("")
        command = [str(build.home / "bin" / "spark-submit"), "--master", "local[1]", *submit_arguments(build)]
        with resolution_lock(with_kafka_source({}, build)):
            try:
                proc = subprocess.run(
                    [*command, str(noop)], capture_output=True, text=True, timeout=timeout_s, env=env, check=False
                )
            except subprocess.TimeoutExpired as exc:
                raise InspectError(f"Spark did not resolve {build.kafka_source} within {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise InspectError(f"Spark failed to resolve {build.kafka_source}:\n{tail}")
    return ivy_home() / "jars"


__all__ = [
    "CLASS_PATH_SETTINGS",
    "KAFKA_SOURCE_ARTIFACT",
    "SparkBuild",
    "class_path_request",
    "installed_build",
    "ivy_home",
    "resolution_lock",
    "resolve_kafka_source",
    "spark_home",
    "submit_arguments",
    "with_kafka_source",
]
