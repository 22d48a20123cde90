"""Plans: what mm2ctl will change, as reviewable data, and the rules that decide it.

A plan (:class:`Plan`) is a frozen, versioned document made of steps; each step has a kind, a target, a typed
payload, a precondition and the state it observed (``mm2ctl.plans.document`` explains the shape). This
package owns that model, its YAML/JSON form (``serialize``), the fingerprints apply compares against live
state (``fingerprint``), the read-only view of live state (``live_state``) and the planners that turn that
state into plans (``mm2ctl.plans.planners``); the translation rule they apply is ``mm2ctl.core.translation``.
It never writes to a cluster: ``mm2ctl.remediate`` executes plans.

Exported here: the plan model, its serialization, and the fingerprint checks. Code inside mm2ctl imports
each name from the module that defines it; the live state and the planners are imported from their own
modules.
"""

from __future__ import annotations

from mm2ctl.plans.connect_target import ConnectTarget
from mm2ctl.plans.connector_config import (
    ConnectorConfig,
    SecretSource,
    unredact_config,
)
from mm2ctl.plans.document import (
    SCHEMA_VERSION,
    Plan,
    PlanKind,
    new_plan,
    tool_version,
)
from mm2ctl.plans.fingerprint import (
    Fingerprint,
    FrozenJSON,
    JSONable,
    check_not_foreign,
    check_plan_against_live,
    fingerprint_of,
)
from mm2ctl.plans.offsets import (
    GroupOffset,
    PlannedConnectorOffset,
    TombstoneRecord,
)
from mm2ctl.plans.payloads import (
    CatchUpTarget,
    ConnectOffsetsDelete,
    ConnectOffsetsPatch,
    ConnectOffsetsTombstone,
    ConnectorCreate,
    ConnectorDelete,
    ConnectorPause,
    ConnectorRestart,
    ConnectorResume,
    ConnectorStop,
    DeferredRow,
    GroupOffsetRow,
    GroupOffsetsVerify,
    GroupOffsetsWrite,
    OffsetSyncsBackup,
    OffsetSyncsTruncate,
    Payload,
    TranslateAfterCatchUp,
    TranslationMethod,
    WaitForCatchUp,
)
from mm2ctl.plans.preconditions import (
    PRECONDITION_TYPES,
    AllOf,
    ConnectorAbsent,
    ConnectorOffsetsUnchanged,
    ConnectorStateIn,
    ConnectorStopped,
    GroupEmptyOrAbsent,
    GroupOffsetsInRange,
    GroupOffsetsUnchanged,
    NoPrecondition,
    OffsetsRecordsUnchanged,
    Precondition,
    TopicEndOffsetEquals,
    WorkerGroupHasNoMembers,
    iter_preconditions,
)
from mm2ctl.plans.serialize import (
    dump_plan,
    dump_plan_json,
    load_plan,
    model_to_json,
    plan_document_digest,
    plan_from_json,
    plan_to_json,
    write_plan_file,
)
from mm2ctl.plans.steps import (
    ALWAYS_IRREVERSIBLE_KINDS,
    PAYLOAD_TYPES,
    READ_ONLY_KINDS,
    TARGET_OF_KIND,
    Step,
    StepKind,
)
from mm2ctl.plans.targets import (
    TARGET_TYPES,
    ConnectorTarget,
    GroupTarget,
    Target,
    TopicPartitionsTarget,
)

__all__ = [
    "ALWAYS_IRREVERSIBLE_KINDS",
    "PAYLOAD_TYPES",
    "PRECONDITION_TYPES",
    "READ_ONLY_KINDS",
    "SCHEMA_VERSION",
    "TARGET_OF_KIND",
    "TARGET_TYPES",
    "AllOf",
    "CatchUpTarget",
    "ConnectOffsetsDelete",
    "ConnectOffsetsPatch",
    "ConnectOffsetsTombstone",
    "ConnectTarget",
    "ConnectorAbsent",
    "ConnectorConfig",
    "ConnectorCreate",
    "ConnectorDelete",
    "ConnectorOffsetsUnchanged",
    "ConnectorPause",
    "ConnectorRestart",
    "ConnectorResume",
    "ConnectorStateIn",
    "ConnectorStop",
    "ConnectorStopped",
    "ConnectorTarget",
    "DeferredRow",
    "Fingerprint",
    "FrozenJSON",
    "GroupEmptyOrAbsent",
    "GroupOffset",
    "GroupOffsetRow",
    "GroupOffsetsInRange",
    "GroupOffsetsUnchanged",
    "GroupOffsetsVerify",
    "GroupOffsetsWrite",
    "GroupTarget",
    "JSONable",
    "NoPrecondition",
    "OffsetSyncsBackup",
    "OffsetSyncsTruncate",
    "OffsetsRecordsUnchanged",
    "Payload",
    "Plan",
    "PlanKind",
    "PlannedConnectorOffset",
    "Precondition",
    "SecretSource",
    "Step",
    "StepKind",
    "Target",
    "TombstoneRecord",
    "TopicEndOffsetEquals",
    "TopicPartitionsTarget",
    "TranslateAfterCatchUp",
    "TranslationMethod",
    "WaitForCatchUp",
    "WorkerGroupHasNoMembers",
    "check_not_foreign",
    "check_plan_against_live",
    "dump_plan",
    "dump_plan_json",
    "fingerprint_of",
    "iter_preconditions",
    "load_plan",
    "model_to_json",
    "new_plan",
    "plan_document_digest",
    "plan_from_json",
    "plan_to_json",
    "tool_version",
    "unredact_config",
    "write_plan_file",
]
