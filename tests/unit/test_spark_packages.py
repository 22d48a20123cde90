"""Spark's Kafka source as a package of the installed Spark: coordinates, exclusions, the user's choice, and the
release that resolves (the installed one, else an older patch release of its minor line) from local
repositories: folders and a loopback HTTP server standing in for Maven Central and a company's mirror."""

from __future__ import annotations

import http.server
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2ctl.core.errors import InspectError, KafkaSourceUnresolvedError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.inspector.spark import packages as sp
from mm2ctl.inspector.spark.repositories import Look, Module, Presence


def _spark_home(tmp_path: Path, *jars: str) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    for name in jars:
        (home / "jars" / name).write_bytes(b"")
    return home


def _publish(repo: Path, scala: str, version: str, *, artifact: str = "spark-sql-kafka-0-10", pom: str = "") -> None:
    """A Spark module's POM and jar at ``version`` in the Maven-layout folder ``repo`` (the Kafka source's)."""
    module = Module("org.apache.spark", f"{artifact}_{scala}", version)
    for ext, text in (("pom", pom), ("jar", "")):
        path = repo / module.maven_path(ext)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _pom(version: str, *needs: tuple[str, str, str, str]) -> str:
    """A published POM (plain versions) that needs ``(group, artifact, version, scope)``."""
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version><scope>{s}</scope>"
        "</dependency>"
        for g, a, v, s in needs
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><groupId>org.apache.spark</groupId>'
        f"<artifactId>spark-sql-kafka-0-10_2.13</artifactId><version>{version}</version>"
        f"<dependencies>{deps}</dependencies></project>"
    )


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An empty cache and ~/.m2, and a folder as Maven Central holding the releases the older tests use: no
    test asks the network."""
    monkeypatch.setenv("MM2CTL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("DEFAULT_ARTIFACT_REPOSITORY", (tmp_path / "central").as_uri())
    monkeypatch.setattr(sp, "_chosen", {})
    for scala, version in (("2.12", "3.5.3"), ("2.13", "4.0.0"), ("2.13", "4.1.1")):
        _publish(tmp_path / "central", scala, version)


def test_a_35_build_is_scala_212_and_a_4x_build_scala_213(tmp_path: Path) -> None:
    old = sp.installed_build(_spark_home(tmp_path / "a", "spark-core_2.12-3.5.7.jar", "scala-library-2.12.18.jar"))
    assert (old.spark_version, old.scala_version) == ("3.5.7", "2.12")
    assert old.kafka_source == "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.7"
    new = sp.installed_build(_spark_home(tmp_path / "b", "spark-core_2.13-4.1.1.jar"))
    assert new.kafka_source == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.1"


def test_the_installed_pyspark_is_read_from_its_jars() -> None:
    import pyspark

    build = sp.installed_build()
    assert build.spark_version == pyspark.__version__
    scala = {"3": "2.12", "4": "2.13"}[build.spark_version[0]]
    assert build.scala_version == scala
    assert list(build.jars.glob(f"scala-library-{scala}.*.jar"))


def test_a_spark_home_without_spark_jars_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(InspectError, match=r"no Spark jars .*Spark Connect client"):
        sp.installed_build(_spark_home(tmp_path, "py4j-0.10.9.9.jar"))


def test_only_what_the_build_ships_is_excluded(tmp_path: Path) -> None:
    build = sp.installed_build(
        _spark_home(
            tmp_path,
            "spark-core_2.13-4.0.0.jar",
            "hadoop-client-runtime-3.4.1.jar",
            "lz4-java-1.8.0.jar",
            "scala-parallel-collections_2.13-1.2.0.jar",
            "commons-pool-1.5.4.jar",  # not the Kafka source's commons-pool2: that one must be resolved
        )
    )
    assert build.shipped_dependencies() == [
        "org.apache.hadoop:hadoop-client-runtime",
        "org.lz4:lz4-java",
        "org.scala-lang.modules:scala-parallel-collections_2.13",
    ]


def test_the_session_asks_for_the_kafka_source_into_mm2ctls_ivy_home(tmp_path: Path) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.12-3.5.3.jar", "slf4j-api-2.0.7.jar"))
    settings = sp.with_kafka_source({"spark.ui.enabled": "false"}, build)
    assert settings == {
        "spark.ui.enabled": "false",
        "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.3",
        "spark.jars.ivy": str(tmp_path / "cache" / "ivy"),
        "spark.jars.excludes": "org.slf4j:slf4j-api",
    }


def test_the_users_other_packages_are_resolved_beside_ours(tmp_path: Path) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.0.0.jar"))
    settings = sp.with_kafka_source(
        {"spark.jars.packages": "com.example:sasl-handler:1.0", "spark.jars.ivy": "/srv/ivy"}, build
    )
    assert (
        settings["spark.jars.packages"]
        == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0,com.example:sasl-handler:1.0"
    )
    assert settings["spark.jars.ivy"] == "/srv/ivy"  # theirs
    assert "spark.jars.excludes" not in settings  # the build ships none of the candidates


@pytest.mark.parametrize(
    "users",
    [
        {"spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.1,com.example:x:1"},
        {"spark.jars": "/opt/jars/spark-sql-kafka-0-10_2.13-4.0.0.jar,/opt/jars/kafka-clients-3.9.0.jar"},
        {"spark.jars": "file:///opt/jars/spark-sql-kafka-0-10_2.13-4.0.0.jar"},
    ],
)
def test_a_kafka_source_the_user_names_wins(tmp_path: Path, users: dict[str, str]) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.0.0.jar", "lz4-java-1.8.0.jar"))
    assert sp.with_kafka_source(users, build) == users


def test_the_users_ivy_settings_stand_beside_our_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.1.1.jar"))
    asked: list[dict[str, str]] = []

    def spark_look(_build: sp.SparkBuild, settings: dict[str, str], module: Module) -> Look:
        asked.append(dict(settings))  # only Spark reads the user's Ivy settings: it decides
        return Look(Presence.FOUND, where="theirs")

    monkeypatch.setattr(sp, "_spark_look", spark_look)
    users = {"spark.jars.ivySettings": "/etc/mirror-ivysettings.xml", "spark.jars.excludes": "a:b"}
    settings = sp.with_kafka_source(users, build)
    assert settings["spark.jars.ivySettings"] == "/etc/mirror-ivysettings.xml"
    assert settings["spark.jars.excludes"] == "a:b"
    assert settings["spark.jars.packages"] == build.kafka_source
    assert [a["spark.jars.ivySettings"] for a in asked] == ["/etc/mirror-ivysettings.xml"]


def test_submit_arguments_give_the_same_package_and_exclusions(tmp_path: Path) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.0.0.jar", "jsr305-3.0.0.jar"))
    assert sp.submit_arguments(build) == [
        "--packages", "org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0",
        "--conf", f"spark.jars.ivy={tmp_path / 'cache' / 'ivy'}",
        "--exclude-packages", "com.google.code.findbugs:jsr305",
    ]  # fmt: skip


def test_the_class_path_request_names_packages_and_local_jars_by_size(tmp_path: Path) -> None:
    jar = tmp_path / "extra.jar"
    jar.write_bytes(b"12345")
    words = sp.class_path_request({"spark.jars": str(jar), "spark.jars.packages": "g:a:1", "spark.ui.enabled": "false"})
    assert words == [f"spark.jars={jar}", "spark.jars.packages=g:a:1", f"{jar}:5"]


def test_one_resolution_into_an_ivy_home_at_a_time(tmp_path: Path) -> None:
    settings = {"spark.jars.packages": "g:a:1", "spark.jars.ivy": str(tmp_path / "ivy")}
    inside: list[int] = []
    overlapped = threading.Event()

    def resolve() -> None:
        with sp.resolution_lock(settings):
            inside.append(1)
            if len(inside) > 1:
                overlapped.set()
            time.sleep(0.2)
            inside.pop()

    threads = [threading.Thread(target=resolve) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not overlapped.is_set()


def test_no_lock_without_a_package_to_resolve(tmp_path: Path) -> None:
    with sp.resolution_lock({"spark.jars.ivy": str(tmp_path / "ivy")}):
        pass
    assert not (tmp_path / "ivy").exists()


def test_the_candidates_are_the_release_then_older_patches_of_its_line_newest_first() -> None:
    assert sp.candidate_versions("4.1.4") == ["4.1.4", "4.1.3", "4.1.2", "4.1.1", "4.1.0"]
    assert sp.candidate_versions("3.5.0") == ["3.5.0"]
    assert sp.candidate_versions("4.2.0-preview1") == ["4.2.0-preview1"]


def _answers(found: dict[str, Presence]) -> tuple[list[str], object]:
    asked: list[str] = []

    def answer(version: str) -> Look:
        asked.append(version)
        return Look(found.get(version, Presence.ABSENT), where="here", reasons=(f"{version} said no",))

    return asked, answer


def test_the_newest_release_that_resolves_is_chosen() -> None:
    asked, answer = _answers({"4.1.2": Presence.FOUND, "4.1.0": Presence.FOUND})
    version, looks = sp.choose_version(sp.candidate_versions("4.1.4"), answer)  # type: ignore[arg-type]
    assert (version, asked) == ("4.1.2", ["4.1.4", "4.1.3", "4.1.2"])
    assert [seen.presence for seen in looks] == [Presence.ABSENT, Presence.ABSENT, Presence.FOUND]
    asked, answer = _answers({"4.1.4": Presence.FOUND})
    assert sp.choose_version(sp.candidate_versions("4.1.4"), answer)[0] == "4.1.4"  # type: ignore[arg-type]
    assert asked == ["4.1.4"]


def test_a_repository_that_cannot_say_stops_the_search() -> None:
    asked, answer = _answers({"4.1.3": Presence.UNKNOWN, "4.1.2": Presence.FOUND})
    version, _ = sp.choose_version(sp.candidate_versions("4.1.4"), answer)  # type: ignore[arg-type]
    assert (version, asked) == (None, ["4.1.4", "4.1.3"])
    asked, answer = _answers({})
    assert sp.choose_version(["4.0.1", "4.0.0"], answer)[0] is None  # type: ignore[arg-type]
    assert asked == ["4.0.1", "4.0.0"]


def test_an_older_patch_release_serves_when_the_installed_ones_is_missing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.1.4.jar"))
    _publish(tmp_path / "central", "2.13", "4.1.2")  # and 4.1.1: the newest that resolves wins
    with caplog.at_level(logging.INFO, logger="mm2ctl.inspect"):
        settings = sp.with_kafka_source({}, build)
    assert settings["spark.jars.packages"] == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.2"
    (warning,) = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "spark-sql-kafka-0-10_2.13:4.1.4 does not resolve" in warning.getMessage()
    assert (
        f"using org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.2 (from central ({(tmp_path / 'central').as_uri()}"
        in (warning.getMessage())
    )
    # A later run (a new process) takes the recorded choice without asking: the repository lost it meanwhile.
    sp._chosen.clear()
    for ext in ("pom", "jar"):
        (
            tmp_path / "central" / Module("org.apache.spark", "spark-sql-kafka-0-10_2.13", "4.1.2").maven_path(ext)
        ).unlink()
    assert sp.with_kafka_source({}, build)["spark.jars.packages"].endswith(":4.1.2")
    # Once the record is older than a day, the repositories are asked again.
    sp._chosen.clear()
    record = sp._record_file()
    entries = json.loads(record.read_text())
    for entry in entries.values():
        entry["at"] -= sp.RECORD_TTL_S + 1
    record.write_text(json.dumps(entries))
    assert sp.with_kafka_source({}, build)["spark.jars.packages"].endswith(":4.1.1")


def test_the_ivy_cache_answers_before_any_repository(tmp_path: Path) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.0.3.jar"))
    cached = tmp_path / "cache" / "ivy" / "cache" / "org.apache.spark" / "spark-sql-kafka-0-10_2.13"
    (cached / "jars").mkdir(parents=True)
    (cached / "ivy-4.0.3.xml").write_text("<ivy-module/>")
    (cached / "jars" / "spark-sql-kafka-0-10_2.13-4.0.3.jar").write_bytes(b"")
    choice = sp.kafka_source(build, {"spark.jars.ivy": str(tmp_path / "cache" / "ivy")})
    assert (choice.coordinate, choice.fallback) == ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.3", False)
    assert choice.where.startswith("the Ivy cache")


def test_the_users_maven_cache_counts_as_spark_asks_it(tmp_path: Path) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.0.2.jar"))
    _publish(tmp_path / "home" / ".m2" / "repository", "2.13", "4.0.2")
    choice = sp.kafka_source(build, {"spark.jars.ivy": str(tmp_path / "ivy")})
    assert (choice.coordinate.rsplit(":", 1)[1], choice.where.split(" ")[0]) == ("4.0.2", "local-m2-cache")


class _Repository(http.server.SimpleHTTPRequestHandler):
    """A Maven repository on loopback serving the files under its folder; when ``broken``, 500 for 4.1.3's."""

    seen: list[tuple[str, str | None]]

    def do_HEAD(self) -> None:
        if self._answered():
            super().do_HEAD()

    def do_GET(self) -> None:
        if self._answered():
            super().do_GET()

    def _answered(self) -> bool:
        self.seen.append((self.path, self.headers.get("Authorization")))
        if "4.1.3" in self.path and getattr(self.server, "broken", False):
            self.send_error(500)
            return False
        return True

    def log_message(self, *_: object) -> None:
        return


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, http.server.ThreadingHTTPServer, list[tuple[str, str | None]]]]:
    folder = tmp_path / "mirror"
    folder.mkdir()
    seen: list[tuple[str, str | None]] = []
    handler = type("Handler", (_Repository,), {"seen": seen})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        lambda *a: handler(*a, directory=str(folder)),  # type: ignore[misc]
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/maven/", server, seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_mirror_named_in_spark_jars_repositories_is_asked_with_its_credentials(
    tmp_path: Path, mirror: tuple[str, http.server.ThreadingHTTPServer, list[tuple[str, str | None]]]
) -> None:
    url, _, seen = mirror
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.1.4.jar"))
    _publish(tmp_path / "mirror" / "maven", "2.13", "4.1.3")
    with_user = url.replace("http://", "http://reader:s3cret@")
    choice = sp.kafka_source(build, {"spark.jars.ivy": str(tmp_path / "ivy"), "spark.jars.repositories": with_user})
    assert choice.coordinate == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.1.3" and choice.fallback
    assert choice.where == f"repo-1 ({url})"  # no credentials shown
    asked = [path for path, _ in seen]
    assert asked[0] == "/maven/org/apache/spark/spark-sql-kafka-0-10_2.13/4.1.4/spark-sql-kafka-0-10_2.13-4.1.4.pom"
    assert {auth for _, auth in seen} == {"Basic cmVhZGVyOnMzY3JldA=="}  # reader:s3cret


def test_nothing_resolving_is_one_line_with_its_own_exit_code(
    tmp_path: Path, mirror: tuple[str, http.server.ThreadingHTTPServer, list[tuple[str, str | None]]]
) -> None:
    url, _, _ = mirror
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.2.1.jar"))
    with pytest.raises(KafkaSourceUnresolvedError) as raised:
        sp.with_kafka_source({"spark.jars.repositories": url}, build)
    error = raised.value
    assert error.exit_code == ExitCode.KAFKA_SOURCE_UNRESOLVED == 23
    text = str(error)
    assert "\n" not in text
    assert text.startswith(
        "Spark's Kafka source org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.1 (nor 4.2.0 of its minor line) "
        "resolves from none of the repositories tried: the Ivy cache "
    )
    for named in (
        "local-m2-cache",
        "local-ivy-cache",
        f"central ({(tmp_path / 'central').as_uri()})",
        f"repo-1 ({url})",
    ):
        assert named in text
    for remedy in ("--spark-conf spark.jars.packages=", "spark.jars.ivySettings=FILE", "install a pyspark release"):
        assert remedy in text
    assert not sp._record_file().exists()  # nothing recorded: the next run asks again


def test_a_repository_that_cannot_answer_leaves_the_decision_to_spark(
    tmp_path: Path,
    mirror: tuple[str, http.server.ThreadingHTTPServer, list[tuple[str, str | None]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url, server, _ = mirror
    server.broken = True  # type: ignore[attr-defined]
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.1.4.jar"))
    _publish(tmp_path / "mirror" / "maven", "2.13", "4.1.2")
    asked: list[str] = []

    def spark_look(_build: sp.SparkBuild, _settings: object, module: Module) -> Look:
        asked.append(module.version)
        return Look(Presence.ABSENT, reasons=(f"Spark: unresolved dependency: {module.version}: not found",))

    monkeypatch.setattr(sp, "_spark_look", spark_look)
    with pytest.raises(KafkaSourceUnresolvedError) as raised:
        sp.kafka_source(build, {"spark.jars.ivy": str(tmp_path / "ivy"), "spark.jars.repositories": url})
    assert asked == ["4.1.3"]  # 4.1.4 was absent everywhere; 4.1.3 unknown: Spark asked, and 4.1.2 never
    assert f"repo-1 ({url}): HTTP 500" in str(raised.value)
    assert "Spark: unresolved dependency: 4.1.3: not found" in str(raised.value)


def test_a_release_whose_own_dependencies_are_missing_does_not_resolve(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A mirror holding a release's Kafka source but not its sibling token provider (as one did for 4.1.3)."""
    central = tmp_path / "central"
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.1.4.jar", "jsr305-3.0.0.jar"))

    def needs(version: str) -> str:
        return _pom(
            version,
            ("org.apache.spark", "spark-token-provider-kafka-0-10_2.13", version, "compile"),
            ("org.apache.spark", "spark-sql_2.13", version, "provided"),  # Spark's own jars: not asked
            ("com.google.code.findbugs", "jsr305", "3.0.0", "compile"),  # shipped by pyspark: excluded
        )

    for version in ("4.1.3", "4.1.2"):
        _publish(central, "2.13", version, pom=needs(version))
    _publish(central, "2.13", "4.1.2", artifact="spark-token-provider-kafka-0-10")
    shipped = ",".join(build.shipped_dependencies())
    choice = sp.kafka_source(build, {"spark.jars.ivy": str(tmp_path / "ivy"), "spark.jars.excludes": shipped})
    assert choice.coordinate.endswith(":4.1.2"), choice
    # A mirror with 4.1.0's Kafka source alone: the line says what it lacks.
    monkeypatch.setenv("DEFAULT_ARTIFACT_REPOSITORY", (tmp_path / "mirror").as_uri())
    _publish(tmp_path / "mirror", "2.13", "4.1.0", pom=needs("4.1.0"))
    with pytest.raises(KafkaSourceUnresolvedError, match=r"4\.1\.0 needs org\.apache\.spark:spark-token-provider"):
        sp.kafka_source(build, {"spark.jars.ivy": str(tmp_path / "ivy2"), "spark.jars.excludes": shipped})
