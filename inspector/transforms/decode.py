"""Decode MM2's internal records (docs/design.md, "Record formats") from Spark's Kafka source, with SQL expressions
only.

The offset-syncs and checkpoints topics can hold millions of records, so decoding runs as native Spark SQL
(``octet_length``, ``substr``, ``hex``/``conv``, ``is_valid_utf8``) rather than a Python UDF: no row crosses
into Python, and Catalyst can prune what a caller does not select. ``mm2ctl.core.kafka.codecs`` is the reference these
expressions are property-tested against; where the two could differ (signedness, UTF-8 validity, trailing
bytes) the Python codec wins.

Integers are read from the record's hex text: ``conv(hex, 16, -10)`` yields the *signed* 64-bit value (a
negative target base makes ``conv`` treat the 64 bits as two's complement), so -1, ``Long.MIN_VALUE`` and
``Long.MAX_VALUE`` decode exactly and no cast can overflow under ANSI mode. INT16/INT32 are read unsigned and
re-signed arithmetically.

Nothing here raises on bad bytes. A record that does not parse keeps its row with ``malformed_reason`` set and
its decoded fields null, so the job can count and report it and go on (docs/design.md, "Record formats"). A null *value*
with a good key is a tombstone: in a compacted topic it deletes the key, so it is data (``is_tombstone``), not damage. A
null key is malformed: a compacted topic cannot hold one, so it can only come from a foreign writer.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from mm2ctl.inspector.spark.compat import is_valid_utf8

#: Columns of Spark's Kafka source; everything else on the input frame (e.g. ``cluster_pair``) passes through.
_KAFKA_SOURCE_COLUMNS = frozenset({"key", "value", "topic", "partition", "offset", "timestamp", "timestampType"})
_HEADERS = "headers"

NULL_KEY = "null key"
KEY_TRUNCATED = "key truncated"
KEY_TRAILING = "key has trailing bytes"
VALUE_TRUNCATED = "value truncated"
VALUE_TRAILING = "value has trailing bytes"
NEGATIVE_STRING_LENGTH = "negative string length"
INVALID_UTF8 = "string is not UTF-8"
UNKNOWN_CHECKPOINT_VERSION = "unknown checkpoint version"

#: Every reason a decoder can give, for reports that list zero counts too.
MALFORMED_REASONS = (
    NULL_KEY,
    KEY_TRUNCATED,
    KEY_TRAILING,
    VALUE_TRUNCATED,
    VALUE_TRAILING,
    NEGATIVE_STRING_LENGTH,
    INVALID_UTF8,
    UNKNOWN_CHECKPOINT_VERSION,
)


def _lit(value: int | Column) -> Column:
    return value if isinstance(value, Column) else F.lit(value)


def _bytes(buf: Column, pos: int | Column, length: int | Column) -> Column:
    """``length`` bytes at 1-based ``pos``; an out-of-range slice is short or empty, never an error."""
    return F.substr(buf, _lit(pos), _lit(length))


def _int64(buf: Column, pos: int | Column) -> Column:
    """Signed big-endian INT64 at ``pos`` (null if the slice is empty)."""
    return F.conv(F.hex(_bytes(buf, pos, 8)), 16, -10).cast("long")


def offset_sync_value(value: Column) -> tuple[Column, Column]:
    """The (upstream, downstream) offsets of an OffsetSync value, for a value known to be 16 bytes."""
    return _int64(value, 1), _int64(value, 9)


def _signed(buf: Column, pos: int | Column, width: int) -> Column:
    """Signed big-endian integer of ``width`` (2 or 4) bytes at ``pos``, as a long."""
    unsigned = F.conv(F.hex(_bytes(buf, pos, width)), 16, 10).cast("long")
    bits = 8 * width
    return F.when(unsigned >= F.lit(1 << (bits - 1)), unsigned - F.lit(1 << bits)).otherwise(unsigned)


def _utf8(buf: Column, pos: Column, length: Column) -> Column:
    return _bytes(buf, pos, length).cast("string")


def _passthrough(df: DataFrame) -> list[Column]:
    return [F.col(c) for c in df.columns if c not in _KAFKA_SOURCE_COLUMNS and c != _HEADERS]


def _record_coordinates() -> list[Column]:
    return [
        F.col("partition").alias("record_partition"),
        F.col("offset").alias("record_offset"),
        F.col("timestamp").alias("record_timestamp"),
    ]


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
    it is broadcast) names the source partitions the caller cares about. A record whose key is byte for byte
    one of theirs is well-formed in its key by construction, so its key is not parsed: the record is matched
    by its raw key bytes and takes the topic and partition from ``known``, and only its value is checked and
    decoded. It also carries ``known``'s other columns (null on every other record). Every other record is decoded in
    full, as without ``known``. The output is the same either way; at ten million records the key parse is
    most of the decode's cost, and a topic holds few distinct keys.
    """
    if known is None:
        return _decode_offset_syncs(records)
    extra = [c for c in known.columns if c not in ("cluster_pair", "topic", "partition")]
    keys = known.select(
        F.col("cluster_pair").alias("_k_pair"),
        offset_sync_key(F.col("topic"), F.col("partition")).alias("_k_key"),
        F.col("topic").alias("_k_topic"),
        F.col("partition").cast("int").alias("_k_partition"),
        *extra,
    )
    on = (F.col("cluster_pair") == F.col("_k_pair")) & (F.col("key") == F.col("_k_key"))
    hit = F.col("_k_key").isNotNull()
    v, vl = F.col("value"), F.octet_length(F.col("value"))
    fast = records.join(F.broadcast(keys), on=on, how="left").select(
        "*",
        F.when(hit & (vl == 16), _int64(v, 1)).alias("_k_upstream"),
        F.when(hit & (vl == 16), _int64(v, 9)).alias("_k_downstream"),
        F.when(hit, F.when(vl < 16, F.lit(VALUE_TRUNCATED)).when(vl > 16, F.lit(VALUE_TRAILING))).alias("_k_reason"),
    )
    full = _decode_offset_syncs(fast, parse_key=~hit)

    def either(name: str, fast_value: Column) -> Column:
        # CASE WHEN evaluates one branch per row: a known key never reaches the full key parse.
        return F.when(hit, fast_value).otherwise(F.col(name)).alias(name)

    return full.select(
        *[F.col(c) for c in full.columns if c not in _SYNC_DECODED and not c.startswith("_k_")],
        either("topic", F.when(F.col("_k_reason").isNull(), F.col("_k_topic"))),
        either("partition", F.when(F.col("_k_reason").isNull(), F.col("_k_partition"))),
        either("upstream_offset", F.col("_k_upstream")),
        either("downstream_offset", F.col("_k_downstream")),
        either("is_tombstone", F.col("_k_upstream").isNull() & F.col("_k_reason").isNull()),
        either("malformed_reason", F.col("_k_reason")),
        "record_partition",
        "record_offset",
        "record_timestamp",
    )


_SYNC_DECODED = frozenset(
    {"topic", "partition", "upstream_offset", "downstream_offset", "is_tombstone", "malformed_reason"}
    | {"record_partition", "record_offset", "record_timestamp"}
)


def _decode_offset_syncs(records: DataFrame, parse_key: Column | None = None) -> DataFrame:
    """The full decode; with ``parse_key``, the key is parsed only where it is true (elsewhere the key
    columns and the key's malformed reason come out null, for the caller to replace)."""
    k, v = F.col("key"), F.col("value")
    kl, vl = F.octet_length(k), F.octet_length(v)
    tl = F.col("_tl")
    key_reason = (
        F.when(k.isNull(), F.lit(NULL_KEY))
        .when(kl < 2, F.lit(KEY_TRUNCATED))
        .when(tl < 0, F.lit(NEGATIVE_STRING_LENGTH))
        .when(kl < tl + 6, F.lit(KEY_TRUNCATED))
        .when(~is_valid_utf8(F.col("_topic")), F.lit(INVALID_UTF8))
        .when(kl > tl + 6, F.lit(KEY_TRAILING))
    )
    value_reason = (
        F.when(v.isNull(), F.lit(None)).when(vl < 16, F.lit(VALUE_TRUNCATED)).when(vl > 16, F.lit(VALUE_TRAILING))
    )
    length = _signed(k, 1, 2) if parse_key is None else F.when(parse_key, _signed(k, 1, 2))
    staged = records.withColumn("_tl", length).withColumn("_topic", _utf8(k, F.lit(3), tl))
    staged = staged.withColumn("_reason", F.coalesce(key_reason, value_reason))
    good = F.col("_reason").isNull()
    tombstone = good & v.isNull()
    row_ok = good & v.isNotNull()
    return staged.select(
        *_passthrough(records),
        F.when(good, F.col("_topic")).alias("topic"),
        F.when(good, _signed(k, tl + 3, 4).cast("int")).alias("partition"),
        F.when(row_ok, _int64(v, 1)).alias("upstream_offset"),
        F.when(row_ok, _int64(v, 9)).alias("downstream_offset"),
        F.coalesce(tombstone, F.lit(False)).alias("is_tombstone"),
        F.col("_reason").alias("malformed_reason"),
        *_record_coordinates(),
    )


def decode_checkpoints(records: DataFrame) -> DataFrame:
    """Decode ``<source>.checkpoints.internal`` records into ``schemas.DECODED_CHECKPOINT_SCHEMA``.

    Key: ``group`` STRING, ``topic`` STRING (target-side name), ``partition`` INT32. Value: ``version`` INT16
    (only 0 is known), ``upstreamOffset`` INT64, ``offset`` INT64, ``metadata`` STRING.
    """
    k, v = F.col("key"), F.col("value")
    kl, vl = F.octet_length(k), F.octet_length(v)
    gl, tl, ml = F.col("_gl"), F.col("_tl"), F.col("_ml")
    # key layout: [gl:2][group:gl][tl:2][topic:tl][partition:4]; tl sits at 1-based position gl + 3
    key_reason = (
        F.when(k.isNull(), F.lit(NULL_KEY))
        .when(kl < 2, F.lit(KEY_TRUNCATED))
        .when(gl < 0, F.lit(NEGATIVE_STRING_LENGTH))
        .when(kl < gl + 4, F.lit(KEY_TRUNCATED))
        .when(~is_valid_utf8(F.col("_group")), F.lit(INVALID_UTF8))
        .when(tl < 0, F.lit(NEGATIVE_STRING_LENGTH))
        .when(kl < gl + tl + 8, F.lit(KEY_TRUNCATED))
        .when(~is_valid_utf8(F.col("_topic")), F.lit(INVALID_UTF8))
        .when(kl > gl + tl + 8, F.lit(KEY_TRAILING))
    )
    # value layout: [version:2][upstream:8][downstream:8][ml:2][metadata:ml]
    value_reason = (
        F.when(v.isNull(), F.lit(None))
        .when(vl < 2, F.lit(VALUE_TRUNCATED))
        .when(F.col("_version") != 0, F.lit(UNKNOWN_CHECKPOINT_VERSION))
        .when(vl < 20, F.lit(VALUE_TRUNCATED))
        .when(ml < 0, F.lit(NEGATIVE_STRING_LENGTH))
        .when(vl < ml + 20, F.lit(VALUE_TRUNCATED))
        .when(~is_valid_utf8(F.col("_metadata")), F.lit(INVALID_UTF8))
        .when(vl > ml + 20, F.lit(VALUE_TRAILING))
    )
    staged = (
        records.withColumn("_gl", _signed(k, 1, 2))
        .withColumn("_group", _utf8(k, F.lit(3), gl))
        .withColumn("_tl", _signed(k, gl + 3, 2))
        .withColumn("_topic", _utf8(k, gl + 5, tl))
        .withColumn("_version", _signed(v, 1, 2))
        .withColumn("_ml", _signed(v, 19, 2))
        .withColumn("_metadata", _utf8(v, F.lit(21), ml))
    )
    staged = staged.withColumn("_reason", F.coalesce(key_reason, value_reason))
    good = F.col("_reason").isNull()
    row_ok = good & v.isNotNull()
    return staged.select(
        *_passthrough(records),
        F.when(good, F.col("_group")).alias("group"),
        F.when(good, F.col("_topic")).alias("topic"),
        F.when(good, _signed(k, gl + tl + 5, 4).cast("int")).alias("partition"),
        F.when(row_ok, _int64(v, 3)).alias("upstream_offset"),
        F.when(row_ok, _int64(v, 11)).alias("downstream_offset"),
        F.when(row_ok, F.col("_metadata")).alias("metadata"),
        F.coalesce(good & v.isNull(), F.lit(False)).alias("is_tombstone"),
        F.col("_reason").alias("malformed_reason"),
        *_record_coordinates(),
    )
