"""The progress type of the core and the CLI's renderer of it: plain lines for logs, nothing when quiet."""

from __future__ import annotations

import io
from typing import Any

import pytest

from mm2ctl.cli.progress_bar import Mode, TerminalProgress, choose_mode
from mm2ctl.core.progress import CountingProgress, count, no_progress
from mm2ctl.inspector.spark.task_progress import _StageTally


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def lines_of(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_plain_callable_is_a_progress_and_hears_no_counts() -> None:
    heard: list[str] = []
    count(heard.append, "phase", 1, 2)  # a list's append cannot count: nothing happens
    count(lambda m: heard.append(m), "phase", 1, 2)
    count(None, "phase", 1, 2)
    no_progress("dropped")
    assert heard == []
    assert not isinstance(heard.append, CountingProgress)


def test_a_reporter_with_count_hears_counts() -> None:
    class Fake:
        def __init__(self) -> None:
            self.counts: list[tuple[str, int, int]] = []

        def __call__(self, message: str) -> None: ...

        def count(self, phase: str, done: int, total: int) -> None:
            self.counts.append((phase, done, total))

    fake = Fake()
    count(fake, "steps", 2, 5)
    assert fake.counts == [("steps", 2, 5)]
    assert isinstance(TerminalProgress(), CountingProgress)


def test_lines_mode_prints_prefixed_messages() -> None:
    out = io.StringIO()
    progress = TerminalProgress("mm2ctl", mode=Mode.LINES, stream=out)
    progress("reaching the clusters")
    progress("starting Spark")
    assert lines_of(out) == ["mm2ctl: reaching the clusters", "mm2ctl: starting Spark"]
    assert "\r" not in out.getvalue()


def test_lines_mode_prints_a_phase_at_start_at_end_and_at_most_every_interval_between() -> None:
    out, clock = io.StringIO(), Clock()
    progress = TerminalProgress("mm2ctl", mode=Mode.LINES, stream=out, clock=clock, line_every_s=10)
    for done in range(101):
        clock.now = done * 0.5  # 50 s over the phase
        progress.count("partitions translated", done, 100)
    shown = lines_of(out)
    assert shown[0] == "mm2ctl: partitions translated: 0/100"
    assert shown[-1] == "mm2ctl: partitions translated: 100/100"
    # the start, then every 10 s (10, 20, 30, 40 s), then the end (50 s)
    assert [line.rsplit(" ", 1)[1] for line in shown] == ["0/100", "20/100", "40/100", "60/100", "80/100", "100/100"]
    progress.count("partitions translated", 100, 100)  # the end again is not a new line
    assert len(lines_of(out)) == 6
    assert "\r" not in out.getvalue()


def test_lines_mode_messages_inside_a_phase_do_not_repeat_its_count() -> None:
    out = io.StringIO()
    progress = TerminalProgress("mm2ctl", mode=Mode.LINES, stream=out, clock=Clock())
    progress.count("steps applied", 0, 2)
    progress("step 0 (connector_stop): stop a")
    progress.count("steps applied", 1, 2)
    progress("step 1 (connector_resume): resume a")
    progress.count("steps applied", 2, 2)
    progress.count("steps rolled back", 0, 1)  # a new phase starts with a line of its own
    assert lines_of(out) == [
        "mm2ctl: steps applied: 0/2",
        "mm2ctl: step 0 (connector_stop): stop a",
        "mm2ctl: step 1 (connector_resume): resume a",
        "mm2ctl: steps applied: 2/2",
        "mm2ctl: steps rolled back: 0/1",
    ]


def test_off_mode_prints_nothing() -> None:
    out = io.StringIO()
    progress = TerminalProgress("mm2ctl", mode=Mode.OFF, stream=out)
    progress("hello")
    progress.count("phase", 1, 1)
    progress.close()
    assert out.getvalue() == ""


def test_a_closed_reporter_still_prints_lines() -> None:
    out = io.StringIO()
    with TerminalProgress("lab", mode=Mode.LINES, stream=out) as progress:
        progress("up")
    progress("after")
    assert lines_of(out) == ["lab: up", "lab: after"]


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("quiet", "verbose", "stream", "term", "mode"),
    [
        (True, False, Tty(), "xterm", Mode.OFF),
        (False, False, Tty(), "xterm", Mode.BAR),
        (False, True, Tty(), "xterm", Mode.LINES),  # -v: log lines would tear a live bar
        (False, False, Tty(), "dumb", Mode.LINES),
        (False, False, io.StringIO(), "xterm", Mode.LINES),  # a file or a pipe
    ],
)
def test_choose_mode(
    monkeypatch: pytest.MonkeyPatch, quiet: bool, verbose: bool, stream: io.StringIO, term: str, mode: Mode
) -> None:
    monkeypatch.setenv("TERM", term)
    assert choose_mode(quiet=quiet, verbose=verbose, stream=stream) is mode


def test_stage_tally_counts_tasks_of_stages_seen_and_completes_those_that_ended() -> None:
    tally = _StageTally()
    tally.update(1, 3, 8)
    tally.update(2, 0, 4)
    assert tally.counts() == (3, 12)
    tally.mark_finished({2})  # stage 1 is no longer active: it ran all its tasks
    tally.update(2, 5, 4)  # never more done than there are tasks
    assert tally.counts() == (12, 12)


def test_bar_mode_draws_on_a_terminal_and_leaves_only_the_messages() -> None:
    import os
    import select

    master, slave = os.openpty()
    with open(slave, "w", encoding="utf-8") as terminal:
        progress = TerminalProgress("mm2ctl", mode=Mode.BAR, stream=terminal)
        with progress:
            progress("reading the offset syncs")
            for done in range(4):
                progress.count("partitions translated", done, 3)
        progress("after the bar")  # a plain line once closed
    seen = b""
    while select.select([master], [], [], 0.2)[0]:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    text = seen.decode("utf-8", "replace")
    assert "mm2ctl: reading the offset syncs" in text
    assert "mm2ctl: after the bar" in text


@pytest.mark.spark
def test_a_spark_action_counts_its_tasks_to_the_end(spark: Any) -> None:
    from mm2ctl.inspector.spark.task_progress import counting_tasks

    class Recorder:
        def __init__(self) -> None:
            self.counts: list[tuple[str, int, int]] = []

        def __call__(self, message: str) -> None: ...

        def count(self, phase: str, done: int, total: int) -> None:
            self.counts.append((phase, done, total))

    recorder = Recorder()
    with counting_tasks(spark, recorder, "Spark tasks", interval_s=0.01):
        frame = spark.range(0, 10_000, numPartitions=4)
        frame.groupBy((frame.id % 3).alias("k")).count().collect()  # two stages: the scan, the aggregate
    assert recorder.counts, "no count reported"
    phase, done, total = recorder.counts[-1]
    assert phase == "Spark tasks" and done == total > 0
    assert all(d <= t for _p, d, t in recorder.counts)

    heard: list[str] = []
    with counting_tasks(spark, heard.append, "Spark tasks"):  # a reporter that cannot count gets no thread
        spark.range(10).count()
    assert heard == []
