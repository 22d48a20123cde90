"""The plan document: frozen, versioned data that a planner writes, a person reviews and apply executes.

Why it is shaped this way (terraform's ``internal/plans``: the plan is data):

- A plan is reviewed by a human and executed later, maybe on another machine. So it records what it was made
  for (``clusters``, ``connect``) and from (``fingerprint``), and every step says what it observed
  (``before``), what it wants (``after``), what must still hold when it runs (``precondition``), and whether
  rollback can undo it.
- A step's ``kind`` selects exactly one typed payload class (``mm2ctl.plans.steps.PAYLOAD_TYPES``); executors
  dispatch on it, and a plan with an unknown kind never loads. ``description`` and ``notes`` are display
  only: nothing in ``remediate`` may branch on them.
- Everything is a frozen, slotted, keyword-only dataclass; JSON-ish values (``before``/``after``, Connect
  partition maps) are deep-frozen, so a plan cannot be mutated between review and apply.
- Construction validates (contiguous indices, target type per kind, truncation preceded by its backup, ...)
  and raises ``PlanError``; ``plans.serialize`` prefixes the message with the file and field path.

Secrets never enter a plan. Connector configs and any before/after value are passed through
``mm2ctl.core.security.redaction.redact_json`` or ``ConnectorConfig``, which replace secret-looking values with
``REDACTED``. How apply gets the real values back is decided per ``connector_create`` step by
``SecretSource`` (see ``mm2ctl.plans.connector_config``).

The parts of a plan live in modules named for them: ``steps`` (the kinds and ``Step``), ``targets``,
``payloads``, ``preconditions``, ``offsets`` (the offsets and records payloads and preconditions name),
``connector_config``, ``connect_target``; ``validation`` holds the field checks they share.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from types import MappingProxyType

import mm2ctl
from mm2ctl.core.config.flows import Flow, is_cluster_alias, parse_flow
from mm2ctl.core.config.sources import ConfigSource
from mm2ctl.core.errors import ConfigError, PlanError, UntranslatableError
from mm2ctl.plans.connect_target import ConnectTarget
from mm2ctl.plans.fingerprint import Fingerprint
from mm2ctl.plans.payloads import OffsetSyncsBackup, OffsetSyncsTruncate, TranslateAfterCatchUp, WaitForCatchUp
from mm2ctl.plans.preconditions import iter_preconditions
from mm2ctl.plans.steps import Step
from mm2ctl.plans.targets import ConnectorTarget, GroupTarget, TopicPartitionsTarget
from mm2ctl.plans.validation import check_int, check_str, freeze_tuple, set_field

#: The plan document format this code writes and reads. Bump on any incompatible change; a reader refuses
#: newer versions rather than guess (an old mm2ctl must never half-understand a plan and apply it).
SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class SetupSource:
    """Where the plan's MM2 setup was read from (``core.config.sources.ConfigSource``): paths and a URL,
    never a secret. Apply reads the setup from it again, so the clusters' credentials never travel in a plan."""

    mm2_config: str | None = None
    from_connect: str | None = None
    secrets: str | None = None
    policy_naming: str | None = None

    def __post_init__(self) -> None:
        for name in ("mm2_config", "from_connect", "secrets", "policy_naming"):
            value = getattr(self, name)
            if value is not None:
                check_str(value, f"mm2_source.{name}")
        if (self.mm2_config is None) == (self.from_connect is None):
            raise PlanError("mm2_source: give exactly one of mm2_config and from_connect")

    @classmethod
    def of(cls, source: ConfigSource) -> SetupSource:
        return cls(
            mm2_config=source.mm2_config,
            from_connect=source.from_connect,
            secrets=source.secrets,
            policy_naming=source.policy_naming,
        )

    def config_source(self) -> ConfigSource:
        return ConfigSource(
            mm2_config=self.mm2_config,
            from_connect=self.from_connect,
            secrets=self.secrets,
            policy_naming=self.policy_naming,
        )


class PlanKind(StrEnum):
    """What a plan is for; chosen by the ``mm2ctl plan`` subcommand that made it."""

    CONNECTORS = "connectors"
    RESET_CONNECTOR_OFFSETS = "reset-connector-offsets"
    TRUNCATE_OFFSET_SYNCS = "truncate-offset-syncs"
    RESET_MM2 = "reset-mm2"
    FAILOVER = "failover"
    FAILBACK = "failback"


@dataclass(frozen=True, slots=True, kw_only=True)
class UntranslatablePartition:
    """A group partition the plan could not translate, so it writes no offset there: a consumer of the group
    resumes that partition at its ``auto.offset.reset`` (by default the end of the log, skipping everything
    before it). ``topic`` is the topic on the cluster the plan writes to; ``position`` is the committed offset
    on the other cluster that could not be translated."""

    group: str
    topic: str
    partition: int
    position: int
    reason: str

    def __post_init__(self) -> None:
        check_str(self.group, "group")
        check_str(self.topic, "topic")
        check_int(self.partition, "partition")
        check_int(self.position, "position", minimum=None)
        check_str(self.reason, "reason", empty_ok=True)

    def __str__(self) -> str:
        return f"{self.group}:{self.topic}/{self.partition} (at {self.position}: {self.reason})"


def _plan_flow(pair: str) -> Flow:
    """The plan's flow; a malformed one is a malformed plan (``PlanError``), not a bad option."""
    try:
        return parse_flow(pair)
    except ConfigError as exc:
        raise PlanError(f"pair: {exc}") from None


def _step_clusters(step: Step) -> Iterator[str]:
    t = step.target
    if isinstance(t, (TopicPartitionsTarget, GroupTarget)):
        yield t.cluster
    if isinstance(step.payload, WaitForCatchUp):
        yield step.payload.source_cluster
    if isinstance(step.payload, TranslateAfterCatchUp):
        yield step.payload.source_cluster
        yield step.payload.target_cluster
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
    #: Everything the setup was read from (a resource and its secrets, or the Connect URL whose connectors
    #: describe it); plans made before it existed have only ``mm2_config``.
    mm2_source: SetupSource | None = None
    #: Group partitions the plan leaves without an offset (failover, failback). Apply refuses such a plan
    #: unless the operator accepts them (``check_untranslatable``). Written only when there are any.
    untranslatable: tuple[UntranslatablePartition, ...] = ()

    def __post_init__(self) -> None:
        check_int(self.schema_version, "schema_version", minimum=None)
        if self.schema_version != SCHEMA_VERSION:
            newer = self.schema_version > SCHEMA_VERSION
            raise PlanError(
                f"schema_version: {self.schema_version} is "
                + ("newer than this mm2ctl understands; upgrade mm2ctl" if newer else "not supported")
                + f" (this mm2ctl reads version {SCHEMA_VERSION})"
            )
        check_str(self.plan_id, "plan_id")
        try:
            parsed = uuid.UUID(self.plan_id)
        except ValueError as exc:
            raise PlanError(f"plan_id: {self.plan_id!r} is not a UUID") from exc
        if str(parsed) != self.plan_id:
            raise PlanError(f"plan_id: write the UUID in canonical form ({parsed})")
        check_str(self.created_at, "created_at")
        try:
            ts = datetime.fromisoformat(self.created_at)
        except ValueError as exc:
            raise PlanError(f"created_at: {self.created_at!r} is not an ISO-8601 timestamp") from exc
        if ts.utcoffset() != timedelta(0):
            raise PlanError("created_at: must be a UTC timestamp with an explicit offset (+00:00)")
        check_str(self.created_by_tool_version, "created_by_tool_version")
        try:
            set_field(self, "kind", PlanKind(self.kind))
        except ValueError as exc:
            raise PlanError(f"kind: unknown plan kind {self.kind!r}") from exc
        if not isinstance(self.clusters, Mapping):
            raise PlanError("clusters: expected a mapping of alias to cluster id")
        for alias, cid in self.clusters.items():
            check_str(alias, "clusters key")
            if not is_cluster_alias(alias):
                raise PlanError(f"clusters: {alias!r} is not a valid cluster alias")
            check_str(cid, f"clusters.{alias}")
        set_field(self, "clusters", MappingProxyType(dict(sorted(self.clusters.items()))))
        if self.pair is not None:
            check_str(self.pair, "pair")
            for alias in _plan_flow(self.pair):
                if alias not in self.clusters:
                    raise PlanError(f"pair: alias {alias!r} has no entry in clusters")
        if self.connect is not None and not isinstance(self.connect, ConnectTarget):
            raise PlanError("connect: expected a ConnectTarget")
        if not isinstance(self.fingerprint, Fingerprint):
            raise PlanError("fingerprint: expected a Fingerprint")
        freeze_tuple(self, "steps")
        freeze_tuple(self, "notes")
        for i, n in enumerate(self.notes):
            check_str(n, f"notes[{i}]", empty_ok=True)
        check_str(self.description, "description", empty_ok=True)
        if self.mm2_config is not None:
            check_str(self.mm2_config, "mm2_config")
        if self.mm2_source is not None and not isinstance(self.mm2_source, SetupSource):
            raise PlanError("mm2_source: expected a SetupSource")
        freeze_tuple(self, "untranslatable")
        for i, u in enumerate(self.untranslatable):
            if not isinstance(u, UntranslatablePartition):
                raise PlanError(f"untranslatable[{i}]: expected an UntranslatablePartition")
        self._check_steps()

    def _check_steps(self) -> None:
        backups: dict[tuple[str, str, str], int] = {}
        for pos, step in enumerate(self.steps):
            where = f"steps[{pos}]"
            if not isinstance(step, Step):
                raise PlanError(f"{where}: expected a Step")
            if step.index != pos:
                raise PlanError(f"{where}.index: is {step.index}; step indices must run 0, 1, 2, ... in order")
            for alias in _step_clusters(step):
                if alias not in self.clusters:
                    raise PlanError(f"{where}: cluster alias {alias!r} has no entry in clusters")
            if isinstance(step.target, ConnectorTarget) and self.connect is None:
                raise PlanError(f"{where}: a {step.kind.value} step needs the plan's connect worker")
            p, t = step.payload, step.target
            if isinstance(p, OffsetSyncsBackup):
                assert isinstance(t, TopicPartitionsTarget)
                backups[(t.cluster, t.topic, p.backup_file)] = p.up_to_offset
            elif isinstance(p, OffsetSyncsTruncate):
                assert isinstance(t, TopicPartitionsTarget)
                seen = backups.get((t.cluster, t.topic, p.backup_file))
                if seen is None:
                    raise PlanError(
                        f"{where}: truncating {t.cluster}:{t.topic} needs an earlier offset_syncs_backup "
                        f"step writing {p.backup_file!r}"
                    )
                if seen != p.before_offset:
                    raise PlanError(
                        f"{where}.payload.before_offset: {p.before_offset} but the backup covers up to "
                        f"{seen}; records between would be deleted without a backup"
                    )

    def check_untranslatable(self, *, allowed: bool) -> None:
        """Refuse (``UntranslatableError``) a plan that leaves group partitions untranslatable, unless
        ``allowed`` (``apply --allow-untranslatable``)."""
        if self.untranslatable and not allowed:
            raise UntranslatableError(
                f"the plan leaves {len(self.untranslatable)} group partition(s) untranslatable; their consumers "
                f"would resume at auto.offset.reset: {untranslatable_summary(self.untranslatable)}. Translate "
                "them (plan again with --fallback timestamp, or once MM2 mirrored what they read), or pass "
                "--allow-untranslatable to apply the rest"
            )

    @property
    def source_alias(self) -> str | None:
        return None if self.pair is None else _plan_flow(self.pair)[0]

    @property
    def target_alias(self) -> str | None:
        return None if self.pair is None else _plan_flow(self.pair)[1]


def untranslatable_summary(rows: Iterable[UntranslatablePartition], limit: int = 10) -> str:
    """The first ``limit`` untranslatable partitions on one line (``group:topic/partition@position``)."""
    items = list(rows)
    shown = ", ".join(f"{u.group}:{u.topic}/{u.partition}@{u.position}" for u in items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def tool_version() -> str:
    """The installed mm2ctl version, recorded in every plan so a reader knows what wrote it."""
    return mm2ctl.__version__


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
    mm2_source: SetupSource | None = None,
    untranslatable: Iterable[UntranslatablePartition] = (),
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
        mm2_source=mm2_source,
        untranslatable=tuple(untranslatable),
    )
