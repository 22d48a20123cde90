"""What each step kind does: one frozen payload class per kind, the typed data its executor acts on.

``mm2ctl.plans.steps.PAYLOAD_TYPES`` maps each step kind to its class, and a step refuses a payload of another
class, so an executor can rely on the type it dispatches on. Payloads hold only what the write needs and
what rollback needs to undo it; what the planner saw goes in the step's ``before``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TypeAlias

from mm2ctl.core.errors import PlanError

# A row's method is a payload field; the planners, apply and the report import it from here too.
from mm2ctl.core.translation.methods import EXACT_METHODS as EXACT_METHODS
from mm2ctl.core.translation.methods import TranslationMethod as TranslationMethod
from mm2ctl.plans.connector_config import ConnectorConfig, SecretSource
from mm2ctl.plans.fingerprint import thaw_json
from mm2ctl.plans.offsets import GroupOffset, PlannedConnectorOffset, TombstoneRecord
from mm2ctl.plans.validation import (
    check_bool,
    check_file_name,
    check_int,
    check_str,
    check_unique,
    freeze_tuple,
    set_field,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorStop:
    """``PUT /connectors/{c}/stop`` (Connect 3.5+): tasks shut down, offsets become writable."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorPause:
    """``PUT /connectors/{c}/pause``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorResume:
    """``PUT /connectors/{c}/resume`` (also resumes a STOPPED connector)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorRestart:
    """``POST /connectors/{c}/restart?includeTasks=..&onlyFailed=..``."""

    include_tasks: bool = True
    only_failed: bool = False

    def __post_init__(self) -> None:
        check_bool(self.include_tasks, "include_tasks")
        check_bool(self.only_failed, "only_failed")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorDelete:
    """``DELETE /connectors/{c}``; ``config`` is what rollback re-creates (secrets re-obtained, see
    ``SecretSource``)."""

    config: ConnectorConfig


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorCreate:
    """``PUT /connectors/{c}/config`` for a connector that does not exist yet."""

    config: ConnectorConfig
    secrets_from: SecretSource = SecretSource.LIVE_CONNECTOR

    def __post_init__(self) -> None:
        set_field(self, "secrets_from", SecretSource(self.secrets_from))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOffsetsDelete:
    """``DELETE /connectors/{c}/offsets`` (Connect 3.6+, connector STOPPED). ``before`` keeps the offsets."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOffsetsPatch:
    """``PATCH /connectors/{c}/offsets`` with an explicit partition -> offset list (offset null = reset)."""

    offsets: tuple[PlannedConnectorOffset, ...]

    def __post_init__(self) -> None:
        freeze_tuple(self, "offsets")
        if not self.offsets:
            raise PlanError("offsets: must list at least one partition")
        check_unique((json.dumps(thaw_json(o.partition), sort_keys=True) for o in self.offsets), "offsets")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOffsetsTombstone:
    """Produce null values for ``records`` to the Connect offsets topic named by the step's target.

    For Connect < 3.6 and dedicated MM2. Each key must be the stored key's exact bytes and go to the
    partition it was read from (librdkafka's partitioner differs from Java's), so both are recorded.
    """

    connector: str
    records: tuple[TombstoneRecord, ...]

    def __post_init__(self) -> None:
        check_str(self.connector, "connector")
        freeze_tuple(self, "records")
        if not self.records:
            raise PlanError("records: must list at least one record")
        check_unique(((r.partition, r.key_b64) for r in self.records), "records")
        for i, r in enumerate(self.records):
            try:
                key = json.loads(r.key.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise PlanError(f"records[{i}].key_b64: not a Connect offsets key (JSON)") from exc
            if not (isinstance(key, list) and len(key) == 2 and key[0] == self.connector):
                raise PlanError(
                    f"records[{i}].key_b64: key is not [{self.connector!r}, {{...}}]; "
                    "it would not tombstone this connector's offsets"
                )


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetSyncsBackup:
    """Copy records ``[0, up_to_offset)`` of the offset-syncs partition to ``backup_file`` before truncating.

    ``backup_file`` is a bare file name, written beside the apply's journal, so the journal directory holds
    everything a rollback or an investigation needs.
    """

    up_to_offset: int
    backup_file: str

    def __post_init__(self) -> None:
        check_int(self.up_to_offset, "up_to_offset")
        check_file_name(self.backup_file, "backup_file")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetSyncsTruncate:
    """``deleteRecords(before_offset)`` on the offset-syncs partition: the end offset seen at plan time.

    Deleting only up to what the plan saw never loses a sync MM2 wrote after planning; the
    ``topic_end_offset_equals`` precondition refuses if one was written anyway.
    """

    before_offset: int
    backup_file: str

    def __post_init__(self) -> None:
        check_int(self.before_offset, "before_offset")
        check_file_name(self.backup_file, "backup_file")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetRow:
    """One partition of a group offset write: the new ``offset``, the observed ``before_offset``, and why."""

    topic: str
    partition: int
    offset: int
    before_offset: int | None
    method: TranslationMethod
    source_offset: int | None = None

    def __post_init__(self) -> None:
        check_str(self.topic, "topic")
        check_int(self.partition, "partition")
        check_int(self.offset, "offset")
        if self.before_offset is not None:
            check_int(self.before_offset, "before_offset")
        if self.source_offset is not None:
            check_int(self.source_offset, "source_offset")
        try:
            set_field(self, "method", TranslationMethod(self.method))
        except ValueError as exc:
            raise PlanError(f"method: {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsWrite:
    """Commit ``rows`` for the target group (the group must be empty: Kafka rejects it otherwise)."""

    rows: tuple[GroupOffsetRow, ...]

    def __post_init__(self) -> None:
        freeze_tuple(self, "rows")
        if not self.rows:
            raise PlanError("rows: must list at least one partition")
        check_unique(((r.topic, r.partition) for r in self.rows), "rows")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsVerify:
    """Read the group's offsets back and fail the apply unless they equal ``expected``.

    ``settle_seconds`` > 0: MirrorMaker 2 keeps syncing this group's offsets during the apply. Its sync
    writes offsets it computed from a read of the target made up to one sync interval earlier, so it can
    put an offset it read before ours back once, below ours. The read-back then watches the group until
    ``settle_seconds`` have passed since the group was last written, writes ``expected`` again over any
    offset found below it while the group has no members, and passes only when that window ends with the
    offsets as planned. 0: one read, which must match.
    """

    expected: tuple[GroupOffset, ...]
    settle_seconds: float = 0.0

    def __post_init__(self) -> None:
        freeze_tuple(self, "expected")
        if not self.expected:
            raise PlanError("expected: must list at least one partition")
        check_unique(((o.topic, o.partition) for o in self.expected), "expected")
        if isinstance(self.settle_seconds, bool) or not isinstance(self.settle_seconds, (int, float)):
            raise PlanError("settle_seconds: expected a number")
        if self.settle_seconds < 0:
            raise PlanError("settle_seconds: must be >= 0")
        set_field(self, "settle_seconds", float(self.settle_seconds))


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUpTarget:
    """A source partition MM2 must have copied to its end: its last record when the plan was made
    (``upstream_offset``, -1 for a partition that held none). Apply reads the source's last record again
    when it starts waiting, and waits for whichever is later."""

    topic: str
    partition: int
    upstream_offset: int

    def __post_init__(self) -> None:
        check_str(self.topic, "topic")
        check_int(self.partition, "partition")
        check_int(self.upstream_offset, "upstream_offset", minimum=-1)


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitForCatchUp:
    """Poll the MirrorSourceConnector's committed offsets until every target is reached, or time out."""

    source_cluster: str
    targets: tuple[CatchUpTarget, ...]
    timeout_seconds: float

    def __post_init__(self) -> None:
        check_str(self.source_cluster, "source_cluster")
        freeze_tuple(self, "targets")
        if not self.targets:
            raise PlanError("targets: must list at least one partition")
        check_unique(((t.topic, t.partition) for t in self.targets), "targets")
        if isinstance(self.timeout_seconds, bool) or not isinstance(self.timeout_seconds, (int, float)):
            raise PlanError("timeout_seconds: expected a number")
        if not self.timeout_seconds > 0:
            raise PlanError("timeout_seconds: must be > 0")
        set_field(self, "timeout_seconds", float(self.timeout_seconds))


@dataclass(frozen=True, slots=True, kw_only=True)
class DeferredRow:
    """A group partition MM2 had not copied up to when the plan was made: the group's committed source
    offset, and MM2's next offset to copy then (None: not known)."""

    group: str
    source_topic: str
    target_topic: str
    partition: int
    source_offset: int
    mm2_next_offset: int | None = None

    def __post_init__(self) -> None:
        check_str(self.group, "group")
        check_str(self.source_topic, "source_topic")
        check_str(self.target_topic, "target_topic")
        check_int(self.partition, "partition")
        check_int(self.source_offset, "source_offset")
        if self.mm2_next_offset is not None:
            check_int(self.mm2_next_offset, "mm2_next_offset")


@dataclass(frozen=True, slots=True, kw_only=True)
class TranslateAfterCatchUp:
    """Translate ``rows`` once MM2 has copied them and is stopped, and prove them by content; the group
    writes after this step write what it found (``plans.deferred``). ``pair`` names the flow whose offset
    syncs translate; ``allow_rewind`` is the plan's: without it a translation below the target group's
    current offset fails the step, before any write."""

    pair: str
    source_cluster: str
    target_cluster: str
    rows: tuple[DeferredRow, ...]
    allow_rewind: bool = False
    #: ``Fallback``'s value: what translates a row no offset sync lies at or below.
    fallback: str = "timestamp"

    def __post_init__(self) -> None:
        check_str(self.pair, "pair")
        check_str(self.source_cluster, "source_cluster")
        check_str(self.target_cluster, "target_cluster")
        freeze_tuple(self, "rows")
        if not self.rows:
            raise PlanError("rows: must list at least one partition")
        check_unique(((r.group, r.target_topic, r.partition) for r in self.rows), "rows")
        check_bool(self.allow_rewind, "allow_rewind")
        if self.fallback not in ("timestamp", "none"):
            raise PlanError(f"fallback: expected timestamp or none, got {self.fallback!r}")


#: The two forms a Spark query's translated position takes (``SparkQueryWrite.form``).
SPARK_FORMS = ("json", "checkpoint")


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkOffsetRow:
    """One partition of a query's Kafka source: where the query resumes on the source (the next record to
    read), and the translated offset on the target."""

    source_index: int
    source_topic: str
    target_topic: str
    partition: int
    source_offset: int
    target_offset: int
    method: TranslationMethod

    def __post_init__(self) -> None:
        check_int(self.source_index, "source_index")
        check_str(self.source_topic, "source_topic")
        check_str(self.target_topic, "target_topic")
        check_int(self.partition, "partition")
        check_int(self.source_offset, "source_offset")
        check_int(self.target_offset, "target_offset")
        set_field(self, "method", TranslationMethod(self.method))


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkNewPartition:
    """A partition of a translated topic on the target that the checkpoint does not name: the JSON form starts
    it at its earliest offset (``-2``), as Spark starts a partition it discovers, since Spark wants an offset for
    every partition of a topic it subscribes to."""

    source_index: int
    target_topic: str
    partition: int

    def __post_init__(self) -> None:
        check_int(self.source_index, "source_index")
        check_str(self.target_topic, "target_topic")
        check_int(self.partition, "partition")


@dataclass(frozen=True, slots=True, kw_only=True)
class SparkQueryWrite:
    """Write a query's translated position to ``output``, never over anything: ``json``, the ``startingOffsets``
    of a new query on the target (every partition of each translated topic); ``checkpoint``, a copy of the
    checkpoint whose last committed batch (``batch_id``) resumes at the translated offsets. Rollback deletes
    ``output``; the original checkpoint is never written."""

    form: str
    output: str
    batch_id: int
    rows: tuple[SparkOffsetRow, ...]
    new_partitions: tuple[SparkNewPartition, ...] = ()

    def __post_init__(self) -> None:
        if self.form not in SPARK_FORMS:
            raise PlanError(f"form: expected one of {', '.join(SPARK_FORMS)}, got {self.form!r}")
        check_str(self.output, "output")
        check_int(self.batch_id, "batch_id")
        freeze_tuple(self, "rows")
        if not self.rows:
            raise PlanError("rows: must list at least one partition")
        check_unique(((r.source_index, r.source_topic, r.partition) for r in self.rows), "rows")
        freeze_tuple(self, "new_partitions")
        check_unique(
            [
                *((r.source_index, r.target_topic, r.partition) for r in self.rows),
                *((n.source_index, n.target_topic, n.partition) for n in self.new_partitions),
            ],
            "new_partitions",
        )
        if self.new_partitions and self.form != "json":
            raise PlanError("new_partitions: only the json form starts partitions the checkpoint does not name")


Payload: TypeAlias = (
    ConnectorStop
    | ConnectorPause
    | ConnectorResume
    | ConnectorRestart
    | ConnectorDelete
    | ConnectorCreate
    | ConnectOffsetsDelete
    | ConnectOffsetsPatch
    | ConnectOffsetsTombstone
    | OffsetSyncsBackup
    | OffsetSyncsTruncate
    | GroupOffsetsWrite
    | GroupOffsetsVerify
    | WaitForCatchUp
    | TranslateAfterCatchUp
    | SparkQueryWrite
)
