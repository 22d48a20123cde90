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

Which release of the Kafka source is decided before the driver JVM starts, since a package that does not
resolve kills it (``kafka_source``): the installed Spark's own when one of Ivy's repositories has it, else the
newest older patch release of the same minor line that one has (Spark keeps binary compatibility within a
minor line; a pyspark on PyPI can be newer than what a repository, or a company's mirror of it, holds). The
Ivy cache is looked into first, then the repositories Spark's Ivy uses (``inspector.spark.repositories``: a ``HEAD``
of the POM and the jar); where they cannot say (no answer, or the user's ``spark.jars.ivySettings``), Spark's
own resolution decides, in a short ``spark-submit`` that runs nothing. The choice is recorded in the cache for
a day, so later runs ask no repository; nothing resolving is a ``KafkaSourceUnresolvedError``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.errors import InspectError, KafkaSourceUnresolvedError
from mm2ctl.core.java.maven import cache_root
from mm2ctl.inspector.spark.repositories import Look, Module, Presence, default_chain, look

log = logging.getLogger("mm2ctl.inspect")

PACKAGES = "spark.jars.packages"
JARS = "spark.jars"
IVY_HOME = "spark.jars.ivy"
EXCLUDES = "spark.jars.excludes"
REPOSITORIES = "spark.jars.repositories"
IVY_SETTINGS = "spark.jars.ivySettings"
#: Every setting that decides which jars Spark adds to the driver's class path.
CLASS_PATH_SETTINGS = (JARS, PACKAGES, EXCLUDES, IVY_HOME, REPOSITORIES, IVY_SETTINGS)

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
        return self.kafka_module().coordinate

    def kafka_module(self, version: str | None = None) -> Module:
        """The Kafka source of this build's Scala version, at ``version`` (default: this build's release)."""
        return Module(
            "org.apache.spark", f"{KAFKA_SOURCE_ARTIFACT}_{self.scala_version}", version or self.spark_version
        )

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


def candidate_versions(version: str) -> list[str]:
    """The releases whose Kafka source may serve Spark ``version``: itself, then the older patch releases of its
    minor line, newest first (``4.1.4``: 4.1.4, 4.1.3, 4.1.2, 4.1.1, 4.1.0). A version that is not
    ``major.minor.patch`` (a preview) has itself only."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)", version)
    if match is None:
        return [version]
    major, minor, patch = match.groups()
    return [f"{major}.{minor}.{p}" for p in range(int(patch), -1, -1)]


def choose_version(candidates: Sequence[str], answer: Callable[[str], Look]) -> tuple[str | None, list[Look]]:
    """The first of ``candidates`` that ``answer`` finds, and what it said of each asked. An unknown answer (a
    repository that did not say) stops the search: an older release chosen past it would be a guess."""
    looks: list[Look] = []
    for version in candidates:
        found = answer(version)
        looks.append(found)
        if found.presence is Presence.FOUND:
            return version, looks
        if found.presence is Presence.UNKNOWN:
            break
    return None, looks


@dataclass(frozen=True, slots=True)
class KafkaSourceChoice:
    """The Kafka source a session gets: ``coordinate``, found ``where``; ``installed`` is the one matching the
    installed Spark, which it differs from when that one did not resolve."""

    coordinate: str
    installed: str
    where: str

    @property
    def fallback(self) -> bool:
        return self.coordinate != self.installed


#: How long a recorded choice stands before the repositories are asked again (a mirror catches up).
RECORD_TTL_S = 24 * 3600.0
#: How long Spark's own resolution of one release may take.
SPARK_RESOLUTION_TIMEOUT_S = 300.0

#: Part of each record's key: a choice made by an older way of looking is not taken.
_RECORD_FORMAT = "dependencies-looked-into"

_chosen: dict[str, KafkaSourceChoice] = {}
_chosen_lock = threading.Lock()


def _record_file() -> Path:
    return cache_root() / "kafka-source.json"


def _record_key(build: SparkBuild, settings: Mapping[str, str]) -> str:
    """What the choice depends on: the installed release, the Ivy home, and the repositories Spark would ask."""
    keys = (IVY_HOME, IVY_SETTINGS, REPOSITORIES, EXCLUDES)
    words = [_RECORD_FORMAT, build.kafka_source, *(f"{k}={settings.get(k, '')}" for k in keys)]
    words += [f"central={os.environ.get('DEFAULT_ARTIFACT_REPOSITORY', '')}", f"home={Path.home()}"]
    return "|".join(words)


def _recorded(key: str) -> KafkaSourceChoice | None:
    try:
        entry = json.loads(_record_file().read_text()).get(key)
        if entry is None or time.time() - float(entry["at"]) > RECORD_TTL_S:
            return None
        return KafkaSourceChoice(str(entry["coordinate"]), str(entry["installed"]), str(entry["where"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _record(key: str, choice: KafkaSourceChoice) -> None:
    """Keep ``choice`` for later runs; a cache that cannot be written only costs them the look again."""
    path = _record_file()
    try:
        entries = json.loads(path.read_text()) if path.is_file() else {}
        entries = entries if isinstance(entries, dict) else {}
    except (OSError, ValueError):
        entries = {}
    entries[key] = {"coordinate": choice.coordinate, "installed": choice.installed, "where": choice.where}
    entries[key]["at"] = time.time()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}.partial")
        partial.write_text(json.dumps(entries, indent=1, sort_keys=True))
        partial.replace(path)
    except OSError:
        return


def kafka_source(build: SparkBuild, settings: Mapping[str, str]) -> KafkaSourceChoice:
    """The Kafka source a session of ``build`` asks Spark for, with ``settings``' Ivy home and repositories (the
    module docstring). Fallbacks are logged as a warning, the installed release's own at INFO. Raises
    ``KafkaSourceUnresolvedError`` when none of the candidates resolves."""
    key = _record_key(build, settings)
    with _chosen_lock:  # once per process: a session's start asks for its settings more than once
        if key in _chosen:
            return _chosen[key]
        choice = _recorded(key)
        if choice is None:
            choice = _choose(build, settings)
            _record(key, choice)
        _chosen[key] = choice
    if choice.fallback:
        log.warning(
            "Spark's Kafka source %s does not resolve from the repositories Spark uses; using %s (from %s), the "
            "newest of the same minor line that does (Spark keeps binary compatibility within a minor line)",
            choice.installed, choice.coordinate, choice.where,
        )  # fmt: skip
    else:
        log.info("Spark's Kafka source: %s (from %s)", choice.coordinate, choice.where)
    return choice


def _choose(build: SparkBuild, settings: Mapping[str, str]) -> KafkaSourceChoice:
    ivy = Path(settings.get(IVY_HOME) or ivy_home())
    ivy_settings = settings.get(IVY_SETTINGS)
    chain = default_chain(ivy, settings.get(REPOSITORIES))
    excluded = set(_words(settings.get(EXCLUDES)))

    def answer(version: str) -> Look:
        module = build.kafka_module(version)
        if ivy_settings:  # the user's resolvers: only Ivy reads them (and its cache may be theirs to refuse)
            return _spark_look(build, settings, module)
        seen = look(chain, module, ivy_home=ivy, excluded=excluded)
        if seen.presence is not Presence.UNKNOWN:
            return seen
        spark = _spark_look(build, settings, module)  # Spark may reach what this process could not
        if spark.presence is Presence.FOUND:
            return spark
        return Look(Presence.UNKNOWN, reasons=seen.reasons + spark.reasons)

    candidates = candidate_versions(build.spark_version)
    version, looks = choose_version(candidates, answer)
    if version is not None:
        return KafkaSourceChoice(build.kafka_module(version).coordinate, build.kafka_source, looks[-1].where)
    if ivy_settings:
        tried = f"the resolvers of spark.jars.ivySettings={ivy_settings}"
        tried += f" and spark.jars.repositories={settings[REPOSITORIES]}" if settings.get(REPOSITORIES) else ""
    else:
        tried = ", ".join([f"the Ivy cache {ivy / 'cache'}", *(r.shown() for r in chain)])
    reasons = list(dict.fromkeys(reason for seen in looks for reason in seen.reasons))
    older = candidates[1 : len(looks)]
    nor = f" (nor {', '.join(older)} of its minor line)" if older else ""
    raise KafkaSourceUnresolvedError(
        f"Spark's Kafka source {build.kafka_source}{nor} resolves from none of the repositories tried: {tried}"
        + (f" [{'; '.join(reasons)}]" if reasons else "")
        + f"; name one yourself (--spark-conf {PACKAGES}={build.kafka_module('VERSION').coordinate}, or "
        f"spark-submit --packages), point Spark at a repository that has it (--spark-conf {IVY_SETTINGS}=FILE "
        f"or {REPOSITORIES}=URL), or install a pyspark release whose Kafka source that repository has"
    )


def _spark_look(build: SparkBuild, settings: Mapping[str, str], module: Module) -> Look:
    """Whether Spark's own package resolution resolves ``module`` with ``settings``' Ivy home and repositories
    (into that Ivy home, where the session then finds it)."""
    asked = {k: settings[k] for k in (IVY_HOME, IVY_SETTINGS, REPOSITORIES, EXCLUDES) if settings.get(k)}
    asked[PACKAGES] = module.coordinate
    try:
        proc = _submit_resolution(build, asked, timeout_s=SPARK_RESOLUTION_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        why = f"Spark did not resolve {module.coordinate} within {SPARK_RESOLUTION_TIMEOUT_S:.0f}s"
        return Look(Presence.UNKNOWN, reasons=(why,))
    if proc.returncode == 0:
        where = settings.get(IVY_SETTINGS)
        return Look(Presence.FOUND, where=f"{IVY_SETTINGS}={where}" if where else "Spark's resolution")
    return Look(Presence.ABSENT, reasons=(f"Spark: {_resolution_failure(proc.stdout + proc.stderr)}",))


def _resolution_failure(output: str) -> str:
    """The line of Spark's output that says why a resolution failed, as one line."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    found = re.search(r"\[(unresolved dependency: [^\]]+)\]", output)
    if found:
        return " ".join(found.group(1).split())
    errors = [line for line in lines if "Exception" in line or "Error" in line]
    return (errors or lines or ["no output"])[-1]


def with_kafka_source(settings: Mapping[str, str], build: SparkBuild | None = None) -> dict[str, str]:
    """``settings`` (the defaults with the user's over them) with Spark's Kafka source added as a package.

    Unchanged when they name a Kafka source already (in ``spark.jars.packages`` or ``spark.jars``); otherwise
    ours (``kafka_source``) goes first in ``spark.jars.packages``, and the Ivy home and the exclusions are ours
    unless set.
    """
    result = dict(settings)
    if _names_kafka_source(settings):
        return result
    build = build or installed_build()
    result.setdefault(IVY_HOME, str(ivy_home()))
    excluded = build.shipped_dependencies()
    if excluded:
        result.setdefault(EXCLUDES, ",".join(excluded))
    result[PACKAGES] = ",".join([kafka_source(build, result).coordinate, *_words(settings.get(PACKAGES))])
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


def _submit_resolution(
    build: SparkBuild, settings: Mapping[str, str], *, timeout_s: float
) -> subprocess.CompletedProcess[str]:
    """Run ``spark-submit`` with ``settings``' packages and their Ivy settings on a Python file that does
    nothing: it resolves the packages before it runs anything, so no Spark context starts."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_")}
    env.update({"SPARK_HOME": str(build.home), "PYSPARK_PYTHON": sys.executable})
    command = [str(build.home / "bin" / "spark-submit"), "--master", "local[1]", "--packages", settings[PACKAGES]]
    if settings.get(EXCLUDES):
        command += ["--exclude-packages", settings[EXCLUDES]]
    for key in (IVY_HOME, IVY_SETTINGS, REPOSITORIES):
        if settings.get(key):
            command += ["--conf", f"{key}={settings[key]}"]
    with tempfile.TemporaryDirectory(prefix="mm2ctl-resolve-") as folder:
        noop = Path(folder) / "resolved.py"
        noop.write_text("")
        with resolution_lock(settings):
            return subprocess.run(
                [*command, str(noop)], capture_output=True, text=True, timeout=timeout_s, env=env, check=False
            )


def resolve_kafka_source(*, timeout_s: float = 900.0) -> Path:
    """Resolve the Kafka source into the Ivy home now, as a session start would (``mm2ctl lab jars``: to work
    offline later, or to pay the download before a timed run); the folder holding the jars."""
    build = installed_build()
    settings = with_kafka_source({}, build)
    try:
        proc = _submit_resolution(build, settings, timeout_s=timeout_s)
    except subprocess.TimeoutExpired as exc:
        raise InspectError(f"Spark did not resolve {settings[PACKAGES]} within {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise InspectError(f"Spark failed to resolve {settings[PACKAGES]}:\n{tail}")
    return ivy_home() / "jars"


__all__ = [
    "CLASS_PATH_SETTINGS",
    "KAFKA_SOURCE_ARTIFACT",
    "KafkaSourceChoice",
    "SparkBuild",
    "candidate_versions",
    "choose_version",
    "class_path_request",
    "installed_build",
    "ivy_home",
    "kafka_source",
    "resolution_lock",
    "resolve_kafka_source",
    "spark_home",
    "submit_arguments",
    "with_kafka_source",
]
