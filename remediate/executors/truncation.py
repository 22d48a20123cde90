"""Offset-syncs backup and truncation.

The backup is a JSON Lines file beside the journal: a header line (cluster, topic, range, record count),
then one line per record with its original offset, timestamp and exact key/value bytes (base64). It is
written to a temporary name, fsynced and renamed, so a file with the final name is always complete: that
is how a resumed apply knows the backup step already happened.

Truncation is ``deleteRecords`` up to the end offset the plan saw. Kafka refuses ``deleteRecords`` on a
topic whose ``cleanup.policy`` is only ``compact`` (POLICY_VIOLATION; MM2 creates offset-syncs that way), so
the step switches the policy to ``compact,delete`` for the call and then restores it. The original policy
is written to a file beside the journal first, so a resume after a crash in between restores the right one.
Rollback cannot undelete: it re-produces the backed-up records (same key, value and partition) at new
offsets, and says so.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

from mm2ctl.core.atomic_file import replaced
from mm2ctl.core.errors import ApplyError, KafkaClusterError
from mm2ctl.core.kafka import records
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.payloads import OffsetSyncsBackup, OffsetSyncsTruncate
from mm2ctl.plans.preconditions import TopicEndOffsetEquals, iter_preconditions
from mm2ctl.plans.steps import Step
from mm2ctl.remediate.executors.base import ExecContext, ReadOnlyStep, UndoContext, step_topic
from mm2ctl.remediate.precondition_checks import StateView, failures

BACKUP_FORMAT = "mm2ctl-offset-syncs-backup"
_POLICY = "cleanup.policy"


def _write_durably(path: Path, text: str) -> None:
    with replaced(path, encoding="utf-8") as fh:
        fh.write(text)


def _bounds(step: Step, ctx: ExecContext) -> dict[str, int]:
    cluster, topic = step_topic(step)
    b = ctx.live.topic_bounds(cluster, topic, 0)
    return {"start": b.start, "end": b.end}


def read_backup(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and records of a complete backup file; ``ApplyError`` if it is missing or damaged."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
        header = json.loads(lines[0])
        rows = [json.loads(line) for line in lines[1:]]
    except (OSError, ValueError, IndexError) as exc:
        raise ApplyError(f"offset-syncs backup {path} is missing or unreadable: {exc}") from exc
    if header.get("format") != BACKUP_FORMAT or header.get("count") != len(rows):
        raise ApplyError(f"offset-syncs backup {path} is incomplete or not an mm2ctl backup")
    return header, rows


class Backup(ReadOnlyStep):
    def _path(self, step: Step, ctx: ExecContext) -> Path:
        assert isinstance(step.payload, OffsetSyncsBackup)
        return ctx.artifact_path(step.payload.backup_file)

    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return _bounds(step, ctx)

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        try:
            read_backup(self._path(step, ctx))
        except ApplyError:
            return False
        return True

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        assert isinstance(step.payload, OffsetSyncsBackup)
        cluster, topic = step_topic(step)
        rows = [
            {
                "offset": r.offset,
                "timestamp_ms": r.timestamp_ms,
                "key_b64": None if r.key is None else base64.b64encode(r.key).decode("ascii"),
                "value_b64": None if r.value is None else base64.b64encode(r.value).decode("ascii"),
            }
            for r in records.read_partitions(
                ctx.live.kafka_config(cluster), topic, [0], end={0: step.payload.up_to_offset}
            )
        ]
        header = {
            "format": BACKUP_FORMAT,
            "cluster": cluster,
            "topic": topic,
            "partition": 0,
            "up_to_offset": step.payload.up_to_offset,
            "count": len(rows),
        }
        path = self._path(step, ctx)
        _write_durably(path, "".join(json.dumps(x, sort_keys=True) + "\n" for x in [header, *rows]))
        ctx.progress(f"backed up {len(rows)} offset-sync record(s) to {path}")
        return {"backup_file": str(path), "records": len(rows)}


class Truncate:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        return _bounds(step, ctx)

    def _policy_file(self, step: Step, ctx: ExecContext) -> Path:
        assert isinstance(step.payload, OffsetSyncsTruncate)
        return ctx.artifact_path(step.payload.backup_file + ".cleanup-policy")

    def _is_truncated(self, step: Step, ctx: ExecContext) -> bool:
        assert isinstance(step.payload, OffsetSyncsTruncate)
        return _bounds(step, ctx)["start"] >= step.payload.before_offset

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        if not self._is_truncated(step, ctx):
            return False
        marker = self._policy_file(step, ctx)
        if not marker.exists():
            return True
        cluster, topic = step_topic(step)
        return ctx.live.admin(cluster).topic_config(topic).get(_POLICY) == marker.read_text().strip()

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        assert isinstance(step.payload, OffsetSyncsTruncate)
        read_backup(ctx.artifact_path(step.payload.backup_file))  # never delete without a complete backup
        cluster, topic = step_topic(step)
        admin = ctx.live.admin(cluster)
        marker = self._policy_file(step, ctx)
        if marker.exists():  # a previous attempt died between switching and restoring the policy
            original = marker.read_text().strip()
        else:
            original = admin.topic_config(topic).get(_POLICY, "delete")
            _write_durably(marker, original)
        if "delete" not in original.split(","):
            admin.set_topic_config(topic, _POLICY, "compact,delete")
        # The broker applies a config change when it processes the controller's metadata record, a moment
        # after the alter call returns: until then deleteRecords still answers POLICY_VIOLATION.
        deadline = time.monotonic() + 30
        while True:
            (result,) = admin.delete_records({(topic, 0): step.payload.before_offset})
            if result.error is None or result.error.code != "POLICY_VIOLATION" or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if "delete" not in original.split(","):
            admin.set_topic_config(topic, _POLICY, original)
        if result.error is not None:
            raise KafkaClusterError(
                f"deleting records of {cluster}:{topic}: {result.error.message}", code=result.error.code
            )
        ctx.progress(f"{cluster}:{topic}: records below {step.payload.before_offset} deleted")
        return {**_bounds(step, ctx), _POLICY: original}

    def simulate(self, step: Step, view: StateView) -> None:
        return None

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        assert isinstance(step.payload, OffsetSyncsTruncate)
        # The halt condition of the step (source connector stopped / dedicated workers gone) must hold
        # again: re-produced syncs under a running MM2 would interleave with the ones it writes.
        halt = [c for c in iter_preconditions(step.precondition) if not isinstance(c, TopicEndOffsetEquals)]
        problems = [p for c in halt for p in failures(c, ctx.view)]
        if not self._is_truncated(step, ctx):
            problems.append("the offset-syncs topic starts below the truncation point again")
        try:
            read_backup(ctx.artifact_path(step.payload.backup_file))
        except ApplyError as exc:
            problems.append(str(exc))
        return problems

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        assert isinstance(step.payload, OffsetSyncsTruncate)
        _header, rows = read_backup(ctx.artifact_path(step.payload.backup_file))
        cluster, topic = step_topic(step)
        batch = [
            (
                None if r["key_b64"] is None else base64.b64decode(r["key_b64"]),
                None if r["value_b64"] is None else base64.b64decode(r["value_b64"]),
                0,
            )
            for r in rows
        ]
        written = records.produce(ctx.live.kafka_config(cluster), topic, batch) if batch else []
        offsets = [o for _p, o in written]
        ctx.progress(
            f"re-produced {len(batch)} offset-sync record(s) to {cluster}:{topic} at NEW offsets "
            f"{min(offsets, default=0)}..{max(offsets, default=-1)}; the deleted offsets themselves are gone"
        )
        return "reproduced_at_new_offsets", {
            "records": len(batch),
            "new_offsets": [min(offsets, default=0), max(offsets, default=-1)],
        }
