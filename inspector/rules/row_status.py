"""Classifying a group-partition row: its status, message, blocking component, failover estimate and explanation.

The one implementation of ``inspector.statuses``' rules and precedence, as a function over an Arrow table of
joined rows (``schemas.JOINED_SCHEMA``) that holds every row of each of its (pair, group)s: the "other partitions
synced" variant of a message looks at the group's other rows. Spark runs it over a whole inspection
(``inspector.transforms.classify``, one call per partition of rows clustered by group); a live session can run
it in-process over the rows a cycle changed. ``tests/unit/test_inspector_classify.py`` holds it to every
status, message and estimate.

The module reads no mm2ctl module when it runs: the vocabulary it writes (codes, messages, the states that
count as active) comes in as ``Vocabulary``, built on the driver from ``inspector.statuses``, so Spark can ship
the function to a Python worker that has pyarrow but not mm2ctl.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.inspector.rules.admin_facts import joined_rows
from mm2ctl.inspector.rules.columns import (
    and_,
    case,
    concat,
    greatest,
    isin,
    lookup,
    or_,
    scalar,
    text,
    true,
    try_add,
    try_subtract,
)
from mm2ctl.inspector.schemas import FRESH_CHECKPOINT as FRESH


@dataclass(frozen=True)
class Vocabulary:
    """What the rule writes and compares against: plain values, from ``inspector.statuses`` and its peers."""

    status: dict[str, str]  # Status member name -> code
    ok_statuses: frozenset[str]
    #: per status code, the message when another partition of the group is synced, and when none is
    messages_others_synced: dict[str, str]
    messages_others_not_synced: dict[str, str]
    query_message: str
    blockers: dict[str, str]  # status code -> blocking component, but for target_ahead's
    ahead_blockers: dict[bool, str]  # target_ahead's, by whether MM2 syncs group offsets
    untranslatable_blocker: str
    active_states: frozenset[str]  # upper case, without '_' and ' '
    exact_methods: frozenset[str]
    unmirrored_types: frozenset[str]  # share and streams groups, and Spark queries
    spark_query_type: str
    texts: dict[str, str]  # the explanation's phrases, by name


@dataclass(frozen=True)
class Settings:
    """The pair's settings a row is judged by (``inspector.transforms.classify.classify``'s arguments)."""

    sync_group_offsets_enabled: bool
    offset_lag_max: int
    #: microseconds since the epoch: a checkpoint at or after it is fresh (None: no checkpoint is)
    fresh_since_micros: int | None


def look_up_and_classify(
    rows: pa.Table,
    partitions: pa.Table,
    groups: pa.Table,
    columns: list[str],
    settings: Settings,
    vocabulary: Vocabulary,
) -> pa.Table:
    """``rows`` looked up in the admin state's ``partitions`` and ``groups`` (``inspector.rules.admin_facts``), then
    classified."""
    return classify_rows(joined_rows(rows, partitions, groups, columns), settings, vocabulary)


def classify_rows(joined: pa.Table, settings: Settings, vocabulary: Vocabulary) -> pa.Table:
    """Classify every row of ``joined``; output: ``schemas.CLASSIFIED_SCHEMA``'s columns, then ``FRESH``.

    ``joined`` must hold all the rows of each (cluster_pair, group) it holds."""
    v, s = vocabulary, settings
    col = {name: joined.column(name).combine_chunks() for name in joined.column_names}
    n = joined.num_rows
    copied, behind = _copy_position(col)
    judged, unmirrored = _judged(col, s, v)
    status = _status(col, s, v, judged=judged, behind=behind, unmirrored=unmirrored)
    code = v.status
    both = and_(pc.is_valid(judged), pc.is_valid(col["translated_offset"]))
    gap = try_subtract(col["translated_offset"], judged)
    skip = try_subtract(judged, col["translated_offset"])
    # A share group's row is exact only with its share-partition state read (``share_acknowledged_past``): the
    # records it acknowledged past its position come again when it resumes at or before its translation, so they
    # join the replay; resuming past it (a skip), how many of them lie beyond is unknown: not exact, 0 as a bound.
    past = pc.fill_null(col["share_acknowledged_past"], 0)
    resumes_before = true(pc.greater_equal(gap, 0))
    exact = and_(
        and_(
            true(isin(col["translation_method"], v.exact_methods)),
            or_(
                pc.fill_null(pc.not_equal(col["group_type"], "share"), True),
                pc.is_valid(col["share_acknowledged_past"]),
            ),
        ),
        or_(pc.equal(past, 0), resumes_before),
    )
    replay = case([(resumes_before, try_add(gap, past))], scalar(0, n, pa.int64()))
    nothing = pa.nulls(n, pa.int64())
    fresh = _fresh(col, s)
    committed, translated = col["committed_offset"], col["translated_offset"]
    sync_shift = try_subtract(col["latest_sync_upstream"], col["latest_sync_downstream"])
    target_lag = case(
        [
            (
                and_(pc.is_valid(col["target_latest"]), pc.is_valid(col["target_offset"])),
                greatest(try_subtract(col["target_latest"], col["target_offset"]), 0),
            )
        ],
        nothing,
    )
    out = {
        "cluster_pair": col["cluster_pair"],
        "topic": col["topic"],
        "partition": col["partition"],
        "group": col["group"],
        "source_earliest": col["source_earliest"],
        "source_latest": col["source_latest"],
        "source_group_state": col["source_group_state"],
        "source_offset": committed,
        "source_lag": try_subtract(col["source_latest"], committed),
        "target_earliest": col["target_earliest"],
        "target_latest": col["target_latest"],
        "target_group_state": col["target_group_state"],
        "target_offset": col["target_offset"],
        "target_lag": target_lag,
        "target_lag_to_source": try_subtract(col["source_latest"], try_add(col["target_offset"], sync_shift)),
        "source_has_data": pc.less(col["source_earliest"], col["source_latest"]),
        "source_group_valid": and_(
            pc.less_equal(col["source_earliest"], committed), pc.less_equal(committed, col["source_latest"])
        ),
        "target_has_data": pc.less(col["target_earliest"], col["target_latest"]),
        "is_ok": pc.is_in(status, value_set=pa.array(sorted(v.ok_statuses), pa.string())),
        "blocking_component": case(
            [
                (
                    and_(pc.equal(status, code["NOT_SYNCED"]), pc.is_null(translated)),
                    scalar(v.untranslatable_blocker, n, pa.string()),
                )
            ],
            lookup(status, {**v.blockers, code["TARGET_AHEAD"]: v.ahead_blockers[s.sync_group_offsets_enabled]}),
        ),
        "message": _message(col, status, v),
        "status": status,
        "remote_topic": col["remote_topic"],
        "translated_offset": translated,
        "translation_method": col["translation_method"],
        "checkpoint_offset": col["checkpoint_offset"],
        "checkpoint_timestamp": col["checkpoint_timestamp"],
        "sync_count": col["sync_count"],
        "replay_if_failover_now": case([(and_(both, exact), replay)], nothing),
        "skip_if_failover_now": case([(and_(both, exact), greatest(skip, 0))], nothing),
        "replay_if_failover_now_at_least": case([(both, replay)], nothing),
        "skip_if_failover_now_at_most": case([(both, greatest(skip, 0))], nothing),
        "mm2_records_behind": behind,
        "explanation": _explanation(col, status, v, copied=copied, behind=behind),
        "error": col["error"],
        "group_type": col["group_type"],
        "target_written_by": col["target_written_by"],
        "share_start_offset": col["share_start_offset"],
        FRESH: case([(fresh, col["checkpoint_timestamp"])], pa.nulls(n, col["checkpoint_timestamp"].type)),
    }
    return pa.table(out)


def _copy_position(col: dict[str, pa.Array]) -> tuple[pa.Array, pa.Array]:
    """``P``, MM2's copy position (null when MM2's position is unknown), and the records MM2 still has to copy
    up to the group's position ``c - P``, at least 0 (null without ``P``, or for a group past the source's end)."""
    n = len(col["group"])
    known = and_(
        true(col["mm2_position_known"]), pc.is_valid(col["source_earliest"]), pc.is_valid(col["source_latest"])
    )
    past_sync = try_add(col["latest_sync_upstream"], try_subtract(col["target_latest"], col["latest_sync_downstream"]))
    furthest = greatest(
        col["mm2_next_offset"], col["source_earliest"], try_add(col["latest_sync_upstream"], 1), past_sync
    )
    nothing = pa.nulls(n, pa.int64())
    copied = case([(known, furthest)], nothing)
    in_source = and_(known, pc.less_equal(col["committed_offset"], col["source_latest"]))
    behind = case([(in_source, greatest(0, try_subtract(col["committed_offset"], copied)))], nothing)
    return copied, behind


def _judged(col: dict[str, pa.Array], s: Settings, v: Vocabulary) -> tuple[pa.Array, pa.Array]:
    """``J``, the offset a row is judged by, and whether the row's group is one MM2 never writes.

    MM2 never writes a share or streams group, nor a Structured Streaming query: such a row is judged by what
    the target holds, else by where it starts without a position."""
    group_type = col["group_type"]
    unmirrored = true(isin(group_type, v.unmirrored_types))
    starts_at_end = true(isin(group_type, {"share", v.spark_query_type}))
    reset = case([(starts_at_end, col["target_latest"])], col["target_earliest"])
    mm2 = col["target_offset"] if s.sync_group_offsets_enabled else col["checkpoint_offset"]
    judged = case([(unmirrored, pc.coalesce(col["target_offset"], reset))], mm2)
    return judged, unmirrored


def _active(col: dict[str, pa.Array], s: Settings, v: Vocabulary, unmirrored: pa.Array) -> pa.Array:
    """With group-offset sync on, whether the target group has members, which stops MM2 writing its offsets."""
    n = len(col["group"])
    if not s.sync_group_offsets_enabled:
        return pa.array(np.zeros(n, bool))
    state = pc.utf8_upper(pc.replace_substring(pc.replace_substring(col["target_group_state"], "_", ""), " ", ""))
    members = or_(true(pc.greater(col["target_group_members"], 0)), true(isin(state, v.active_states)))
    return and_(pc.invert(unmirrored), members)


def _fresh(col: dict[str, pa.Array], s: Settings) -> pa.Array:
    """Whether the row's checkpoint was written within the fresh age: then a gap to the translation is MM2's
    interval timing, not a stale sync."""
    n = len(col["group"])
    if s.fresh_since_micros is None:
        return pa.array(np.zeros(n, bool))
    written = pc.cast(col["checkpoint_timestamp"], pa.int64())
    return true(pc.greater_equal(written, s.fresh_since_micros))


def _status(
    col: dict[str, pa.Array],
    s: Settings,
    v: Vocabulary,
    *,
    judged: pa.Array,
    behind: pa.Array,
    unmirrored: pa.Array,
) -> pa.Array:
    """Each row's status: the first of ``inspector.statuses``' precedence that holds."""
    n = len(col["group"])
    code = v.status
    translated, committed = col["translated_offset"], col["committed_offset"]
    both = and_(pc.is_valid(judged), pc.is_valid(translated))
    gap = try_subtract(translated, judged)
    slack = try_add(s.offset_lag_max, greatest(0, try_subtract(col["latest_sync_upstream"], committed)))
    earliest, latest = col["source_earliest"], col["source_latest"]
    outside = or_(pc.is_null(committed), true(pc.less(committed, earliest)), true(pc.greater(committed, latest)))

    def is_(name: str) -> pa.Array:
        return scalar(code[name], n, pa.string())

    return case(
        [
            (pc.is_valid(col["error"]), is_("ERROR")),
            (pc.is_null(col["target_latest"]), is_("REMOTE_TOPIC_MISSING")),
            (_active(col, s, v, unmirrored), is_("TARGET_GROUP_ACTIVE")),
            (true(pc.greater(behind, 0)), is_("NOT_YET_COPIED")),
            (unmirrored, is_("NOT_CHECKPOINTED")),
            (and_(both, pc.greater(judged, translated)), is_("TARGET_AHEAD")),
            (and_(both, true(pc.greater(gap, slack)), pc.invert(_fresh(col, s))), is_("STALE_SYNC")),
            (pc.is_valid(judged), is_("SYNCED")),
            (true(pc.equal(earliest, latest)), is_("SOURCE_PARTITION_EMPTY")),
            (outside, is_("SOURCE_GROUP_TOO_OLD")),
            (pc.equal(col["sync_count"], 0), is_("NO_OFFSET_SYNCS")),
        ],
        is_("NOT_SYNCED"),
    )


def _others_synced(col: dict[str, pa.Array], status: pa.Array, synced: str) -> pa.Array:
    """Whether another row of the same (pair, group) is synced: Aiven's "other partitions" variant."""
    if len(status) == 0:
        return pa.array([], pa.bool_())
    pairs = pc.dictionary_encode(col["cluster_pair"])
    groups = pc.dictionary_encode(col["group"])
    key = np.asarray(pairs.indices, np.int64) * len(groups.dictionary) + np.asarray(groups.indices, np.int64)
    _, ids = np.unique(key, return_inverse=True)
    is_synced = np.asarray(pc.equal(status, synced), bool).astype(np.int64)
    per_group = np.bincount(ids, weights=is_synced)
    return pa.array(per_group[ids] - is_synced > 0)


def _message(col: dict[str, pa.Array], status: pa.Array, v: Vocabulary) -> pa.Array:
    """Each row's message, by its status (Aiven's variant by whether another partition of the group is
    synced); a Structured Streaming query's own when MM2 never checkpoints it."""
    n = len(status)
    query = and_(pc.equal(status, v.status["NOT_CHECKPOINTED"]), pc.equal(col["group_type"], v.spark_query_type))
    return case(
        [
            (query, scalar(v.query_message, n, pa.string())),
            (_others_synced(col, status, v.status["SYNCED"]), lookup(status, v.messages_others_synced)),
        ],
        lookup(status, v.messages_others_not_synced),
    )


def _explanation(
    col: dict[str, pa.Array], status: pa.Array, v: Vocabulary, *, copied: pa.Array, behind: pa.Array
) -> pa.Array:
    """Why a row cannot be translated, and what can still translate it; for a ``not_yet_copied`` row, how far
    MM2 is behind its group and what to do; where a share or streams group starts after MM2 alone (null for
    every other row).

    MM2 drops offset syncs under back-pressure (its writer keeps only the newest pending sync of a
    partition), so a partition copied in a burst can be left with no sync below a group's offset; MM2 then
    never checkpoints that group until it commits at or beyond the oldest sync, which an idle group never
    does."""
    t, code, n = v.texts, v.status, len(status)
    committed, group_type = col["committed_offset"], col["group_type"]
    up, down = text(col["oldest_sync_upstream"]), text(col["oldest_sync_downstream"])
    state = col["source_group_state"]
    consuming = isin(
        pc.utf8_upper(pc.replace_substring(pc.replace_substring(pc.coalesce(state, ""), "_", ""), " ", "")),
        v.active_states,
    )
    when = concat(" at or beyond ", up)
    will = concat(t["WILL_CHECKPOINT"], when, ", as it consumes")
    never = concat(t["NEVER_CHECKPOINTS"], pc.coalesce(state, "unknown"), t["CHECKPOINTS_ONCE"], when)
    oldest = concat(t["OLDEST_SYNC"], up, "->", down)
    below = concat(
        t["NO_SYNC_BELOW"], text(committed), "; ", oldest, ". ", case([(consuming, will)], never), t["STILL_TRANSLATES"]
    )
    not_copied = concat(
        t["MM2_BEHIND"],
        text(behind),
        t["RECORDS_BEHIND"],
        text(committed),
        t["COPIED_BELOW"],
        text(copied),
        t["WAIT_FOR_MM2"],
    )
    share = pc.equal(group_type, "share")
    start = case([(share, scalar(t["SHARE_START"], n, pa.string()))], scalar(t["STREAMS_START"], n, pa.string()))
    none_there = case(
        [(pc.is_null(col["target_offset"]), concat(t["NO_TARGET_POSITION"], start, ". "))],
        scalar(" groups. ", n, pa.string()),
    )
    redelivers = case([(share, scalar(t["SHARE_REDELIVERS"], n, pa.string()))], scalar("", n, pa.string()))
    unmirrored = concat(t["NEVER_CHECKPOINTS_TYPE"], group_type, none_there, t["RUN_PLAN"], redelivers, ".")
    untranslatable = and_(pc.is_valid(committed), pc.is_null(col["translated_offset"]))
    not_checkpointed = pc.equal(status, code["NOT_CHECKPOINTED"])
    return case(
        [
            (pc.equal(status, code["NOT_YET_COPIED"]), not_copied),
            (
                and_(not_checkpointed, pc.equal(group_type, v.spark_query_type)),
                scalar(t["QUERY_EXPLANATION"], n, pa.string()),
            ),
            (not_checkpointed, unmirrored),
            (and_(untranslatable, pc.equal(status, code["NO_OFFSET_SYNCS"])), scalar(t["NO_SYNCS"], n, pa.string())),
            (
                and_(untranslatable, pc.is_valid(col["oldest_sync_upstream"]), pc.equal(status, code["NOT_SYNCED"])),
                below,
            ),
        ],
        pa.nulls(n, pa.string()),
    )
