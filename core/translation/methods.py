"""How a position on one cluster was found on the other: the translation methods, and which of them are exact.

Inspect, the planners, apply and the migration report all judge a row by these values, so they live below all of
them.
"""

from __future__ import annotations

from enum import StrEnum


class TranslationMethod(StrEnum):
    """How a group offset row's target offset was obtained (docs/design.md, "Translation")."""

    #: A sync with upstream == committed: the downstream offset.
    OFFSET_SYNC_EXACT = "offset_sync_exact"
    #: The newest sync with upstream < committed: downstream + 1 (never downstream + gap).
    OFFSET_SYNC_NEXT = "offset_sync_next"
    #: Taken from MM2's own checkpoint record.
    CHECKPOINT = "checkpoint"
    #: Untranslatable; the operator chose the partition's earliest offset.
    EARLIEST = "earliest"
    #: Untranslatable; the operator chose the partition's end offset.
    LATEST = "latest"
    #: Given explicitly by the operator.
    EXPLICIT = "explicit"
    #: ``downstream + (committed - upstream)``, proven by comparing the records on both sides (failover).
    VERIFIED_DELTA = "verified_delta"
    #: The candidate was wrong (gaps on one side); the matching record was found by searching the target.
    VERIFIED_SEARCH = "verified_search"
    #: No offset sync at or below the position: found by the next record's timestamp, proven by content.
    TIMESTAMP_VERIFIED = "timestamp_verified"
    #: No offset sync at or below the position, and no copy found by content: the earliest target offset with
    #: the next record's timestamp or later (replays rather than skips).
    TIMESTAMP = "timestamp"
    #: The group is at the source's log end and MM2 has copied the partition to its end (or it is empty):
    #: the target's log end, proven by both ends' offsets.
    LOG_END = "log_end"
    #: MM2 had not copied up to the group's position when the plan was made: ``apply`` translates the row
    #: once MM2 has caught up and stopped (``TranslateAfterCatchUp``); the row's offset until then is only the
    #: cautious answer of planning time, never written as it is.
    AFTER_CATCH_UP = "after_catch_up"


#: The methods whose position is exact: the replay and skip counts from it are true counts (the others give a
#: bound, or nothing). ``inspect``'s rows and the migration report both judge by it.
EXACT_METHODS: frozenset[str] = frozenset(
    m.value
    for m in (
        TranslationMethod.OFFSET_SYNC_EXACT,
        TranslationMethod.VERIFIED_DELTA,
        TranslationMethod.VERIFIED_SEARCH,
        TranslationMethod.TIMESTAMP_VERIFIED,
        TranslationMethod.LOG_END,
    )
)
