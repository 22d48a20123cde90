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
Format version 3 journals a run of connector stops (``remediate.connector_stops``) the same way. A version 1
journal (one step at a time) and a version 2 one read the same way.

Reading: a torn *last* line (the process died mid-write) is ignored and reported (``JournalState.torn_tail``);
``Journal.open`` cuts it off, fsyncs, and records a ``torn_tail_discarded`` entry before appending. Any other
unreadable line, a CRC mismatch, a gap in ``seq`` or an impossible transition is a ``JournalError``: a
journal that lies about the past must not drive a rollback.

Secrets never enter the journal: before/after states go through ``mm2ctl.core.security.redaction.redact_json`` and
error text through its ``redact_text``; the embedded plan is already redacted by the model.

Where journals live: ``<state dir>/journals/<plan_id>/<UTC time>-<pid>.jsonl``; the state dir is
``$MM2CTL_STATE_DIR``, else ``$XDG_STATE_HOME/mm2ctl``, else ``~/.local/state/mm2ctl``. Files an apply
produces (the offset-syncs backup) go beside it (``Journal.artifact_path``).

This module holds the locations and the writer (``Journal``); the line codec is ``remediate.journal_codec``
and the state read back (``read_journal``, ``JournalState``) is ``remediate.journal_state``.
"""

from __future__ import annotations

import hashlib
import os
import socket
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType

from mm2ctl.core.errors import JournalError
from mm2ctl.core.security.redaction import REDACTED, redact_json, redact_text
from mm2ctl.plans.document import Plan, tool_version
from mm2ctl.plans.fingerprint import JSONable, canonical_json
from mm2ctl.plans.serialize import plan_to_json
from mm2ctl.remediate.journal_codec import (
    JOURNAL_FORMAT,
    JOURNAL_FORMAT_VERSION,
    READABLE_FORMAT_VERSIONS,
    EntryType,
    decode_line,
    encode_line,
)
from mm2ctl.remediate.journal_state import (
    CONCURRENT_KINDS,
    JournalState,
    RollbackRecord,
    StateBuilder,
    StepRecord,
    StepStatus,
    TornTail,
    read_journal,
    scan_journal,
)

# The names other modules have imported from here: the codec's and the state's are owned by those modules.
__all__ = [
    "CONCURRENT_KINDS",
    "JOURNAL_FORMAT",
    "JOURNAL_FORMAT_VERSION",
    "READABLE_FORMAT_VERSIONS",
    "EntryType",
    "Journal",
    "JournalState",
    "RollbackRecord",
    "StepOutcome",
    "StepRecord",
    "StepStatus",
    "TornTail",
    "decode_line",
    "default_state_dir",
    "encode_line",
    "journal_dir",
    "list_journals",
    "new_journal_path",
    "read_journal",
]


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


# ------------------------------------------------------------------------------------------ writer


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """How one step of a concurrent batch ended: ``error`` None means completed with ``outcome``."""

    index: int
    outcome: str = "applied"
    after: JSONable = None
    error: str | None = None


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
    _builder: StateBuilder = field(repr=False)

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
        JSON document as read from its file (``plans.serialize.load_plan_document``), embedded as it is instead of
        encoding ``plan`` again; the journal records the digest of what it embeds."""
        p = Path(path)
        try:
            p.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC, 0o600)
        except FileExistsError as exc:
            raise JournalError(f"{p}: a journal already exists here; refusing to overwrite it") from exc
        except OSError as exc:
            raise JournalError(f"{p}: cannot create journal: {exc.strerror or exc}") from exc
        journal = cls(path=p, _fd=fd, _builder=StateBuilder(p))
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
            builder, torn = scan_journal(p, data)
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
