"""A Spark query's translated position written beside its checkpoint (``SparkQueryWrite``): the
``startingOffsets`` file(s) of a new query on the target, or a copy of the checkpoint that resumes at the
translated offsets (``core.spark_checkpoints.write``). The original checkpoint is only read.

The step checks the checkpoint again right before it copies (the query may have run since the precondition),
reads its result back before it counts as done, and removes what it wrote when the read-back fails. A resumed
apply finds a complete output by reading it back (each output is renamed into place whole; the JSON files of
several sources are written all or none). Rollback deletes the outputs the plan names, and refuses when one no
longer reads back as written (a query started on it since).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mm2ctl.core.errors import ApplyError
from mm2ctl.core.spark_checkpoints.query_sources import checkpoint_moved, local_files
from mm2ctl.core.spark_checkpoints.read import Positions, read_checkpoint
from mm2ctl.core.spark_checkpoints.write import (
    json_files,
    output_paths,
    read_copy_back,
    remove_output,
    write_copy,
    write_json,
)
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.payloads import SparkQueryWrite
from mm2ctl.plans.preconditions import SparkCheckpointAt, iter_preconditions
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import SparkQueryTarget
from mm2ctl.remediate.executors.base import ExecContext, UndoContext
from mm2ctl.remediate.precondition_checks import StateView

#: ``startingOffsets``' offset for a partition to start at its earliest record.
EARLIEST = -2


def translated_positions(payload: SparkQueryWrite) -> dict[int, Positions]:
    """Source index -> target topic -> partition -> offset: what the step writes (the translated offsets, and
    the target's partitions the checkpoint does not name at their earliest)."""
    out: dict[int, dict[str, dict[int, int]]] = {}
    for r in payload.rows:
        out.setdefault(r.source_index, {}).setdefault(r.target_topic, {})[r.partition] = r.target_offset
    for n in payload.new_partitions:
        out.setdefault(n.source_index, {}).setdefault(n.target_topic, {})[n.partition] = EARLIEST
    return dict(out)


def _parts(step: Step) -> tuple[str, SparkQueryWrite, Mapping[int, Positions]]:
    assert isinstance(step.target, SparkQueryTarget) and isinstance(step.payload, SparkQueryWrite)
    return step.target.location, step.payload, translated_positions(step.payload)


def _problems(payload: SparkQueryWrite, translated: Mapping[int, Positions], *, existing_only: bool) -> list[str]:
    """What does not read back as the step writes it (only the outputs there, with ``existing_only``)."""
    if payload.form == "json":
        return [
            f"{path} does not hold the translated offsets"
            for path, data in json_files(payload.output, translated).items()
            if (path.exists() or not existing_only) and (not path.exists() or path.read_bytes() != data)
        ]
    out = Path(payload.output)
    if existing_only and not out.exists():
        return []
    return read_copy_back(out, payload.batch_id, translated)


def _outputs(payload: SparkQueryWrite, translated: Mapping[int, Positions]) -> list[Path]:
    return output_paths(payload.output, payload.form, sorted(translated))


class WriteSparkQuery:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        _location, payload, translated = _parts(step)
        return {"existing": [str(p) for p in _outputs(payload, translated) if p.exists()]}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        _location, payload, translated = _parts(step)
        return not _problems(payload, translated, existing_only=False)

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        location, payload, translated = _parts(step)
        if payload.form == "json":
            written = write_json(payload.output, translated)
        else:
            _still_as_planned(step, location)
            files = local_files(location)
            write_copy(Path(files.location), read_checkpoint(files), translated, Path(payload.output))
            written = [Path(payload.output)]
        problems = _problems(payload, translated, existing_only=False)
        if problems:
            for path in written:
                remove_output(path)
            raise ApplyError("the query's translated position did not read back as written: " + "; ".join(problems))
        ctx.progress(f"wrote {', '.join(map(str, written))} and read it back")
        return {"written": [str(p) for p in written], "form": payload.form}

    def simulate(self, step: Step, view: StateView) -> None:
        return None

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        _location, payload, translated = _parts(step)
        return [
            f"{problem}: left in place (used or changed since apply wrote it)"
            for problem in _problems(payload, translated, existing_only=True)
        ]

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        _location, payload, translated = _parts(step)
        removed = [str(p) for p in _outputs(payload, translated) if remove_output(p)]
        return ("deleted" if removed else "nothing_to_undo"), {"deleted": removed}


def _still_as_planned(step: Step, location: str) -> None:
    """The checkpoint again, right before the copy: the query may have run since the precondition was checked."""
    for pre in iter_preconditions(step.precondition):
        if isinstance(pre, SparkCheckpointAt):
            moved = checkpoint_moved(location, pre.batch_id, pre.digest)
            if moved is not None:
                raise ApplyError(moved)
