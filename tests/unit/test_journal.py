"""The apply journal: durable appends, torn tails tolerated, corruption refused, crash state rebuilt."""

from __future__ import annotations

import fcntl
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.core.errors import JournalError
from mm2ctl.core.security.redaction import REDACTED
from mm2ctl.plans.document import Plan
from mm2ctl.remediate.journal import (
    EntryType,
    Journal,
    StepStatus,
    decode_line,
    list_journals,
    new_journal_path,
    read_journal,
)
from tests.unit.test_plan_samples import SECRET_JAAS, SECRET_PASSWORD, connector_config, sample_plan

PLAN = sample_plan()
N = len(PLAN.steps)


def before_of(i: int) -> dict[str, Any]:
    return {"step": i, "observed": f"before-{i}"}


def after_of(i: int) -> dict[str, Any]:
    return {"step": i, "observed": f"after-{i}"}


def new_journal(tmp_path: Path, plan: Plan = PLAN) -> Journal:
    return Journal.create(new_journal_path(plan, tmp_path), plan, plan_path=tmp_path / "plan.yaml")


def run_steps(j: Journal, upto: int) -> None:
    for i in range(upto):
        j.step_started(i, before=before_of(i))
        j.step_completed(i, outcome="applied", after=after_of(i))


def lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines()


# ----------------------------------------------------------------------------------------------- writing


def test_header_embeds_the_plan_so_rollback_needs_only_the_journal(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        path = j.path
    state = read_journal(path)
    assert state.plan == PLAN
    assert state.plan_path == str(tmp_path / "plan.yaml")
    assert state.pid == os.getpid()
    header = decode_line(lines(path)[0])
    assert header["type"] == "header" and header["seq"] == 0
    assert header["plan_id"] == PLAN.plan_id
    assert header["plan_fingerprint"] == PLAN.fingerprint.digest
    assert list_journals(PLAN.plan_id, tmp_path) == [path]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_every_entry_is_on_disk_and_fsynced_before_the_call_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[tuple[str, int]] = []  # (kind of fd, lines in the file at fsync time)
    real_fsync = os.fsync
    path_box: list[Path] = []

    def spy(fd: int) -> None:
        is_dir = stat.S_ISDIR(os.fstat(fd).st_mode)
        count = len(lines(path_box[0])) if path_box and not is_dir else -1
        synced.append(("dir" if is_dir else "file", count))
        real_fsync(fd)

    path = new_journal_path(PLAN, tmp_path)
    path_box.append(path)
    monkeypatch.setattr(os, "fsync", spy)
    j = Journal.create(path, PLAN)
    assert synced == [("file", 1), ("dir", -1)]  # header synced, then the directory entry
    assert fcntl.fcntl(j._fd, fcntl.F_GETFL) & os.O_APPEND
    synced.clear()
    j.step_started(0, before=before_of(0))
    assert synced == [("file", 2)]  # the before-state is durable before the step may run
    j.step_completed(0, outcome="applied", after=after_of(0))
    assert synced == [("file", 2), ("file", 3)]
    j.close()


def test_each_line_carries_seq_and_a_crc(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        run_steps(j, 3)
        path = j.path
    entries = [decode_line(raw) for raw in lines(path)]
    assert [e["seq"] for e in entries] == list(range(7))
    assert [e["type"] for e in entries[1:3]] == ["step_started", "step_completed"]
    assert all(b'"crc32":"' in raw for raw in lines(path))


def test_full_apply_and_rollback_are_reconstructed(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        run_steps(j, N)
        j.apply_finished(status="succeeded")
        todo = j.state.steps_to_roll_back()
        assert todo == tuple(reversed(range(N)))
        j.rollback_started(todo)
        for i in todo[:2]:
            j.rollback_step_started(i, before=after_of(i))
            j.rollback_step_completed(i, outcome="restored", after=before_of(i))
        j.rollback_step_started(todo[2], before=after_of(todo[2]))
        j.rollback_step_failed(todo[2], error="boom")
        path = j.path
    state = read_journal(path)
    assert state.apply_finished and state.apply_status == "succeeded"
    assert state.completed_steps == tuple(range(N)) and state.next_step_to_apply() is None
    assert state.rollback_started and not state.rollback_finished
    assert state.rolled_back_steps == frozenset(todo[:2])
    assert state.is_rolled_back(todo[0]) and not state.is_rolled_back(todo[2])
    assert state.rollback_steps[todo[2]].status is StepStatus.FAILED
    assert state.steps_to_roll_back() == todo[2:]
    assert state.before_state(3) == before_of(3)


CRASH_POINTS = [(k, "between_steps") for k in range(N + 1)] + [(k, "mid_step") for k in range(N)]


@pytest.mark.parametrize(("k", "phase"), CRASH_POINTS, ids=[f"{p}-{k}" for k, p in CRASH_POINTS])
def test_state_after_a_crash_at_step_k(tmp_path: Path, k: int, phase: str) -> None:
    """Killed after k completed steps (and possibly inside step k): nothing recorded is lost."""
    j = new_journal(tmp_path)
    run_steps(j, k)
    if phase == "mid_step":
        j.step_started(k, before=before_of(k))
    path = j.path
    j.close()  # the process dies here: no apply_finished
    state = read_journal(path)
    assert state.completed_steps == tuple(range(k))
    assert state.apply_finished is False
    assert state.torn_tail is None
    for i in range(k):
        assert state.before_state(i) == before_of(i)
        assert state.steps[i].after == after_of(i)
    if phase == "mid_step":
        assert state.in_progress_step == k
        assert state.steps[k].status is StepStatus.STARTED
        assert state.before_state(k) == before_of(k)
        assert state.steps_to_roll_back() == tuple(reversed(range(k + 1)))
        assert state.next_step_to_apply() == k
    else:
        assert state.in_progress_step is None
        assert state.steps_to_roll_back() == tuple(reversed(range(k)))
        assert state.next_step_to_apply() == (k if k < N else None)


def test_resume_retries_the_in_progress_step_and_keeps_its_first_before_state(tmp_path: Path) -> None:
    j = new_journal(tmp_path)
    run_steps(j, 2)
    j.step_started(2, before=before_of(2))
    j.close()
    with Journal.open(j.path) as again:
        with pytest.raises(JournalError, match="step 2 started while step 2 was still in progress"):
            again.step_started(2, before={"partially": "applied"})
        again.resume_started()
        again.step_started(2, before={"partially": "applied"})
        again.step_completed(2, outcome="applied", after=after_of(2))
    state = read_journal(j.path)
    assert state.resumes == 1
    assert state.steps[2].attempts == 2
    assert state.before_state(2) == before_of(2)  # rollback restores what was there before ANY attempt
    assert state.completed_steps == (0, 1, 2)


def test_failed_step_is_recorded_and_can_be_retried_after_resume(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        run_steps(j, 1)
        j.step_started(1, before=before_of(1))
        j.step_failed(1, error="Connect 409: rebalance")
        j.apply_finished(status="failed")
        assert j.state.failed_steps == (1,)
        j.resume_started()
        j.step_started(1, before=before_of(1))
        j.step_completed(1, outcome="applied")
        assert j.state.failed_steps == ()


@pytest.mark.parametrize(
    ("action", "message"),
    [
        (lambda j: j.step_started(1, before=None), r"step 1 started before step\(s\) \[0\] completed"),
        (lambda j: j.step_completed(0, outcome="x"), "step 0 has an outcome but was not in progress"),
        (lambda j: j.step_started(99, before=None), "index 99 is not a step of the plan"),
        (lambda j: j.rollback_started([3]), "rollback of step 3, which never started"),
        (lambda j: j.apply_finished(status="succeeded"), "not every step completed"),
        (lambda j: j.rollback_step_started(0, before=None), "rollback step before rollback_started"),
    ],
)
def test_impossible_transitions_are_refused_before_they_reach_the_disk(
    tmp_path: Path, action: Any, message: str
) -> None:
    with new_journal(tmp_path) as j:
        size = j.path.stat().st_size
        with pytest.raises(JournalError, match=message):
            action(j)
        assert j.path.stat().st_size == size


def test_no_step_after_rollback_started(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        run_steps(j, 2)
        j.rollback_started([1, 0])
        with pytest.raises(JournalError, match="after rollback started"):
            j.step_started(2, before=None)


def test_create_refuses_to_overwrite(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        path = j.path
    with pytest.raises(JournalError, match="already exists"):
        Journal.create(path, PLAN)


# ------------------------------------------------------------------------------------------ damaged files


def _three_step_journal(tmp_path: Path) -> Path:
    with new_journal(tmp_path) as j:
        run_steps(j, 3)
        return j.path


@pytest.mark.parametrize(
    "garbage",
    [b'{"seq":7,"type":"step_sta', b"\x00" * 4096, b'{"seq":7}\n', b"\n"],
    ids=["half-line", "zero-filled", "bad-crc-terminated", "empty-line"],
)
def test_a_torn_last_line_is_ignored_and_reported(tmp_path: Path, garbage: bytes) -> None:
    path = _three_step_journal(tmp_path)
    good = path.stat().st_size
    with path.open("ab") as fh:
        fh.write(garbage)
    state = read_journal(path)
    assert state.completed_steps == (0, 1, 2)
    assert state.torn_tail is not None
    assert state.torn_tail.offset == good and state.torn_tail.length == len(garbage)


def test_reopening_cuts_the_torn_tail_and_records_it(tmp_path: Path) -> None:
    path = _three_step_journal(tmp_path)
    whole = lines(path)[-1] + b"\n"
    with path.open("ab") as fh:
        fh.write(whole[: len(whole) // 2])  # died half-way through a copy of the last entry
    with Journal.open(path) as j:
        j.resume_started()
        j.step_started(3, before=before_of(3))
    state = read_journal(path)
    assert state.torn_tail is None
    assert state.in_progress_step == 3
    types = [decode_line(raw)["type"] for raw in lines(path)]
    assert types[-3:] == [EntryType.TORN_TAIL_DISCARDED, EntryType.RESUME_STARTED, EntryType.STEP_STARTED]


def test_a_corrupted_middle_line_is_rejected(tmp_path: Path) -> None:
    path = _three_step_journal(tmp_path)
    raw = bytearray(path.read_bytes())
    second_line_start = raw.index(b"\n") + 1
    pos = raw.index(b"before-0", second_line_start)
    raw[pos : pos + 8] = b"before-X"  # same length, valid JSON: only the CRC can tell
    path.write_bytes(bytes(raw))
    with pytest.raises(JournalError, match=r"line 2 \(byte \d+\) is corrupt: crc32 mismatch"):
        read_journal(path)


def test_a_missing_middle_line_is_rejected(tmp_path: Path) -> None:
    path = _three_step_journal(tmp_path)
    kept = lines(path)
    del kept[2]
    path.write_bytes(b"\n".join(kept) + b"\n")
    with pytest.raises(JournalError, match="sequence number 3 where 2 was expected"):
        read_journal(path)


def test_an_unparseable_middle_line_is_rejected_even_with_a_good_tail(tmp_path: Path) -> None:
    path = _three_step_journal(tmp_path)
    kept = lines(path)
    kept[1] = b"not json at all"
    path.write_bytes(b"\n".join(kept) + b"\n")
    with pytest.raises(JournalError, match=r"line 2 .* is corrupt: not a JSON line"):
        read_journal(path)


def test_a_journal_without_a_header_is_an_error(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    with pytest.raises(JournalError, match="empty"):
        read_journal(empty)
    torn_header = tmp_path / "torn.jsonl"
    torn_header.write_bytes(b'{"seq":0,"type":"hea')
    with pytest.raises(JournalError, match="no complete header"):
        read_journal(torn_header)
    with pytest.raises(JournalError, match="cannot read journal"):
        read_journal(tmp_path / "missing.jsonl")


def test_a_tampered_embedded_plan_is_rejected(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        path = j.path
    header = decode_line(lines(path)[0])
    header["plan"]["description"] = "something else"
    from mm2ctl.remediate.journal import encode_line

    path.write_bytes(encode_line(header))
    with pytest.raises(JournalError, match="does not match its recorded digest"):
        read_journal(path)


# ----------------------------------------------------------------------------------------------- secrets


def test_secret_values_never_reach_the_journal_file(tmp_path: Path) -> None:
    with new_journal(tmp_path) as j:
        j.step_started(0, before={"config": connector_config(), "jaas_copy": SECRET_JAAS})
        j.step_failed(0, error=f"auth failed for password={SECRET_PASSWORD} at http://u:{SECRET_PASSWORD}@h/")
        path = j.path
    data = path.read_bytes()
    assert SECRET_PASSWORD.encode() not in data
    assert b"PlainLoginModule" not in data
    assert REDACTED.encode() in data
    state = read_journal(path)
    assert state.before_state(0)["config"]["source.cluster.ssl.truststore.password"] == REDACTED  # type: ignore[index]
    assert json.dumps(state.steps[0].error).count(REDACTED) == 2


@pytest.mark.parametrize(
    "entry",
    [
        {"seq": 3, "type": "step_started", "index": 1, "before": {"a": [1, 2]}, "at": "t", "kind": "x"},
        {"seq": 0, "at": "t", "type": "header", "plan": {"z": 1, "b": [{"y": None}]}},
        {"seq": 1, "at": "t"},
        {"after": None, "a": "é\u2028"},
    ],
)
def test_a_line_is_the_canonical_json_of_its_entry_and_crc(entry: dict[str, Any]) -> None:
    import zlib

    from mm2ctl.plans.fingerprint import canonical_json
    from mm2ctl.remediate.journal import encode_line

    line = encode_line(entry)
    crc = f"{zlib.crc32(canonical_json(entry).encode()):08x}"
    assert line == (canonical_json({**entry, "crc32": crc}) + "\n").encode()
    assert {k: v for k, v in json.loads(line).items() if k != "crc32"} == entry


def test_the_header_embeds_the_plan_document_as_read(tmp_path: Path) -> None:
    from mm2ctl.plans.serialize import dump_plan, load_plan_document

    plan, document = load_plan_document(dump_plan(PLAN))
    with Journal.create(tmp_path / "j.jsonl", plan, document=document) as j:
        path = j.path
    assert read_journal(path).plan == PLAN
    header = json.loads(lines(path)[0])
    assert header["plan"] == document
