"""The failover drill against the shared lab, under both replication policies (each in a flow of its own).

Asserts the goals issue 5 sets: (d) verified translation loses and duplicates nothing in a planned migration;
(c) the conservative rule loses nothing and replays at most one sync interval per partition (the interval MM2
actually left at the commit point, which it aims to keep within ``offset.lag.max``); and (a), the
raw offset number copied, loses records because retention and transaction markers shifted the offsets. And
the round trip: (e) ``plan failback`` after (d), and (f) the timestamp fallback on a partition whose offset
syncs were truncated, both lose and duplicate nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.cli.render import drill_table
from mm2ctl.drill.context import DrillOptions
from mm2ctl.drill.failover_drill import drill_on_lab
from mm2ctl.drill.result import Strategy
from mm2ctl.lab.control import LabInfo

pytestmark = pytest.mark.integration


def _assert_goals(doc: dict[str, Any], policy: str) -> None:
    """Every goal, from the drill's JSON (``DrillResult.to_json``)."""
    assert doc["replication_policy"] == policy
    by = {s["strategy"]: s for s in doc["strategies"]}
    d, c, a = by[Strategy.VERIFIED.value], by[Strategy.CONSERVATIVE.value], by[Strategy.RAW.value]
    assert (d["lost"], d["duplicated"]) == (0, 0), d
    assert c["lost"] == 0, c
    for p in c["partitions"]:
        assert p["sync_interval"] is not None and p["duplicated"] <= p["sync_interval"], p
    assert a["lost"] > 0, a  # the shifted offset numbers make the raw copy skip records
    e, f = by[Strategy.FAILBACK.value], by[Strategy.TIMESTAMP.value]
    assert (e["lost"], e["duplicated"]) == (0, 0), e
    assert (f["lost"], f["duplicated"]) == (0, 0), f
    assert "timestamp_verified=1" in f["detail"], f  # p0 had no offset sync left
    g = by[Strategy.BEHIND.value]  # MM2 throttled behind the commit point when (g) was planned
    assert (g["lost"], g["duplicated"]) == (0, 0), g
    assert "after_catch_up=" in g["detail"], g
    assert doc["goals_met"]
    assert all(p["target_offset"] is not None for p in d["partitions"])


@pytest.mark.extended
def test_drill_goals_identity(lab: LabInfo, tmp_path: Path) -> None:
    """In process, under the identity policy (the default policy's run is the command line's, below)."""
    result = drill_on_lab(lab, replication_policy="identity", options=DrillOptions(partitions=3), workdir=tmp_path)
    print("\n".join(drill_table(result)))
    _assert_goals(result.to_json(), "identity")
    for name in ("verified", "conservative", "failback", "timestamp"):
        assert (tmp_path / f"{name}.yaml").exists(), name


def test_drill_cli_json(lab: LabInfo, tmp_path: Path) -> None:
    """The command line under the default policy: --json, every goal met, and exit 0 when the goals are met
    and 17 when not."""
    command = [sys.executable, "-m", "mm2ctl", "drill", "--lab-dir", lab.dir, "--replication-policy", "default"]
    proc = subprocess.run(
        [*command, "--partitions", "3", "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path)},
    )
    print(proc.stdout)
    (doc,) = json.loads(proc.stdout)
    # The exit code says whether every strategy met its goal, exactly as the JSON does.
    assert proc.returncode == (0 if doc["goals_met"] else 17), proc.stderr
    _assert_goals(doc, "default")


@pytest.mark.extended
def test_drill_with_aborted_transactions(lab: LabInfo, tmp_path: Path) -> None:
    """Every other transaction aborted, the group committed just before an aborted one, MM2 copying the
    aborted records (its default): (d), (e) and (f) still lose, duplicate and read no aborted record first."""
    options = DrillOptions(partitions=3, aborted_transactions=True)
    result = drill_on_lab(lab, replication_policy="default", options=options, workdir=tmp_path)
    print("\n".join(drill_table(result)))
    assert result.aborted_transactions > 0 and result.aborted_copied > 0, result
    for strategy in (Strategy.VERIFIED, Strategy.FAILBACK, Strategy.TIMESTAMP):
        s = result.outcome(strategy)
        assert (s.lost, s.duplicated, s.aborted) == (0, 0, 0), s
    c = result.outcome(Strategy.CONSERVATIVE)
    assert c.lost == 0 and c.met, c
    # Resuming after the last sync below the commit point reads the copies of the aborted transaction that
    # follows it: the load does what it is for.
    assert c.aborted > 0, c
    assert result.goals_met
