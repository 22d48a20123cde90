"""MM2's live checkpoints, the newest of each key: pure DataFrame → DataFrame steps.

The checkpoints topic is compacted on (group, target topic, partition), so what it says of a key is its newest
record, and a tombstone deletes the key: ``core.kafka.compaction``'s rule, which ``plan failover --from
checkpoints`` applies in Python and these steps apply in Spark SQL. ``inspector.kept.pair_topics`` keeps the live
checkpoints between runs and folds each later read's records into them (``merged_checkpoints``).

Output of both steps: ``schemas.CHECKPOINTS_SCHEMA``, clustered by (pair, group), the clustering
``classify.join_target_state`` joins on, so a kept frame is joined without another shuffle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from mm2ctl.inspector.schemas import CHECKPOINTS_SCHEMA

PAIR = "cluster_pair"
KEY = [PAIR, "group", "topic", "partition"]
_COLUMNS = CHECKPOINTS_SCHEMA.fieldNames()


def _newest_of_each_key(decoded: DataFrame) -> DataFrame:
    """The newest well-formed record of each key, tombstones included (``is_tombstone``): a window over the
    key rather than an aggregate, since a ``max(struct)`` cannot be hash-aggregated and would sort twice."""
    record = F.struct("record_offset", "record_partition")  # a record's identity, should the topic have partitions
    return (
        decoded.where(F.col("malformed_reason").isNull())
        .repartition(PAIR, "group")
        .select("*", F.max(record).over(Window.partitionBy(*KEY)).alias("_newest"))
        .where(record == F.col("_newest"))
    )


def live_checkpoints(decoded: DataFrame) -> DataFrame:
    """The live checkpoint of each key in ``decode.decode_checkpoints``' output: its newest record, unless
    that is a tombstone. Malformed records are passed over (the run counts them)."""
    return _newest_of_each_key(decoded).where(~F.col("is_tombstone")).select(*_COLUMNS)


def merged_checkpoints(kept: DataFrame, decoded: DataFrame) -> DataFrame:
    """``kept`` (``live_checkpoints`` of everything read before) with ``decoded``, the records written since:
    a key they hold takes its newest one among them (a tombstone deletes it), every other key stays."""
    newest = _newest_of_each_key(decoded)
    touched = newest.select(*KEY)
    unchanged = kept.join(touched, on=KEY, how="left_anti")
    return unchanged.unionByName(newest.where(~F.col("is_tombstone")).select(*_COLUMNS)).repartition(PAIR, "group")


def read_facts(decoded: DataFrame) -> DataFrame:
    """What a read of the checkpoints topic found, in one aggregation: per malformed reason (null for the
    well-formed records) the records, and the groups the well-formed ones name (``inspector.kept.changed_groups``)."""
    return decoded.groupBy("malformed_reason").agg(
        F.count(F.lit(1)).alias("records"), F.collect_set("group").alias("groups")
    )
