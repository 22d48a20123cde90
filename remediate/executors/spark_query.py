"""A Spark query's translated position written beside its checkpoint (``SparkQueryWrite``): the
``startingOffsets`` file(s) of a new query on the target, or a copy of the checkpoint that resumes at the
translated offsets (``core.spark_checkpoint_write``). The original checkpoint is only read.

The step reads its result back before it counts as done; a resumed apply finds a complete output by reading it
back (each output is renamed into place whole). Rollback deletes exactly the paths the journal says the step
wrote, and refuses when one of them no longer reads back as written (someone used or changed it since).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from mm2ctl.core.errors import ApplyError
from mm2ctl.core.spark_checkpoint import Positions, read_checkpoint
from mm2ctl.core.spark_checkpoint_write import (
    json_outputs,
    read_copy_back,
    read_json_back,
    remove_output,
    write_copy,
    write_json,
)
from mm2ctl.core.spark_queries import local_files, local_path
from mm2ctl.plans.fingerprint import JSONable
from mm2ctl.plans.payloads import SparkQueryWrite
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import SparkQueryTarget
from mm2ctl.remediate.executors.base import ExecContext, UndoContext, as_dict
from mm2ctl.remediate.preconditions import StateView


def translated_positions(payload: SparkQueryWrite) -> dict[int, Positions]:
    """Source index -> target topic -> partition -> translated offset: what the step writes."""
    out: dict[int, dict[str, dict[int, int]]] = {}
    for r in payload.rows:
        out.setdefault(r.source_index, {}).setdefault(r.target_topic, {})[r.partition] = r.target_offset
    return dict(out)


def _parts(step: Step) -> tuple[str, SparkQueryWrite, Mapping[int, Positions]]:
    assert isinstance(step.target, SparkQueryTarget) and isinstance(step.payload, SparkQueryWrite)
    return step.target.location, step.payload, translated_positions(step.payload)


def _outputs(payload: SparkQueryWrite, translated: Mapping[int, Positions]) -> list[Path]:
    if payload.form == "json":
        return list(json_outputs(payload.output, sorted(translated)).values())
    return [Path(payload.output)]


def _read_back(payload: SparkQueryWrite, translated: Mapping[int, Positions]) -> list[str]:
    if payload.form == "json":
        return read_json_back(payload.output, translated)
    return read_copy_back(Path(payload.output), payload.batch_id, translated)


class WriteSparkQuery:
    def observe(self, step: Step, ctx: ExecContext) -> JSONable:
        _location, payload, translated = _parts(step)
        return {"existing": [str(p) for p in _outputs(payload, translated) if p.exists()]}

    def is_done(self, step: Step, ctx: ExecContext) -> bool:
        _location, payload, translated = _parts(step)
        return all(p.exists() for p in _outputs(payload, translated)) and not _read_back(payload, translated)

    def run(self, step: Step, ctx: ExecContext) -> JSONable:
        location, payload, translated = _parts(step)
        if payload.form == "json":
            written = write_json(payload.output, translated)
        else:
            source = local_path(location)
            assert source is not None  # the precondition read it locally
            files = local_files(location)
            write_copy(Path(files.location), read_checkpoint(files), translated, Path(payload.output))
            written = [Path(payload.output)]
        problems = _read_back(payload, translated)
        if problems:
            raise ApplyError("the query's translated position did not read back as written: " + "; ".join(problems))
        ctx.progress(f"wrote {', '.join(map(str, written))} and read it back")
        return {"written": [str(p) for p in written], "form": payload.form}

    def simulate(self, step: Step, view: StateView) -> None:
        return None

    def undo_problems(self, step: Step, undo: UndoContext, ctx: ExecContext) -> list[str]:
        _location, payload, translated = _parts(step)
        written = [Path(p) for p in as_dict(undo.after).get("written", [])]
        if any(p.exists() for p in written) and _read_back(payload, translated):
            return [f"{', '.join(map(str, written))} no longer reads back as apply wrote it: left in place"]
        return []

    def undo(self, step: Step, undo: UndoContext, ctx: ExecContext) -> tuple[str, JSONable]:
        written = [Path(p) for p in as_dict(undo.after).get("written", [])]
        removed = [str(p) for p in written if remove_output(p)]
        return ("deleted" if removed else "nothing_to_undo"), {"deleted": removed}
