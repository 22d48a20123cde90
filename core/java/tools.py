"""The JDK's tools: one owner of finding ``java``/``javac`` and of the compile cache that ``core.java.programs``
compiles each Java program into."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path

from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.java.maven import cache_root


def java_tool(name: str) -> str | None:
    """``$JAVA_HOME/bin/<name>`` when it exists, else ``<name>`` on PATH, else None (``java``, ``javac``)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / name).is_file():
        return str(Path(java_home) / "bin" / name)
    return shutil.which(name)


def compiled(
    source: str,
    file_name: str,
    classpath: str,
    *,
    cache_name: str,
    resources: Mapping[str, str] | None = None,
    error: type[Mm2ctlError] = Mm2ctlError,
) -> Path:
    """The folder of ``source`` (the text of ``file_name``) compiled against ``classpath``, with ``resources``
    (file name -> text) beside its classes: made once per source, class path and resources under
    ``<cache>/classes/<cache_name>-<digest>``, in a temporary folder renamed into place, so an interrupted
    compile is never used. Failures raise ``error``."""
    extra = dict(resources or {})
    digest = hashlib.sha256("\0".join([source, classpath, *sorted(f"{k}={v}" for k, v in extra.items())]).encode())
    out = cache_root() / "classes" / f"{cache_name}-{digest.hexdigest()[:16]}"
    if out.is_dir():
        return out
    javac = java_tool("javac")
    if javac is None:
        raise error(f"{file_name} needs a JDK 17+: no 'javac' in JAVA_HOME or on PATH")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        (work / file_name).write_text(source, encoding="utf-8")
        classes = work / "classes"
        cmd = [javac, "--release", "17", "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(classes)]
        try:
            proc = subprocess.run([*cmd, str(work / file_name)], capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired as exc:
            raise error(f"javac did not compile {file_name} within 120s") from exc
        if proc.returncode != 0:
            raise error(f"javac failed on {file_name}:\n{(proc.stdout + proc.stderr).strip()}")
        for name, text in extra.items():
            (classes / name).write_text(text, encoding="utf-8")
        try:
            classes.rename(out)
        except OSError:
            if not out.is_dir():  # not another process that finished the same compile first
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out
