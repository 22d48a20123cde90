"""A program kept running between batches (``core.java.served``), driven with a real process: a small Python
program that speaks the same protocol as ``GroupAdmin.java``'s long-lived client."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2ctl.core.java.served import ServedProgram, Unanswered

#: Reads its settings, then answers each batch: "echo X" -> "X", "pid" -> its pid, "hang" -> never, "exit" -> dies.
PROGRAM = r"""
import os, sys, time
def block():
    lines = []
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line == "%%":
            return lines
        lines.append(line)
    return None
settings = block()
print("settings", *settings, flush=True)
while (batch := block()) is not None:
    for call in batch:
        if call == "pid":
            print(os.getpid())
        elif call == "hang":
            sys.stdout.flush(); time.sleep(3600)
        elif call == "exit":
            sys.exit(3)
        else:
            print(call.removeprefix("echo "))
    print("done", flush=True)
"""


@pytest.fixture
def program(tmp_path: Path) -> Iterator[ServedProgram]:
    path = tmp_path / "served.py"
    path.write_text(PROGRAM, encoding="utf-8")
    served = ServedProgram(lambda: [sys.executable, str(path)], "a=1\nb=2")
    yield served
    served.close()


def test_batches_are_answered_by_one_process(program: ServedProgram) -> None:
    first = program.call(["pid", "echo one"], timeout_s=30)
    second = program.call(["pid", "echo two"], timeout_s=30)
    assert first[0] == "settings a=1 b=2"  # the settings, once, before the first answer
    assert first[1:] == [first[1], "one"] and second == [first[1], "two"]
    assert program.starts == 1


def test_a_program_that_dies_is_started_again_on_the_next_batch(program: ServedProgram) -> None:
    pid = program.call(["pid"], timeout_s=30)[1]
    with pytest.raises(Unanswered) as exc:
        program.call(["echo before", "exit"], timeout_s=30)
    assert exc.value.output == ["before"] and not exc.value.timed_out
    again = program.call(["pid"], timeout_s=30)
    assert again[0].startswith("settings") and again[1] != pid and program.starts == 2


def test_a_batch_past_its_deadline_ends_the_process(program: ServedProgram) -> None:
    pid = int(program.call(["pid"], timeout_s=30)[1])
    with pytest.raises(Unanswered) as exc:
        program.call(["echo started", "hang"], timeout_s=1)
    assert exc.value.timed_out and exc.value.output == ["started"]
    assert not Path(f"/proc/{pid}").exists()
    assert program.call(["echo next"], timeout_s=30)[1:] == ["next"] and program.starts == 2


def test_close_ends_the_process(program: ServedProgram) -> None:
    pid = int(program.call(["pid"], timeout_s=30)[1])
    program.close()
    assert not Path(f"/proc/{pid}").exists()
