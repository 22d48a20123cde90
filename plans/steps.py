"""Steps: the kinds the product can execute, and the one ``Step`` class that ties a kind to its target,
payload, precondition and observed state.

``Step`` validates the combination on construction (the payload class and target type a kind needs, a
reason for every irreversible step, preconditions naming the step's own connector) so an executor never
meets a step it cannot interpret. ``before``/``after`` are redacted as they are stored.

Step kinds, their target, payload, and what rollback does (the executors implement it; listed here because
the plan must say up front what can be undone):

==========================  =================  ==========================================================
kind                        target             rollback
==========================  =================  ==========================================================
connector_stop              connector          restore the observed state (resume / pause)
connector_pause             connector          restore the observed state
connector_resume            connector          restore the observed state (stop / pause)
connector_restart           connector          nothing to undo
connector_delete            connector          re-create from ``ConnectorDelete.config`` (+ secrets)
connector_create            connector          delete the connector
connect_offsets_delete      connector          PATCH the observed ``before`` offsets back
connect_offsets_patch       connector          PATCH the observed ``before`` offsets back
connect_offsets_tombstone   topic_partitions   re-produce each original value, same key, same partition
offset_syncs_backup         topic_partitions   nothing to undo (writes only a local file)
offset_syncs_truncate       topic_partitions   irreversible: Kafka cannot un-delete; the backup can be
                                               re-produced, but at new offsets
group_offsets_write         group              write each row's ``before_offset`` back (delete if None)
group_offsets_verify        group              nothing to undo (read only)
wait_for_catch_up           connector          nothing to undo (read only)
group_offsets_translate     connector          nothing to undo (reads; the group writes after it use its
                                               answers, which the journal keeps)
spark_query_write           spark_query        delete the JSON file or checkpoint copy it wrote
==========================  =================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from mm2ctl.core.errors import PlanError
from mm2ctl.core.security.redaction import redact_json
from mm2ctl.plans.fingerprint import FrozenJSON, freeze_json
from mm2ctl.plans.payloads import (
    ConnectOffsetsDelete,
    ConnectOffsetsPatch,
    ConnectOffsetsTombstone,
    ConnectorCreate,
    ConnectorDelete,
    ConnectorPause,
    ConnectorRestart,
    ConnectorResume,
    ConnectorStop,
    GroupOffsetsVerify,
    GroupOffsetsWrite,
    OffsetSyncsBackup,
    OffsetSyncsTruncate,
    Payload,
    SparkQueryWrite,
    TranslateAfterCatchUp,
    WaitForCatchUp,
)
from mm2ctl.plans.preconditions import PRECONDITION_TYPES, Precondition, iter_preconditions
from mm2ctl.plans.targets import ConnectorTarget, GroupTarget, SparkQueryTarget, Target, TopicPartitionsTarget
from mm2ctl.plans.validation import check_bool, check_int, check_str, set_field


class StepKind(StrEnum):
    """Every step the product can execute; the executors' dispatch union (see ``PAYLOAD_TYPES``)."""

    CONNECTOR_STOP = "connector_stop"
    CONNECTOR_PAUSE = "connector_pause"
    CONNECTOR_RESUME = "connector_resume"
    CONNECTOR_RESTART = "connector_restart"
    CONNECTOR_DELETE = "connector_delete"
    CONNECTOR_CREATE = "connector_create"
    CONNECT_OFFSETS_DELETE = "connect_offsets_delete"
    CONNECT_OFFSETS_PATCH = "connect_offsets_patch"
    CONNECT_OFFSETS_TOMBSTONE = "connect_offsets_tombstone"
    OFFSET_SYNCS_BACKUP = "offset_syncs_backup"
    OFFSET_SYNCS_TRUNCATE = "offset_syncs_truncate"
    GROUP_OFFSETS_WRITE = "group_offsets_write"
    GROUP_OFFSETS_VERIFY = "group_offsets_verify"
    WAIT_FOR_CATCH_UP = "wait_for_catch_up"
    GROUP_OFFSETS_TRANSLATE = "group_offsets_translate"
    SPARK_QUERY_WRITE = "spark_query_write"


#: The one payload class of each step kind.
PAYLOAD_TYPES: Mapping[StepKind, type[Payload]] = MappingProxyType(
    {
        StepKind.CONNECTOR_STOP: ConnectorStop,
        StepKind.CONNECTOR_PAUSE: ConnectorPause,
        StepKind.CONNECTOR_RESUME: ConnectorResume,
        StepKind.CONNECTOR_RESTART: ConnectorRestart,
        StepKind.CONNECTOR_DELETE: ConnectorDelete,
        StepKind.CONNECTOR_CREATE: ConnectorCreate,
        StepKind.CONNECT_OFFSETS_DELETE: ConnectOffsetsDelete,
        StepKind.CONNECT_OFFSETS_PATCH: ConnectOffsetsPatch,
        StepKind.CONNECT_OFFSETS_TOMBSTONE: ConnectOffsetsTombstone,
        StepKind.OFFSET_SYNCS_BACKUP: OffsetSyncsBackup,
        StepKind.OFFSET_SYNCS_TRUNCATE: OffsetSyncsTruncate,
        StepKind.GROUP_OFFSETS_WRITE: GroupOffsetsWrite,
        StepKind.GROUP_OFFSETS_VERIFY: GroupOffsetsVerify,
        StepKind.WAIT_FOR_CATCH_UP: WaitForCatchUp,
        StepKind.GROUP_OFFSETS_TRANSLATE: TranslateAfterCatchUp,
        StepKind.SPARK_QUERY_WRITE: SparkQueryWrite,
    }
)

#: The target type each step kind acts on.
TARGET_OF_KIND: Mapping[StepKind, type[Target]] = MappingProxyType(
    {
        **{
            k: ConnectorTarget
            for k in (
                StepKind.CONNECTOR_STOP,
                StepKind.CONNECTOR_PAUSE,
                StepKind.CONNECTOR_RESUME,
                StepKind.CONNECTOR_RESTART,
                StepKind.CONNECTOR_DELETE,
                StepKind.CONNECTOR_CREATE,
                StepKind.CONNECT_OFFSETS_DELETE,
                StepKind.CONNECT_OFFSETS_PATCH,
                StepKind.WAIT_FOR_CATCH_UP,
                StepKind.GROUP_OFFSETS_TRANSLATE,
            )
        },
        StepKind.CONNECT_OFFSETS_TOMBSTONE: TopicPartitionsTarget,
        StepKind.OFFSET_SYNCS_BACKUP: TopicPartitionsTarget,
        StepKind.OFFSET_SYNCS_TRUNCATE: TopicPartitionsTarget,
        StepKind.GROUP_OFFSETS_WRITE: GroupTarget,
        StepKind.GROUP_OFFSETS_VERIFY: GroupTarget,
        StepKind.SPARK_QUERY_WRITE: SparkQueryTarget,
    }
)

#: Kinds that write nothing to any cluster; ``--dry-run`` still stops before the first step NOT in here.
READ_ONLY_KINDS: frozenset[StepKind] = frozenset(
    {
        StepKind.OFFSET_SYNCS_BACKUP,
        StepKind.GROUP_OFFSETS_VERIFY,
        StepKind.WAIT_FOR_CATCH_UP,
        StepKind.GROUP_OFFSETS_TRANSLATE,
    }
)
#: Kinds rollback can never undo, whatever the planner says.
ALWAYS_IRREVERSIBLE_KINDS: frozenset[StepKind] = frozenset({StepKind.OFFSET_SYNCS_TRUNCATE})


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One change (or check) with everything needed to run it, verify it and undo it.

    ``before`` is what the planner *observed* (redacted); rollback restores it. ``after`` is the desired
    value. Both are free-form JSON so the planner can record exactly what the API returned; executors use
    the typed ``payload`` to act and ``precondition`` to guard.
    """

    index: int
    kind: StepKind
    target: Target
    payload: Payload
    precondition: Precondition
    before: FrozenJSON
    after: FrozenJSON
    reversible: bool
    irreversible_reason: str | None = None
    description: str = ""

    def __post_init__(self) -> None:
        check_int(self.index, "index")
        try:
            kind = StepKind(self.kind)
        except ValueError as exc:
            known = ", ".join(k.value for k in StepKind)
            raise PlanError(f"kind: unknown step kind {self.kind!r} (known: {known})") from exc
        set_field(self, "kind", kind)
        want_payload = PAYLOAD_TYPES[kind]
        if type(self.payload) is not want_payload:
            raise PlanError(
                f"payload: a {kind.value} step needs a {want_payload.__name__}, got {type(self.payload).__name__}"
            )
        want_target = TARGET_OF_KIND[kind]
        if type(self.target) is not want_target:
            raise PlanError(
                f"target: a {kind.value} step acts on a {want_target.KIND} target, "
                f"got {getattr(self.target, 'KIND', type(self.target).__name__)}"
            )
        if type(self.precondition) not in PRECONDITION_TYPES.values():
            raise PlanError(f"precondition: {type(self.precondition).__name__} is not a precondition")
        check_bool(self.reversible, "reversible")
        if self.reversible and self.irreversible_reason is not None:
            raise PlanError("irreversible_reason: must be null for a reversible step")
        if not self.reversible and (
            not isinstance(self.irreversible_reason, str) or not self.irreversible_reason.strip()
        ):
            raise PlanError("irreversible_reason: an irreversible step must say why it cannot be undone")
        if self.reversible and kind in ALWAYS_IRREVERSIBLE_KINDS:
            raise PlanError(f"reversible: a {kind.value} step can never be undone")
        check_str(self.description, "description", empty_ok=True)
        set_field(self, "before", freeze_json(redact_json(self.before), where="before"))
        set_field(self, "after", freeze_json(redact_json(self.after), where="after"))
        self._check_consistency()

    def _check_consistency(self) -> None:
        t, p = self.target, self.payload
        if isinstance(t, ConnectorTarget):
            for c in iter_preconditions(self.precondition):
                named = getattr(c, "connector", None)
                if named is not None and named != t.connector:
                    raise PlanError(f"precondition: names connector {named!r} but the step targets {t.connector!r}")
        if isinstance(p, ConnectOffsetsTombstone):
            assert isinstance(t, TopicPartitionsTarget)
            parts = tuple(sorted({r.partition for r in p.records}))
            if t.partitions != parts:
                raise PlanError(f"target.partitions: must be the records' partitions {list(parts)}")
        if isinstance(p, (OffsetSyncsBackup, OffsetSyncsTruncate)):
            assert isinstance(t, TopicPartitionsTarget)
            if t.partitions != (0,):
                raise PlanError("target.partitions: offset-syncs live in partition 0 only; must be [0]")

    @property
    def writes(self) -> bool:
        """Does this step change a cluster? (``--dry-run`` stops before the first one that does.)"""
        return self.kind not in READ_ONLY_KINDS
