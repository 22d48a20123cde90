"""What a step acts on: a connector on the plan's Connect worker, partitions of a topic, a consumer group, or a
Spark query's checkpoint.

Each target class carries a ``KIND`` tag (the ``kind`` field in a plan file) and names its cluster by alias,
never by address: the plan's ``clusters`` map says which cluster id each alias stood for, and apply
resolves the addresses again from the MM2 file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, TypeAlias

from mm2ctl.core.errors import PlanError
from mm2ctl.plans.validation import check_int, check_str, freeze_tuple


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorTarget:
    """A connector on the plan's Connect worker."""

    KIND: ClassVar[str] = "connector"
    connector: str

    def __post_init__(self) -> None:
        check_str(self.connector, "connector")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionsTarget:
    """Partitions of a topic on one of the plan's clusters (by alias)."""

    KIND: ClassVar[str] = "topic_partitions"
    cluster: str
    topic: str
    partitions: tuple[int, ...]

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.topic, "topic")
        freeze_tuple(self, "partitions")
        if not self.partitions:
            raise PlanError("partitions: must name at least one partition")
        for i, p in enumerate(self.partitions):
            check_int(p, f"partitions[{i}]")
        if list(self.partitions) != sorted(set(self.partitions)):
            raise PlanError("partitions: must be sorted and unique")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupTarget:
    """A group on one of the plan's clusters (by alias). ``group_type`` is ``share`` or ``streams`` for those
    Kafka 4 group types (read and written through the Java AdminClient), empty for a classic or consumer group
    (and left out of the plan file then)."""

    KIND: ClassVar[str] = "group"
    cluster: str
    group: str
    group_type: str = ""

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.group, "group")
        if self.group_type not in ("", "share", "streams"):
            raise PlanError(f"group_type: must be share or streams (or absent), not {self.group_type!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkQueryTarget:
    """A Structured Streaming query, by its checkpoint's location (a local folder or a ``file:`` URI). The query
    names no cluster: its checkpoint holds offsets only."""

    KIND: ClassVar[str] = "spark_query"
    location: str

    def __post_init__(self) -> None:
        check_str(self.location, "location")


Target: TypeAlias = ConnectorTarget | TopicPartitionsTarget | GroupTarget | SparkQueryTarget
TARGET_TYPES: Mapping[str, type[Target]] = MappingProxyType(
    {t.KIND: t for t in (ConnectorTarget, TopicPartitionsTarget, GroupTarget, SparkQueryTarget)}
)
