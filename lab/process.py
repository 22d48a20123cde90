"""JVM processes of the lab: start detached with logs in the lab folder, poll until ready, stop for sure.

Every JVM runs in its own session (process group), so ``stop`` can signal the JVM and anything it forked,
and a lab left behind by a killed test run can still be stopped from ``lab.json``: a pid is only signalled
when ``/proc/<pid>/cmdline`` still names the lab folder, so a recycled pid is never killed by mistake.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.errors import LabError
from mm2ctl.core.java.tools import java_tool
from mm2ctl.core.polling import poll_until


def free_port() -> int:
    """A loopback TCP port free right now (the kernel's pick, so parallel labs never collide)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def java_executable() -> str:
    java = java_tool("java")
    if java is None:
        raise LabError("no 'java' on PATH and JAVA_HOME is unset; the lab needs Java 17+")
    return java


@dataclass(frozen=True, slots=True)
class JvmSpec:
    name: str
    main_class: str
    args: tuple[str, ...]
    classpath: str
    heap: str = "512m"
    system_properties: tuple[tuple[str, str], ...] = ()


def jvm_command(spec: JvmSpec) -> list[str]:
    return [
        java_executable(),
        "-Xms64m",
        f"-Xmx{spec.heap}",
        "-XX:+UseG1GC",
        "-XX:MaxGCPauseMillis=20",
        "-Djava.awt.headless=true",
        "-Djava.net.preferIPv4Stack=true",
        *(f"-D{k}={v}" for k, v in spec.system_properties),
        "-cp",
        spec.classpath,
        spec.main_class,
        *spec.args,
    ]


def run_java_tool(spec: JvmSpec, log_file: Path, *, timeout_s: float) -> None:
    """Run a short-lived JVM (e.g. the KRaft storage formatter) to completion."""
    with log_file.open("ab") as log:
        try:
            proc = subprocess.run(
                jvm_command(spec), stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise LabError(f"{spec.name} did not finish within {timeout_s:.0f}s (log: {log_file})") from exc
    if proc.returncode != 0:
        raise LabError(f"{spec.name} exited with {proc.returncode}:\n{tail(log_file)}")


def start_jvm(spec: JvmSpec, log_file: Path) -> int:
    """Start a long-running JVM detached from us; return its pid."""
    return start_command(jvm_command(spec), log_file)


def start_command(argv: Sequence[str], log_file: Path, *, env: Mapping[str, str] | None = None) -> int:
    """Start a long-running process detached from us, output to ``log_file``; return its pid. ``env``, when
    given, is its whole environment."""
    log = log_file.open("ab")
    try:
        proc = subprocess.Popen(
            list(argv),
            env=None if env is None else dict(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        log.close()
    return proc.pid


def tail(log_file: Path, lines: int = 25) -> str:
    try:
        text = log_file.read_text(errors="replace")
    except OSError:
        return f"(no log at {log_file})"
    return "\n".join(text.splitlines()[-lines:])


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours is dead for our purposes; reap it.
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0]
        return state != "Z"
    except (OSError, IndexError):
        return True


def owned_by(pid: int, marker: str) -> bool:
    """True when ``pid`` is still the process we started: its command line names ``marker``."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return marker in cmdline


def wait_until(
    check: Callable[[], bool],
    *,
    what: str,
    timeout_s: float,
    interval_s: float = 0.25,
    alive: Callable[[], bool] | None = None,
    log_file: Path | None = None,
) -> None:
    """Poll ``check`` until it is true or the deadline passes; fail fast when the process died."""

    def ready() -> bool:
        if check():
            return True
        if alive is not None and not alive():
            detail = f":\n{tail(log_file)}" if log_file else ""
            raise LabError(f"{what}: the process exited before it was ready{detail}")
        return False

    if not poll_until(ready, timeout_s=timeout_s, interval_s=interval_s):
        detail = f" (log: {log_file})" if log_file else ""
        raise LabError(f"{what}: not ready after {timeout_s:.0f}s{detail}")


def stop_pids(pids: Sequence[int], marker: str, *, timeout_s: float = 30.0) -> list[int]:
    """SIGTERM each owned pid's process group, then SIGKILL what is left at the deadline.

    Returns the pids that were still running and had to be signalled.
    """
    owned = [p for p in pids if is_alive(p) and owned_by(p, marker)]
    for pid in owned:
        _signal_group(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and any(is_alive(p) for p in owned):
        time.sleep(0.2)
    for pid in owned:
        if is_alive(pid):
            _signal_group(pid, signal.SIGKILL)
    hard_deadline = time.monotonic() + 10
    while time.monotonic() < hard_deadline and any(is_alive(p) for p in owned):
        time.sleep(0.1)
    survivors = [p for p in owned if is_alive(p)]
    if survivors:
        raise LabError(f"processes {survivors} survived SIGKILL")
    return owned


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
