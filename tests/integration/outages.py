"""Faults the integration tests cause on a real lab: a process killed and started again, a Connect worker
answering 409 past the client's retry budget.

``kill`` SIGKILLs a lab process's whole process group, as a host losing power would, and keeps its exact
command line; ``restart`` runs that command again (same data, ports and log file), waits until it answers,
and records the new pid in ``lab.json``, so ``lab down`` stops it. ``ConflictProxy`` is a loopback HTTP proxy
in front of the real worker that forwards every request, except the ones it is told to answer with Connect's
409 "rebalance" error.
"""

from __future__ import annotations

import dataclasses
import http.server
import json
import os
import re
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.lab.connect_worker import connector_states
from mm2ctl.lab.control import LAB_FILE, ClusterInfo, LabInfo, read_lab
from mm2ctl.lab.kraft import broker_ready
from mm2ctl.lab.process import is_alive, owned_by
from tests.integration.support import eventually


@dataclass(frozen=True)
class Killed:
    """A lab process that was killed: which one, and the command line that starts it again."""

    role: str  # a cluster alias ("primary", "backup") or "connect"
    argv: tuple[str, ...]
    log_file: Path


def _pid(info: LabInfo, role: str) -> int:
    return info.connect_pid if role == "connect" else info.clusters[role].pid


def _log_file(info: LabInfo, role: str) -> Path:
    # Where ``lab up`` has each process log (``kraft.BrokerSpec.log_file``, ``connect_worker.WorkerSpec.log_file``).
    return Path(info.dir) / ("connect/connect.log" if role == "connect" else f"{role}/broker.log")


def kill(lab: LabInfo, role: str) -> Killed:
    """SIGKILL the lab's ``role`` process (and anything it forked); returns how to start it again."""
    info = read_lab(Path(lab.dir))
    pid = _pid(info, role)
    if not (is_alive(pid) and owned_by(pid, info.dir)):
        raise AssertionError(f"the lab's {role} process {pid} is not running")
    argv = tuple(Path(f"/proc/{pid}/cmdline").read_bytes().rstrip(b"\0").decode().split("\0"))
    os.killpg(pid, signal.SIGKILL)
    eventually(lambda: not is_alive(pid), timeout_s=30, what=f"{role} ({pid}) dead")
    return Killed(role=role, argv=argv, log_file=_log_file(info, role))


def restart(lab: LabInfo, killed: Killed, *, timeout_s: float = 180) -> LabInfo:
    """Start the killed process again and wait until it answers; ``lab.json`` gets its new pid."""
    with killed.log_file.open("ab") as log:
        proc = subprocess.Popen(
            list(killed.argv), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
    info = read_lab(Path(lab.dir))
    if killed.role == "connect":
        info = dataclasses.replace(info, connect_pid=proc.pid)
        ready = lambda: _rest_ready(info.connect_url)  # noqa: E731
    else:
        old = info.clusters[killed.role]
        clusters = {**info.clusters, killed.role: ClusterInfo(old.alias, old.bootstrap, old.cluster_id, proc.pid)}
        info = dataclasses.replace(info, clusters=clusters)
        ready = lambda: broker_ready(old.bootstrap)  # noqa: E731
    (Path(info.dir) / LAB_FILE).write_text(info.to_json())
    eventually(lambda: ready() or not is_alive(proc.pid), timeout_s=timeout_s, what=f"{killed.role} answering again")
    assert is_alive(proc.pid), f"{killed.role} exited after its restart (log {killed.log_file})"
    return info


def _rest_ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/connectors", timeout=3) as resp:
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def connectors_running(url: str, names: list[str]) -> bool:
    states = connector_states(url)
    return all(
        n in states and states[n]["state"] == "RUNNING" and all(t == "RUNNING" for t in states[n]["tasks"])  # type: ignore[attr-defined]
        for n in names
    )


#: What a Connect worker answers while its group rebalances (``RebalanceNeededException``).
CONFLICT_BODY = {
    "error_code": 409,
    "message": "Cannot complete request momentarily due to stale configuration (typically caused by a "
    "concurrent config change)",
}


class ConflictProxy:
    """A loopback HTTP proxy to a real Connect worker that answers 409 to the requests matching ``conflict``
    (``"METHOD /path-regex"``) while it is set, and counts them."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.conflict: tuple[str, re.Pattern[str]] | None = None
        self.conflicts_sent = 0
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                return None

            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) or None
                rule = proxy.conflict
                if rule is not None and rule[0] == self.command and rule[1].fullmatch(self.path.split("?")[0]):
                    proxy.conflicts_sent += 1
                    self._answer(409, json.dumps(CONFLICT_BODY).encode(), "application/json")
                    return
                req = urllib.request.Request(proxy.upstream + self.path, data=body, method=self.command)
                for name in ("Content-Type", "Accept", "Authorization"):
                    if self.headers.get(name):
                        req.add_header(name, self.headers[name])
                try:
                    with urllib.request.urlopen(req, timeout=100) as resp:
                        self._answer(resp.status, resp.read(), resp.headers.get("Content-Type"))
                except urllib.error.HTTPError as err:
                    self._answer(err.code, err.read(), err.headers.get("Content-Type"))

            def _answer(self, status: int, payload: bytes, content_type: str | None) -> None:
                self.send_response(status)
                if content_type:
                    self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_PATCH = do_DELETE = _handle

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer_409(self, method: str, path_regex: str) -> None:
        self.conflict = (method, re.compile(path_regex))

    def heal(self) -> None:
        self.conflict = None

    def __enter__(self) -> ConflictProxy:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
