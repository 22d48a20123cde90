"""``mm2ctl drill --group-types`` on the shared lab (Kafka 4.3.1): per group type, one group left to MirrorMaker 2
and one failed over by mm2ctl, then failed back, counted by content on real clients.

MM2 syncs the classic and consumer groups itself; it never touches share and streams groups, so left alone a
share group starts at the target's log end (it loses every record it had not acknowledged) and a Kafka
Streams application starts at the earliest offset (it processes everything again). mm2ctl loses nothing for
any type, and delivers again only a share group's records acknowledged past its start offset, exactly as
many as its plan's note counts.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mm2ctl.core.kafka.group_admin import GROUP_TYPES
from mm2ctl.lab.control import LabInfo

pytestmark = [pytest.mark.integration, pytest.mark.extended]


def test_mm2ctl_moves_every_group_type_where_mm2_alone_loses_or_repeats(lab: LabInfo, tmp_path: Path) -> None:
    env = {**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")}
    args = ["drill", "--lab-dir", lab.dir, "--group-types", "--json", "--quiet", "--workdir", str(tmp_path / "work")]
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "mm2ctl", *args], capture_output=True, text=True, env=env, timeout=600, check=False
    )
    took = time.monotonic() - started
    assert proc.returncode == 0, f"exit {proc.returncode} after {took:.0f}s\n{proc.stdout}\n{proc.stderr[-3000:]}"
    doc = json.loads(proc.stdout)
    rows = {(r["group_type"], r["method"]): r for r in doc["rows"]}
    assert doc["goals_met"] is True
    assert set(rows) == {(t, m) for t in GROUP_TYPES for m in ("mm2", "mm2ctl", "failback")}

    # mm2ctl, both ways: nothing lost for any type; nothing delivered again but what the share plan counts.
    for t in GROUP_TYPES:
        for method in ("mm2ctl", "failback"):
            row = rows[(t, method)]
            assert row["lost"] == 0, row
            assert row["met"] is True, row
            if t == "share":
                assert row["planned_again"] is not None, row
                assert row["delivered_again"] == row["planned_again"], row
            else:
                assert row["delivered_again"] == 0, row

    # The share group released one record: it resumes there, and what it accepted past it comes again, counted.
    gapped = sum(n - doc["released"] - 1 for n in doc["accepted"])
    assert rows[("share", "mm2ctl")]["planned_again"] == gapped > 0, rows[("share", "mm2ctl")]

    # MM2 alone: the share group starts at the log end and loses everything it had not acknowledged; the
    # streams application starts at the earliest offset and processes again everything it had processed.
    share, streams = rows[("share", "mm2")], rows[("streams", "mm2")]
    per_partition = doc["first"] + doc["later"]
    unread = sum(per_partition - n + (1 if doc["released"] >= 0 else 0) for n in doc["accepted"])
    assert share["lost"] == unread > 0, share
    assert share["delivered_again"] == 0, share
    assert streams["delivered_again"] == doc["partitions"] * doc["first"] > 0, streams
    assert streams["lost"] == 0, streams
    for t in ("classic", "consumer"):  # MM2 synced these: whatever it did is measured, nothing more is claimed
        assert rows[(t, "mm2")]["met"] is None
