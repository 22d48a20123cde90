"""``mm2ctl inspect --watch``: one process, one Spark session, inspecting again every interval until Ctrl-C.
A group committed on the source while it watches shows in a later table of the same process; Ctrl-C (SIGINT to
the whole process group, as a terminal sends it) ends it promptly with exit 130, and no process it started
(Spark's driver JVM, the group-types client) outlives it."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import IO

import pytest

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually, source_conf

pytestmark = pytest.mark.integration

#: How long Ctrl-C may take to end the watch: the inspection in flight is abandoned and Spark's JVM stopped.
INTERRUPT_DEADLINE_S = 45


def _group_members(pgid: int) -> set[int]:
    """The live processes of process group ``pgid`` (the watch ran as the leader of a session of its own)."""
    members = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while listed
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.add(int(stat.parent.name))
    return members


class Lines:
    """A process's stdout, line by line, read on a thread of its own."""

    def __init__(self, stream: IO[str]) -> None:
        self.seen: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line)

    def until(self, wanted: str, timeout_s: float) -> int:
        """Read until a line holds ``wanted``; how many tables (``-- time --`` lines) it had seen by then."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=1)
            except queue.Empty:
                continue
            self.seen.append(line)
            if wanted in line:
                return sum(1 for s in self.seen if s.startswith("-- "))
        raise AssertionError(f"no line with {wanted!r} in {timeout_s:.0f}s: {self.seen[-20:]}")


def test_watch_inspects_again_in_one_process_and_sees_a_new_group(lab: LabInfo, tmp_path: Path) -> None:
    name = f"watch{uuid.uuid4().hex[:6]}"
    topic = f"iso-{name}-t"
    source = KafkaAdmin.connect(source_conf(lab))
    source.create_topics({topic: 2})
    records.produce(source_conf(lab), topic, [(None, f"r{i}".encode(), i % 2) for i in range(100)])
    source.alter_group_offsets({f"iso-{name}-g1": {(topic, p): 20 for p in range(2)}})
    flow = lab_core.add_flow(lab, name)
    pair = f"{flow.source_alias}->{flow.target_alias}"
    watch = subprocess.Popen(
        [sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_config, "--pair", pair,
         "--watch", "1", "-q", "--spark-conf", "spark.sql.shuffle.partitions=4"],
        stdout=subprocess.PIPE, stderr=(tmp_path / "stderr").open("w"), text=True,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")}, start_new_session=True,
    )  # fmt: skip
    try:
        assert watch.stdout is not None
        out = Lines(watch.stdout)
        tables_before = out.until(f"{pair}: 2 group partition(s)", timeout_s=300)
        source.alter_group_offsets({f"iso-{name}-g2": {(topic, p): 30 for p in range(2)}})
        tables_after = out.until(f"{pair}: 4 group partition(s)", timeout_s=120)
        assert tables_after > tables_before >= 1, out.seen
        assert watch.poll() is None, (tmp_path / "stderr").read_text()[-3000:]  # still watching
        started = _group_members(watch.pid) - {watch.pid}
        assert started, "the watch runs no process of its own (Spark's driver JVM)"
        os.killpg(watch.pid, signal.SIGINT)  # Ctrl-C: to the process group, the JVMs included
        sent = time.monotonic()
        code = watch.wait(timeout=INTERRUPT_DEADLINE_S)
        print(f"\nthe watch ended {time.monotonic() - sent:.1f} s after Ctrl-C")
        stderr = (tmp_path / "stderr").read_text()
        assert code == 130, stderr[-3000:]
        assert stderr.splitlines()[-1:] == ["mm2ctl: interrupted"], stderr[-3000:]
        assert "Traceback" not in stderr, stderr[-3000:]
        eventually(lambda: not _group_members(watch.pid), timeout_s=30, what=f"the processes {started} gone")
    finally:
        if watch.poll() is None:
            os.killpg(watch.pid, signal.SIGKILL)
            watch.wait(timeout=30)
