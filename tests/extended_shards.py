"""Where each extended test runs in CI: one table, read by ``.ci/run`` and by ``tests/conftest.py``.

Every ``.ci/run`` runs the default suite and one shard of the extended tests, picked from the commit (the
number of commits on HEAD modulo the number of shards), so consecutive commits of main cycle through the
shards and every extended test runs at least once in every ``len(SHARDS)`` consecutive commits. The Spark
release matrix (``.ci/spark_matrix.sh``) runs the tests in ``MATRIX`` on every commit, on the newest release.
``tests/unit/test_extended_shards.py`` fails when an extended test is in no shard, or a shard names a test
that no longer exists.

Each shard's minutes are what ``MM2CTL_EXTENDED_SHARD=N pytest -m extended tests`` took on a 2-core machine
that other labs shared, its labs' boots included; the shards are balanced on them.

    python -m tests.extended_shards [COMMIT_COUNT]   # the shard for that count (default: HEAD's), and its tests
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

#: The environment variable that names the shard a run keeps (``tests/conftest.py`` deselects the others).
SHARD_VARIABLE = "MM2CTL_EXTENDED_SHARD"

_FAULTS = "tests/integration/test_apply_faults.py::"
_DRILL = "tests/integration/test_drill.py::"
_ENGINE = "tests/integration/test_inspection_engine.py::"
_CRASH = "tests/integration/test_remediate.py::test_crash_after_each_step_then_resume_or_rollback"


@dataclass(frozen=True)
class Shard:
    minutes: float
    tests: tuple[str, ...]


SHARDS: tuple[Shard, ...] = (
    Shard(
        minutes=6.1,
        tests=(
            "tests/integration/test_share_positions.py::test_share_groups_resume_at_the_first_record_they_left_undone",
            _FAULTS + "test_target_broker_killed_mid_failover_apply",
            _FAULTS + "test_connect_worker_killed_mid_reset_mm2_apply",
            _FAULTS + "test_connect_409_past_the_retry_budget",
            _DRILL + "test_drill_goals_identity",
            _CRASH + "[1]",
        ),
    ),
    Shard(
        minutes=6.3,
        tests=(
            "tests/integration/test_exactly_once.py::test_exactly_once_flow_is_inspected_and_failed_over_exactly",
            _DRILL + "test_drill_with_aborted_transactions",
            _ENGINE + "test_the_exporter_keeps_its_threads_and_memory_bounded_over_many_cycles[spark]",
            _CRASH + "[2]",
            "tests/integration/test_failover_mm2_behind.py::"
            "test_a_plan_translated_after_the_catch_up_resumes_from_its_journal_then_rolls_back",
        ),
    ),
    Shard(
        minutes=5.4,
        tests=(
            "tests/integration/test_drill_group_types.py::"
            "test_mm2ctl_moves_every_group_type_where_mm2_alone_loses_or_repeats",
            "tests/integration/test_spark_cluster.py::"
            "test_the_inspection_on_a_standalone_cluster_gives_the_embedded_runs_rows",
            _ENGINE + "test_many_runs_keep_threads_and_cached_state_bounded",
            _ENGINE + "test_the_exporter_keeps_its_threads_and_memory_bounded_over_many_cycles[auto]",
            "tests/integration/test_spark_connect.py::"
            "test_the_exporter_keeps_one_session_and_reconnects_after_a_server_restart",
        ),
    ),
)

#: Extended tests the Spark release matrix runs on every commit (``.ci/spark_matrix.sh``, on the newest release).
MATRIX: tuple[str, ...] = (
    "tests/integration/test_spark_connect.py::test_a_client_reads_a_lab_topic_through_the_connect_server",
    "tests/integration/test_spark_connect.py::test_inspect_on_the_connect_server_gives_the_embedded_rows",
    "tests/integration/test_spark_connect.py::test_report_on_the_connect_server_runs_its_inspection_there",
)


def shard_of(commit_count: int) -> int:
    """The shard a commit runs: consecutive commits take consecutive shards."""
    return commit_count % len(SHARDS)


def commit_count() -> int:
    """The number of commits reachable from HEAD."""
    done = subprocess.run(["git", "rev-list", "--count", "HEAD"], capture_output=True, text=True, check=True)
    return int(done.stdout.strip())


def main(argv: list[str]) -> int:
    """Print the shard's number on the first line, then its tests, one a line."""
    index = shard_of(int(argv[0]) if argv else commit_count())
    shard = SHARDS[index]
    print(index)
    print(f"extended shard {index} of {len(SHARDS)} (about {shard.minutes:g} min):", file=sys.stderr)
    for test in shard.tests:
        print(f"  {test}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
