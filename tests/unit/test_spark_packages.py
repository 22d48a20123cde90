"""Spark's Kafka source as a package of the installed Spark: coordinates, exclusions, and the user's choice."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from mm2ctl.core.errors import InspectError
from mm2ctl.inspector import spark_packages as sp


def _spark_home(tmp_path: Path, *jars: str) -> Path:
    home = tmp_path / "spark"
    (home / "jars").mkdir(parents=True)
    for name in jars:
        (home / "jars" / name).write_bytes(b"")
    return home


@pytest.fixture(autouse=True)
def _cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MM2CTL_CACHE", str(tmp_path / "cache"))


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


def test_the_users_ivy_settings_stand_beside_our_package(tmp_path: Path) -> None:
    build = sp.installed_build(_spark_home(tmp_path, "spark-core_2.13-4.1.1.jar"))
    users = {"spark.jars.ivySettings": "/etc/mirror-ivysettings.xml", "spark.jars.excludes": "a:b"}
    settings = sp.with_kafka_source(users, build)
    assert settings["spark.jars.ivySettings"] == "/etc/mirror-ivysettings.xml"
    assert settings["spark.jars.excludes"] == "a:b"
    assert settings["spark.jars.packages"] == build.kafka_source


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
