"""Step executors, one per step kind; ``EXECUTORS`` is the dispatch table the engine uses."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from mm2ctl.plans.steps import StepKind
from mm2ctl.remediate.executors.after_catch_up import TranslateAfterCatchUpExecutor
from mm2ctl.remediate.executors.base import ExecContext, Executor, UndoContext
from mm2ctl.remediate.executors.connect_offsets import RestDelete, RestPatch, Tombstones
from mm2ctl.remediate.executors.group_offsets import VerifyGroupOffsets, WaitForCatchUpExecutor, WriteGroupOffsets
from mm2ctl.remediate.executors.lifecycle import Create, Delete, StateChange
from mm2ctl.remediate.executors.spark_query import WriteSparkQuery
from mm2ctl.remediate.executors.truncation import Backup, Truncate

EXECUTORS: Mapping[StepKind, Executor] = MappingProxyType(
    {
        StepKind.CONNECTOR_STOP: StateChange(),
        StepKind.CONNECTOR_PAUSE: StateChange(),
        StepKind.CONNECTOR_RESUME: StateChange(),
        StepKind.CONNECTOR_RESTART: StateChange(),
        StepKind.CONNECTOR_DELETE: Delete(),
        StepKind.CONNECTOR_CREATE: Create(),
        StepKind.CONNECT_OFFSETS_DELETE: RestDelete(),
        StepKind.CONNECT_OFFSETS_PATCH: RestPatch(),
        StepKind.CONNECT_OFFSETS_TOMBSTONE: Tombstones(),
        StepKind.OFFSET_SYNCS_BACKUP: Backup(),
        StepKind.OFFSET_SYNCS_TRUNCATE: Truncate(),
        StepKind.GROUP_OFFSETS_WRITE: WriteGroupOffsets(),
        StepKind.GROUP_OFFSETS_VERIFY: VerifyGroupOffsets(),
        StepKind.WAIT_FOR_CATCH_UP: WaitForCatchUpExecutor(),
        StepKind.GROUP_OFFSETS_TRANSLATE: TranslateAfterCatchUpExecutor(),
        StepKind.SPARK_QUERY_WRITE: WriteSparkQuery(),
    }
)

__all__ = ["EXECUTORS", "ExecContext", "Executor", "UndoContext"]
