"""`mm2ctl inspect` when the installed Spark's Kafka source is not in the Maven repository Spark resolves from.

The Spark here claims the next patch release of the installed one (a Spark home of links to the real one, its
``spark-core`` jar named one patch higher), as a pyspark newer than a company's mirror would. Spark's Ivy is
pointed at a local Maven-layout folder only (``spark.jars.ivySettings`` with that one resolver, an empty Ivy
home), made from what Spark resolved before into mm2ctl's Ivy cache: it holds the Kafka source of the real
release, not of the claimed one. Nothing leaves the machine.

- With that folder, the claimed release does not resolve, the real one does: the run uses it, says so in a
  warning without ``-v``, and reads Kafka with it (one Spark session).
- With an empty folder, nothing resolves: one error line naming the artifact, the repository and the remedies,
  and exit 23, before Spark starts.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.inspector.spark import packages as sp
from mm2ctl.inspector.spark.repositories import in_ivy_cache
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually

pytestmark = pytest.mark.integration


def _maven_repository(ivy_cache: Path, repo: Path) -> None:
    """``repo`` in Maven's layout with every module of ``ivy_cache`` (Ivy keeps each POM as ``ivy-V.xml.original``
    and its jar under ``jars/``)."""
    for module in ivy_cache.glob("*/*"):
        for pom in module.glob("ivy-*.xml.original"):
            version = pom.name.removeprefix("ivy-").removesuffix(".xml.original")
            folder = repo / module.parent.name.replace(".", "/") / module.name / version
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(pom, folder / f"{module.name}-{version}.pom")
            jar = module / "jars" / f"{module.name}-{version}.jar"
            if jar.is_file():
                shutil.copyfile(jar, folder / f"{module.name}-{version}.jar")


def _ivy_settings(path: Path, repo: Path) -> Path:
    path.write_text(
        "<ivysettings>\n"
        '  <settings defaultResolver="local-only"/>\n'
        f'  <resolvers><ibiblio name="local-only" root="{repo.as_uri()}/" m2compatible="true" usepoms="true"/>'
        "</resolvers>\n"
        "</ivysettings>\n"
    )
    return path


def _next_patch_home(real: sp.SparkBuild, home: Path) -> str:
    """A Spark home of links to ``real``'s whose ``spark-core`` jar says the next patch release; that release."""
    major, minor, patch = real.spark_version.split(".")
    claimed = f"{major}.{minor}.{int(patch) + 1}"
    home.mkdir()
    for entry in real.home.iterdir():
        if entry.name != "jars":
            (home / entry.name).symlink_to(entry)
    (home / "jars").mkdir()
    for jar in real.jars.iterdir():
        name = jar.name
        if name.startswith(f"spark-core_{real.scala_version}-"):
            name = f"spark-core_{real.scala_version}-{claimed}.jar"
        (home / "jars" / name).symlink_to(jar)
    return claimed


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[sp.SparkBuild, str, Path, str]:
    """The real build, the Kafka source release it runs with, the claiming Spark home and its release."""
    real = sp.installed_build()
    serving = sp.with_kafka_source({}, real)[sp.PACKAGES].split(",")[0]
    served = serving.rsplit(":", 1)[1]
    module = real.kafka_module(served)
    assert in_ivy_cache(sp.ivy_home(), module), f"{serving} is not in {sp.ivy_home()}: run `mm2ctl lab jars`"
    folder = tmp_path_factory.mktemp("kafka-source")
    claimed = _next_patch_home(real, folder / "spark")
    return real, served, folder / "spark", claimed


def _inspect(lab: LabInfo, tmp: Path, home: Path, ivy_settings: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", lab.mm2_config, *extra,
            "--spark-conf", f"spark.jars.ivySettings={ivy_settings}",
            "--spark-conf", f"spark.jars.ivy={tmp / 'ivy'}",  # empty: Spark resolves from the folder alone
            "--spark-conf", "spark.driver.extraJavaOptions=-Xshare:auto",  # no class archive for this class path
        ],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "SPARK_HOME": str(home), "MM2CTL_STATE_DIR": str(tmp / "state")},
    )  # fmt: skip


def test_an_older_patch_release_of_the_kafka_source_serves_and_is_named(
    lab: LabInfo, tmp_path: Path, setup: tuple[sp.SparkBuild, str, Path, str]
) -> None:
    real, served, home, claimed = setup
    repo = tmp_path / "repo"
    _maven_repository(sp.ivy_home() / "cache", repo)
    assert not (repo / real.kafka_module(claimed).maven_path("pom")).exists()

    # A group on a topic of the lab's flow: its row needs the offset syncs, read with Spark's Kafka source.
    topic, group = f"ks-{uuid.uuid4().hex[:8]}", f"ks-group-{uuid.uuid4().hex[:8]}"
    src = {"bootstrap.servers": lab.source.bootstrap}
    source = KafkaAdmin.connect(src)
    source.create_topics({topic: 1})
    records.produce(src, topic, [(None, f"r{i}".encode(), 0) for i in range(20)])
    eventually(  # a fresh lab's group coordinator may still be loading
        lambda: all(r.error is None for r in source.alter_group_offsets({group: {(topic, 0): 10}})[group]),
        timeout_s=60,
        what=f"{group} committed",
    )

    out = tmp_path / "rows.jsonl"
    proc = _inspect(
        lab, tmp_path, home, _ivy_settings(tmp_path / "ivysettings.xml", repo),
        "--groups", f"^{group}$", "--format", "json", "--output", str(out),
    )  # fmt: skip
    assert proc.returncode in (ExitCode.OK, ExitCode.PROBLEMS_FOUND), proc.stderr[-3000:]
    assert group in out.read_text()
    installed, used = real.kafka_module(claimed).coordinate, real.kafka_module(served).coordinate
    warning = [line for line in proc.stderr.splitlines() if "WARNING mm2ctl.inspect: Spark's Kafka source" in line]
    assert len(warning) == 1, proc.stderr
    assert f"{installed} does not resolve" in warning[0] and f"using {used} (from spark.jars.ivySettings=" in warning[0]
    jar = f"{module_file(used)}.jar"
    assert (tmp_path / "ivy" / "jars" / jar).is_file(), sorted(p.name for p in (tmp_path / "ivy" / "jars").iterdir())


def module_file(coordinate: str) -> str:
    """The name Spark's Ivy gives a resolved jar in ``<ivy home>/jars`` (without ``.jar``)."""
    group, artifact, version = coordinate.split(":")
    return f"{group}_{artifact}-{version}"


def test_no_release_resolving_is_one_line_and_its_own_exit_code(
    lab: LabInfo, tmp_path: Path, setup: tuple[sp.SparkBuild, str, Path, str]
) -> None:
    real, served, home, claimed = setup
    (tmp_path / "empty").mkdir()
    settings = _ivy_settings(tmp_path / "ivysettings.xml", tmp_path / "empty")
    out = tmp_path / "rows.jsonl"
    proc = _inspect(lab, tmp_path, home, settings, "--format", "json", "--output", str(out))
    assert proc.returncode == ExitCode.KAFKA_SOURCE_UNRESOLVED == 23, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert len(errors) == 1, proc.stderr
    older = ", ".join(sp.candidate_versions(claimed)[1:])
    assert errors[0].startswith(
        f"mm2ctl: error: Spark's Kafka source {real.kafka_module(claimed).coordinate} (nor {older} of its minor "
        f"line) resolves from none of the repositories tried: the resolvers of spark.jars.ivySettings={settings} "
    ), errors[0]
    artifact = re.escape(real.kafka_module(served).artifact)
    assert re.search(rf"unresolved dependency: org\.apache\.spark#{artifact};{re.escape(served)}: not found", errors[0])
    for remedy in ("--spark-conf spark.jars.packages=", "spark.jars.ivySettings=FILE", "install a pyspark release"):
        assert remedy in errors[0]
    assert "Traceback" not in proc.stderr and "driver JVM" not in proc.stderr
    assert not out.exists()
