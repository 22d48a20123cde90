"""The plan model: frozen, versioned data that a planner writes and an executor dispatches on.

Why it is shaped this way (terraform's ``internal/plans``, STYLE "The plan is data"):

- A plan is reviewed by a human and executed later, maybe on another machine. So it records what it was made
  for (``clusters``, ``connect``) and from (``fingerprint``), and every step says what it observed
  (``before``), what it wants (``after``), what must still hold when it runs (``precondition``), and whether
  rollback can undo it.
- A step's ``kind`` selects exactly one typed payload class (``PAYLOAD_TYPES``); executors dispatch on it,
  and a plan with an unknown kind never loads. ``description`` and ``notes`` are display only: nothing in
  ``remediate`` may branch on them.
- Everything is a frozen, slotted, keyword-only dataclass; JSON-ish values (``before``/``after``, Connect
  partition maps) are deep-frozen, so a plan cannot be mutated between review and apply.
- Construction validates (contiguous indices, target type per kind, truncation preceded by its backup, ...)
  and raises ``PlanError``; ``plans.serialize`` prefixes the message with the file and field path.

Secrets never enter a plan. Connector configs and any before/after value are passed through
``mm2ctl.core.redaction.redact_json`` or ``ConnectorConfig``, which replace secret-looking values with
``REDACTED``. How apply gets the
real values back is decided per ``connector_create`` step by ``SecretSource`` (see ``unredact_config``).

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
==========================  =================  ==========================================================
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from types import MappingProxyType
from typing import ClassVar, TypeAlias
from urllib.parse import urlsplit

from mm2ctl.core.errors import ConfigError, PlanError, PreconditionError
from mm2ctl.core.flows import Flow, is_cluster_alias, parse_flow
from mm2ctl.core.redaction import REDACTED, redact_json
from mm2ctl.plans.fingerprint import Fingerprint, FrozenJSON, freeze_json, thaw_json

#: The plan document format this code writes and reads. Bump on any incompatible change; a reader refuses
#: newer versions rather than guess (an old mm2ctl must never half-understand a plan and apply it).
SCHEMA_VERSION = 1

# ---------------------------------------------------------------------------------------------- secrets


class SecretSource(StrEnum):
    """Where apply gets the values a ``connector_create`` config had redacted.

    - ``live_connector``: read ``GET /connectors/{name}/config`` of the connector named in the step's
      ``ConnectorCreate.secrets_from`` at the start of apply, *before the first write* (i.e. before a
      preceding ``connector_delete`` removes it), and keep the values in memory only. A resumed apply whose
      connector is already gone cannot use this source and must be given ``operator`` secrets.
    - ``operator``: the operator supplies them at apply time (``mm2ctl apply --secrets-file``, a properties
      file keyed by config key).
    """

    LIVE_CONNECTOR = "live_connector"
    OPERATOR = "operator"


# ------------------------------------------------------------------------------------------- validation


def _fail(msg: str) -> PlanError:
    return PlanError(msg)


def _check_str(value: object, name: str, *, empty_ok: bool = False) -> None:
    if not isinstance(value, str):
        raise _fail(f"{name}: expected a string, got {type(value).__name__}")
    if not empty_ok and not value:
        raise _fail(f"{name}: must not be empty")


def _check_int(value: object, name: str, *, minimum: int | None = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(f"{name}: expected an integer, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise _fail(f"{name}: must be >= {minimum}, got {value}")


def _check_bool(value: object, name: str) -> None:
    if not isinstance(value, bool):
        raise _fail(f"{name}: expected true/false, got {type(value).__name__}")


def _check_b64(value: object, name: str) -> bytes:
    _check_str(value, name, empty_ok=True)
    assert isinstance(value, str)
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise _fail(f"{name}: not valid base64") from exc


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


def _freeze_tuple(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise _fail(f"{name}: expected a list, got {type(value).__name__}")
    _set(obj, name, tuple(value))


# --------------------------------------------------------------------------------------------- targets


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorTarget:
    """A connector on the plan's Connect worker."""

    KIND: ClassVar[str] = "connector"
    connector: str

    def __post_init__(self) -> None:
        _check_str(self.connector, "connector")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitionsTarget:
    """Partitions of a topic on one of the plan's clusters (by alias)."""

    KIND: ClassVar[str] = "topic_partitions"
    cluster: str
    topic: str
    partitions: tuple[int, ...]

    def __post_init__(self) -> None:
        _check_str(self.cluster, "cluster")
        _check_str(self.topic, "topic")
        _freeze_tuple(self, "partitions")
        if not self.partitions:
            raise _fail("partitions: must name at least one partition")
        for i, p in enumerate(self.partitions):
            _check_int(p, f"partitions[{i}]")
        if list(self.partitions) != sorted(set(self.partitions)):
            raise _fail("partitions: must be sorted and unique")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupTarget:
    """A consumer group on one of the plan's clusters (by alias)."""

    KIND: ClassVar[str] = "group"
    cluster: str
    group: str

    def __post_init__(self) -> None:
        _check_str(self.cluster, "cluster")
        _check_str(self.group, "group")


Target: TypeAlias = ConnectorTarget | TopicPartitionsTarget | GroupTarget
TARGET_TYPES: Mapping[str, type[Target]] = MappingProxyType(
    {t.KIND: t for t in (ConnectorTarget, TopicPartitionsTarget, GroupTarget)}
)

# ------------------------------------------------------------------------------------ shared value types


class ConnectorState(StrEnum):
    """Connector states as ``GET /connectors/{c}/status`` reports them."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    UNASSIGNED = "UNASSIGNED"
    RESTARTING = "RESTARTING"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorOffset:
    """One entry of KIP-875's ``{"offsets": [{"partition": {...}, "offset": {...}}]}``.

    ``offset`` None means "reset this partition" in a PATCH body.
    """

    partition: Mapping[str, FrozenJSON]
    offset: Mapping[str, FrozenJSON] | None

    def __post_init__(self) -> None:
        if not isinstance(self.partition, Mapping) or not self.partition:
            raise _fail("partition: expected a non-empty mapping")
        _set(self, "partition", freeze_json(self.partition, where="partition"))
        if self.offset is not None:
            if not isinstance(self.offset, Mapping):
                raise _fail("offset: expected a mapping or null")
            _set(self, "offset", freeze_json(self.offset, where="offset"))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffset:
    """A committed offset of a group for one partition; None means "no committed offset"."""

    topic: str
    partition: int
    offset: int | None

    def __post_init__(self) -> None:
        _check_str(self.topic, "topic")
        _check_int(self.partition, "partition")
        if self.offset is not None:
            _check_int(self.offset, "offset")


def _check_unique(keys: Iterable[object], name: str) -> None:
    seen: set[object] = set()
    for k in keys:
        if k in seen:
            raise _fail(f"{name}: duplicate entry {k!r}")
        seen.add(k)


# ---------------------------------------------------------------------------------------- preconditions


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
        _check_str(self.connector, "connector")
        if isinstance(self.states, str) or not isinstance(self.states, Iterable):
            raise _fail("states: expected a list of connector states")
        try:
            states = frozenset(ConnectorState(s) for s in self.states)
        except ValueError as exc:
            raise _fail(f"states: {exc}") from exc
        if not states:
            raise _fail("states: must name at least one state")
        _set(self, "states", states)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorStopped:
    """The connector exists and is STOPPED (KIP-875 offset writes require it)."""

    KIND: ClassVar[str] = "connector_stopped"
    connector: str

    def __post_init__(self) -> None:
        _check_str(self.connector, "connector")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorAbsent:
    """No connector of this name exists (before a create)."""

    KIND: ClassVar[str] = "connector_absent"
    connector: str

    def __post_init__(self) -> None:
        _check_str(self.connector, "connector")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupEmptyOrAbsent:
    """The group has no active members (Kafka refuses offset commits for a group with members)."""

    KIND: ClassVar[str] = "group_empty_or_absent"
    cluster: str
    group: str

    def __post_init__(self) -> None:
        _check_str(self.cluster, "cluster")
        _check_str(self.group, "group")


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorOffsetsUnchanged:
    """``GET /connectors/{c}/offsets`` still returns exactly ``expected`` (order-insensitive)."""

    KIND: ClassVar[str] = "connector_offsets_unchanged"
    connector: str
    expected: tuple[ConnectorOffset, ...]

    def __post_init__(self) -> None:
        _check_str(self.connector, "connector")
        _freeze_tuple(self, "expected")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsUnchanged:
    """The group's committed offsets for these partitions are still ``expected`` (None = none committed)."""

    KIND: ClassVar[str] = "group_offsets_unchanged"
    cluster: str
    group: str
    expected: tuple[GroupOffset, ...]

    def __post_init__(self) -> None:
        _check_str(self.cluster, "cluster")
        _check_str(self.group, "group")
        _freeze_tuple(self, "expected")
        _check_unique(((o.topic, o.partition) for o in self.expected), "expected")


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
        _check_str(self.cluster, "cluster")
        _check_str(self.topic, "topic")
        _freeze_tuple(self, "records")


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicEndOffsetEquals:
    """The partition's end offset is still what the plan saw (no sync was written since)."""

    KIND: ClassVar[str] = "topic_end_offset_equals"
    cluster: str
    topic: str
    partition: int
    end_offset: int

    def __post_init__(self) -> None:
        _check_str(self.cluster, "cluster")
        _check_str(self.topic, "topic")
        _check_int(self.partition, "partition")
        _check_int(self.end_offset, "end_offset")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerGroupHasNoMembers:
    """A Connect/MM2 worker group has no members: nothing can write offsets or syncs behind our back.

    Dedicated MM2 (no REST API) is stopped by the operator; this is how apply knows it really is.
    """

    KIND: ClassVar[str] = "worker_group_has_no_members"
    cluster: str
    group: str

    def __post_init__(self) -> None:
        _check_str(self.cluster, "cluster")
        _check_str(self.group, "group")


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
        _check_str(self.cluster, "cluster")
        _freeze_tuple(self, "offsets")
        if not self.offsets:
            raise _fail("offsets: must list at least one partition")
        for o in self.offsets:
            if o.offset is None:
                raise _fail("offsets: every offset must be a number")
        _check_unique(((o.topic, o.partition) for o in self.offsets), "offsets")


@dataclass(frozen=True, slots=True, kw_only=True)
class AllOf:
    """Every one of ``conditions`` holds (e.g. connector stopped AND its offsets unchanged)."""

    KIND: ClassVar[str] = "all_of"
    conditions: tuple[Precondition, ...]

    def __post_init__(self) -> None:
        _freeze_tuple(self, "conditions")
        if len(self.conditions) < 2:
            raise _fail("conditions: all_of needs at least two conditions")


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


# ------------------------------------------------------------------------------------------- payloads


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectorConfig:
    """A connector config as saved in a plan: string values, secrets replaced by ``REDACTED``.

    Redaction happens here, on construction, so no code path can put a secret into a plan by forgetting to
    call it. ``redacted_keys`` lists what apply must fill back in (``unredact_config``); a value that only
    references a secret through a Connect config provider (``${file:...}``) is kept as it is.
    """

    values: Mapping[str, str]
    redacted_keys: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.values, Mapping):
            raise _fail("values: expected a mapping of config key to string")
        for k, v in self.values.items():
            _check_str(k, "values key")
            if not isinstance(v, str):
                raise _fail(f"values.{k}: expected a string (Connect configs are), got {type(v).__name__}")
        clean: dict[str, str] = redact_json(dict(self.values))
        redacted = set(self.redacted_keys) | {k for k, v in clean.items() if v == REDACTED}
        unknown = redacted - set(clean)
        if unknown:
            raise _fail(f"redacted_keys: {sorted(unknown)} are not keys of the config")
        for k in redacted:
            clean[k] = REDACTED
        _set(self, "values", MappingProxyType(dict(sorted(clean.items()))))
        _set(self, "redacted_keys", tuple(sorted(redacted)))


def unredact_config(config: ConnectorConfig, secrets: Mapping[str, str]) -> dict[str, str]:
    """The config to send to Connect: ``config`` with each redacted key filled from ``secrets``.

    ``secrets`` comes from the step's ``SecretSource`` (the live connector read before the first write, or
    the operator). A missing value raises ``PreconditionError`` naming the keys (never values): posting the
    marker would create a connector that fails to authenticate.
    """
    missing = [k for k in config.redacted_keys if k not in secrets or secrets[k] == REDACTED]
    if missing:
        raise PreconditionError(
            f"secret config values are not available for keys {missing}; supply them (--secrets-file) "
            "or read them from the live connector before it is deleted"
        )
    out = dict(config.values)
    for k in config.redacted_keys:
        out[k] = secrets[k]
    return out


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
        _check_bool(self.include_tasks, "include_tasks")
        _check_bool(self.only_failed, "only_failed")


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
        _set(self, "secrets_from", SecretSource(self.secrets_from))


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOffsetsDelete:
    """``DELETE /connectors/{c}/offsets`` (Connect 3.6+, connector STOPPED). ``before`` keeps the offsets."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOffsetsPatch:
    """``PATCH /connectors/{c}/offsets`` with an explicit partition -> offset list (offset null = reset)."""

    offsets: tuple[ConnectorOffset, ...]

    def __post_init__(self) -> None:
        _freeze_tuple(self, "offsets")
        if not self.offsets:
            raise _fail("offsets: must list at least one partition")
        _check_unique((json.dumps(thaw_json(o.partition), sort_keys=True) for o in self.offsets), "offsets")


@dataclass(frozen=True, slots=True, kw_only=True)
class TombstoneRecord:
    """One ``connect-offsets`` key to tombstone, byte-exact, on the partition it was read from.

    ``original_value_b64`` is what rollback re-produces (None: the key had no live value).
    """

    partition: int
    key_b64: str
    original_value_b64: str | None

    def __post_init__(self) -> None:
        _check_int(self.partition, "partition")
        key = _check_b64(self.key_b64, "key_b64")
        if not key:
            raise _fail("key_b64: must not be empty")
        if self.original_value_b64 is not None:
            _check_b64(self.original_value_b64, "original_value_b64")

    @property
    def key(self) -> bytes:
        return base64.b64decode(self.key_b64)

    @property
    def original_value(self) -> bytes | None:
        return None if self.original_value_b64 is None else base64.b64decode(self.original_value_b64)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectOffsetsTombstone:
    """Produce null values for ``records`` to the Connect offsets topic named by the step's target.

    For Connect < 3.6 and dedicated MM2. Each key must be the stored key's exact bytes and go to the
    partition it was read from (librdkafka's partitioner differs from Java's), so both are recorded.
    """

    connector: str
    records: tuple[TombstoneRecord, ...]

    def __post_init__(self) -> None:
        _check_str(self.connector, "connector")
        _freeze_tuple(self, "records")
        if not self.records:
            raise _fail("records: must list at least one record")
        _check_unique(((r.partition, r.key_b64) for r in self.records), "records")
        for i, r in enumerate(self.records):
            try:
                key = json.loads(r.key.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as exc:
                raise _fail(f"records[{i}].key_b64: not a Connect offsets key (JSON)") from exc
            if not (isinstance(key, list) and len(key) == 2 and key[0] == self.connector):
                raise _fail(
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
        _check_int(self.up_to_offset, "up_to_offset")
        _check_file_name(self.backup_file, "backup_file")


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetSyncsTruncate:
    """``deleteRecords(before_offset)`` on the offset-syncs partition: the end offset seen at plan time.

    Deleting only up to what the plan saw never loses a sync MM2 wrote after planning; the
    ``topic_end_offset_equals`` precondition refuses if one was written anyway.
    """

    before_offset: int
    backup_file: str

    def __post_init__(self) -> None:
        _check_int(self.before_offset, "before_offset")
        _check_file_name(self.backup_file, "backup_file")


class TranslationMethod(StrEnum):
    """How a group offset row's target offset was obtained (DESIGN §5)."""

    #: A sync with upstream == committed: the downstream offset.
    OFFSET_SYNC_EXACT = "offset_sync_exact"
    #: The newest sync with upstream < committed: downstream + 1 (never downstream + gap).
    OFFSET_SYNC_NEXT = "offset_sync_next"
    #: Taken from MM2's own checkpoint record.
    CHECKPOINT = "checkpoint"
    #: Untranslatable; the operator chose the partition's earliest offset.
    EARLIEST = "earliest"
    #: Untranslatable; the operator chose the partition's end offset.
    LATEST = "latest"
    #: Given explicitly by the operator.
    EXPLICIT = "explicit"
    #: ``downstream + (committed - upstream)``, proven by comparing the records on both sides (failover).
    VERIFIED_DELTA = "verified_delta"
    #: The candidate was wrong (gaps on one side); the matching record was found by searching the target.
    VERIFIED_SEARCH = "verified_search"


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
        _check_str(self.topic, "topic")
        _check_int(self.partition, "partition")
        _check_int(self.offset, "offset")
        if self.before_offset is not None:
            _check_int(self.before_offset, "before_offset")
        if self.source_offset is not None:
            _check_int(self.source_offset, "source_offset")
        try:
            _set(self, "method", TranslationMethod(self.method))
        except ValueError as exc:
            raise _fail(f"method: {exc}") from exc


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsWrite:
    """Commit ``rows`` for the target group (the group must be empty: Kafka rejects it otherwise)."""

    rows: tuple[GroupOffsetRow, ...]

    def __post_init__(self) -> None:
        _freeze_tuple(self, "rows")
        if not self.rows:
            raise _fail("rows: must list at least one partition")
        _check_unique(((r.topic, r.partition) for r in self.rows), "rows")


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffsetsVerify:
    """Read the group's offsets back and fail the apply unless they equal ``expected``."""

    expected: tuple[GroupOffset, ...]

    def __post_init__(self) -> None:
        _freeze_tuple(self, "expected")
        if not self.expected:
            raise _fail("expected: must list at least one partition")
        _check_unique(((o.topic, o.partition) for o in self.expected), "expected")


@dataclass(frozen=True, slots=True, kw_only=True)
class CatchUpTarget:
    """A source partition whose replicated (upstream) offset must reach ``upstream_offset``."""

    topic: str
    partition: int
    upstream_offset: int

    def __post_init__(self) -> None:
        _check_str(self.topic, "topic")
        _check_int(self.partition, "partition")
        _check_int(self.upstream_offset, "upstream_offset")


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitForCatchUp:
    """Poll the MirrorSourceConnector's committed offsets until every target is reached, or time out."""

    source_cluster: str
    targets: tuple[CatchUpTarget, ...]
    timeout_seconds: float

    def __post_init__(self) -> None:
        _check_str(self.source_cluster, "source_cluster")
        _freeze_tuple(self, "targets")
        if not self.targets:
            raise _fail("targets: must list at least one partition")
        _check_unique(((t.topic, t.partition) for t in self.targets), "targets")
        if isinstance(self.timeout_seconds, bool) or not isinstance(self.timeout_seconds, (int, float)):
            raise _fail("timeout_seconds: expected a number")
        if not self.timeout_seconds > 0:
            raise _fail("timeout_seconds: must be > 0")
        _set(self, "timeout_seconds", float(self.timeout_seconds))


def _check_file_name(value: object, name: str) -> None:
    _check_str(value, name)
    assert isinstance(value, str)
    if "/" in value or "\\" in value or value in (".", "..") or "\0" in value:
        raise _fail(f"{name}: must be a bare file name, got {value!r}")


# ----------------------------------------------------------------------------------------------- steps


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
)

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
            )
        },
        StepKind.CONNECT_OFFSETS_TOMBSTONE: TopicPartitionsTarget,
        StepKind.OFFSET_SYNCS_BACKUP: TopicPartitionsTarget,
        StepKind.OFFSET_SYNCS_TRUNCATE: TopicPartitionsTarget,
        StepKind.GROUP_OFFSETS_WRITE: GroupTarget,
        StepKind.GROUP_OFFSETS_VERIFY: GroupTarget,
    }
)

#: Kinds that write nothing to any cluster; ``--dry-run`` still stops before the first step NOT in here.
READ_ONLY_KINDS: frozenset[StepKind] = frozenset(
    {StepKind.OFFSET_SYNCS_BACKUP, StepKind.GROUP_OFFSETS_VERIFY, StepKind.WAIT_FOR_CATCH_UP}
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
        _check_int(self.index, "index")
        try:
            kind = StepKind(self.kind)
        except ValueError as exc:
            known = ", ".join(k.value for k in StepKind)
            raise _fail(f"kind: unknown step kind {self.kind!r} (known: {known})") from exc
        _set(self, "kind", kind)
        want_payload = PAYLOAD_TYPES[kind]
        if type(self.payload) is not want_payload:
            raise _fail(
                f"payload: a {kind.value} step needs a {want_payload.__name__}, got {type(self.payload).__name__}"
            )
        want_target = TARGET_OF_KIND[kind]
        if type(self.target) is not want_target:
            raise _fail(
                f"target: a {kind.value} step acts on a {want_target.KIND} target, "
                f"got {getattr(self.target, 'KIND', type(self.target).__name__)}"
            )
        if type(self.precondition) not in PRECONDITION_TYPES.values():
            raise _fail(f"precondition: {type(self.precondition).__name__} is not a precondition")
        _check_bool(self.reversible, "reversible")
        if self.reversible and self.irreversible_reason is not None:
            raise _fail("irreversible_reason: must be null for a reversible step")
        if not self.reversible and (
            not isinstance(self.irreversible_reason, str) or not self.irreversible_reason.strip()
        ):
            raise _fail("irreversible_reason: an irreversible step must say why it cannot be undone")
        if self.reversible and kind in ALWAYS_IRREVERSIBLE_KINDS:
            raise _fail(f"reversible: a {kind.value} step can never be undone")
        _check_str(self.description, "description", empty_ok=True)
        _set(self, "before", freeze_json(redact_json(self.before), where="before"))
        _set(self, "after", freeze_json(redact_json(self.after), where="after"))
        self._check_consistency()

    def _check_consistency(self) -> None:
        t, p = self.target, self.payload
        if isinstance(t, ConnectorTarget):
            for c in iter_preconditions(self.precondition):
                named = getattr(c, "connector", None)
                if named is not None and named != t.connector:
                    raise _fail(f"precondition: names connector {named!r} but the step targets {t.connector!r}")
        if isinstance(p, ConnectOffsetsTombstone):
            assert isinstance(t, TopicPartitionsTarget)
            parts = tuple(sorted({r.partition for r in p.records}))
            if t.partitions != parts:
                raise _fail(f"target.partitions: must be the records' partitions {list(parts)}")
        if isinstance(p, (OffsetSyncsBackup, OffsetSyncsTruncate)):
            assert isinstance(t, TopicPartitionsTarget)
            if t.partitions != (0,):
                raise _fail("target.partitions: offset-syncs live in partition 0 only; must be [0]")

    @property
    def writes(self) -> bool:
        """Does this step change a cluster? (``--dry-run`` stops before the first one that does.)"""
        return self.kind not in READ_ONLY_KINDS


# ----------------------------------------------------------------------------------------------- plan


class PlanKind(StrEnum):
    """What a plan is for; chosen by the ``mm2ctl plan`` subcommand that made it."""

    CONNECTORS = "connectors"
    RESET_CONNECTOR_OFFSETS = "reset-connector-offsets"
    TRUNCATE_OFFSET_SYNCS = "truncate-offset-syncs"
    RESET_MM2 = "reset-mm2"
    FAILOVER = "failover"


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectTarget:
    """The Connect worker a plan was made against: URLs (no credentials), its Kafka cluster id, version.

    ``kafka_cluster_id`` (from ``GET /``) is what identifies the Connect cluster; apply compares it, not the
    URL, because the same URL can front another cluster after a migration and vice versa.
    """

    urls: tuple[str, ...]
    kafka_cluster_id: str
    version: str

    def __post_init__(self) -> None:
        _freeze_tuple(self, "urls")
        if not self.urls:
            raise _fail("urls: must list at least one Connect URL")
        for i, u in enumerate(self.urls):
            _check_str(u, f"urls[{i}]")
            parts = urlsplit(u)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise _fail(f"urls[{i}]: not an http(s) URL")
            if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
                raise _fail(f"urls[{i}]: must not carry credentials, a query or a fragment (use strip_url_credentials)")
        _check_str(self.kafka_cluster_id, "kafka_cluster_id")
        _check_str(self.version, "version")


def _plan_flow(pair: str) -> Flow:
    """The plan's flow; a malformed one is a malformed plan (``PlanError``), not a bad option."""
    try:
        return parse_flow(pair)
    except ConfigError as exc:
        raise _fail(f"pair: {exc}") from None


def _step_clusters(step: Step) -> Iterator[str]:
    t = step.target
    if isinstance(t, (TopicPartitionsTarget, GroupTarget)):
        yield t.cluster
    if isinstance(step.payload, WaitForCatchUp):
        yield step.payload.source_cluster
    for c in iter_preconditions(step.precondition):
        cluster = getattr(c, "cluster", None)
        if isinstance(cluster, str):
            yield cluster


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A reviewable, versioned plan. See the module docstring for what each part is for."""

    schema_version: int = SCHEMA_VERSION
    plan_id: str
    created_at: str
    created_by_tool_version: str
    kind: PlanKind
    pair: str | None
    clusters: Mapping[str, str]
    connect: ConnectTarget | None
    fingerprint: Fingerprint
    steps: tuple[Step, ...]
    notes: tuple[str, ...] = ()
    description: str = ""
    #: The MM2 properties file the plan was made from (a path, never its content): apply reads the
    #: clusters' addresses and credentials from it again, so no secret travels inside the plan.
    mm2_config: str | None = None

    def __post_init__(self) -> None:
        _check_int(self.schema_version, "schema_version", minimum=None)
        if self.schema_version != SCHEMA_VERSION:
            newer = self.schema_version > SCHEMA_VERSION
            raise _fail(
                f"schema_version: {self.schema_version} is "
                + ("newer than this mm2ctl understands; upgrade mm2ctl" if newer else "not supported")
                + f" (this mm2ctl reads version {SCHEMA_VERSION})"
            )
        _check_str(self.plan_id, "plan_id")
        try:
            parsed = uuid.UUID(self.plan_id)
        except ValueError as exc:
            raise _fail(f"plan_id: {self.plan_id!r} is not a UUID") from exc
        if str(parsed) != self.plan_id:
            raise _fail(f"plan_id: write the UUID in canonical form ({parsed})")
        _check_str(self.created_at, "created_at")
        try:
            ts = datetime.fromisoformat(self.created_at)
        except ValueError as exc:
            raise _fail(f"created_at: {self.created_at!r} is not an ISO-8601 timestamp") from exc
        if ts.utcoffset() != timedelta(0):
            raise _fail("created_at: must be a UTC timestamp with an explicit offset (+00:00)")
        _check_str(self.created_by_tool_version, "created_by_tool_version")
        try:
            _set(self, "kind", PlanKind(self.kind))
        except ValueError as exc:
            raise _fail(f"kind: unknown plan kind {self.kind!r}") from exc
        if not isinstance(self.clusters, Mapping):
            raise _fail("clusters: expected a mapping of alias to cluster id")
        for alias, cid in self.clusters.items():
            _check_str(alias, "clusters key")
            if not is_cluster_alias(alias):
                raise _fail(f"clusters: {alias!r} is not a valid cluster alias")
            _check_str(cid, f"clusters.{alias}")
        _set(self, "clusters", MappingProxyType(dict(sorted(self.clusters.items()))))
        if self.pair is not None:
            _check_str(self.pair, "pair")
            for alias in _plan_flow(self.pair):
                if alias not in self.clusters:
                    raise _fail(f"pair: alias {alias!r} has no entry in clusters")
        if self.connect is not None and not isinstance(self.connect, ConnectTarget):
            raise _fail("connect: expected a ConnectTarget")
        if not isinstance(self.fingerprint, Fingerprint):
            raise _fail("fingerprint: expected a Fingerprint")
        _freeze_tuple(self, "steps")
        _freeze_tuple(self, "notes")
        for i, n in enumerate(self.notes):
            _check_str(n, f"notes[{i}]", empty_ok=True)
        _check_str(self.description, "description", empty_ok=True)
        if self.mm2_config is not None:
            _check_str(self.mm2_config, "mm2_config")
        self._check_steps()

    def _check_steps(self) -> None:
        backups: dict[tuple[str, str, str], int] = {}
        for pos, step in enumerate(self.steps):
            where = f"steps[{pos}]"
            if not isinstance(step, Step):
                raise _fail(f"{where}: expected a Step")
            if step.index != pos:
                raise _fail(f"{where}.index: is {step.index}; step indices must run 0, 1, 2, ... in order")
            for alias in _step_clusters(step):
                if alias not in self.clusters:
                    raise _fail(f"{where}: cluster alias {alias!r} has no entry in clusters")
            if isinstance(step.target, ConnectorTarget) and self.connect is None:
                raise _fail(f"{where}: a {step.kind.value} step needs the plan's connect worker")
            p, t = step.payload, step.target
            if isinstance(p, OffsetSyncsBackup):
                assert isinstance(t, TopicPartitionsTarget)
                backups[(t.cluster, t.topic, p.backup_file)] = p.up_to_offset
            elif isinstance(p, OffsetSyncsTruncate):
                assert isinstance(t, TopicPartitionsTarget)
                seen = backups.get((t.cluster, t.topic, p.backup_file))
                if seen is None:
                    raise _fail(
                        f"{where}: truncating {t.cluster}:{t.topic} needs an earlier offset_syncs_backup "
                        f"step writing {p.backup_file!r}"
                    )
                if seen != p.before_offset:
                    raise _fail(
                        f"{where}.payload.before_offset: {p.before_offset} but the backup covers up to "
                        f"{seen}; records between would be deleted without a backup"
                    )

    @property
    def source_alias(self) -> str | None:
        return None if self.pair is None else _plan_flow(self.pair)[0]

    @property
    def target_alias(self) -> str | None:
        return None if self.pair is None else _plan_flow(self.pair)[1]


def tool_version() -> str:
    """The installed mm2ctl version, recorded in every plan so a reader knows what wrote it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mm2ctl")
    except PackageNotFoundError:
        return "0+unknown"


def new_plan(
    *,
    kind: PlanKind | str,
    pair: str | None,
    clusters: Mapping[str, str],
    connect: ConnectTarget | None,
    fingerprint: Fingerprint,
    steps: Iterable[Step],
    notes: Iterable[str] = (),
    description: str = "",
    mm2_config: str | None = None,
    now: datetime | None = None,
) -> Plan:
    """A plan with a fresh id and timestamp; what planners call (tests pass ``now``)."""
    when = (now or datetime.now(UTC)).astimezone(UTC)
    return Plan(
        plan_id=str(uuid.uuid4()),
        created_at=when.isoformat(timespec="seconds"),
        created_by_tool_version=tool_version(),
        kind=PlanKind(kind),
        pair=pair,
        clusters=clusters,
        connect=connect,
        fingerprint=fingerprint,
        steps=tuple(steps),
        notes=tuple(notes),
        description=description,
        mm2_config=mm2_config,
    )
