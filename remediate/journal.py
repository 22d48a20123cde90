"""The apply journal: an append-only, fsynced record that makes a killed apply resumable and undoable.

Why it exists: an apply changes several systems (Connect, the offset-syncs topic, consumer groups) one step
at a time, and the process can die between any two of them. The journal is written *before* each change,
so whatever happens the operator can ask "what was done, and what was it before?" and roll back with nothing
lost. It is the rollback record: it embeds the whole plan, so rollback needs only this file.

Format (one file per apply, JSON Lines, mode 0600)::

    {"at":...,"crc32":"1a2b3c4d","format":"mm2ctl-journal","plan":{...},"seq":0,"type":"header",...}
    {"at":...,"before":{...},"crc32":"...","index":0,"kind":"connector_stop","seq":1,"type":"step_started"}
    {"after":{...},"at":...,"crc32":"...","index":0,"outcome":"applied","seq":2,"type":"step_completed"}
    ...
    {"at":...,"crc32":"...","seq":9,"status":"succeeded","type":"apply_finished"}

Each line is canonical JSON (sorted keys) of the entry plus ``crc32`` (hex) of the canonical JSON of the
entry without it, and ``seq`` counts lines from 0. Durability: the file is opened ``O_APPEND``; each entry
is one ``write`` of a full line followed by ``os.fsync``; the directory is fsynced when the file is created.
The executor must not touch a cluster until ``step_started`` has returned.

Concurrent steps (format version 2): independent group-offset steps of one kind (``CONCURRENT_KINDS``) may
be in progress together. ``steps_started`` appends a batch of ``step_started`` entries in one ``write`` and
one ``fsync``, and returns only then: every write of the batch has its before-state on disk before any of
them is sent. ``steps_finished`` records the batch's outcomes the same way, one entry per step. A process
killed in between leaves every step of the batch in progress; resume and rollback check each one's effect.
A version 1 journal (one step at a time) reads the same way.

Reading: a torn *last* line (the process died mid-write) is ignored and reported (``JournalState.torn_tail``);
``Journal.open`` cuts it off, fsyncs, and records a ``torn_tail_discarded`` entry before appending. Any other
unreadable line, a CRC mismatch, a gap in ``seq`` or an impossible transition is a ``JournalError``: a
journal that lies about the past must not drive a rollback.

Secrets never enter the journal: before/after states go through ``mm2ctl.core.redaction.redact_json`` and
error text through its ``redact_text``; the embedded plan is already redacted by the model.

Where journals live: ``<state dir>/journals/<plan_id>/<UTC time>-<pid>.jsonl``; the state dir is
``$MM2CTL_STATE_DIR``, else ``$XDG_STATE_HOME/mm2ctl``, else ``~/.local/state/mm2ctl``. Files an apply
produces (the offset-syncs backup) go beside it (``Journal.artifact_path``).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Any

from mm2ctl.core.errors import JournalError, PlanError
from mm2ctl.core.redaction import REDACTED, redact_json, redact_text
from mm2ctl.plans.document import Plan, tool_version
from mm2ctl.plans.fingerprint import FrozenJSON, JSONable, canonical_json, digest_of, freeze_json
from mm2ctl.plans.serialize import plan_from_json, plan_to_json

JOURNAL_FORMAT = "mm2ctl-journal"
JOURNAL_FORMAT_VERSION = 2
#: Versions this reader understands: 1 had one step in progress at a time; 2 adds concurrent batches.
READABLE_FORMAT_VERSIONS = frozenset({1, 2})

#: Step kinds whose steps may be in progress together (each acts on one consumer group of its own).
CONCURRENT_KINDS = frozenset({"group_offsets_write", "group_offsets_verify"})


class EntryType(StrEnum):
    HEADER = "header"
    RESUME_STARTED = "resume_started"
    STEP_STARTED = "step_started"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    APPLY_FINISHED = "apply_finished"
    ROLLBACK_STARTED = "rollback_started"
    ROLLBACK_STEP_STARTED = "rollback_step_started"
    ROLLBACK_STEP_COMPLETED = "rollback_step_completed"
    ROLLBACK_STEP_FAILED = "rollback_step_failed"
    ROLLBACK_FINISHED = "rollback_finished"
    TORN_TAIL_DISCARDED = "torn_tail_discarded"


class StepStatus(StrEnum):
    STARTED = "started"  # the process died (or is still running) between started and its outcome
    COMPLETED = "completed"
    FAILED = "failed"


# ------------------------------------------------------------------------------------------ locations


def default_state_dir() -> Path:
    """Where mm2ctl keeps journals and locks (XDG state dir; overridable for tests and shared hosts)."""
    explicit = os.environ.get("MM2CTL_STATE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_STATE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "state"
    return base / "mm2ctl"


def journal_dir(plan_id: str, state_dir: Path | None = None) -> Path:
    return (state_dir or default_state_dir()) / "journals" / plan_id


def new_journal_path(plan: Plan, state_dir: Path | None = None, *, now: datetime | None = None) -> Path:
    """A fresh path for one apply of ``plan`` (time + pid make it unique per attempt)."""
    when = (now or datetime.now(UTC)).astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    return journal_dir(plan.plan_id, state_dir) / f"{when}-{os.getpid()}.jsonl"


def list_journals(plan_id: str, state_dir: Path | None = None) -> list[Path]:
    """This plan's journals, oldest first (names sort by start time)."""
    d = journal_dir(plan_id, state_dir)
    return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


# ------------------------------------------------------------------------------------------ line codec


def _crc(entry: Mapping[str, JSONable]) -> str:
    return f"{zlib.crc32(canonical_json(entry).encode('utf-8')):08x}"


def encode_line(entry: Mapping[str, JSONable], *, substitute: tuple[str, str] | None = None) -> bytes:
    """One journal line: canonical JSON of ``entry`` plus its CRC, newline-terminated.

    The entry is encoded once: canonical JSON lists the keys in order, so the fields sorting before and after
    ``crc32`` are encoded apart and joined around it, which gives both the text the CRC covers and the line.
    ``substitute``: ``(placeholder, json)`` puts text encoded beforehand where the string ``placeholder``
    is (the header's plan, whose canonical JSON was already made for its digest)."""
    if "crc32" in entry:
        raise ValueError("entry must not carry its own crc32")
    head = canonical_json({k: v for k, v in entry.items() if k < "crc32"})[1:-1]
    tail = canonical_json({k: v for k, v in entry.items() if k > "crc32"})[1:-1]
    if substitute is not None:
        placeholder, text = substitute
        quoted = json.dumps(placeholder)
        head, tail = head.replace(quoted, text, 1), tail.replace(quoted, text, 1)
    body = "{" + head + ("," if head and tail else "") + tail + "}"
    crc = f'"crc32":"{zlib.crc32(body.encode("utf-8")):08x}"'
    return ("{" + head + ("," if head else "") + crc + ("," if tail else "") + tail + "}\n").encode("utf-8")


def decode_line(raw: bytes) -> dict[str, Any]:
    """Parse and verify one line (without its newline). ``ValueError`` says what is wrong with it."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a JSON line ({exc})") from exc
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    crc = obj.pop("crc32", None)
    if not isinstance(crc, str):
        raise ValueError("no crc32")
    if crc != _crc(obj):
        raise ValueError(f"crc32 mismatch (recorded {crc}, content {_crc(obj)})")
    if not isinstance(obj.get("seq"), int) or not isinstance(obj.get("type"), str):
        raise ValueError("no seq/type")
    return obj


# ------------------------------------------------------------------------------------------ state


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


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How one step of a concurrent batch ended: ``error`` None means completed with ``outcome``."""

    index: int
    outcome: str = "applied"
    after: JSONable = None
    error: str | None = None


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


class _Builder:
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
        others = sorted(self.in_progress - {i})
        if others and (kind not in CONCURRENT_KINDS or any(self.plan.steps[j].kind.value != kind for j in others)):
            raise self._err(entry, f"step {i} started while step {others[0]} was still in progress")
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


def _scan(path: Path, data: bytes) -> tuple[_Builder, TornTail | None]:
    builder = _Builder(path)
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
    builder, torn = _scan(p, data)
    return builder.state(torn)


# ------------------------------------------------------------------------------------------ writer


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


@dataclass(slots=True)
class Journal:
    """The writer. Every method appends one entry durably (write + fsync) or raises ``JournalError``;
    the executor must treat that error as "stop now": a change without its journal entry is unrecoverable.
    """

    path: Path
    _fd: int
    _builder: _Builder = field(repr=False)

    # -- opening
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        plan: Plan,
        *,
        plan_path: str | os.PathLike[str] | None = None,
        document: Mapping[str, JSONable] | None = None,
    ) -> Journal:
        """Start the journal of a new apply; refuses to overwrite an existing file. ``document``: the plan's
        JSON document as read from its file (``plans.serialize.read_plan``), embedded as it is instead of
        encoding ``plan`` again; the journal records the digest of what it embeds."""
        p = Path(path)
        try:
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except FileExistsError as exc:
            raise JournalError(f"{p}: a journal already exists here; refusing to overwrite it") from exc
        except OSError as exc:
            raise JournalError(f"{p}: cannot create journal: {exc.strerror or exc}") from exc
        journal = cls(path=p, _fd=fd, _builder=_Builder(p))
        doc = plan_to_json(plan) if document is None else document
        plan_json = canonical_json(doc)  # once: for its digest and inside the header line
        placeholder = f"plan-{uuid.uuid4().hex}"
        try:
            journal._append(
                {
                    "type": EntryType.HEADER.value,
                    "format": JOURNAL_FORMAT,
                    "format_version": JOURNAL_FORMAT_VERSION,
                    "plan_id": plan.plan_id,
                    "plan_fingerprint": plan.fingerprint.digest,
                    "plan_sha256": hashlib.sha256(plan_json.encode("utf-8")).hexdigest(),  # = digest_of(doc)
                    "plan_path": None if plan_path is None else os.fspath(plan_path),
                    "plan": placeholder,
                    "started_at": _now(),
                    "host": socket.gethostname(),
                    "pid": os.getpid(),
                    "tool_version": tool_version(),
                },
                plan=plan,
                substitute=(placeholder, plan_json),
            )
            _fsync_dir(p.parent)
        except BaseException:
            journal.close()
            raise
        return journal

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Journal:
        """Reopen an existing journal to resume or roll back. A torn last line is cut off (it was never
        acted upon) and its removal recorded, so appending never buries garbage mid-file."""
        p = Path(path)
        try:
            fd = os.open(p, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
        except OSError as exc:
            raise JournalError(f"{p}: cannot open journal: {exc.strerror or exc}") from exc
        try:
            with open(fd, "rb", closefd=False) as fh:
                fh.seek(0)
                data = fh.read()
            if not data:
                raise JournalError(f"{p}: journal is empty (the apply died before writing it)")
            builder, torn = _scan(p, data)
            journal = cls(path=p, _fd=fd, _builder=builder)
            if torn is not None:
                discarded = data[torn.offset :]
                os.ftruncate(fd, torn.offset)
                os.fsync(fd)
                journal._append(
                    {
                        "type": EntryType.TORN_TAIL_DISCARDED.value,
                        "length": torn.length,
                        "discarded_crc32": f"{zlib.crc32(discarded):08x}",
                    }
                )
        except BaseException:
            os.close(fd)
            raise
        return journal

    # -- state
    @property
    def state(self) -> JournalState:
        return self._builder.state(None)

    def artifact_path(self, name: str) -> Path:
        """Where this apply keeps a file it produces (e.g. the offset-syncs backup named in the plan)."""
        if "/" in name or name in ("", ".", ".."):
            raise JournalError(f"artifact name {name!r} must be a bare file name")
        return self.path.parent / f"{self.path.stem}.{name}"

    # -- entries
    def _append(
        self,
        fields: Mapping[str, JSONable],
        *,
        plan: Plan | None = None,
        substitute: tuple[str, str] | None = None,
    ) -> None:
        if self._fd < 0:
            raise JournalError(f"{self.path}: the journal is closed (or a write to it failed)")
        entry = {"seq": self._builder.last_seq + 1, "at": _now(), **fields}
        # canonical JSON first: a non-JSON value fails before any state changes
        line = encode_line(entry, substitute=substitute)
        self._builder.apply(entry, plan=plan)  # refuses an impossible transition before it reaches the disk
        self._write(line)

    def _append_many(self, many: Iterable[Mapping[str, JSONable]]) -> None:
        """Several entries in one ``write`` and one ``fsync`` (a concurrent batch). If one of them is an
        impossible transition, nothing reaches the disk and this writer is closed: the entries before it
        are already folded into the in-memory state, which must not be trusted any more."""
        if self._fd < 0:
            raise JournalError(f"{self.path}: the journal is closed (or a write to it failed)")
        at = _now()
        lines = []
        try:
            for fields in many:
                entry = {"seq": self._builder.last_seq + 1, "at": at, **fields}
                lines.append(encode_line(entry))
                self._builder.apply(entry)
        except BaseException:
            self.close()
            raise
        if lines:
            self._write(b"".join(lines))

    def _write(self, data: bytes) -> None:
        try:
            _write_all(self._fd, data)
            os.fsync(self._fd)
        except OSError as exc:
            # The in-memory state is now ahead of the disk; this writer must never be used again.
            self.close()
            raise JournalError(f"{self.path}: cannot write journal: {exc.strerror or exc}") from exc

    def resume_started(self) -> None:
        host, pid = socket.gethostname(), os.getpid()
        self._append({"type": EntryType.RESUME_STARTED.value, "host": host, "pid": pid})

    def step_started(self, index: int, *, before: JSONable) -> None:
        """Record the observed before-state. Returns only once it is on disk: then the step may run."""
        plan = self._builder.plan
        assert plan is not None
        kind = plan.steps[index].kind.value if 0 <= index < len(plan.steps) else None
        before = redact_json(before)
        self._append({"type": EntryType.STEP_STARTED.value, "index": index, "kind": kind, "before": before})

    def steps_started(self, befores: Iterable[tuple[int, JSONable]]) -> None:
        """``step_started`` of each ``(index, before)`` of a concurrent batch, durable together: returns
        only once every before-state is on disk, so no write of the batch may be sent before it returns."""
        plan = self._builder.plan
        assert plan is not None
        self._append_many(
            {
                "type": EntryType.STEP_STARTED.value,
                "index": i,
                "kind": plan.steps[i].kind.value if 0 <= i < len(plan.steps) else None,
                "before": redact_json(before),
            }
            for i, before in befores
        )

    def steps_finished(self, outcomes: Iterable[StepOutcome]) -> None:
        """The outcome of each step of a concurrent batch (completed, or failed with its error), durable
        together, one entry per step."""
        self._append_many(
            {"type": EntryType.STEP_FAILED.value, "index": o.index, "error": redact_text(o.error, REDACTED)}
            if o.error is not None
            else {
                "type": EntryType.STEP_COMPLETED.value,
                "index": o.index,
                "outcome": o.outcome,
                "after": redact_json(o.after),
            }
            for o in outcomes
        )

    def step_completed(self, index: int, *, outcome: str, after: JSONable = None) -> None:
        self._append(
            {
                "type": EntryType.STEP_COMPLETED.value,
                "index": index,
                "outcome": outcome,
                "after": redact_json(after),
            }
        )

    def step_failed(self, index: int, *, error: str) -> None:
        self._append({"type": EntryType.STEP_FAILED.value, "index": index, "error": redact_text(error, REDACTED)})

    def apply_finished(self, *, status: str, step: int | None = None, error: str | None = None) -> None:
        """``status``: ``succeeded``, ``failed`` or ``aborted``. A failed apply names the ``step`` that ended
        it and why, also when that step never started (its precondition, or the reads before it, failed)."""
        fields: dict[str, JSONable] = {"type": EntryType.APPLY_FINISHED.value, "status": status}
        if step is not None:
            fields["step"] = step
        if error is not None:
            fields["error"] = redact_text(error, REDACTED)
        self._append(fields)

    def rollback_started(self, steps: Iterable[int]) -> None:
        self._append({"type": EntryType.ROLLBACK_STARTED.value, "steps": list(steps)})

    def rollback_step_started(self, index: int, *, before: JSONable) -> None:
        self._append({"type": EntryType.ROLLBACK_STEP_STARTED.value, "index": index, "before": redact_json(before)})

    def rollback_step_completed(self, index: int, *, outcome: str, after: JSONable = None) -> None:
        self._append(
            {
                "type": EntryType.ROLLBACK_STEP_COMPLETED.value,
                "index": index,
                "outcome": outcome,
                "after": redact_json(after),
            }
        )

    def rollback_step_failed(self, index: int, *, error: str) -> None:
        self._append(
            {"type": EntryType.ROLLBACK_STEP_FAILED.value, "index": index, "error": redact_text(error, REDACTED)}
        )

    def rollback_finished(self, *, status: str) -> None:
        self._append({"type": EntryType.ROLLBACK_FINISHED.value, "status": status})

    # -- closing
    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
