"""MM2's live checkpoints, the newest of each key, in Spark: ``inspector.rules.checkpoint_fold``'s rule run over
a large read, rows clustered by (pair, group).

``inspector.kept.kept_checkpoints`` keeps the live checkpoints between runs and folds each later read's records
into them (``merged_checkpoints``): the kept rows of the keys the new records hold go to the rule beside
them, marked ``checkpoint_fold.KEPT``, so a key's kept checkpoint and its new records meet in one call.

Output of both steps: ``schemas.CHECKPOINTS_SCHEMA``, clustered by (pair, group), the clustering
``classify.join_target_state`` joins on, so a kept frame is joined without another shuffle.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mm2ctl.inspector.rules import checkpoint_fold
from mm2ctl.inspector.rules.checkpoint_fold import CHECKPOINT_COLUMNS, KEPT
from mm2ctl.inspector.schemas import CHECKPOINTS_SCHEMA
from mm2ctl.inspector.spark.arrow_rules import by_key, ship_by_value

PAIR = "cluster_pair"
KEY = checkpoint_fold.KEY
#: What the rule reads of each row: a live checkpoint's columns, the record's partition, whether it deletes.
_RULE_COLUMNS = [*CHECKPOINT_COLUMNS, "record_partition", "is_tombstone"]
#: The rule's calls over a later read's records get one call per this many records (and their kept rows).
RECORDS_PER_CALL = 250_000


def _records(decoded: DataFrame) -> DataFrame:
    """The well-formed records of ``decode.decode_checkpoints``' output, as the rule reads them."""
    return decoded.where(F.col("malformed_reason").isNull()).select(*_RULE_COLUMNS, F.lit(False).alias(KEPT))


def _folded(rows: DataFrame, partitions: int | None = None) -> DataFrame:
    ship_by_value(checkpoint_fold)
    return by_key(rows, [PAIR, "group"], checkpoint_fold.live_rule, CHECKPOINTS_SCHEMA, partitions=partitions)


def live_checkpoints(decoded: DataFrame) -> DataFrame:
    """The live checkpoint of each key in ``decode.decode_checkpoints``' output: its newest record, unless
    that is a tombstone. Malformed records are passed over (the run counts them)."""
    return _folded(_records(decoded))


def merged_checkpoints(kept: DataFrame, decoded: DataFrame, records: int) -> DataFrame:
    """``kept`` (``live_checkpoints`` of everything read before) with ``decoded``, the ``records`` written since:
    a key they hold takes its newest one among them (a tombstone deletes it), every other key stays. Only the
    keys the new records hold go through the rule, in a call per ``RECORDS_PER_CALL`` records; the others'
    rows stay where they are."""
    new = _records(decoded)
    touched = new.select(*KEY).distinct()
    old = kept.join(touched, on=KEY, how="left_semi").select(
        *CHECKPOINT_COLUMNS,
        F.lit(-1).cast("int").alias("record_partition"),
        F.lit(False).alias("is_tombstone"),
        F.lit(True).alias(KEPT),
    )
    unchanged = kept.join(touched, on=KEY, how="left_anti")
    calls = max(1, -(-records // RECORDS_PER_CALL))
    return unchanged.unionByName(_folded(old.unionByName(new), calls)).repartition(PAIR, "group")


def read_facts(decoded: DataFrame) -> DataFrame:
    """What a read of the checkpoints topic found, in one aggregation: per malformed reason (null for the
    well-formed records) the records, and the groups the well-formed ones name (``inspector.kept.changed_groups``)."""
    return decoded.groupBy("malformed_reason").agg(
        F.count(F.lit(1)).alias("records"), F.collect_set("group").alias("groups")
    )
