"""Exit codes a script can trust, and what each means. Documented in README.md ("Exit codes"), whose table
holds the same texts as ``ExitCode.meaning``; never renumber one.

The meanings live here, once, so the table, a ``--json`` result (``exit_code`` with ``exit_meaning``) and
the CLI's error handler cannot drift apart.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    #: An unexpected error (a bug, or a failure with no more specific code).
    ERROR = 1
    #: Bad command-line usage (typer/click's own code).
    USAGE = 2
    #: The MM2 properties file or a config option is malformed.
    CONFIG = 3
    #: A Kafka broker could not be reached or an admin call failed.
    KAFKA = 4
    #: The Kafka Connect REST API failed or answered an error.
    CONNECT = 5
    #: The local lab could not be resolved, started or stopped.
    LAB = 6
    #: A plan file is unreadable or invalid.
    PLAN_INVALID = 7
    #: The plan is stale, or a step's precondition does not hold.
    STALE = 8
    #: The plan was made for other clusters or another Connect worker.
    FOREIGN_PLAN = 9
    #: ``inspect`` ran and found at least one problem row.
    PROBLEMS_FOUND = 10
    #: A step failed during apply or rollback; the journal says how to resume or roll back.
    APPLY_FAILED = 11
    #: Another apply holds the lock.
    LOCKED = 12
    #: A journal is unreadable or cannot be resumed.
    JOURNAL = 13
    #: ``plan``/``apply --detailed-exitcode``: the plan has changes to make (Terraform's "2", moved off
    #: click's usage code).
    CHANGES_PRESENT = 14
    #: The user declined the confirmation prompt.
    DECLINED = 15
    #: ``apply``/``rollback`` would write but there is no terminal to confirm on and no ``--auto-approve``.
    APPROVAL_REQUIRED = 16
    #: ``drill``/``demo``: the failover drill ran, and a strategy with a goal missed it.
    DRILL_GOAL_MISSED = 17
    #: ``config diff``: the two setups differ.
    CONFIG_DIFFERS = 18
    #: ``plan failover``/``plan failback`` wrote a plan that leaves group partitions untranslatable; ``apply``
    #: refuses such a plan unless ``--allow-untranslatable``.
    UNTRANSLATABLE = 19
    #: ``report``: a saved inspection (``--group-rows``, ``--partition-rows``) is missing, unreadable or not
    #: the rows ``inspect`` writes.
    INSPECTION_FILE = 20
    #: ``plan failover``: MM2 has not copied up to some selected groups' positions, so their translation
    #: cannot be proven; plan with ``--stop-mirroring`` or accept the cautious answer (``--accept-cautious``).
    NOT_COPIED = 21
    #: ``plan failover``/``failback``/``apply``: the cluster a share or streams group moves to is older than its
    #: type (Kafka 4.2+ hosts both), so it cannot take the group's position.
    UNHOSTED_GROUP_TYPE = 22
    #: ``inspect``/``exporter``: Spark's Kafka source (``spark-sql-kafka-0-10``) for the installed Spark, or an
    #: older patch release of its minor line, resolves from none of the repositories Spark's Ivy uses.
    KAFKA_SOURCE_UNRESOLVED = 23
    #: ``plan failover``/``failback``, ``inspect``, ``apply``: a Spark query's checkpoint (``--spark-checkpoint``)
    #: is missing, unreadable, malformed, of a format mm2ctl does not read, or reads topics the flow does not
    #: mirror.
    SPARK_CHECKPOINT = 24

    @property
    def meaning(self) -> str:
        """The one-line meaning a user reads, as README.md's "Exit codes" table words it."""
        return MEANINGS[self]


#: Ctrl-C (SIGINT): the shell's code for a command a signal 2 ended (128 + 2), outside the table and ``ExitCode``.
INTERRUPTED = 130

#: README.md's "Exit codes" table, code by code (the table spells command names in backticks).
MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.ERROR: "unexpected error",
    ExitCode.USAGE: "bad command-line usage",
    ExitCode.CONFIG: "the MM2 properties file or a config option is malformed",
    ExitCode.KAFKA: "a Kafka broker could not be reached, or an admin call failed",
    ExitCode.CONNECT: "the Kafka Connect REST API failed or answered an error",
    ExitCode.LAB: "the lab could not be resolved, started or stopped, or is not healthy (lab status)",
    ExitCode.PLAN_INVALID: "a plan file is unreadable or invalid",
    ExitCode.STALE: "the plan is stale, or a step's precondition does not hold",
    ExitCode.FOREIGN_PLAN: "the plan was made for other clusters or another Connect worker",
    ExitCode.PROBLEMS_FOUND: "inspect found at least one problem row",
    ExitCode.APPLY_FAILED: "a step failed during apply or rollback; the journal says how to resume or roll back",
    ExitCode.LOCKED: "another apply holds the lock",
    ExitCode.JOURNAL: "a journal is unreadable or cannot be resumed",
    ExitCode.CHANGES_PRESENT: "--detailed-exitcode: the plan has changes to make",
    ExitCode.DECLINED: "the confirmation prompt was declined",
    ExitCode.APPROVAL_REQUIRED: (
        "apply/rollback would write, there is no terminal to confirm on, and --auto-approve was not given"
    ),
    ExitCode.DRILL_GOAL_MISSED: "drill/demo: a strategy missed its loss/duplicate goal",
    ExitCode.CONFIG_DIFFERS: "config diff: the file and the live connectors describe different setups",
    ExitCode.UNTRANSLATABLE: (
        "plan failover/failback: the plan leaves group partitions untranslatable "
        "(apply refuses it without --allow-untranslatable)"
    ),
    ExitCode.INSPECTION_FILE: "report: a saved inspection is missing, unreadable or not the rows inspect writes",
    ExitCode.NOT_COPIED: (
        "plan failover: MM2 has not copied up to some groups' positions (plan with --stop-mirroring, or "
        "--accept-cautious)"
    ),
    ExitCode.UNHOSTED_GROUP_TYPE: (
        "plan failover/failback, apply: the other cluster cannot host a share or streams group the plan moves "
        "(Kafka before 4.2)"
    ),
    ExitCode.KAFKA_SOURCE_UNRESOLVED: (
        "inspect/exporter: Spark's Kafka source for the installed Spark resolves from none of the repositories tried"
    ),
    ExitCode.SPARK_CHECKPOINT: (
        "plan failover/failback, inspect, apply: a Spark checkpoint is missing, unreadable, malformed, of a "
        "format mm2ctl does not read, or reads topics the flow does not mirror"
    ),
}


def meaning_of(code: int) -> str:
    """The meaning of a numeric exit code; codes mm2ctl never returns (a signal's 130) get a plain label."""
    try:
        return ExitCode(code).meaning
    except ValueError:
        return "interrupted" if code == INTERRUPTED else f"exit code {code}"
