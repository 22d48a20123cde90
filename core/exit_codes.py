"""Exit codes a script can trust. Documented in README.md ("Exit codes"); never renumber one."""

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
    #: ``drill``/``demo``: the failover drill ran, and strategy (c) or (d) missed its loss/duplicate goal.
    DRILL_GOAL_MISSED = 17
