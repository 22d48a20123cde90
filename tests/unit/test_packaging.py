"""The built wheel is the product: one top-level package, ``mm2ctl``, holding every module of every folder.

An editable install hides a package missing from ``pyproject.toml`` (the folder is still on disk), so these
tests build a real wheel with pip, as a user's ``pip wheel .`` would, and read what is inside it.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = out.glob("mm2ctl-*.whl")
    return zipfile.ZipFile(path)


def _package_dirs() -> dict[str, str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    mapping: dict[str, str] = config["tool"]["setuptools"]["package-dir"]
    return mapping


def test_the_wheel_holds_nothing_at_its_top_level_but_mm2ctl(wheel: zipfile.ZipFile) -> None:
    top = {name.split("/")[0] for name in wheel.namelist()}
    dist_info = {t for t in top if t.endswith(".dist-info")}
    assert len(dist_info) == 1
    assert top - dist_info == {"mm2ctl"}


def test_every_source_module_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    expected: set[str] = set()
    for package, folder in _package_dirs().items():
        for source in (ROOT / folder).glob("*.py"):
            expected.add(f"{package.replace('.', '/')}/{source.name}")
    assert expected, "pyproject.toml maps no package folders"
    assert expected - names == set()


def test_every_source_package_is_mapped(wheel: zipfile.ZipFile) -> None:
    """A folder with an ``__init__.py`` under a mapped folder must itself be listed, or its modules are lost."""
    mapped = {(ROOT / folder).resolve() for folder in _package_dirs().values()}
    unmapped = [
        str(init.parent.relative_to(ROOT))
        for folder in list(mapped)
        for init in folder.rglob("__init__.py")
        if init.parent.resolve() not in mapped and "__pycache__" not in init.parts
    ]
    assert unmapped == []


def test_the_wheel_carries_its_data_files_and_entry_point(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for data in (
        "mm2ctl/py.typed",
        "mm2ctl/core/java/maven-settings.xml",
        "mm2ctl/core/java/CommittedOffsets.java",
        "mm2ctl/core/java/GroupAdmin.java",
        "mm2ctl/core/java/group-admin.pom.xml",
        "mm2ctl/core/java/StreamsApp.java",
        "mm2ctl/core/java/streams-app.pom.xml",
        "mm2ctl/core/java/TranslateOffsets.java",
        "mm2ctl/core/java/translate-offsets.pom.xml",
        "mm2ctl/lab/kafka.pom.xml",
        "mm2ctl/inspector/spark/log4j2-driver.properties",
        "mm2ctl/report/page.js",
        "mm2ctl/report/page.css",
    ):
        assert data in names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    assert "mm2ctl = mm2ctl.cli.main:main" in wheel.read(entry_points).decode()
