"""The state read back from a journal: its entries replayed through the journal's state machine
(``StateBuilder``), which the writer (``remediate.journal.Journal``) also checks each entry against before
writing it, into what resume and rollback need (``JournalState``). A torn last line is reported
(``TornTail``); any other unreadable line, a gap in ``seq`` or an impossible transition is a ``JournalError``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any

from mm2ctl.core.errors import JournalError, PlanError
from mm2ctl.plans.document import Plan
from mm2ctl.plans.fingerprint import FrozenJSON, digest_of, freeze_json
from mm2ctl.plans.serialize import plan_from_json
from mm2ctl.remediate.journal_codec import JOURNAL_FORMAT, READABLE_FORMAT_VERSIONS, EntryType, decode_line

#: Step kinds whose steps may be in progress together (each acts on one consumer group, or one connector, of
#: its own; never two kinds at once).
CONCURRENT_KINDS = frozenset({"group_offsets_write", "group_offsets_verify", "connector_stop"})


class StepStatus(StrEnum):
    STARTED = "started"  # the process died (or is still running) between started and its outcome
    COMPLETED = "completed"
    FAILED = "failed"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRecord:
    """What the journal says about one plan step during apply."""

    index: int
    kind: str
    status: StepStatus
    #: The state observed just before the first attempt changed anything: what rollback restores.
    before: FrozenJSON
    after: FrozenJSON = None
    outcome: str | None = None
    error: str | None = None
    attempts: int = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class RollbackRecord:
    """What the journal says about undoing one step."""

    index: int
    status: StepStatus
    before: FrozenJSON
    after: FrozenJSON = None
    outcome: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class TornTail:
    """Bytes after the last complete entry: a write the process did not finish. Never acted upon."""

    offset: int
    length: int


@dataclass(frozen=True, slots=True, kw_only=True)
class JournalState:
    """Everything resume and rollback need, reconstructed from a journal."""

    path: Path
    plan: Plan
    plan_sha256: str
    plan_path: str | None
    started_at: str
    host: str
    pid: int
    last_seq: int
    steps: Mapping[int, StepRecord]
    #: Step indices in the order they completed.
    completed_steps: tuple[int, ...]
    #: Steps started without an outcome, ascending: the process died mid-step (their effect is unknown).
    #: More than one only for a concurrent batch (``CONCURRENT_KINDS``).
    in_progress_steps: tuple[int, ...]
    apply_finished: bool
    apply_status: str | None
    #: The step a failed apply stopped at, and why (its own failure, its precondition, or a read before it).
    stopped_at: int | None
    stop_reason: str | None
    rollback_started: bool
    rollback_steps: Mapping[int, RollbackRecord]
    rollback_in_progress_step: int | None
    rollback_finished: bool
    rollback_status: str | None
    torn_tail: TornTail | None = None
    resumes: int = 0

    @property
    def in_progress_step(self) -> int | None:
        """The first step in progress (None: none); ``in_progress_steps`` has them all."""
        return self.in_progress_steps[0] if self.in_progress_steps else None

    @property
    def failed_steps(self) -> tuple[int, ...]:
        return tuple(i for i, r in sorted(self.steps.items()) if r.status is StepStatus.FAILED)

    @property
    def rolled_back_steps(self) -> frozenset[int]:
        return frozenset(i for i, r in self.rollback_steps.items() if r.status is StepStatus.COMPLETED)

    def before_state(self, index: int) -> FrozenJSON:
        """The recorded before-state of a started step (``KeyError`` if it never started)."""
        return self.steps[index].before

    def is_rolled_back(self, index: int) -> bool:
        return index in self.rolled_back_steps

    def next_step_to_apply(self) -> int | None:
        """Where a resumed apply continues: the first step not completed (None: all done)."""
        for i in range(len(self.plan.steps)):
            rec = self.steps.get(i)
            if rec is None or rec.status is not StepStatus.COMPLETED:
                return i
        return None

    @property
    def uncertain_steps(self) -> tuple[int, ...]:
        """Steps whose effect the journal cannot tell: in progress when the process died, or failed (a
        request that timed out may still have been carried out). Resume and rollback check each one."""
        return tuple(sorted({*self.in_progress_steps, *self.failed_steps}))

    def steps_to_roll_back(self) -> tuple[int, ...]:
        """Steps rollback must still undo, newest first: every completed step plus those whose effect is
        uncertain (``uncertain_steps``: each one's own check decides), minus those already rolled back.
        Irreversible steps are included; the rollback executor reports them as such."""
        candidates = set(self.completed_steps) | set(self.uncertain_steps)
        return tuple(sorted(candidates - self.rolled_back_steps, reverse=True))


class StateBuilder:
    """The journal's state machine. The reader replays entries through it; the writer checks an entry
    against it before writing, so an impossible journal is never produced, only detected."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict[str, Any] | None = None
        self.plan: Plan | None = None
        self.last_seq = -1
        self.steps: dict[int, StepRecord] = {}
        self.completed: list[int] = []
        self.completed_set: set[int] = set()
        self._gap = 0  # no step below this index is neither completed nor in progress
        self.in_progress: set[int] = set()
        #: Steps that were in progress when the apply was resumed: each may be started again, once.
        self.restartable: set[int] = set()
        self.apply_finished = False
        self.apply_status: str | None = None
        self.stopped_at: int | None = None
        self.stop_reason: str | None = None
        self.rollback_started = False
        self.rollback_planned: set[int] = set()
        self.rollback: dict[int, RollbackRecord] = {}
        self.rb_in_progress: int | None = None
        self.rb_resumed_since_start = False
        self.rollback_finished = False
        self.rollback_status: str | None = None
        self.resumes = 0

    # -- helpers
    def _err(self, entry: Mapping[str, Any], msg: str) -> JournalError:
        return JournalError(f"{self.path}: entry {entry.get('seq')} ({entry.get('type')}): {msg}")

    def _index(self, entry: Mapping[str, Any]) -> int:
        i = entry.get("index")
        assert self.plan is not None
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < len(self.plan.steps):
            raise self._err(entry, f"index {i!r} is not a step of the plan")
        return i

    def apply(self, entry: Mapping[str, Any], *, plan: Plan | None = None) -> None:
        """Fold one entry into the state. ``plan``: the header's plan already decoded (a new journal's
        writer has it in memory), so a 100,000-row plan is not decoded and digested a second time."""
        seq = entry.get("seq")
        if seq != self.last_seq + 1:
            raise self._err(entry, f"sequence number {seq} where {self.last_seq + 1} was expected")
        try:
            kind = EntryType(str(entry.get("type")))
        except ValueError:
            raise self._err(entry, "unknown entry type") from None
        if kind is EntryType.HEADER:
            self._header(entry, plan)
        elif self.header is None:
            raise self._err(entry, "the first entry must be the header")
        else:
            getattr(self, f"_on_{kind.value}")(entry)
        self.last_seq = seq

    def _header(self, entry: Mapping[str, Any], decoded: Plan | None) -> None:
        if self.header is not None:
            raise self._err(entry, "a second header")
        if entry.get("format") != JOURNAL_FORMAT:
            raise self._err(entry, "not an mm2ctl journal")
        if entry.get("format_version") not in READABLE_FORMAT_VERSIONS:
            raise self._err(entry, f"journal format version {entry.get('format_version')!r} is not supported")
        if decoded is not None:
            plan = decoded
        else:
            try:
                plan = plan_from_json(entry.get("plan"), source="journal header plan")
            except PlanError as exc:
                raise self._err(entry, str(exc)) from exc
            if digest_of(entry.get("plan")) != entry.get("plan_sha256"):
                raise self._err(entry, "the embedded plan does not match its recorded digest")
        self.header = dict(entry)
        self.plan = plan

    def _on_resume_started(self, entry: Mapping[str, Any]) -> None:
        if self.rollback_started:
            raise self._err(entry, "cannot resume an apply after rollback started")
        self.resumes += 1
        self.apply_finished = False
        self.apply_status = None
        self.stopped_at = None
        self.stop_reason = None
        self.restartable = set(self.in_progress)

    def _on_step_started(self, entry: Mapping[str, Any]) -> None:
        i = self._index(entry)
        if self.rollback_started:
            raise self._err(entry, "a step started after rollback started")
        if self.apply_finished:
            raise self._err(entry, "a step started after the apply finished (resume first)")
        assert self.plan is not None
        kind = self.plan.steps[i].kind.value
        if i in self.in_progress and i not in self.restartable:
            raise self._err(entry, f"step {i} started while step {i} was still in progress")
        others = self.in_progress - {i}
        # Every step in progress passed this check when it started, so they share one kind: comparing with
        # one of them compares with all (a batch of 250 group steps is not checked in quadratic time).
        first = min(others) if others else None
        if first is not None and (kind not in CONCURRENT_KINDS or self.plan.steps[first].kind.value != kind):
            raise self._err(entry, f"step {i} started while step {first} was still in progress")
        prev = self.steps.get(i)
        if prev is not None and prev.status is StepStatus.COMPLETED:
            raise self._err(entry, f"step {i} started again after it completed")
        if self._first_gap() < i:
            missing = [j for j in range(i) if j not in self.completed_set and j not in self.in_progress]
            raise self._err(entry, f"step {i} started before step(s) {missing} completed")
        if entry.get("kind") != kind:
            raise self._err(entry, f"step {i} is a {kind} step, the entry says {entry.get('kind')!r}")
        before = prev.before if prev is not None else freeze_json(entry.get("before"))
        attempts = prev.attempts + 1 if prev is not None else 1
        self.steps[i] = StepRecord(index=i, kind=kind, status=StepStatus.STARTED, before=before, attempts=attempts)
        self.in_progress.add(i)
        self.restartable.discard(i)

    def _finish_step(self, entry: Mapping[str, Any], status: StepStatus) -> None:
        i = self._index(entry)
        if i not in self.in_progress:
            raise self._err(entry, f"step {i} has an outcome but was not in progress")
        prev = self.steps[i]
        self.steps[i] = StepRecord(
            index=i,
            kind=prev.kind,
            status=status,
            before=prev.before,
            after=freeze_json(entry.get("after")),
            outcome=entry.get("outcome"),
            error=entry.get("error"),
            attempts=prev.attempts,
        )
        if status is StepStatus.COMPLETED:
            self.completed.append(i)
            self.completed_set.add(i)
        else:
            self._gap = min(self._gap, i)
        self.in_progress.discard(i)
        self.restartable.discard(i)

    def _first_gap(self) -> int:
        """The lowest step index neither completed nor in progress (kept incrementally: a batch of 1,000
        steps is checked in linear time)."""
        while self._gap in self.completed_set or self._gap in self.in_progress:
            self._gap += 1
        return self._gap

    def _on_step_completed(self, entry: Mapping[str, Any]) -> None:
        self._finish_step(entry, StepStatus.COMPLETED)

    def _on_step_failed(self, entry: Mapping[str, Any]) -> None:
        self._finish_step(entry, StepStatus.FAILED)

    def _on_apply_finished(self, entry: Mapping[str, Any]) -> None:
        if self.rollback_started:
            raise self._err(entry, "apply finished after rollback started")
        if self.in_progress:
            raise self._err(entry, f"apply finished while step {min(self.in_progress)} was in progress")
        status = entry.get("status")
        assert self.plan is not None
        if status == "succeeded" and len(self.completed) != len(self.plan.steps):
            raise self._err(entry, "apply recorded as succeeded but not every step completed")
        self.apply_finished = True
        self.apply_status = str(status)
        step = entry.get("step")
        self.stopped_at = step if isinstance(step, int) and not isinstance(step, bool) else None
        self.stop_reason = entry.get("error") if isinstance(entry.get("error"), str) else None

    def _on_rollback_started(self, entry: Mapping[str, Any]) -> None:
        steps = entry.get("steps")
        if not isinstance(steps, list):
            raise self._err(entry, "rollback_started without a list of steps")
        failed = {i for i, r in self.steps.items() if r.status is StepStatus.FAILED}
        allowed = self.completed_set | self.in_progress | failed
        for i in steps:
            if i not in allowed:
                raise self._err(entry, f"rollback of step {i!r}, which never started")
        self.rollback_started = True
        self.rollback_finished = False
        self.rollback_status = None
        self.rollback_planned |= set(steps)
        self.rb_resumed_since_start = True

    def _on_rollback_step_started(self, entry: Mapping[str, Any]) -> None:
        i = self._index(entry)
        if not self.rollback_started:
            raise self._err(entry, "rollback step before rollback_started")
        if i not in self.rollback_planned:
            raise self._err(entry, f"step {i} is not in the rollback")
        if self.rb_in_progress is not None and not (self.rb_in_progress == i and self.rb_resumed_since_start):
            raise self._err(entry, f"rollback of step {i} started while step {self.rb_in_progress} was")
        prev = self.rollback.get(i)
        if prev is not None and prev.status is StepStatus.COMPLETED:
            raise self._err(entry, f"step {i} was already rolled back")
        before = prev.before if prev is not None else freeze_json(entry.get("before"))
        self.rollback[i] = RollbackRecord(index=i, status=StepStatus.STARTED, before=before)
        self.rb_in_progress = i
        self.rb_resumed_since_start = False

    def _finish_rollback_step(self, entry: Mapping[str, Any], status: StepStatus) -> None:
        i = self._index(entry)
        if self.rb_in_progress != i:
            raise self._err(entry, f"rollback of step {i} has an outcome but was not in progress")
        self.rollback[i] = RollbackRecord(
            index=i,
            status=status,
            before=self.rollback[i].before,
            after=freeze_json(entry.get("after")),
            outcome=entry.get("outcome"),
            error=entry.get("error"),
        )
        self.rb_in_progress = None

    def _on_rollback_step_completed(self, entry: Mapping[str, Any]) -> None:
        self._finish_rollback_step(entry, StepStatus.COMPLETED)

    def _on_rollback_step_failed(self, entry: Mapping[str, Any]) -> None:
        self._finish_rollback_step(entry, StepStatus.FAILED)

    def _on_rollback_finished(self, entry: Mapping[str, Any]) -> None:
        if not self.rollback_started:
            raise self._err(entry, "rollback finished before it started")
        if self.rb_in_progress is not None:
            raise self._err(entry, f"rollback finished while step {self.rb_in_progress} was in progress")
        self.rollback_finished = True
        self.rollback_status = str(entry.get("status"))

    def _on_torn_tail_discarded(self, entry: Mapping[str, Any]) -> None:
        pass

    def state(self, torn: TornTail | None) -> JournalState:
        if self.header is None or self.plan is None:
            raise JournalError(f"{self.path}: journal has no header")
        h = self.header
        return JournalState(
            path=self.path,
            plan=self.plan,
            plan_sha256=str(h["plan_sha256"]),
            plan_path=h.get("plan_path"),
            started_at=str(h.get("started_at")),
            host=str(h.get("host")),
            pid=int(h.get("pid", -1)),
            last_seq=self.last_seq,
            steps=MappingProxyType(dict(self.steps)),
            completed_steps=tuple(self.completed),
            in_progress_steps=tuple(sorted(self.in_progress)),
            apply_finished=self.apply_finished,
            apply_status=self.apply_status,
            stopped_at=self.stopped_at,
            stop_reason=self.stop_reason,
            rollback_started=self.rollback_started,
            rollback_steps=MappingProxyType(dict(self.rollback)),
            rollback_in_progress_step=self.rb_in_progress,
            rollback_finished=self.rollback_finished,
            rollback_status=self.rollback_status,
            torn_tail=torn,
            resumes=self.resumes,
        )


def scan_journal(path: Path, data: bytes) -> tuple[StateBuilder, TornTail | None]:
    builder = StateBuilder(path)
    pieces = data.split(b"\n")
    # pieces[-1] is what follows the last newline: b"" for a cleanly ended file, else an unfinished write.
    lines = pieces[:-1]
    tail = pieces[-1]
    offset = 0
    good_end = 0
    torn: TornTail | None = None
    for n, raw in enumerate(lines):
        is_last = n == len(lines) - 1 and not tail
        try:
            entry = decode_line(raw)
        except ValueError as exc:
            if is_last:
                torn = TornTail(offset=offset, length=len(data) - offset)
                break
            raise JournalError(
                f"{path}: line {n + 1} (byte {offset}) is corrupt: {exc}; the journal cannot be trusted "
                "past this point (only a torn last line is tolerated)"
            ) from exc
        builder.apply(entry)
        offset += len(raw) + 1
        good_end = offset
    if torn is None and tail:
        torn = TornTail(offset=good_end, length=len(tail))
    if builder.header is None:
        raise JournalError(
            f"{path}: journal has no complete header (the apply died before writing it; it changed nothing)"
        )
    return builder, torn


def read_journal(path: str | os.PathLike[str]) -> JournalState:
    """Reconstruct the state of an apply (and its rollback) from its journal."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise JournalError(f"{p}: cannot read journal: {exc.strerror or exc}") from exc
    if not data:
        raise JournalError(f"{p}: journal is empty (the apply died before writing it; it changed nothing)")
    builder, torn = scan_journal(p, data)
    return builder.state(torn)
