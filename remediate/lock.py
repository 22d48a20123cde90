"""The apply lock: two applies (or an apply and a rollback) must never change the same clusters at once.

Why ``fcntl.flock``: the kernel drops the lock when the holder's file descriptor closes, which includes
``kill -9`` and a crash, so there is no stale-lock cleanup and no "remove the lock file if you are sure"
advice. The lock file is never deleted (deleting a flock'd file lets a second process lock a new inode
while the first still holds the old one); it only carries who holds it, for the error message.

Scope: one lock per Kafka cluster id, taken for every cluster a plan names plus the Connect worker's Kafka
cluster. Two plans that share any cluster therefore exclude each other, whatever their pair or kind, while
applies to unrelated clusters run in parallel. Locks are taken in sorted order and non-blocking, so they
cannot deadlock; if any is held, the ones already taken are released and ``LockError`` names the holder.

Location: ``<state dir>/locks/kafka-cluster-<id>.lock`` (state dir as in ``remediate.journal``:
``$MM2CTL_STATE_DIR``, ``$XDG_STATE_HOME/mm2ctl`` or ``~/.local/state/mm2ctl``).

Limits, stated plainly: ``flock`` is host-local. Two operators applying from different machines are not
excluded by this lock; apply's stale-plan check (the fingerprint) is what catches the second one. A child
created with ``fork`` (not ``exec``) shares the descriptor and so keeps the lock alive until it exits too.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from mm2ctl.core.errors import LockError
from mm2ctl.plans.document import Plan
from mm2ctl.remediate.journal import default_state_dir

_SAFE_ID = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class LockHolder:
    """Who holds a lock, as the holder wrote it into the lock file."""

    pid: int
    host: str
    started_at: str
    plan_id: str | None = None
    command: str | None = None

    def describe(self) -> str:
        what = f" ({self.command} of plan {self.plan_id})" if self.plan_id else ""
        return f"pid {self.pid} on {self.host}, since {self.started_at}{what}"


def lock_dir(state_dir: Path | None = None) -> Path:
    return (state_dir or default_state_dir()) / "locks"


def lock_path_for_cluster(cluster_id: str, state_dir: Path | None = None) -> Path:
    """The lock file of one Kafka cluster id (ids that are not file-name safe are hashed)."""
    safe = _SAFE_ID.match(cluster_id)
    name = cluster_id if safe else "h-" + hashlib.sha256(cluster_id.encode()).hexdigest()
    return lock_dir(state_dir) / f"kafka-cluster-{name}.lock"


def cluster_ids_of(plan: Plan) -> list[str]:
    """Every Kafka cluster an apply of ``plan`` may change: its clusters and its Connect worker's cluster."""
    ids = set(plan.clusters.values())
    if plan.connect is not None:
        ids.add(plan.connect.kafka_cluster_id)
    return sorted(ids)


def read_holder(path: Path) -> LockHolder | None:
    """The holder recorded in a lock file, or None if it is empty or unreadable (just being written)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        return LockHolder(
            pid=int(doc["pid"]),
            host=str(doc["host"]),
            started_at=str(doc["started_at"]),
            plan_id=doc.get("plan_id"),
            command=doc.get("command"),
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None


class ApplyLock:
    """An exclusive, non-blocking lock over a set of Kafka clusters. Use as a context manager::

    with lock_for_plan(plan, command="apply"):
        ...  # only this process may apply or roll back to these clusters now
    """

    def __init__(
        self,
        cluster_ids: Iterable[str],
        *,
        state_dir: Path | None = None,
        plan_id: str | None = None,
        command: str = "apply",
    ) -> None:
        ids = sorted(set(cluster_ids))
        if not ids:
            raise LockError("nothing to lock: the plan names no cluster")
        self.paths = [lock_path_for_cluster(i, state_dir) for i in ids]
        self.plan_id = plan_id
        self.command = command
        self._fds: list[int] = []

    @property
    def held(self) -> bool:
        return bool(self._fds)

    def acquire(self) -> None:
        """Take every lock or none; ``LockError`` names the holder of the first one that is taken."""
        if self._fds:
            raise LockError("this lock is already held by this process")
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        record = json.dumps(
            {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started_at": started_at,
                "plan_id": self.plan_id,
                "command": self.command,
            }
        ).encode("utf-8")
        try:
            for path in self.paths:
                self._fds.append(self._take(path, record))
        except BaseException:
            self.release()
            raise

    def _take(self, path: Path, record: bytes) -> int:
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise LockError(f"cannot open lock file {path}: {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise LockError(f"cannot lock {path}: {exc.strerror or exc}") from exc
            holder = read_holder(path)
            who = holder.describe() if holder else "a process that has not yet recorded itself"
            raise LockError(f"another apply holds the lock {path.name}: {who}") from exc
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, record, 0)
        except OSError as exc:
            os.close(fd)
            raise LockError(f"cannot record the lock holder in {path}: {exc.strerror or exc}") from exc
        return fd

    def release(self) -> None:
        """Release every lock held (idempotent). The holder record is cleared, the file kept."""
        fds, self._fds = self._fds, []
        for fd in reversed(fds):
            with contextlib.suppress(OSError):  # clearing the record is cosmetic; close() releases
                os.ftruncate(fd, 0)
            os.close(fd)

    def __enter__(self) -> ApplyLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()


def lock_for_plan(plan: Plan, *, state_dir: Path | None = None, command: str = "apply") -> ApplyLock:
    """The lock an apply or rollback of ``plan`` must hold (not yet acquired)."""
    return ApplyLock(cluster_ids_of(plan), state_dir=state_dir, plan_id=plan.plan_id, command=command)
