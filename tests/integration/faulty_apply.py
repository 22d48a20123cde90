"""``mm2ctl`` with faults injected into apply: a test-only program, a process of its own as the real command
is, that the crash and fault tests SIGKILL or hold at an exact point of the journal.

    python tests/integration/faulty_apply.py [--kill-after-step K] [--kill-after-groups N]
        [--pause-before-step K] -- apply PLAN --auto-approve ...

It binds ``engine.ApplyHooks`` to ``engine.apply_plan`` and ``engine.resume_apply`` (which the CLI calls
through the module) and runs mm2ctl's own entry point, ``mm2ctl.cli.main.main``, in this process with the
arguments after ``--``. The shipped engine reads no fault switch; only this program sets the hooks.

- ``--kill-after-step K``: SIGKILL right after step K's completion is journaled (in a batch of group steps:
  once the batch's outcomes are, K among its steps that succeeded);
- ``--kill-after-groups N``: SIGKILL once Kafka has acknowledged N group writes of this process, before their
  batch's outcomes are journaled (in the middle of a batch);
- ``--pause-before-step K``: once step K's before-state is journaled and before its request is sent, create
  ``<journal>.paused`` and wait until the test removes it (at most ``PAUSE_LIMIT_S``), so the test can break a
  broker or a worker meanwhile.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from mm2ctl.remediate.engine import ApplyHooks

#: ``<journal>`` + this names the file that exists while apply is held (``--pause-before-step``).
PAUSE_SUFFIX = ".paused"
#: The longest a held apply waits for the test to let it go on.
PAUSE_LIMIT_S = 600.0


@dataclass(frozen=True)
class Faults:
    """The faults of one run of this program; ``command`` is its argv up to mm2ctl's own arguments."""

    kill_after_step: int | None = None
    kill_after_groups: int | None = None
    pause_before_step: int | None = None

    def command(self) -> list[str]:
        argv = [sys.executable, str(Path(__file__).resolve())]
        for flag, value in (
            ("--kill-after-step", self.kill_after_step),
            ("--kill-after-groups", self.kill_after_groups),
            ("--pause-before-step", self.pause_before_step),
        ):
            if value is not None:
                argv += [flag, str(value)]
        return [*argv, "--"]


def paused_marker(journal: Path) -> Path:
    """The file that exists while an apply with ``journal`` is held before a step."""
    return journal.with_name(journal.name + PAUSE_SUFFIX)


def _kill() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def hooks_for(faults: Faults) -> ApplyHooks:
    """The ``engine.ApplyHooks`` that inject ``faults``."""
    acked = [0]

    def journaled(_journal: Path, indices: list[int]) -> None:
        if faults.kill_after_step is not None and faults.kill_after_step in indices:
            _kill()

    def group_written(_journal: Path, _indices: list[int]) -> None:
        acked[0] += 1
        if faults.kill_after_groups is not None and acked[0] >= faults.kill_after_groups:
            _kill()

    def before_send(journal: Path, indices: list[int]) -> None:
        if faults.pause_before_step is None or faults.pause_before_step not in indices:
            return
        marker = paused_marker(journal)
        marker.write_text(f"{os.getpid()}\n")
        deadline = time.monotonic() + PAUSE_LIMIT_S
        while marker.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

    return ApplyHooks(before_send=before_send, journaled=journaled, group_written=group_written)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="faulty_apply", description=__doc__.splitlines()[0])
    parser.add_argument("--kill-after-step", type=int)
    parser.add_argument("--kill-after-groups", type=int)
    parser.add_argument("--pause-before-step", type=int)
    parser.add_argument("mm2ctl_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    rest = args.mm2ctl_args[1:] if args.mm2ctl_args[:1] == ["--"] else args.mm2ctl_args
    faults = Faults(args.kill_after_step, args.kill_after_groups, args.pause_before_step)

    from mm2ctl.cli.main import main as mm2ctl_main
    from mm2ctl.remediate import engine

    hooks = hooks_for(faults)
    engine.apply_plan = functools.partial(engine.apply_plan, hooks=hooks)
    engine.resume_apply = functools.partial(engine.resume_apply, hooks=hooks)
    mm2ctl_main(rest)


if __name__ == "__main__":
    main(sys.argv[1:])
