"""``apply``'s ``spark_query_write`` step on hand-made checkpoints (``remediate.executors.spark_query``): it writes
and reads back, refuses a query that ran since the plan, leaves nothing behind when it fails, is found done by a
resumed apply, and rollback deletes what the plan names, whatever the journal kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mm2ctl.core.errors import ApplyError, SparkCheckpointError
from mm2ctl.core.spark_checkpoints.query_sources import batch_digest, local_files
from mm2ctl.core.spark_checkpoints.read import read_checkpoint
from mm2ctl.core.spark_checkpoints.write import write_json
from mm2ctl.plans.payloads import SparkOffsetRow, SparkQueryWrite, TranslationMethod
from mm2ctl.plans.preconditions import SparkCheckpointAt
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import SparkQueryTarget
from mm2ctl.remediate.executors.base import ExecContext, UndoContext
from mm2ctl.remediate.executors.spark_query import WriteSparkQuery
from tests.unit.test_spark_checkpoint import commit_file, kafka_json, make_checkpoint


def _step(checkpoint: Path, form: str, output: Path) -> Step:
    rows = tuple(
        SparkOffsetRow(
            source_index=0, source_topic="orders", target_topic="orders", partition=p, source_offset=20 + p,
            target_offset=17 + p, method=TranslationMethod.VERIFIED_DELTA,
        )
        for p in (0, 1)
    )  # fmt: skip
    return Step(
        index=0,
        kind=StepKind.SPARK_QUERY_WRITE,
        target=SparkQueryTarget(location=str(checkpoint)),
        payload=SparkQueryWrite(form=form, output=str(output), batch_id=2, rows=rows),
        precondition=SparkCheckpointAt(
            location=str(checkpoint), batch_id=2, digest=batch_digest(local_files(str(checkpoint)), 2)
        ),
        before=None,
        after=None,
        reversible=True,
    )


@pytest.fixture
def checkpoint(tmp_path: Path) -> Path:
    batches = {b: [kafka_json({"orders": {0: 10 * b, 1: 10 * b + 1}})] for b in range(3)}
    make_checkpoint(tmp_path / "q", batches, [0, 1, 2], initial={0: {"orders": {0: 0, 1: 0}}})
    return tmp_path / "q"


def _ctx(tmp_path: Path) -> ExecContext:
    return ExecContext(live=None, artifact_path=lambda name: tmp_path / name)  # type: ignore[arg-type]


def _undo(after: Any) -> UndoContext:
    return UndoContext(before=None, after=after, connector_ran_later=False)


@pytest.mark.parametrize("form", ["json", "checkpoint"])
def test_written_read_back_found_done_and_rolled_back_even_when_the_journal_kept_no_path(
    form: str, checkpoint: Path, tmp_path: Path
) -> None:
    out = tmp_path / ("q.b.starting-offsets.json" if form == "json" else "q.b")
    step, ex, ctx = _step(checkpoint, form, out), WriteSparkQuery(), _ctx(tmp_path)
    assert not ex.is_done(step, ctx)
    assert ex.run(step, ctx) == {"written": [str(out)], "form": form}
    assert ex.is_done(step, ctx)  # what a resumed apply asks
    # A resumed apply journals observe() as the step's after: rollback must not depend on "written".
    assert ex.undo_problems(step, _undo(ex.observe(step, ctx)), ctx) == []
    assert ex.undo(step, _undo(ex.observe(step, ctx)), ctx) == ("deleted", {"deleted": [str(out)]})
    assert not out.exists()
    assert ex.undo(step, _undo(None), ctx) == ("nothing_to_undo", {"deleted": []})


def test_a_copy_a_query_ran_on_is_left_in_place(checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.b"
    step, ex, ctx = _step(checkpoint, "checkpoint", out), WriteSparkQuery(), _ctx(tmp_path)
    ex.run(step, ctx)
    (out / "offsets" / "3").write_bytes((out / "offsets" / "2").read_bytes())
    (out / "commits" / "3").write_bytes(commit_file())
    assert ex.undo_problems(step, _undo(None), ctx) == [
        f"{out}: the last committed batch is 3, not 2: left in place (used or changed since apply wrote it)"
    ]


def test_a_query_that_ran_after_the_precondition_gets_no_copy(checkpoint: Path, tmp_path: Path) -> None:
    out = tmp_path / "q.b"
    step = _step(checkpoint, "checkpoint", out)
    (checkpoint / "offsets" / "3").write_bytes((checkpoint / "offsets" / "2").read_bytes())
    (checkpoint / "commits" / "3").write_bytes(commit_file())
    with pytest.raises(ApplyError, match="has committed batch 3 since the plan read batch 2"):
        WriteSparkQuery().run(step, _ctx(tmp_path))
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["q"]
    assert read_checkpoint(local_files(str(checkpoint))).batch_id == 3  # the original untouched


def test_the_files_of_several_sources_are_written_all_or_none(tmp_path: Path) -> None:
    two = {0: {"a": {0: 1}}, 1: {"b": {0: 2}}}
    (tmp_path / "r.source-1.json").write_text("someone else's")
    with pytest.raises(SparkCheckpointError, match="exists already"):
        write_json(str(tmp_path / "r.json"), two)
    assert not (tmp_path / "r.source-0.json").exists()
    (tmp_path / "r.source-1.json").write_text('{"b":{"0":2}}')  # an interrupted run's file, exactly as written
    assert write_json(str(tmp_path / "r.json"), two) == [tmp_path / "r.source-0.json", tmp_path / "r.source-1.json"]
    assert (tmp_path / "r.source-0.json").read_text() == '{"a":{"0":1}}'
