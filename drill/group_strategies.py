"""The group-types drill's two ways of moving groups: MirrorMaker 2 alone (its ``sync.group.offsets``, awaited
and described) and mm2ctl (``plan failover``/``plan failback`` + ``apply``, run as an operator types them),
and the failover's stop of the flow's checkpoint connector."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass

from mm2ctl.connect_client.models import ConnectorStatus
from mm2ctl.core.errors import LabError, Mm2ctlError
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GROUP_TYPES
from mm2ctl.drill.group_run import PARTITIONS, GroupTypesRun

_SHARE_NOTE = re.compile(
    r"share group (?P<group>\S+): MirrorMaker 2 never translates share groups;.*?"
    r"(?P<again>\d+) record\(s\) (?:the group acknowledged past a gap|past them were already acknowledged)"
)


def wait_mm2_synced(run: GroupTypesRun, groups: list[str]) -> dict[str, dict[int, int]]:
    """The groups' offsets on the target once MM2's ``sync.group.offsets`` wrote every partition and they
    stayed unchanged for ``mm2_sync_stable_s``; at the deadline, whatever MM2 had written by then."""
    o = run.options
    run.progress(f"waiting up to {o.mm2_sync_timeout_s:.0f}s for MM2 to sync {', '.join(groups)} to the target")
    admin = KafkaAdmin.connect(run.dst)
    last: dict[str, dict[int, int]] = {}
    changed = time.monotonic()
    deadline = changed + o.mm2_sync_timeout_s
    while time.monotonic() < deadline:
        got = admin.committed_offsets(groups)
        now = {
            g: {p: off for (t, p), off in got[g].offsets.items() if t == run.remote and off is not None} for g in groups
        }
        if now != last:
            last, changed = now, time.monotonic()
        elif all(len(v) == len(PARTITIONS) for v in now.values()) and time.monotonic() - changed >= o.mm2_sync_stable_s:
            break
        time.sleep(0.5)
    return last


def _mm2ctl(run: GroupTypesRun, *args: str) -> subprocess.CompletedProcess[str]:
    """``mm2ctl ARGS`` as an operator types it (``python -m mm2ctl``), its state in the workdir; its output is
    appended to ``mm2ctl.log`` there. Raises ``Mm2ctlError`` on a non-zero exit."""
    env = {**os.environ, "MM2CTL_STATE_DIR": str(run.workdir / "state")}
    env.pop("MM2CTL_CONNECT_URL", None)  # the plan finds the flow's worker itself
    proc = subprocess.run(
        [sys.executable, "-m", "mm2ctl", *args], env=env, text=True, capture_output=True, timeout=600, check=False
    )
    with (run.workdir / "mm2ctl.log").open("a", encoding="utf-8") as log:
        log.write(f"$ mm2ctl {' '.join(args)}\n{proc.stdout}\n{proc.stderr}\nexit {proc.returncode}\n\n")
    if proc.returncode != 0:
        raise Mm2ctlError(f"mm2ctl {' '.join(args[:2])} exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc


@dataclass(frozen=True)
class Planned:
    """What a plan said: per group its target offsets and whether it writes them; per share group the records
    its note counts as acknowledged past its position (past a gap, or past its start offset where the plan could
    not read the share-partition state)."""

    offsets: dict[str, dict[int, int]]
    written: frozenset[str]
    again: dict[str, int]


def plan_and_apply(run: GroupTypesRun, kind: str) -> Planned:
    """``mm2ctl plan <kind>`` for the mm2ctl groups, then ``apply --auto-approve``."""
    run.progress(f"mm2ctl plan {kind} --groups 'iso-{run.name}-ctl-.*', then apply")
    plan = run.workdir / f"{kind}.yaml"
    made = _mm2ctl(
        run, "plan", kind, "--pair", run.pair, "--mm2-config", run.mm2_config,
        "--groups", f"iso-{run.name}-ctl-.*", "--out", str(plan), "--json",
    )  # fmt: skip
    doc = json.loads(made.stdout)
    _mm2ctl(run, "apply", str(plan), "--auto-approve", "--journal", str(run.workdir / f"{kind}.journal.jsonl"))
    offsets: dict[str, dict[int, int]] = {}
    for row in doc["rows"]:
        if row.get("target_offset") is not None:
            offsets.setdefault(row["group"], {})[row["partition"]] = row["target_offset"]
    steps = doc["plan"]["steps"]
    written = frozenset(st["target"]["group"] for st in steps if st["kind"] == "group_offsets_write")
    again = {m["group"]: int(m["again"]) for n in doc["plan"]["notes"] if (m := _SHARE_NOTE.search(n))}
    return Planned(offsets, written, again)


def mm2ctl_notes(run: GroupTypesRun, method: str, planned: Planned) -> dict[str, str]:
    """What mm2ctl's plan did for each type, as the row's note."""
    notes: dict[str, str] = {}
    for t in GROUP_TYPES:
        g = run.group(method, t)
        at = _offsets_text(planned.offsets.get(g, {})) or "no offset"
        start = "positions " if t == "share" else ""
        notes[t] = f"wrote {start}{at}" if g in planned.written else f"{at} already there: nothing written"
        if t == "share":
            where = " on the target" if method == "failback" else ""
            notes[t] += f"; {planned.again.get(g)} acknowledged past a gap{where}, counted by the plan"
    return notes


def _offsets_text(offsets: Mapping[int, int]) -> str:
    return ", ".join(f"p{p} {o}" for p, o in sorted(offsets.items()))


def mm2_notes(run: GroupTypesRun, synced: Mapping[str, Mapping[int, int]]) -> dict[str, str]:
    """What MM2 alone left on the target for each type, as the row's note."""
    notes = {
        "share": "no start offset on the target: starts at the log end (share.auto.offset.reset=latest)",
        "streams": "no offsets on the target: starts at the earliest offset",
    }
    source = _offsets_text(dict.fromkeys(PARTITIONS, run.options.first))
    for t in ("classic", "consumer"):
        got = synced.get(run.group("mm2", t), {})
        if len(got) == len(PARTITIONS):
            notes[t] = f"synced {_offsets_text(got)} (source: {source})"
        else:
            notes[t] = (
                f"synced {_offsets_text(got) or 'nothing'} in {run.options.mm2_sync_timeout_s:.0f}s "
                f"(source: {source}); the rest starts at the log end (auto.offset.reset=latest)"
            )
    return notes


def stop_checkpointing(run: GroupTypesRun) -> None:
    """Stop the flow's checkpoint connector, as a failover does: the groups now live on the target. Left running,
    MM2's group-offset sync can write its older translation back over a group's own commit on the target: it
    decides from a snapshot of the target's offsets that it refreshes only now and then, and its scheduler keeps
    syncing while the connector is merely paused. A stopped connector has no tasks, so no scheduler."""
    from mm2ctl.connect_client import build_connect_client

    name = run.checkpoint_connector
    run.progress(f"stopping {name}: the groups fail over")
    with build_connect_client([run.lab.connect_url]) as connect:
        connect.stop(name)
        deadline = time.monotonic() + run.options.client_timeout_s
        while not _stopped(connect.status(name)):
            if time.monotonic() > deadline:
                raise LabError(f"connector {name} did not stop within {run.options.client_timeout_s:.0f}s")
            time.sleep(0.5)


def _stopped(status: ConnectorStatus) -> bool:
    return status.state == "STOPPED" and not status.tasks
