"""The explicit shapes of every frame the inspection's pure transforms take and give.

The orchestrator (which reads Kafka and the admin APIs) must build its inputs with exactly these schemas;
the transforms (``inspector.transforms.decode``, ``inspector.transforms.sync_runs``,
``inspector.transforms.translated_offsets``, ``inspector.transforms.classify``) select columns by these names and never
infer them. Keeping them here, as ``StructType`` constants, means a test frame, the orchestrator and the transforms
cannot drift apart silently: a renamed column fails at analysis time, not as a wrong number in a report.

Conventions shared by every frame:

* ``cluster_pair`` is the replication flow as ``"<source alias>-><target alias>"`` (the job chooses the exact
  spelling; transforms only group and join on it). One inspection run may cover several pairs.
* Offsets are Kafka offsets (``long``). ``earliest_offset`` is the log start offset, ``latest_offset`` the log
  end offset (the offset the *next* record will get), exactly what ``ListOffsets`` EARLIEST/LATEST return.
* ``error`` is a per-row admin failure message, ``null`` when the lookup succeeded. Partial failure is data:
  the job emits a row with ``error`` set (and the values it could not fetch ``null``) instead of aborting.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)


def _f(name: str, dtype: object, nullable: bool = True) -> StructField:
    return StructField(name, dtype, nullable)  # type: ignore[arg-type]


# --- Raw Kafka records ---

#: What Spark's Kafka batch source (``spark.read.format("kafka")``) yields, plus ``cluster_pair`` which the
#: job adds with ``withColumn("cluster_pair", lit(...))`` before decoding. ``headers`` is optional and
#: ignored. key/value are ``null`` for a null key / tombstone value.
KAFKA_RECORD_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("key", BinaryType()),
        _f("value", BinaryType()),
        _f("topic", StringType(), False),  # the internal topic the record was read from
        _f("partition", IntegerType(), False),
        _f("offset", LongType(), False),
        _f("timestamp", TimestampType()),
        _f("timestampType", IntegerType()),
    ]
)

# --- Decoded internal records (output of inspector.transforms.decode) ---

#: One row per record of ``mm2-offset-syncs.<alias>.internal``. ``topic``/``partition`` are the *source*
#: topic-partition from the record key; the Kafka coordinates of the record itself are ``record_*``.
#: ``malformed_reason`` is null for a good record; for a malformed one every decoded field may be null.
#: A tombstone (good key, null value) has ``is_tombstone`` true and null offsets.
DECODED_OFFSET_SYNC_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType()),
        _f("partition", IntegerType()),
        _f("upstream_offset", LongType()),
        _f("downstream_offset", LongType()),
        _f("is_tombstone", BooleanType(), False),
        _f("malformed_reason", StringType()),
        _f("record_partition", IntegerType(), False),
        _f("record_offset", LongType(), False),
        _f("record_timestamp", TimestampType()),
    ]
)

#: One row per record of ``<source>.checkpoints.internal``. ``topic`` is the *target-side* (remote) topic.
DECODED_CHECKPOINT_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType()),
        _f("topic", StringType()),
        _f("partition", IntegerType()),
        _f("upstream_offset", LongType()),
        _f("downstream_offset", LongType()),
        _f("metadata", StringType()),
        _f("is_tombstone", BooleanType(), False),
        _f("malformed_reason", StringType()),
        _f("record_partition", IntegerType(), False),
        _f("record_offset", LongType(), False),
        _f("record_timestamp", TimestampType()),
    ]
)

# --- Checkpoints after compaction semantics ---

#: The live checkpoint per (pair, group, target topic, partition).
CHECKPOINTS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("topic", StringType(), False),  # target-side (remote) topic name
        _f("partition", IntegerType(), False),
        _f("upstream_offset", LongType(), False),
        _f("downstream_offset", LongType(), False),
        _f("metadata", StringType()),
        _f("record_offset", LongType(), False),
        _f("record_timestamp", TimestampType()),
    ]
)

#: ``inspector.kept.pair_topics.Numbering``: a small int per source partition that has a group offset.
PARTITION_NUMBERS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("_part", IntegerType(), False),
    ]
)

#: Groups a live session's run classifies again (``inspector.kept.changed_groups``).
GROUP_KEYS_SCHEMA = StructType([_f("cluster_pair", StringType(), False), _f("group", StringType(), False)])

# --- Admin state the job collects ---

#: Committed offsets of the *source* groups MM2 mirrors: one row per (group, source topic, partition) the
#: group has committed. These are the rows the inspector classifies. ``committed_offset`` may be null when the
#: broker lists the partition without an offset; ``error`` says why a group's offsets could not be listed.
SOURCE_GROUP_OFFSETS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("topic", StringType(), False),  # source topic name
        _f("partition", IntegerType(), False),
        _f("committed_offset", LongType()),
        _f("error", StringType()),
        # A share group's row whose share-partition state was read (``core.kafka.share_state``), else null: the
        # start offset Kafka reports (``committed_offset`` is the position past it), and the records acknowledged
        # past the position, which any failover delivers again.
        _f("share_start_offset", LongType()),
        _f("share_acknowledged_past", LongType()),
    ]
)

#: Source partitions: one row per source topic-partition any group committed. ``remote_topic`` is the name
#: the replication policy gives the topic on the target (``<source><sep><topic>`` for
#: DefaultReplicationPolicy, the same name for IdentityReplicationPolicy); the job computes it with the
#: pair's configured policy.
#: The source group offsets as the translation reads them: each with its partition's remote topic
#: (``inspector.rules.admin_facts.with_remote_topics``), under which the target's facts are looked up.
REMOTE_GROUP_OFFSETS_SCHEMA = StructType([*SOURCE_GROUP_OFFSETS_SCHEMA.fields, _f("remote_topic", StringType())])

SOURCE_PARTITIONS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("earliest_offset", LongType()),
        _f("latest_offset", LongType()),
        _f("remote_topic", StringType()),
        _f("error", StringType()),
    ]
)

#: Target partitions of the *remote* topics. A partition that does not exist on the target is either absent or
#: present with null offsets and a null error; both read as "remote topic missing".
TARGET_PARTITIONS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),  # remote (target-side) topic name
        _f("partition", IntegerType(), False),
        _f("earliest_offset", LongType()),
        _f("latest_offset", LongType()),
        _f("error", StringType()),
    ]
)

#: Committed offsets of the same groups on the *target* cluster, keyed by the remote topic name. A group with
#: no offset for a partition is simply absent. ``error`` marks a group whose offsets could not be listed
#: (one row per partition asked about, offset null).
TARGET_GROUP_OFFSETS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("topic", StringType(), False),  # remote (target-side) topic name
        _f("partition", IntegerType(), False),
        _f("committed_offset", LongType()),
        _f("error", StringType()),
        _f("written_by", StringType()),  # the commit's metadata when mm2ctl wrote it (core.kafka.provenance), else null
    ]
)

#: ``DescribeConsumerGroups`` per cluster side, used for both the source and the target groups. ``state`` is
#: the Kafka ``ConsumerGroupState``/``GroupState`` name as the client spells it (``Stable``, ``Empty``,
#: ``Dead``, ``PreparingRebalance``, ``CompletingRebalance``, ``Assigning``, ``Reconciling``, ``Unknown``);
#: a group absent on a cluster is absent here or ``Dead``. ``group_type`` is ``classic``, ``consumer``,
#: ``share`` or ``streams`` as the cluster lists it (null when the listing of every type failed).
GROUP_STATES_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("state", StringType()),
        _f("member_count", IntegerType()),
        _f("error", StringType()),
        _f("group_type", StringType()),
    ]
)

# --- Intermediate and output frames ---

#: Columns ``inspector.transforms.translated_offsets`` appends to the group-offsets frame it is given.
TRANSLATION_FIELDS = [
    _f("translated_offset", LongType()),
    _f("translation_method", StringType()),
    _f("sync_upstream", LongType()),
    _f("sync_downstream", LongType()),
    _f("latest_sync_upstream", LongType()),
    _f("latest_sync_downstream", LongType()),
    _f("oldest_sync_upstream", LongType()),
    _f("oldest_sync_downstream", LongType()),
    _f("sync_count", LongType(), False),
]

#: ``inspect --exact``: the positions ``inspector.exact`` found by reading records, per source group offset.
EXACT_POSITIONS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("exact_offset", LongType(), False),
        _f("exact_method", StringType(), False),
    ]
)

#: ``inspector.rules.admin_facts.joined_rows``' output and ``inspector.rules.row_status``'s input: one row per source
#: group offset, with everything known about it on both clusters. ``error`` joins every lookup error of the row.
#: ``mm2_position_known`` and ``mm2_next_offset`` are the source partition's in
#: ``REPLICATED_PARTITIONS_SCHEMA`` (both null for a partition it has no row for: MM2's position unknown).
JOINED_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("committed_offset", LongType()),
        *TRANSLATION_FIELDS,
        _f("source_earliest", LongType()),
        _f("source_latest", LongType()),
        _f("remote_topic", StringType()),
        _f("source_group_state", StringType()),
        _f("target_earliest", LongType()),
        _f("target_latest", LongType()),
        _f("target_offset", LongType()),
        _f("target_group_state", StringType()),
        _f("target_group_members", IntegerType()),
        _f("checkpoint_upstream", LongType()),
        _f("checkpoint_offset", LongType()),
        _f("checkpoint_timestamp", TimestampType()),
        _f("mm2_position_known", BooleanType()),
        _f("mm2_next_offset", LongType()),
        _f("error", StringType()),
        _f("group_type", StringType()),
        _f("target_written_by", StringType()),
        _f("share_start_offset", LongType()),
        _f("share_acknowledged_past", LongType()),
    ]
)

#: The report, one row per (pair, group, topic, partition). The first 21 columns are the Aiven offset sync
#: inspector's CSV columns in the order of its released tool (``mm2-offset-sync-inspector-0.1``), in
#: snake_case; ours follow. See ``inspector.statuses`` for the meanings.
CLASSIFIED_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("group", StringType(), False),
        _f("source_earliest", LongType()),
        _f("source_latest", LongType()),
        _f("source_group_state", StringType()),
        _f("source_offset", LongType()),
        _f("source_lag", LongType()),
        _f("target_earliest", LongType()),
        _f("target_latest", LongType()),
        _f("target_group_state", StringType()),
        _f("target_offset", LongType()),
        _f("target_lag", LongType()),
        _f("target_lag_to_source", LongType()),
        _f("source_has_data", BooleanType()),
        _f("source_group_valid", BooleanType()),
        _f("target_has_data", BooleanType()),
        _f("is_ok", BooleanType(), False),
        _f("blocking_component", StringType()),
        _f("message", StringType(), False),
        _f("status", StringType(), False),
        _f("remote_topic", StringType()),
        _f("translated_offset", LongType()),
        _f("translation_method", StringType()),
        _f("checkpoint_offset", LongType()),
        _f("checkpoint_timestamp", TimestampType()),
        _f("sync_count", LongType(), False),
        _f("replay_if_failover_now", LongType()),
        _f("skip_if_failover_now", LongType()),
        _f("replay_if_failover_now_at_least", LongType()),
        _f("skip_if_failover_now_at_most", LongType()),
        _f("mm2_records_behind", LongType()),
        _f("explanation", StringType()),
        _f("error", StringType()),
        _f("group_type", StringType()),
        _f("target_written_by", StringType()),
        _f("share_start_offset", LongType()),
    ]
)

# --- Replication health (inspector.transforms.replication_health) ---

#: The driver's input (``inspector.reads.replicated_partitions``): one row per replicated source partition.
#: ``position_known`` is the pair's (false: no way to read MM2's position); ``mm2_next_offset`` is null for a
#: partition MM2 stored no position for; ``error`` joins the row's failed lookups. The lag in time and the
#: retention margin follow (``inspector.reads.waiting_records``), computed on the driver.
MM2_POSITIONS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("remote_topic", StringType(), False),
        _f("source_earliest", LongType()),
        _f("source_latest", LongType()),
        _f("target_latest", LongType()),
        _f("position_known", BooleanType(), False),
        _f("mm2_next_offset", LongType()),
        _f("error", StringType()),
    ]
)
#: The lag in time and the retention margin, computed on the driver (``inspector.reads.waiting_records``).
#: They change at every run while records wait, so the classification's inputs leave them out
#: (``MM2_POSITIONS_SCHEMA``): a live session classifies a group again only when its partition's position moved.
LAG_IN_TIME_FIELDS = [
    _f("replication_lag_seconds", DoubleType()),
    _f("lag_timestamp_type", StringType()),
    _f("oldest_waiting_timestamp", TimestampType()),
    _f("retention_ms", LongType()),
    _f("retention_ms_source", StringType()),
    _f("retention_margin_seconds", DoubleType()),
    _f("retention_margin_basis", StringType()),
]
REPLICATED_PARTITIONS_SCHEMA = StructType([*MM2_POSITIONS_SCHEMA.fields, *LAG_IN_TIME_FIELDS])

#: The newest offset-sync record of each source partition that has one (``inspector.kept.pair_topics``).
NEWEST_SYNCS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("newest_sync_upstream", LongType()),
        _f("newest_sync_downstream", LongType()),
        _f("newest_sync_timestamp", TimestampType()),
    ]
)

#: The partition rows (``inspect --rows partitions``), in report column order.
PARTITION_HEALTH_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("remote_topic", StringType(), False),
        _f("source_earliest", LongType()),
        _f("source_latest", LongType()),
        _f("target_latest", LongType()),
        _f("mm2_next_offset", LongType()),
        _f("replication_lag_records", LongType()),
        _f("records_lost_to_retention", LongType()),
        _f("source_reset", BooleanType()),
        _f("newest_sync_upstream", LongType()),
        _f("newest_sync_downstream", LongType()),
        _f("newest_sync_timestamp", TimestampType()),
        _f("offset_sync_age_seconds", DoubleType()),
        _f("status", StringType(), False),
        _f("is_ok", BooleanType(), False),
        _f("message", StringType(), False),
        _f("error", StringType()),
        *LAG_IN_TIME_FIELDS,
    ]
)

PARTITION_COLUMNS: tuple[str, ...] = tuple(PARTITION_HEALTH_SCHEMA.fieldNames())

#: The column ``with_group_checkpoint_age`` appends to the group-partition rows.
GROUP_CHECKPOINT_AGE = "group_checkpoint_age_seconds"
#: Columns the group-partition rows carry beside ``GROUP_ROWS_SCHEMA``'s and no output shows (their names start
#: with ``_``): a row's checkpoint when it proved MM2 was keeping up (``classify.classify``), and its group's
#: newest checkpoint (``inspector.transforms.replication_health.with_group_newest_checkpoint``).
FRESH_CHECKPOINT = "_fresh_checkpoint"
GROUP_NEWEST_CHECKPOINT = "_group_newest_checkpoint"

#: The column ``with_checkpoint_lag`` appends: what a failover now would replay, in time
#: (``inspector.reads.replay_time``).
CHECKPOINT_LAG = "checkpoint_lag_seconds"

#: The group-partition rows as reported: ``classify.classify``'s columns, the group's checkpoint age, then the
#: replay in time.
GROUP_ROWS_SCHEMA = StructType(
    [*CLASSIFIED_SCHEMA.fields, _f(GROUP_CHECKPOINT_AGE, DoubleType()), _f(CHECKPOINT_LAG, DoubleType())]
)
#: The group-partition rows as an inspection keeps them: ``classify.classify``'s columns, the group's checkpoint
#: age, then the hidden ones (the replay in time is read again at every run).
KEPT_ROWS_SCHEMA = StructType(
    [
        *CLASSIFIED_SCHEMA.fields,
        _f(GROUP_CHECKPOINT_AGE, DoubleType()),
        _f(FRESH_CHECKPOINT, TimestampType()),
        _f(GROUP_NEWEST_CHECKPOINT, TimestampType()),
    ]
)
#: Each exact row's replay in time as the driver read it (``inspector.reads.replay_time``).
REPLAY_SECONDS_SCHEMA = StructType(
    [
        _f("cluster_pair", StringType(), False),
        _f("group", StringType(), False),
        _f("topic", StringType(), False),
        _f("partition", IntegerType(), False),
        _f("seconds", DoubleType()),
    ]
)


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema of a frame the driver builds (the admin state, MM2's position): derived from the Spark
    schema, so the two cannot drift apart."""
    return to_arrow_schema(schema)
