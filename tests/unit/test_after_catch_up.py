"""The catch-up wait and the step that translates after it, against fake clusters: the wait's marks are the
source's last records read when apply starts (not the plan's), its timeout names every lagging partition, and
the translation refuses, before any write, a row still untranslatable, one MM2 has still not copied, and a
rewind the plan does not allow."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mm2ctl.core.errors import ApplyError
from mm2ctl.plans.payloads import TranslationMethod, WaitForCatchUp
from mm2ctl.plans.planners.failover.rows import FailoverRow
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.remediate.executors import after_catch_up, group_offsets
from mm2ctl.remediate.executors.after_catch_up import TranslateAfterCatchUpExecutor
from mm2ctl.remediate.executors.base import ExecContext
from mm2ctl.remediate.executors.group_offsets import WaitForCatchUpExecutor
from tests.unit.test_plan_samples import every_step

PLANNED_LAST = 1000  # the sample plan's last source record of orders/0


def _step(kind: StepKind) -> Step:
    return next(s for s in every_step() if s.kind is kind)


class Source:
    """The source cluster and the MirrorSourceConnector's committed offsets; counts the reads of the ends."""

    def __init__(self, last: int, copied: list[int]) -> None:
        self.last, self.copied, self.end_reads = last, copied, 0

    def admin(self, cluster: str) -> Any:
        def bounds(tps: list[tuple[str, int]]) -> dict[tuple[str, int], Any]:
            self.end_reads += 1
            return {tp: SimpleNamespace(error=None, earliest=0, latest=self.last + 1) for tp in tps}

        return SimpleNamespace(partition_bounds=bounds)

    def kafka_config(self, cluster: str) -> dict[str, str]:
        return {}

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        at = self.copied.pop(0) if len(self.copied) > 1 else self.copied[0]
        return [{"partition": {"cluster": "A", "topic": "orders", "partition": 0}, "offset": {"offset": at}}]


@pytest.fixture
def source(monkeypatch: pytest.MonkeyPatch) -> Source:
    found = Source(last=1500, copied=[PLANNED_LAST])
    monkeypatch.setattr(group_offsets, "CATCH_UP_POLL_S", 0.01)
    monkeypatch.setattr(group_offsets, "last_record_offsets", lambda conf, ends: {tp: found.last for tp in ends})
    return found


def _wait(timeout_s: float) -> Step:
    step = _step(StepKind.WAIT_FOR_CATCH_UP)
    assert isinstance(step.payload, WaitForCatchUp) and step.payload.targets[0].upstream_offset == PLANNED_LAST
    return dataclasses.replace(step, payload=dataclasses.replace(step.payload, timeout_seconds=timeout_s))


def _ctx(live: Any, tmp_path: Path) -> ExecContext:
    return ExecContext(live=live, artifact_path=lambda name: tmp_path / name)


def test_the_wait_reads_the_marks_when_apply_starts_and_its_timeout_names_what_lags(
    source: Source, tmp_path: Path
) -> None:
    with pytest.raises(ApplyError) as failed:
        WaitForCatchUpExecutor().run(_wait(0.05), _ctx(source, tmp_path))
    assert str(failed.value) == (
        "MM2 did not catch up within 0.05s, so nothing was stopped or written: 1 partition(s) behind: "
        "orders/0 copied up to 1000 of 1500 (500 behind)"
    )
    assert source.end_reads == 1


def test_the_wait_ends_once_mm2_reaches_the_ends_read_at_apply(source: Source, tmp_path: Path) -> None:
    source.copied = [PLANNED_LAST, 1400, 1500]
    done = WaitForCatchUpExecutor().run(_wait(30), _ctx(source, tmp_path))
    assert done == {"caught_up": 1, "marks": [["orders", 0, 1500]]}
    assert source.copied == [1500]


class Target:
    """The flow and the target group's committed offsets the translation step reads."""

    def __init__(self, current: dict[tuple[str, int], int]) -> None:
        self.mm2 = SimpleNamespace(pair=lambda name: SimpleNamespace(source="A", target="B", name=name))
        self.current = current

    def admin(self, cluster: str) -> Any:
        return SimpleNamespace(list_topics=lambda: ["A.orders"])

    def many_group_offsets(self, cluster: str, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
        return {g: dict(self.current) for g in groups}


def _row(target: int | None, method: TranslationMethod | None, copied: int | None, detail: str = "") -> FailoverRow:
    return FailoverRow("billing", "orders", "A.orders", 0, 1800, target, None, method, detail, None, copied)


def _translate(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, row: FailoverRow, current: int | None, allow_rewind: bool
) -> Any:
    monkeypatch.setattr(after_catch_up, "syncs_disabled_note", lambda flow: None)
    monkeypatch.setattr(after_catch_up, "read_syncs", lambda live, flow: {})
    monkeypatch.setattr(after_catch_up, "bounds_of", lambda live, cluster, tps: {})
    monkeypatch.setattr(after_catch_up, "mm2_copy_positions", lambda *args: {})
    monkeypatch.setattr(after_catch_up, "translate_partitions", lambda *args, **kwargs: [row])
    step = _step(StepKind.GROUP_OFFSETS_TRANSLATE)
    step = dataclasses.replace(step, payload=dataclasses.replace(step.payload, allow_rewind=allow_rewind))  # type: ignore[type-var]
    live = Target({} if current is None else {("A.orders", 0): current})
    return TranslateAfterCatchUpExecutor().run(step, _ctx(live, tmp_path))


REFUSED = "translating after the catch-up failed for 1 group partition(s), so no group was written: "
WHERE = "billing:A.orders/0 (source offset 1800)"


@pytest.mark.parametrize(
    ("row", "current", "why"),
    [
        (
            _row(None, None, 2000, "untranslatable: no offset sync at or below 1800"),
            None,
            f"{WHERE} is still untranslatable: no offset sync at or below 1800",
        ),
        (_row(900, TranslationMethod.OFFSET_SYNC_NEXT, 800), None, f"{WHERE}: MM2 has still copied only up to 800"),
        (
            _row(900, TranslationMethod.VERIFIED_DELTA, 2000),
            950,
            f"{WHERE}: 900 would move the target offset back from 950",
        ),
    ],
    ids=["still-untranslatable", "still-not-copied", "rewind"],
)
def test_the_translation_after_the_catch_up_refuses(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, row: FailoverRow, current: int | None, why: str
) -> None:
    with pytest.raises(ApplyError) as refused:
        _translate(monkeypatch, tmp_path, row, current, allow_rewind=False)
    assert str(refused.value) == REFUSED + why


def test_the_translation_after_the_catch_up_rewinds_when_the_plan_allows_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    row = _row(900, TranslationMethod.VERIFIED_DELTA, 2000)
    found = _translate(monkeypatch, tmp_path, row, 950, allow_rewind=True)
    assert "900" in str(found) and "verified_delta" in str(found)
