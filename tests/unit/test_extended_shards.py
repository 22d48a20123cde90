"""The shard table (``tests/extended_shards.py``) against the extended tests pytest collects: each one runs in
CI, in one shard or in the Spark release matrix, and no shard names a test that is gone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.extended_shards import MATRIX, SHARD_VARIABLE, SHARDS, shard_of

ROOT = Path(__file__).resolve().parents[2]
#: What a shard may add to CI's run, in minutes.
SHARD_BUDGET_MINUTES = 8


def _collected(marker: str, shard: int | None = None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != SHARD_VARIABLE}
    if shard is not None:
        env[SHARD_VARIABLE] = str(shard)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-m", marker, "tests"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return [line for line in done.stdout.splitlines() if line.startswith("tests/")]


@pytest.fixture(scope="module")
def extended() -> list[str]:
    return _collected("extended")


def test_every_extended_test_runs_in_a_shard_or_the_matrix(extended: list[str]) -> None:
    placed = [t for shard in SHARDS for t in shard.tests] + list(MATRIX)
    assert len(placed) == len(set(placed)), "a test is in two places"
    assert extended, "no extended test collected"
    assert sorted(set(extended) - set(placed)) == [], "extended tests in no shard"
    assert sorted(set(placed) - set(extended)) == [], "shard entries that are no extended test"


@pytest.mark.parametrize("index", range(len(SHARDS)))
def test_a_run_given_a_shard_keeps_exactly_its_extended_tests(index: int) -> None:
    assert sorted(_collected("extended", index)) == sorted(SHARDS[index].tests)


def test_any_consecutive_commits_run_every_shard() -> None:
    for first in range(20):
        assert {shard_of(n) for n in range(first, first + len(SHARDS))} == set(range(len(SHARDS)))


def test_each_shard_fits_the_budget() -> None:
    assert all(shard.minutes <= SHARD_BUDGET_MINUTES for shard in SHARDS), [s.minutes for s in SHARDS]


def test_ci_runs_the_shard_and_the_matrix_runs_its_tests() -> None:
    run = (ROOT / ".ci" / "run").read_text()
    assert "tests.extended_shards" in run and SHARD_VARIABLE in run
    matrix = (ROOT / ".ci" / "spark_matrix.sh").read_text()
    selections = re.findall(r'(?:-k|flow=|release_independent=)\s*"([^"]*)"', matrix)
    words = {w for s in selections for w in re.findall(r"[a-z][a-z0-9_]+", s)} - {"not", "and", "or", "flow"}
    assert {"server_restart", "dead_broker"} <= words, selections
    for test in MATRIX:
        path, name = test.split("::")
        assert path in matrix and not [w for w in words if w in name], test
