"""The apply lock, exercised across real processes: held means refused, released or killed means free."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2ctl.core.errors import LockError
from mm2ctl.remediate.lock import ApplyLock, cluster_ids_of, lock_for_plan, lock_path_for_cluster, read_holder
from tests.unit.test_plan_samples import CLUSTERS, sample_plan

REPO = Path(__file__).resolve().parents[2]

HOLDER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mm2ctl.remediate.lock import ApplyLock
    ids = sys.argv[2].split(",")
    lock = ApplyLock(ids, state_dir=Path(sys.argv[1]), plan_id="held-plan", command="apply")
    lock.acquire()
    print("locked", flush=True)
    sys.stdin.readline()  # hold until told to go (or killed)
    lock.release()
    print("released", flush=True)
    """
)

TRY = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from mm2ctl.core.errors import LockError
    from mm2ctl.remediate.lock import ApplyLock
    try:
        with ApplyLock(sys.argv[2].split(","), state_dir=Path(sys.argv[1])):
            print("acquired")
    except LockError as exc:
        print(f"LockError: {exc}")
        sys.exit(int(exc.exit_code))
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


class Holder:
    """A separate process holding the lock until released or killed."""

    def __init__(self, state_dir: Path, ids: list[str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(state_dir), ",".join(ids)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()  # blocks until the child holds the lock (or dies)
        assert line == "locked", f"holder did not take the lock: {line!r}"

    def release(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "released"
        self.proc.wait(timeout=30)
        self.close()

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.close()

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


@pytest.fixture
def holders() -> Iterator[list[Holder]]:
    made: list[Holder] = []
    yield made
    for h in made:
        h.close()


def try_in_other_process(state_dir: Path, ids: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TRY, str(state_dir), ",".join(ids)],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
        check=False,
    )


def test_second_process_is_refused_while_held_and_admitted_after_release(tmp_path: Path) -> None:
    ids = sorted(set(CLUSTERS.values()))
    with ApplyLock(ids, state_dir=tmp_path, plan_id="p-1", command="apply") as lock:
        assert lock.held
        refused = try_in_other_process(tmp_path, ids)
        assert refused.returncode == int(LockError.exit_code)
        assert f"pid {os.getpid()}" in refused.stdout
        assert "apply of plan p-1" in refused.stdout
        holder = read_holder(lock.paths[0])
        assert holder is not None and holder.pid == os.getpid() and holder.started_at
    assert not lock.held
    admitted = try_in_other_process(tmp_path, ids)
    assert admitted.returncode == 0, admitted.stdout + admitted.stderr
    assert admitted.stdout.strip() == "acquired"


def test_lock_held_by_another_process_names_its_pid_and_start_time(tmp_path: Path, holders: list[Holder]) -> None:
    holder = Holder(tmp_path, ["clusterA"])
    holders.append(holder)
    with pytest.raises(LockError) as info:
        ApplyLock(["clusterA"], state_dir=tmp_path).acquire()
    message = str(info.value)
    assert f"pid {holder.proc.pid}" in message
    recorded = read_holder(lock_path_for_cluster("clusterA", tmp_path))
    assert recorded is not None and f"since {recorded.started_at}" in message
    holder.release()
    with ApplyLock(["clusterA"], state_dir=tmp_path):
        pass


def test_kill_9_of_the_holder_frees_the_lock(tmp_path: Path, holders: list[Holder]) -> None:
    holder = Holder(tmp_path, ["clusterA", "clusterB"])
    holders.append(holder)
    with pytest.raises(LockError):
        ApplyLock(["clusterB"], state_dir=tmp_path).acquire()
    holder.kill9()
    with ApplyLock(["clusterA", "clusterB"], state_dir=tmp_path) as lock:
        assert lock.held  # no stale lock to clean up: the kernel released it with the process


def test_plans_sharing_any_cluster_exclude_each_other_and_partial_locks_are_released(
    tmp_path: Path, holders: list[Holder]
) -> None:
    holders.append(Holder(tmp_path, ["clusterB"]))
    with pytest.raises(LockError, match=r"kafka-cluster-clusterB\.lock"):
        ApplyLock(["clusterA", "clusterB"], state_dir=tmp_path).acquire()
    # clusterA was taken first and must have been let go when clusterB was refused.
    assert try_in_other_process(tmp_path, ["clusterA"]).returncode == 0
    # An unrelated cluster is not blocked.
    with ApplyLock(["clusterC"], state_dir=tmp_path):
        pass


def test_lock_for_plan_covers_its_clusters_and_connect_cluster(tmp_path: Path) -> None:
    plan = sample_plan()
    assert cluster_ids_of(plan) == sorted(CLUSTERS.values())
    lock = lock_for_plan(plan, state_dir=tmp_path, command="rollback")
    assert [p.name for p in lock.paths] == [f"kafka-cluster-{i}.lock" for i in sorted(CLUSTERS.values())]
    with lock:
        holder = read_holder(lock.paths[0])
        assert holder is not None and holder.plan_id == plan.plan_id and holder.command == "rollback"
    assert all(p.exists() for p in lock.paths)  # kept: deleting a flock'd file breaks mutual exclusion
    assert read_holder(lock.paths[0]) is None  # but the holder record is cleared


def test_unsafe_cluster_ids_are_hashed_into_file_names(tmp_path: Path) -> None:
    path = lock_path_for_cluster("../../etc/passwd", tmp_path)
    assert path.parent == tmp_path / "locks" and path.name.startswith("kafka-cluster-h-")


def test_same_process_cannot_take_the_lock_twice(tmp_path: Path) -> None:
    with ApplyLock(["x"], state_dir=tmp_path), pytest.raises(LockError):
        ApplyLock(["x"], state_dir=tmp_path).acquire()
