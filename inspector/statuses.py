"""The status vocabulary of ``mm2ctl inspect``: codes, messages, precedence and what "synced" means.

Every classified row — one (cluster pair, group, source topic, partition) — gets exactly one machine-readable
``status`` code and one human ``message``. Aiven's offset sync inspector is the compatibility anchor: where
a row falls in one of its cases the message is Aiven's, verbatim as its documentation prints it
(its documentation's table of statuses). Our extra statuses say *why* in words an operator can act on.

Definitions used below, per row
-------------------------------
``c``   the source group's committed offset (``source_offset``).
``T``   the translated offset: the one rule of ``core.translation.rule`` (what every planner applies) over the
        partition's current mapping, every sync still in the offset-syncs topic that agrees with the rest
        (``inspector.transforms.translated_offsets``): the newest sync with ``upstream <= c`` gives ``downstream`` when
        ``upstream == c`` and ``downstream + 1`` otherwise. It is the best position MM2's own rule allows.
``J``   the offset the row is judged by: the target group's committed offset (under the *remote* topic name)
        when ``sync.group.offsets.enabled``, otherwise the latest checkpoint's downstream offset (what a
        failover through ``RemoteClusterUtils.translateOffsets`` would apply).
``P``   MM2's copy position, when its stored position was read (``inspector.reads.mm2_position``; else unknown):
        the next source offset MM2 is known to copy, the furthest of what shows it. Its stored next offset (none
        stored: the source's earliest, what MM2 copies first; never below the earliest, where MM2 resumes);
        ``u + 1`` for the partition's newest sync ``u -> d``; and ``u`` plus the records the remote
        partition holds past ``d``, each a copy of a later source record (an exactly-once MM2's transaction
        markers make that a few records generous). The stored offset trails MM2 by up to one offset flush
        and is read before the groups' offsets; the newest sync and the target's end are read after them,
        so a group that keeps up with a healthy MM2 is not past ``P``. Without any sync (a flow that
        disables them) only the stored offset shows the copy, and such a group can be past it for a flush.

What "synced" means, grounded in MM2's source (MirrorCheckpointTask, OffsetSyncStore, Kafka 3.5+)
------------------------------------------------------------------------------------------------
* MM2 translates with a *sparse* in-memory store (at most 64 syncs per partition, exponentially spaced, and
  after a restart before 3.7.1 only the latest sync). It therefore picks a sync at or *before* ours and its
  checkpoint can be LOWER than ``T``: that is correct behaviour (the consumer replays a little), not a fault.
  Since the topic keeps a suffix of the syncs (compaction keeps only the last per partition), ours is never
  older than MM2's, so a healthy MM2 never produces ``J > T``.
* MM2 emits checkpoints every ``emit.checkpoints.interval.seconds`` and writes group offsets every
  ``sync.group.offsets.interval.seconds``, only while the target group is EMPTY (or absent), and only
  forward. A moving group is therefore always somewhat behind ``T``.
* So a row is **synced** when ``J`` exists, ``J <= T``, and ``T - J`` is within the slack a healthy MM2 can
  produce: ``offset.lag.max`` plus how far the group trails the partition's newest sync (the span over which
  the sparse store may have fallen back to an older sync). A larger gap is **stale_sync** — unless the
  checkpoint is fresh (``classify(as_of=...)``), in which case the gap is MM2's interval timing and the row
  is still synced. When ``T`` is unknown (no sync at or below ``c`` is left in the topic) but MM2 did write
  ``J``, MM2 knew syncs we cannot see any more, and the row is synced.

Precedence (first match wins)
-----------------------------
1. ``error``                 an admin lookup for the row failed; nothing else can be trusted.
2. ``remote_topic_missing``  the remote topic-partition does not exist on the target.
3. ``target_group_active``   (only with sync.group.offsets) the target group has members, so MM2 cannot
                             write its offsets (it alters offsets of EMPTY groups only).
4. ``not_yet_copied``        ``P < c <= latest``: the record the group read last (``c - 1``) has no copy on
                             the target yet, so no translation of ``c`` is current, whatever ``J`` says.
                             Never when ``P`` is unknown. An empty partition (``c <= latest = earliest <=
                             P``) never is, nor a group past the source's end (``source_group_too_old``).
4a. ``not_checkpointed``      a share or streams group (Kafka 4.2+): MirrorMaker 2 lists only classic and
                             consumer groups, so it never checkpoints these nor syncs their offsets; only
                             ``plan failover`` moves them (ok: a fact of MM2, not a fault). ``J`` is whatever
                             the target group holds, else where the group starts without one: a share group
                             at the log end (``share.auto.offset.reset`` defaults to latest), a streams group
                             at the earliest offset (Kafka Streams' default). ``target_group_active`` never
                             applies (MM2 writes no offset of theirs to be blocked). A share group's start
                             offset is not its position: records it acknowledged past it are delivered
                             again after any failover, so its replay is a bound (at least), never exact.
                             A Structured Streaming query (``inspect --spark-checkpoint``, group type
                             ``spark_query``) is too: its position is its checkpoint's, not a committed offset
                             in Kafka. ``J`` is the target's log end, where a query started on the target
                             without a translated position starts (``startingOffsets`` defaults to latest).
5. ``target_ahead``          ``J > T``: resuming on the target skips messages (IdentityReplicationPolicy
                             "replication without translation", or a source group reset backwards).
6. ``stale_sync``            ``T - J`` beyond the slack above: resuming replays more than MM2 should.
7. ``synced``                ``J`` exists and none of the above.
   — the rows below have no ``J`` —
8. ``source_partition_empty`` earliest == latest on the source: MM2 has nothing to sync (intentional).
9. ``source_group_too_old``  ``c`` outside the source partition's ``[earliest, latest]``: MM2 cannot
                             translate an offset whose data is gone (intentional).
10. ``no_offset_syncs``      the partition has data but the offset-syncs topic has no sync for it at all.
11. ``not_synced``           anything else: MM2 should have synced this partition and has not.

A flow that runs with ``emit.offset-syncs.enabled=false`` (KIP-1031, Kafka 3.9+) is a configuration, not a
fault: MM2 writes no offset syncs for it, and its checkpoint connector refuses to run without them, so no
checkpoints and no group-offset sync either. Its rows that would be ``no_offset_syncs`` or ``not_synced``, or
``synced`` by a target offset no translation backs, are ``offset_syncs_disabled`` (ok) instead
(``inspector.reads.flow_notes``); ``plan failover`` translates them by timestamp, proven by content.

Aiven's "other partitions synced / not synced" variants: at least one *other* partition of the same group in
the same cluster pair (any topic) has status ``synced``.

Blocking component (``blocking_component``): the part of the pipeline an operator should look at; null for
``synced``. ``inspector`` (our lookup failed), ``source-partition`` and ``source-group`` (intentional,
nothing to fix in MM2), ``mirror-source-connector`` (replication is missing or behind the group, or offset
syncs are missing), ``checkpoint-connector`` (checkpoints / group offset sync are missing or late),
``target-group`` (the target group's own state or offset is what is wrong).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Stable status codes; the values are part of the report format and must not change."""

    ERROR = "error"
    REMOTE_TOPIC_MISSING = "remote_topic_missing"
    TARGET_GROUP_ACTIVE = "target_group_active"
    NOT_YET_COPIED = "not_yet_copied"
    NOT_CHECKPOINTED = "not_checkpointed"
    TARGET_AHEAD = "target_ahead"
    STALE_SYNC = "stale_sync"
    SYNCED = "synced"
    SOURCE_PARTITION_EMPTY = "source_partition_empty"
    SOURCE_GROUP_TOO_OLD = "source_group_too_old"
    NO_OFFSET_SYNCS = "no_offset_syncs"
    NOT_SYNCED = "not_synced"
    OFFSET_SYNCS_DISABLED = "offset_syncs_disabled"


#: Precedence, highest first (see the module docstring).
PRECEDENCE: tuple[Status, ...] = tuple(Status)

#: Statuses that need no action: ``is_ok`` is true exactly for these.
OK_STATUSES = frozenset(
    {
        Status.SYNCED,
        Status.SOURCE_PARTITION_EMPTY,
        Status.SOURCE_GROUP_TOO_OLD,
        Status.OFFSET_SYNCS_DISABLED,
        Status.NOT_CHECKPOINTED,
    }
)


class Blocking(StrEnum):
    INSPECTOR = "inspector"
    SOURCE_PARTITION = "source-partition"
    SOURCE_GROUP = "source-group"
    MIRROR_SOURCE_CONNECTOR = "mirror-source-connector"
    CHECKPOINT_CONNECTOR = "checkpoint-connector"
    TARGET_GROUP = "target-group"


# --- Aiven's messages, verbatim from its documentation ---
AIVEN_SYNCED = "Successfully synced, operating normally."
AIVEN_EMPTY_OTHERS_SYNCED = (
    "Intentionally not synced because the source partition is empty. Other partitions in this group are synced."
)
AIVEN_EMPTY_OTHERS_NOT_SYNCED = (
    "Intentionally not synced because the source partition is empty. Other partitions in this group are not synced."
)
AIVEN_TOO_OLD_OTHERS_SYNCED = (
    "Intentionally not synced because the source group is too old. Other partitions in this group are synced."
)
AIVEN_ERRONEOUS_OTHERS_SYNCED = (
    "Erroneously not synced. Source partition has data, and other partitions for this group are synced."
)
AIVEN_ERRONEOUS_OTHERS_NOT_SYNCED = (
    "Erroneously not synced. Source partition has data, and other partitions for this group are not synced."
)
#: The six messages of Aiven's documentation, in its table order.
AIVEN_MESSAGES: tuple[str, ...] = (
    AIVEN_SYNCED,
    AIVEN_EMPTY_OTHERS_SYNCED,
    AIVEN_EMPTY_OTHERS_NOT_SYNCED,
    AIVEN_TOO_OLD_OTHERS_SYNCED,
    AIVEN_ERRONEOUS_OTHERS_SYNCED,
    AIVEN_ERRONEOUS_OTHERS_NOT_SYNCED,
)
#: The documentation has no "too old, others not synced" row, but Aiven's tool does emit that case (its
#: source has a seventh constant). Worded in the documentation's style so the pair reads consistently.
TOO_OLD_OTHERS_NOT_SYNCED = (
    "Intentionally not synced because the source group is too old. Other partitions in this group are not synced."
)

# --- Our statuses ---
ERROR_MESSAGE = "Not inspected: an admin lookup for this partition failed; see the error column."
REMOTE_TOPIC_MISSING_MESSAGE = (
    "Not synced: the remote topic partition does not exist on the target cluster, so MirrorMaker 2 is not "
    "replicating it; check the topic filter and the MirrorSourceConnector."
)
TARGET_GROUP_ACTIVE_MESSAGE = (
    "Not synced: the group has active members on the target cluster, so MirrorMaker 2 cannot write its "
    "offsets (it only writes to empty groups); stop those consumers or exclude the group."
)
NOT_YET_COPIED_MESSAGE = (
    "MM2 has not copied up to this group's position: the records the group last read on the source are not on "
    "the target yet, so no translation of its offset is current; wait for MirrorMaker 2 to catch up."
)
TARGET_AHEAD_MESSAGE = (
    "Offset ahead of translation: the synced target offset is beyond the translated offset, so consumers "
    "failing over would skip messages (offsets replicated without translation, or the source group was "
    "reset backwards)."
)
STALE_SYNC_MESSAGE = (
    "Offset sync is stale: the synced target offset trails the translated offset by more than "
    "offset.lag.max allows, so consumers failing over would replay messages; check the "
    "MirrorCheckpointConnector."
)
NO_OFFSET_SYNCS_MESSAGE = (
    "Erroneously not synced. Source partition has data, but MirrorMaker 2 has written no offset sync for it; "
    "check the MirrorSourceConnector and the offset-syncs topic."
)

OFFSET_SYNCS_DISABLED_MESSAGE = (
    "Not translated by MirrorMaker 2: this flow runs with emit.offset-syncs.enabled=false, so MM2 writes no "
    "offset syncs, checkpoints or group offsets for it; plan failover translates by record timestamps, proven "
    "by content."
)

NOT_CHECKPOINTED_MESSAGE = (
    "Not translated by MirrorMaker 2: this is a share or streams group, which MM2 never checkpoints, so after a "
    "failover through MM2 alone the group starts from its reset policy; plan failover translates it, proven by "
    "content."
)

NOT_CHECKPOINTED_QUERY_MESSAGE = (
    "Not translated by MirrorMaker 2: this is a Spark Structured Streaming query, whose position is in its "
    "checkpoint, not in Kafka, so MM2 never checkpoints it; mm2ctl translates it (translated_offset)."
)


def aiven_message(status: Status, others_synced: bool) -> str | None:
    """Aiven's message for a status it knows, choosing the "other partitions" variant; else None."""
    table: dict[Status, tuple[str, str]] = {
        Status.SYNCED: (AIVEN_SYNCED, AIVEN_SYNCED),
        Status.SOURCE_PARTITION_EMPTY: (AIVEN_EMPTY_OTHERS_SYNCED, AIVEN_EMPTY_OTHERS_NOT_SYNCED),
        Status.SOURCE_GROUP_TOO_OLD: (AIVEN_TOO_OLD_OTHERS_SYNCED, TOO_OLD_OTHERS_NOT_SYNCED),
        Status.NOT_SYNCED: (AIVEN_ERRONEOUS_OTHERS_SYNCED, AIVEN_ERRONEOUS_OTHERS_NOT_SYNCED),
    }
    pair = table.get(status)
    if pair is None:
        return None
    return pair[0] if others_synced else pair[1]


#: Messages of the statuses Aiven's tool does not have.
OWN_MESSAGES: dict[Status, str] = {
    Status.ERROR: ERROR_MESSAGE,
    Status.REMOTE_TOPIC_MISSING: REMOTE_TOPIC_MISSING_MESSAGE,
    Status.TARGET_GROUP_ACTIVE: TARGET_GROUP_ACTIVE_MESSAGE,
    Status.NOT_YET_COPIED: NOT_YET_COPIED_MESSAGE,
    Status.TARGET_AHEAD: TARGET_AHEAD_MESSAGE,
    Status.STALE_SYNC: STALE_SYNC_MESSAGE,
    Status.NO_OFFSET_SYNCS: NO_OFFSET_SYNCS_MESSAGE,
    Status.OFFSET_SYNCS_DISABLED: OFFSET_SYNCS_DISABLED_MESSAGE,
    Status.NOT_CHECKPOINTED: NOT_CHECKPOINTED_MESSAGE,
}

#: Consumer group states in which the group has (or is getting) members; MM2 refuses to write offsets then.
#: Spelled as the Java/confluent-kafka clients name them (``GroupDescription.state``); the Spark transforms
#: compare them case-insensitively.
ACTIVE_GROUP_STATES = frozenset({"Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"})


# --- replicated partitions (inspector.transforms.replication_health) ---


class PartitionStatus(StrEnum):
    """Stable status codes of a replicated source partition; part of the report format."""

    ERROR = "error"
    POSITION_UNKNOWN = "position_unknown"
    SOURCE_RESET = "source_reset"
    LOST_RECORDS = "lost_records"
    NOT_STARTED = "not_started"
    LAGGING = "lagging"
    REPLICATING = "replicating"


#: Statuses that need no action.
OK_PARTITION_STATUSES = frozenset({PartitionStatus.REPLICATING, PartitionStatus.POSITION_UNKNOWN})

PARTITION_MESSAGES: dict[PartitionStatus, str] = {
    PartitionStatus.ERROR: "Not inspected: a lookup for this partition failed; see the error column.",
    PartitionStatus.POSITION_UNKNOWN: (
        "MM2's position is unknown: give --connect-url (or run dedicated-mode MM2) to read it."
    ),
    PartitionStatus.SOURCE_RESET: (
        "Source reset: MM2's position is beyond the source partition's end, so the topic was recreated or "
        "truncated under MM2; it starts again from the source's earliest offset."
    ),
    PartitionStatus.LOST_RECORDS: (
        "Records lost: retention deleted records on the source before MM2 copied them; they are not on the target."
    ),
    PartitionStatus.NOT_STARTED: (
        "Not started: MM2 has stored no position for this partition, which holds records; check the "
        "MirrorSourceConnector's tasks and topic filter."
    ),
    PartitionStatus.LAGGING: (
        "Lagging: more records wait, or the oldest has waited longer, than the lag thresholds allow."
    ),
    PartitionStatus.REPLICATING: "Replicating: MM2 keeps up with this partition.",
}
