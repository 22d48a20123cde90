"""MirrorMaker 2 with exactly-once source support (``lab up --exactly-once``): the Connect worker writes the
target in transactions, so the target's logs hold MM2's own transaction markers (its offsets advance past
records no consumer reads) and MM2 writes its offset syncs once each transaction commits. The flow is set up
as exactly-once MM2 is meant to run: ``exactly.once.support=required`` on its source connector, which Connect
accepts only with a ``read_committed`` source consumer, so no aborted record reaches the target.

MM2 writes a burst of offset syncs at each commit and keeps at most a few in flight, so a partition may be
left with very few (the lab showed one for a partition of 30 records): groups below a partition's first sync
are then translated by timestamp, proven by content like the rest.

One lab of its own for this file (about as long to boot as the default one).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.plans.kafka_records import read_sync_histories
from mm2ctl.plans.live_state import open_live_state
from tests.integration.support import eventually, source_conf, target_conf, uniq
from tests.integration.test_remediate import mm2ctl
from tests.integration.transactions import commit_points, first_read, next_committed, produce_transactions, source_log

pytestmark = [pytest.mark.integration, pytest.mark.extended, pytest.mark.lab(exactly_once=True)]

PARTITIONS = 2
#: Positions proven by content: from an offset sync, or (where MM2 left no sync at or below the group) by timestamp.
EXACT = {"verified_delta", "verified_search", "timestamp_verified"}


def test_exactly_once_flow_is_inspected_and_failed_over_exactly(lab: LabInfo, tmp_path: Path) -> None:
    assert lab.exactly_once
    name = "eos" + uniq("a").split("-")[1][:6]
    flow = lab_core.add_flow(
        lab,
        name,
        source_settings={"source.consumer.isolation.level": "read_committed", "exactly.once.support": "required"},
    )
    pair = f"{flow.source_alias}->{flow.target_alias}"
    topic, remote = f"iso-{name}-tx", f"{flow.source_alias}.iso-{name}-tx"
    src, dst = source_conf(lab), target_conf(lab)
    KafkaAdmin.connect(src).create_topics({topic: PARTITIONS})
    produce_transactions(src, topic, PARTITIONS, rounds=12)
    logs = {p: source_log(src, topic, p) for p in range(PARTITIONS)}
    committed = {p: [e for e in log if not e.aborted] for p, log in logs.items()}

    def copied() -> bool:
        got = {p: [r.value for r in records.read_partitions(dst, remote, [p])] for p in range(PARTITIONS)}
        return all(got[p] == [e.value for e in committed[p]] for p in range(PARTITIONS))

    eventually(copied, timeout_s=120, what="MM2 copying the committed records (and none of the aborted ones)")
    # What exactly-once MM2 changes in what mm2ctl reads: MM2's commit markers sit between the copies.
    bounds = KafkaAdmin.connect(dst).partition_bounds([(remote, p) for p in range(PARTITIONS)])
    assert all(b.latest is not None and b.latest > len(committed[p]) for (_t, p), b in bounds.items()), bounds
    live = open_live_state(flow.mm2_config)
    syncs = read_sync_histories(live, live.mm2.pair(pair))
    assert any(t == topic for t, _p in syncs), "MM2 wrote offset syncs once its transactions committed"

    groups = {}
    for p in range(PARTITIONS):
        end = KafkaAdmin.connect(src).partition_bounds([(topic, p)])[(topic, p)].latest
        assert end is not None
        for what, offset in commit_points(logs[p], end).items():
            group = f"iso-{name}-{what}"
            res = KafkaAdmin.connect(src).alter_group_offsets({group: {(topic, p): offset}})[group]
            assert all(r.error is None for r in res), res
            groups[(group, p)] = next_committed(logs[p], offset)

    out = tmp_path / "rows.jsonl"
    proc = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_config, "--exact",
            "--format", "json", "--output", str(out), "--spark-conf", "spark.sql.shuffle.partitions=4",
        ],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    assert proc.returncode in (ExitCode.OK, ExitCode.PROBLEMS_FOUND), proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == len(groups), rows
    for r in rows:
        assert r["error"] is None and r["translation_method"] in EXACT, r
        got = first_read(dst, remote, r["partition"], r["translated_offset"])
        assert got == groups[(r["group"], r["partition"])], r
    assert "aborted" not in proc.stderr, proc.stderr  # a read_committed flow copies none: no note

    state = tmp_path / "plan-state"
    state.mkdir()
    plan = mm2ctl(
        "plan", "failover", "--mm2-config", flow.mm2_config, "--pair", pair, "--groups", f"iso-{name}-.*",
        "--stop-mirroring", "--connect-url", lab.connect_url, "-o", str(tmp_path / "eos.yaml"), "--json",
        state=state,
    )  # fmt: skip
    assert plan.returncode == ExitCode.OK, plan.stderr
    planned = json.loads(plan.stdout)["rows"]
    assert {r["method"] for r in planned} <= EXACT, planned
    apply = mm2ctl("apply", str(tmp_path / "eos.yaml"), "--auto-approve", state=state)
    assert apply.returncode == ExitCode.OK, apply.stderr
    written = KafkaAdmin.connect(dst).committed_offsets([g for g, _p in groups])
    for (group, p), want in groups.items():
        offset = written[group].offsets[(remote, p)]
        assert first_read(dst, remote, p, offset) == want, (group, p, offset)
