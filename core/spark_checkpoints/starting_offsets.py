"""The ``startingOffsets`` JSON of Spark's Kafka source: where a new query on the target's topics starts
(docs/design.md, "The JSON form").

Spark reads it with ``JsonUtils.partitionOffsets``: ``{"topic":{"partition":offset}}``, partitions as JSON
strings, offsets as numbers, ``-2`` meaning the partition's earliest offset and ``-1`` its latest. When a query
is given specific offsets, Spark requires them for every partition of every topic it subscribes to
(``KafkaOffsetReaderAdmin.fetchSpecificOffsets`` asserts that the two sets are equal), so the JSON names every
partition of the translated topics. Spark applies it only to a query whose checkpoint has no offsets yet; a
query that resumes a checkpoint ignores it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from mm2ctl.core.errors import PlanError, SparkCheckpointError
from mm2ctl.core.spark_checkpoints.read import DuplicateKeyError, no_duplicate_keys

#: ``KafkaOffsetRangeLimit.EARLIEST``: start the partition at its earliest offset.
EARLIEST = -2
#: ``KafkaOffsetRangeLimit.LATEST``: start the partition at its latest offset.
LATEST = -1

_PARTITION = re.compile(r"[0-9]+")
_INT_MAX = 2**31 - 1
_LONG_MAX = 2**63 - 1


def starting_offsets_json(offsets: Mapping[str, Mapping[int, int]]) -> str:
    """The ``startingOffsets`` option's value for ``offsets`` (topic on the target -> partition -> offset of the
    next record to read), compact, topics and partitions in order. An offset is a non-negative offset,
    :data:`EARLIEST` or :data:`LATEST`. Raises :class:`PlanError` for an empty map, a topic that is not a name,
    a topic with no partition, or a partition or offset out of range."""
    if not offsets:
        raise PlanError("startingOffsets: no topic to start from")
    for topic, partitions in offsets.items():
        if not isinstance(topic, str) or not topic:
            raise PlanError(f"startingOffsets: topic {topic!r} is not a topic name")
        if not partitions:
            raise PlanError(f"startingOffsets: {topic}: no partition")
        for partition, offset in partitions.items():
            if isinstance(partition, bool) or not isinstance(partition, int) or not 0 <= partition <= _INT_MAX:
                raise PlanError(f"startingOffsets: {topic}: partition {partition!r} is out of range")
            try:
                _as_offset(offset)
            except ValueError as exc:
                raise PlanError(f"startingOffsets: {topic}-{partition}: {exc}") from None
    body = {
        topic: {str(partition): offsets[topic][partition] for partition in sorted(offsets[topic])}
        for topic in sorted(offsets)
    }
    return json.dumps(body, separators=(",", ":"))


def read_starting_offsets(text: str, *, where: str) -> dict[str, dict[int, int]]:
    """Parse a ``startingOffsets`` JSON that mm2ctl wrote (``where`` names it), to read it back. Accepts what
    ``JsonUtils.partitionOffsets`` accepts, less what mm2ctl never writes: a repeated key, a partition that is
    not a decimal number, an offset that is not an integer, a negative offset other than :data:`EARLIEST` and
    :data:`LATEST`. Raises :class:`SparkCheckpointError`."""
    try:
        value = json.loads(text, object_pairs_hook=no_duplicate_keys)
    except DuplicateKeyError as exc:
        raise SparkCheckpointError(where, f"the key {exc.key!r} is given twice") from exc
    except ValueError as exc:
        raise SparkCheckpointError(where, f"not JSON ({exc})") from exc
    if not isinstance(value, dict) or not value:
        raise SparkCheckpointError(where, 'expected {"topic":{"partition":offset}}')
    result: dict[str, dict[int, int]] = {}
    for topic, partitions in value.items():
        if not topic or not isinstance(partitions, dict) or not partitions:
            raise SparkCheckpointError(where, f"{topic!r}: expected an object of partitions to offsets")
        parsed: dict[int, int] = {}
        for key, offset in partitions.items():
            if not _PARTITION.fullmatch(key) or int(key) > _INT_MAX or int(key) in parsed:
                raise SparkCheckpointError(where, f"{topic}: {key!r} is not a partition number, or repeats one")
            try:
                parsed[int(key)] = _as_offset(offset)
            except ValueError as exc:
                raise SparkCheckpointError(where, f"{topic}-{key}: {exc}") from None
        result[topic] = parsed
    return result


def _as_offset(offset: object) -> int:
    """``offset`` when it is one the Kafka source takes; a ValueError saying why not otherwise."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ValueError(f"offset {offset!r} is not an integer")
    if offset < 0 and offset not in (EARLIEST, LATEST):
        raise ValueError(f"offset {offset} is negative (only -2, earliest, and -1, latest, have a meaning)")
    if offset > _LONG_MAX:
        raise ValueError(f"offset {offset} is out of range")
    return offset
