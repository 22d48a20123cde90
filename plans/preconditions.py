"""What must still hold, against live state, right before a step runs.

A plan is reviewed now and applied later; a precondition is how a step says what it assumed. Apply checks
each one immediately before its step (``mm2ctl.remediate.precondition_checks``) and refuses with a
``PreconditionError`` instead of writing over a change it never saw. Each class carries a ``KIND`` tag (the
``kind`` field in a plan file); ``AllOf`` combines them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar, TypeAlias

from mm2ctl.connect_client.models import ConnectorState
from mm2ctl.core.errors import PlanError
from mm2ctl.plans.offsets import GroupOffset, PlannedConnectorOffset, TombstoneRecord
from mm2ctl.plans.validation import check_int, check_str, check_unique, freeze_tuple, set_field


@dataclass(frozen=True, slots=True, kw_only=True)
class NoPrecondition:
    """For read-only steps (verify, wait): nothing has to hold before they run."""

    KIND: ClassVar[str] = "none"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorStateIn:
    """The connector exists and its state is one of ``states``."""

    KIND: ClassVar[str] = "connector_state_in"
    connector: str
    states: frozenset[ConnectorState]

    def __post_init__(self) -> None:
        check_str(self.connector, "connector")
        if isinstance(self.states, str) or not isinstance(self.states, Iterable):
            raise PlanError("states: expected a list of connector states")
        try:
            states = frozenset(ConnectorState(s) for s in self.states)
        except ValueError as exc:
            raise PlanError(f"states: {exc}") from exc
        if not states:
            raise PlanError("states: must name at least one state")
        set_field(self, "states", states)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorStopped:
    """The connector exists and is STOPPED (KIP-875 offset writes require it)."""

    KIND: ClassVar[str] = "connector_stopped"
    connector: str

    def __post_init__(self) -> None:
        check_str(self.connector, "connector")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorAbsent:
    """No connector of this name exists (before a create)."""

    KIND: ClassVar[str] = "connector_absent"
    connector: str

    def __post_init__(self) -> None:
        check_str(self.connector, "connector")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupEmptyOrAbsent:
    """The group has no active members (Kafka refuses offset commits for a group with members)."""

    KIND: ClassVar[str] = "group_empty_or_absent"
    cluster: str
    group: str

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.group, "group")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorOffsetsUnchanged:
    """``GET /connectors/{c}/offsets`` still returns exactly ``expected`` (order-insensitive)."""

    KIND: ClassVar[str] = "connector_offsets_unchanged"
    connector: str
    expected: tuple[PlannedConnectorOffset, ...]

    def __post_init__(self) -> None:
        check_str(self.connector, "connector")
        freeze_tuple(self, "expected")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsUnchanged:
    """The group's committed offsets for these partitions are still ``expected`` (None = none committed)."""

    KIND: ClassVar[str] = "group_offsets_unchanged"
    cluster: str
    group: str
    expected: tuple[GroupOffset, ...]

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.group, "group")
        freeze_tuple(self, "expected")
        check_unique(((o.topic, o.partition) for o in self.expected), "expected")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetsRecordsUnchanged:
    """The latest record of each key in the Connect offsets topic still has the value seen at plan time.

    Used by the tombstone path (Connect < 3.6, or dedicated MM2) where no REST offsets API exists.
    """

    KIND: ClassVar[str] = "offsets_records_unchanged"
    cluster: str
    topic: str
    records: tuple[TombstoneRecord, ...]

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.topic, "topic")
        freeze_tuple(self, "records")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicEndOffsetEquals:
    """The partition's end offset is still what the plan saw (no sync was written since)."""

    KIND: ClassVar[str] = "topic_end_offset_equals"
    cluster: str
    topic: str
    partition: int
    end_offset: int

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.topic, "topic")
        check_int(self.partition, "partition")
        check_int(self.end_offset, "end_offset")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerGroupHasNoMembers:
    """A Connect/MM2 worker group has no members: nothing can write offsets or syncs behind our back.

    Dedicated MM2 (no REST API) is stopped by the operator; this is how apply knows it really is.
    """

    KIND: ClassVar[str] = "worker_group_has_no_members"
    cluster: str
    group: str

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        check_str(self.group, "group")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsInRange:
    """Each offset lies within its partition's [earliest, latest] on ``cluster`` (failover writes).

    Checked again at apply because retention or a truncation between plan and apply can move the earliest
    offset past a planned one, and a consumer would then reset by ``auto.offset.reset`` instead.
    """

    KIND: ClassVar[str] = "group_offsets_in_range"
    cluster: str
    offsets: tuple[GroupOffset, ...]

    def __post_init__(self) -> None:
        check_str(self.cluster, "cluster")
        freeze_tuple(self, "offsets")
        if not self.offsets:
            raise PlanError("offsets: must list at least one partition")
        for o in self.offsets:
            if o.offset is None:
                raise PlanError("offsets: every offset must be a number")
        check_unique(((o.topic, o.partition) for o in self.offsets), "offsets")


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkCheckpointAt:
    """The query's checkpoint at ``location`` still has ``batch_id`` as its last committed batch, with the same
    ``offsets/<batch_id>`` and ``commits/<batch_id>`` bytes (``digest``): the query has not run since."""

    KIND: ClassVar[str] = "spark_checkpoint_at"
    location: str
    batch_id: int
    digest: str

    def __post_init__(self) -> None:
        check_str(self.location, "location")
        check_int(self.batch_id, "batch_id")
        check_str(self.digest, "digest")


@dataclass(frozen=True, slots=True, kw_only=True)
class AllOf:
    """Every one of ``conditions`` holds (e.g. connector stopped AND its offsets unchanged)."""

    KIND: ClassVar[str] = "all_of"
    conditions: tuple[Precondition, ...]

    def __post_init__(self) -> None:
        freeze_tuple(self, "conditions")
        if len(self.conditions) < 2:
            raise PlanError("conditions: all_of needs at least two conditions")


Precondition: TypeAlias = (
    NoPrecondition
    | ConnectorStateIn
    | ConnectorStopped
    | ConnectorAbsent
    | GroupEmptyOrAbsent
    | ConnectorOffsetsUnchanged
    | GroupOffsetsUnchanged
    | OffsetsRecordsUnchanged
    | TopicEndOffsetEquals
    | WorkerGroupHasNoMembers
    | GroupOffsetsInRange
    | SparkCheckpointAt
    | AllOf
)
PRECONDITION_TYPES: Mapping[str, type[Precondition]] = MappingProxyType(
    {
        p.KIND: p
        for p in (
            NoPrecondition,
            ConnectorStateIn,
            ConnectorStopped,
            ConnectorAbsent,
            GroupEmptyOrAbsent,
            ConnectorOffsetsUnchanged,
            GroupOffsetsUnchanged,
            OffsetsRecordsUnchanged,
            TopicEndOffsetEquals,
            WorkerGroupHasNoMembers,
            GroupOffsetsInRange,
            SparkCheckpointAt,
            AllOf,
        )
    }
)


def iter_preconditions(p: Precondition) -> Iterator[Precondition]:
    """The leaf conditions of ``p`` (``all_of`` flattened), for checkers that handle one kind at a time."""
    if isinstance(p, AllOf):
        for c in p.conditions:
            yield from iter_preconditions(c)
    else:
        yield p
