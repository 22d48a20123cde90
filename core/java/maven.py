"""Resolve pinned jars from Maven Central with ``mvn`` into the cache shared by the lab and the inspector.

Each resolution lands in its own folder under ``<cache>/jars/`` and is marked complete only after ``mvn``
succeeded, so an interrupted download is redone rather than half-used. Maven's ``~/.m2`` keeps the
downloads, so a fresh clone on a warm machine resolves in seconds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib import resources
from pathlib import Path

from mm2ctl.core.errors import LabError

_COMPLETE_MARKER = ".complete"


def cache_root() -> Path:
    """``$MM2CTL_CACHE``, else ``~/.cache/mm2ctl``."""
    root = os.environ.get("MM2CTL_CACHE") or os.path.join(Path.home(), ".cache", "mm2ctl")
    return Path(root)


def packaged_pom(package: str, name: str) -> Path:
    """A pom shipped as package data beside ``<package>``'s modules."""
    path = Path(str(resources.files(package).joinpath(name)))
    if not path.is_file():
        raise LabError(f"the packaged pom {name} of {package} is missing from this install")
    return path


def resolve_jars(pom: Path, name: str, properties: dict[str, str], *, timeout_s: float = 900.0) -> Path:
    """Copy the runtime dependencies of ``pom`` into ``<cache>/jars/<name>/`` once; return that folder."""
    out_dir = cache_root() / "jars" / name
    if (out_dir / _COMPLETE_MARKER).is_file():
        return out_dir
    mvn = shutil.which("mvn")
    if mvn is None:
        raise LabError("Maven ('mvn') is not on PATH; install Maven 3.8+ to resolve the Kafka and Spark jars")
    partial = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    cmd = [
        mvn,
        "-B",
        "-q",
        "-gs",
        str(Path(str(resources.files("mm2ctl.core.java").joinpath("maven-settings.xml")))),
        "-f",
        str(pom),
        *(f"-D{k}={v}" for k, v in sorted(properties.items())),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={partial}",
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"mvn did not finish resolving {name} within {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise LabError(f"mvn failed to resolve {name} from {pom.name}:\n{tail}")
    (partial / _COMPLETE_MARKER).write_text("ok\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    partial.rename(out_dir)
    return out_dir
