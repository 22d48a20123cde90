"""Decode MM2's internal records (docs/design.md, "Record formats") from Spark's Kafka source.

The decode itself is ``inspector.rules.decoding``'s Arrow functions, which Spark runs over each batch of
records through ``mapInArrow`` (``inspector.spark.arrow_rules.by_batch``): the same code a caller runs
in-process over a table, vectorized with NumPy over the Arrow buffers, so no record goes through Python on its
own. Only the columns the decode reads and the pass-through ones (``cluster_pair``, ``known``'s) cross to
Python.

Nothing here raises on bad bytes. A record that does not parse keeps its row with ``malformed_reason`` set and
its decoded fields null, so the job can count and report it and go on (docs/design.md, "Record formats"). A null
*value* with a good key is a tombstone: in a compacted topic it deletes the key, so it is data
(``is_tombstone``), not damage. A null key is malformed: a compacted topic cannot hold one, so it can only come
from a foreign writer.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from mm2ctl.inspector import schemas
from mm2ctl.inspector.rules import decoding
from mm2ctl.inspector.rules.decoding import (
    INVALID_UTF8,
    KEY_TRAILING,
    KEY_TRUNCATED,
    MALFORMED_REASONS,
    NEGATIVE_STRING_LENGTH,
    NULL_KEY,
    UNKNOWN_CHECKPOINT_VERSION,
    VALUE_TRAILING,
    VALUE_TRUNCATED,
)
from mm2ctl.inspector.spark.arrow_rules import Rule, by_batch, ship_by_value


def _hex_bytes(value: Column, width: int) -> Column:
    """The low ``width`` bytes of an integer, big-endian (two's complement), as binary."""
    digits = 2 * width
    return F.unhex(F.lpad(F.substr(F.hex(value), F.lit(-digits), F.lit(digits)), digits, "0"))


def offset_sync_key(topic: Column, partition: Column) -> Column:
    """The exact key bytes MM2 writes for (topic, partition): INT16 length, UTF-8 topic, INT32 partition.

    Null when the topic cannot be encoded (longer than an INT16 length allows), so it matches no record.
    """
    length = F.octet_length(topic)
    encoded = F.concat(_hex_bytes(length, 2), F.encode(topic, "UTF-8"), _hex_bytes(partition, 4))
    return F.when(length <= 32767, encoded)


def decode_offset_syncs(records: DataFrame, known: DataFrame | None = None) -> DataFrame:
    """Decode ``mm2-offset-syncs.<alias>.internal`` records into ``schemas.DECODED_OFFSET_SYNC_SCHEMA``.

    Key: ``topic`` STRING, ``partition`` INT32. Value: ``upstreamOffset`` INT64, ``offset`` INT64 (16 bytes).

    ``known`` (``cluster_pair``, ``topic``, ``partition`` and any other columns, one row per partition; small,
    it is broadcast) names the source partitions the caller cares about: a record whose key is byte for byte
    one of theirs carries ``known``'s other columns (null on every other record), after ``cluster_pair``. The
    decoded columns are the same either way.
    """
    if known is None:
        return _decoded(records, decoding.decode_offset_syncs_table, schemas.DECODED_OFFSET_SYNC_SCHEMA)
    extra = [c for c in known.columns if c not in ("cluster_pair", "topic", "partition")]
    keys = known.select(
        F.col("cluster_pair").alias("_k_pair"),
        offset_sync_key(F.col("topic"), F.col("partition")).alias("_k_key"),
        *extra,
    )
    on = (F.col("cluster_pair") == F.col("_k_pair")) & (F.col("key") == F.col("_k_key"))
    joined = records.join(F.broadcast(keys), on=on, how="left").drop("_k_pair", "_k_key")
    return _decoded(joined, decoding.decode_offset_syncs_table, schemas.DECODED_OFFSET_SYNC_SCHEMA)


def decode_checkpoints(records: DataFrame) -> DataFrame:
    """Decode ``<source>.checkpoints.internal`` records into ``schemas.DECODED_CHECKPOINT_SCHEMA``.

    Key: ``group`` STRING, ``topic`` STRING (target-side name), ``partition`` INT32. Value: ``version`` INT16
    (only 0 is known), ``upstreamOffset`` INT64, ``offset`` INT64, ``metadata`` STRING.
    """
    return _decoded(records, decoding.decode_checkpoints_table, schemas.DECODED_CHECKPOINT_SCHEMA)


def _decoded(records: DataFrame, rule: Rule, declared: StructType) -> DataFrame:
    """``rule`` over the records' pass-through columns and the columns it reads, in rows of the pass-through
    columns' fields then ``declared``'s decoded ones."""
    kept = [c for c in records.columns if c not in decoding.KAFKA_SOURCE_COLUMNS and c != decoding.HEADERS]
    read = ["key", "value", *(source for _, source in decoding.RECORD_COORDINATES)]
    fields = {f.name: f for f in declared.fields}
    decoded = [name for name in declared.names if name not in kept]
    schema = StructType([*(records.schema[c] for c in kept), *(fields[name] for name in decoded)])
    ship_by_value(decoding)
    return by_batch(records.select(*kept, *read), rule, schema)


__all__ = [
    "INVALID_UTF8",
    "KEY_TRAILING",
    "KEY_TRUNCATED",
    "MALFORMED_REASONS",
    "NEGATIVE_STRING_LENGTH",
    "NULL_KEY",
    "UNKNOWN_CHECKPOINT_VERSION",
    "VALUE_TRAILING",
    "VALUE_TRUNCATED",
    "decode_checkpoints",
    "decode_offset_syncs",
    "offset_sync_key",
]
