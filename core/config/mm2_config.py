"""The MirrorMaker 2 configuration, read from the ``connect-mirror-maker.properties`` users already have.

Every other part of mm2ctl asks this module which clusters exist, which flows are enabled, where the
offset syncs live, what the topics are called and how to connect. The rules are Kafka's own
(``MirrorMakerConfig``, ``MirrorClientConfig``, ``MirrorConnectorConfig``, ``MirrorSourceConfig``,
``MirrorCheckpointConfig``), so that mm2ctl looks where MM2 writes:

* ``clusters`` lists the aliases. A flow ``A->B`` replicates only when ``A->B.enabled`` is ``true``; it
  defaults to false. MM2 still starts a herder (running only the heartbeat connector) for every other
  ordered pair unless heartbeats are off, which is why :meth:`MM2Config.pairs` can list disabled pairs.
* Flow settings (policy, separator, offset-syncs location, filters, intervals) come from ``A->B.<key>``,
  else the top-level ``<key>``. Cluster-level ``A.<key>`` does not reach the connectors.
* A flow's topic and group filters are read here and matched by :mod:`mm2ctl.core.config.filters`
  (``DefaultTopicFilter``, ``DefaultGroupFilter``: whole names, Java regexes).
* Client settings follow ``MirrorMakerConfig.clusterProps`` and the connectors' client builders; see
  :meth:`MM2Config.client_settings` for the exact order.

Every problem is a :class:`~mm2ctl.core.errors.ConfigError` naming the file, the line and the key. Unknown
keys are fine: MM2 has hundreds, and Connect worker keys live in the same file.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from mm2ctl.core.config import naming
from mm2ctl.core.config.filters import (
    GROUPS_DEFAULT,
    GROUPS_EXCLUDE_DEFAULT,
    TOPICS_DEFAULT,
    TOPICS_EXCLUDE_DEFAULT,
    IncludeExcludeFilter,
    compile_patterns,
    replicates_topic,
)
from mm2ctl.core.config.flows import is_cluster_alias, parse_flow
from mm2ctl.core.config.naming import OffsetSyncsLocation, ReplicationPolicy
from mm2ctl.core.config.properties import Properties, load_properties, parse_properties
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security import client_settings
from mm2ctl.core.security.client_settings import SettingOrigin

if TYPE_CHECKING:
    from mm2ctl.core.config.sources import ConfigSource

Role = Literal["consumer", "producer", "admin"]
ROLES: tuple[Role, ...] = ("consumer", "producer", "admin")

OFFSET_LAG_MAX_DEFAULT = 100
#: The Kafka consumer's ``isolation.level`` values; MirrorSourceTask's consumer takes Kafka's default.
READ_COMMITTED = "read_committed"
READ_UNCOMMITTED = "read_uncommitted"
SYNC_GROUP_OFFSETS_INTERVAL_DEFAULT = 60
EMIT_CHECKPOINTS_INTERVAL_DEFAULT = 60

# ${provider:path:key} or ${provider:key}, as Kafka's ConfigTransformer matches them.
_PROVIDER_REF = re.compile(r"\$\{[^}]*?:(?:[^}]*?:)?[^}]*?\}")


def is_client_setting(name: str) -> bool:
    """True for the settings ``MirrorClientConfig.CLIENT_CONFIG_DEF`` defines and MM2 hands to clients.

    That is ``bootstrap.servers``, ``security.protocol`` and Kafka's client ``ssl.*`` and ``sasl.*``
    settings: only these are inherited from the top level of the file.
    """
    return name in ("bootstrap.servers", "security.protocol") or name.startswith(("ssl.", "sasl."))


def parse_list(value: str) -> list[str]:
    """A ConfigDef LIST: trimmed, split on commas with surrounding whitespace; empty means no items."""
    trimmed = value.strip()
    return [] if not trimmed else re.split(r"\s*,\s*", trimmed)


# --- the model ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class PairConfig:
    """One replication flow ``source->target`` with the settings MM2's connectors for it would use."""

    source: str
    target: str
    enabled: bool
    heartbeats_enabled: bool
    replication_policy: ReplicationPolicy
    offset_syncs_location: OffsetSyncsLocation
    topic_filter: IncludeExcludeFilter
    group_filter: IncludeExcludeFilter
    offset_lag_max: int
    sync_group_offsets_enabled: bool
    sync_group_offsets_interval_seconds: int
    emit_checkpoints_enabled: bool
    emit_checkpoints_interval_seconds: int
    emit_offset_syncs_enabled: bool
    #: Dedicated mode (``connect-mirror-maker.sh``): the worker's connector-offsets topic on the target.
    dedicated_offsets_topic: str
    #: Dedicated mode: the Connect worker group of this flow's herder.
    dedicated_group_id: str
    _config: MM2Config = field(repr=False, compare=False)

    @property
    def name(self) -> str:
        """``source->target``, MM2's own spelling of the flow."""
        return f"{self.source}->{self.target}"

    @property
    def separator(self) -> str:
        """``replication.policy.separator`` for this flow."""
        return self.replication_policy.separator

    @property
    def offset_syncs_topic(self) -> str:
        """The offset-syncs topic name (named after the cluster it does *not* live on)."""
        alias = naming.offset_syncs_alias(self.source, self.target, self.offset_syncs_location)
        return self.replication_policy.offset_syncs_topic(alias)

    @property
    def offset_syncs_cluster(self) -> str:
        """The alias of the cluster holding the offset-syncs topic."""
        return naming.offset_syncs_cluster(self.source, self.target, self.offset_syncs_location)

    @property
    def checkpoints_topic(self) -> str:
        """The checkpoints topic, on the target cluster."""
        return self.replication_policy.checkpoints_topic(self.source)

    @property
    def heartbeats_topic(self) -> str:
        """The heartbeats topic this flow's heartbeat connector writes on the target."""
        return self.replication_policy.heartbeats_topic()

    @property
    def remote_heartbeats_topic(self) -> str:
        """The source's heartbeats topic as replicated onto the target (``A.heartbeats``)."""
        return self.replication_policy.remote_topic(self.source, self.replication_policy.heartbeats_topic())

    def remote_topic(self, topic: str) -> str:
        """The target-side name of source topic ``topic``."""
        return self.replication_policy.remote_topic(self.source, topic)

    def upstream_topic(self, topic: str) -> str | None:
        """The source-side name of target topic ``topic`` (None when it is not a remote topic)."""
        return self.replication_policy.upstream_topic(topic)

    def replicates_topic(self, topic: str) -> bool:
        """True when MM2 would replicate source topic ``topic`` in this flow (filter and internal topics).

        Answered once per topic (the flow is immutable): callers ask it for every group partition, a million
        times for the few topics of a large inspection.
        """
        known = self._replicated_topics.get(topic)
        if known is None:
            known = self._replicated_topics[topic] = replicates_topic(
                self.topic_filter, self.replication_policy, self.target, topic
            )
        return known

    @cached_property
    def _replicated_topics(self) -> dict[str, bool]:
        return {}

    @cached_property
    def source_isolation(self) -> tuple[str, str]:
        """The ``isolation.level`` of the flow's source consumer (MirrorSourceTask's) and where it came from.

        ``read_uncommitted``, Kafka's default, copies the records of aborted transactions to the target as
        ordinary records. MM2 builds that consumer from ``source.consumer.*`` over ``consumer.*`` of the
        source connector (``MirrorConnectorConfig.sourceConsumerConfig``); in an MM2 file those are
        ``A->B.source.consumer.*``, ``A.consumer.*`` and ``A->B.consumer.*``, strongest first. Connect's
        ``consumer.override.*`` configures the worker's own consumers, not this one.
        """
        value, origin = self._config.source_consumer_setting(self.name, "isolation.level")
        if value is None:
            return READ_UNCOMMITTED, "default"
        return value, origin

    @property
    def copies_aborted_records(self) -> bool:
        """True when MM2 copies the records of aborted source transactions (its source consumer reads
        uncommitted records)."""
        return self.source_isolation[0] != READ_COMMITTED

    @cached_property
    def source_kafka_config(self) -> dict[str, str]:
        """confluent-kafka settings for the source cluster, as this flow's consumer sees it."""
        return self._config.kafka_config(self.source, pair=self.name)

    @cached_property
    def target_kafka_config(self) -> dict[str, str]:
        """confluent-kafka settings for the target cluster, as this flow's consumer sees it."""
        return self._config.kafka_config(self.target, pair=self.name)


@dataclass(frozen=True)
class MM2Config:
    """A parsed MM2 properties file. Build it with :func:`load_mm2_config`."""

    path: str
    clusters: tuple[str, ...]
    #: Things MM2 would accept but that probably are not what the user meant (never printed here).
    warnings: tuple[str, ...]
    #: What the user gave to describe the setup (None when built from text, as tests do).
    source: ConfigSource | None = field(default=None, compare=False)
    #: The shape the setup was given in: ``properties`` (an MM2 file), ``resource`` (a KafkaMirrorMaker2) or
    #: ``connect`` (live connectors); advice names a setting the way that shape spells it.
    shape: str = field(default="properties", compare=False)
    _props: Properties = field(default_factory=lambda: Properties("<empty>", {}, {}), repr=False, compare=False)
    _pairs: dict[str, PairConfig] = field(default_factory=dict, repr=False, compare=False)

    def pairs(self, enabled_only: bool = True) -> list[PairConfig]:
        """Flows in ``clusters`` order; with ``enabled_only=False`` every ordered pair of distinct aliases."""
        return [p for p in self._pairs.values() if p.enabled or not enabled_only]

    def pair(self, name: str, *, enabled_only: bool = True) -> PairConfig:
        """The flow named ``A->B``. ConfigError for an unknown alias or (by default) a disabled flow."""
        try:
            flow = parse_flow(name)
        except ConfigError as exc:
            raise ConfigError(str(exc), path=self.path) from None
        for alias in flow:
            if alias not in self.clusters:
                raise ConfigError(
                    f"cluster {alias!r} is not in clusters ({', '.join(self.clusters)})",
                    path=self.path,
                    line=self._props.line("clusters"),
                    key="clusters",
                )
        pair = self._pairs[str(flow)]
        if enabled_only and not pair.enabled:
            key = f"{pair.name}.enabled"
            raise ConfigError(
                "this flow is not enabled (MM2 only replicates a flow whose enabled is true)",
                path=self.path,
                line=self._props.line(key),
                key=key,
            )
        return pair

    def origin_text(self, origin: SettingOrigin | None) -> str:
        """Where a value came from, for people: ``file:line key``, a resource field, a connector, or ``default``."""
        if origin is None:
            return "default"
        line = f":{origin.line}" if origin.line is not None else ""
        return f"{self.path}{line} {origin.key}"

    def flow_setting(self, pair: str, key: str, *, legacy: str | None = None) -> tuple[str | None, str]:
        """A flow setting's raw value (None when unset) and where it came from (``A->B.<key>``, else ``<key>``;
        ``legacy`` is the deprecated name read when the current one is unset)."""
        flow = self.pair(pair, enabled_only=False)
        reader = _FlowSettings(self._props, flow.source, flow.target)
        got = reader.get(key) or (reader.get(legacy) if legacy else None)
        return (None, "default") if got is None else (got[0], self.origin_text(got[1]))

    def source_consumer_setting(self, pair: str, name: str) -> tuple[str | None, str]:
        """A setting of the flow's source consumer (MirrorSourceTask's, ``PairConfig.source_isolation``): its
        value (None when unset) and where it came from."""
        flow = self.pair(pair, enabled_only=False)
        got = self._resolve_client(flow.source, flow.name, "consumer", only=name).get(name)
        return (None, "default") if got is None else (got[0].strip(), self.origin_text(got[1]))

    def client_settings_with_origins(self, alias: str, pair: str | None = None) -> dict[str, tuple[str, str]]:
        """The cluster's Java client settings (as :meth:`client_settings`, consumer role) with where each came
        from. Holds secrets: redact before showing."""
        resolved = self._resolve_client(alias, pair, "consumer", client_only=True)
        return {k: (v, self.origin_text(o)) for k, (v, o) in resolved.items()}

    def as_properties(self) -> dict[str, str]:
        """The setup as MM2 properties (what a resource or the live connectors amount to). Holds secrets."""
        return self._props.as_dict()

    def setting(self, key: str) -> str | None:
        """The raw value of any key in the file (config-provider references refused), or None."""
        got = _get(self._props, key)
        return None if got is None else got[0]

    # --- client settings --------------------------------------------------------------------------

    def _resolve_client(
        self, alias: str, pair: str | None, role: Role, *, client_only: bool = False, only: str | None = None
    ) -> dict[str, tuple[str, SettingOrigin]]:
        if alias not in self.clusters:
            raise ConfigError(
                f"cluster {alias!r} is not in clusters ({', '.join(self.clusters)})",
                path=self.path,
                line=self._props.line("clusters"),
                key="clusters",
            )
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, not {role!r}")
        props = self._props
        # Candidate keys for a setting name, strongest first; `client_only` lists apply to client names only.
        chain_all: list[str]
        if pair is None:
            chain_all = []  # MirrorClientConfig keeps client settings only
            chain_client = [f"{alias}.{role}.", f"{alias}.", "", f"{role}."]
        else:
            flow = self.pair(pair, enabled_only=False)
            if alias not in (flow.source, flow.target):
                raise ConfigError(f"cluster {alias!r} is not part of flow {flow.name}", path=self.path)
            side = "source" if alias == flow.source else "target"
            p = f"{flow.name}."
            chain_all = [f"{p}{side}.{role}.", f"{alias}.{role}.", f"{p}{role}."]
            chain_client = [
                f"{p}{side}.{role}.",
                f"{alias}.{role}.",
                f"{alias}.",
                "",
                f"{p}{role}.",
                f"{p}{side}.cluster.",
            ]
        names: set[str] = set()
        for key in props:
            for prefix in {*chain_all, *chain_client}:
                if prefix and key.startswith(prefix):
                    names.add(key[len(prefix) :])
                elif not prefix and is_client_setting(key):
                    names.add(key)
        resolved: dict[str, tuple[str, SettingOrigin]] = {}
        for name in sorted(names):
            if (client_only and not is_client_setting(name)) or (only is not None and name != only):
                continue
            chain = chain_client if is_client_setting(name) else chain_all
            for prefix in chain:
                got = _get(props, prefix + name)
                if got is not None:
                    resolved[name] = got
                    break
        return resolved

    def client_settings(self, alias: str, pair: str | None = None, role: Role = "consumer") -> dict[str, str]:
        """The Java client settings MM2 would give a ``role`` client of cluster ``alias``.

        Without ``pair`` this is ``MirrorClientConfig`` (what MM2's own client tools use); only client
        settings (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``) are kept, first of
        ``A.<role>.x``, ``A.x``, top-level ``x``, top-level ``<role>.x``.

        With ``pair="A->B"`` this is what that flow's connectors use for the cluster on ``side`` (source
        or target). For client settings the first of: ``A->B.<side>.<role>.x`` (the flow override),
        ``A.<role>.x``, ``A.x`` (cluster), top-level ``x``, then ``A->B.<role>.x`` and
        ``A->B.<side>.cluster.x``. That last pair only applies when neither the cluster nor the top level
        sets ``x``: ``MirrorMakerConfig.clusterProps`` copies cluster and top-level client settings under
        every role prefix, which then shadow them. Other settings come from ``A->B.<side>.<role>.x``,
        ``A.<role>.x`` or ``A->B.<role>.x``.
        """
        resolved = {k: v for k, (v, _) in self._resolve_client(alias, pair, role).items()}
        return client_settings.portable_java_client_settings(resolved)

    def kafka_config(self, alias: str, pair: str | None = None, role: Role = "consumer") -> dict[str, str]:
        """confluent-kafka settings for cluster ``alias`` (see :mod:`mm2ctl.core.security.client_settings`).

        May write a private PEM file when a PKCS12 or JKS truststore must be converted. Contains secrets:
        pass it through :func:`mm2ctl.core.security.redaction.redact` before showing it.
        """
        resolved = self._resolve_client(alias, pair, role, client_only=True)
        return client_settings.to_librdkafka(
            {k: v for k, (v, _) in resolved.items()},
            path=self.path,
            origins={k: o for k, (_, o) in resolved.items()},
        )

    def _validate_isolation(self, pair: PairConfig) -> None:
        """The source consumer's ``isolation.level`` is one Kafka accepts (MM2's task would fail otherwise)."""
        got = self._resolve_client(pair.source, pair.name, "consumer", only="isolation.level").get("isolation.level")
        if got is not None and got[0].strip() not in (READ_COMMITTED, READ_UNCOMMITTED):
            raise ConfigError(
                f"must be {READ_COMMITTED} or {READ_UNCOMMITTED}, not {got[0].strip()!r}",
                path=self.path,
                line=got[1].line,
                key=got[1].key,
            )

    def _validate_client(self, alias: str, pair: PairConfig) -> None:
        resolved = self._resolve_client(alias, pair.name, "consumer", client_only=True)
        if not resolved.get("bootstrap.servers", ("", None))[0].strip():
            enabled_key = f"{pair.name}.enabled"
            raise ConfigError(
                f"is required: cluster {alias} is used by the enabled flow {pair.name}",
                path=self.path,
                line=self._props.line(enabled_key),
                key=f"{alias}.bootstrap.servers",
            )
        client_settings.to_librdkafka(
            {k: v for k, (v, _) in resolved.items()},
            path=self.path,
            origins={k: o for k, (_, o) in resolved.items()},
            materialize=False,
        )


# --- parsing helpers ----------------------------------------------------------------------------


def _get(props: Properties, key: str) -> tuple[str, SettingOrigin] | None:
    prop = props.get(key)
    if prop is None:
        return None
    if _PROVIDER_REF.search(prop.value):
        raise ConfigError(
            "uses a config provider reference (${provider:path:key}); mm2ctl does not resolve config "
            "providers, so put the resolved value in the file mm2ctl reads",
            path=props.path,
            line=prop.line,
            key=key,
        )
    return prop.value, SettingOrigin(prop.origin or key, prop.line)


class _FlowSettings:
    """Reads flow-level settings: ``A->B.<key>`` first, then the top-level ``<key>``."""

    def __init__(self, props: Properties, source: str, target: str) -> None:
        self.props = props
        self.prefix = f"{source}->{target}."

    def get(self, key: str) -> tuple[str, SettingOrigin] | None:
        return _get(self.props, self.prefix + key) or _get(self.props, key)

    def err(self, origin: SettingOrigin, message: str) -> ConfigError:
        return ConfigError(message, path=self.props.path, line=origin.line, key=origin.key)

    def boolean(self, key: str, default: bool) -> bool:
        got = self.get(key)
        if got is None:
            return default
        value, origin = got
        text = value.strip().lower()
        if text not in ("true", "false"):
            raise self.err(origin, f"expected true or false, not {value.strip()!r}")
        return text == "true"

    def integer(self, key: str, default: int, *, minimum: int | None = None) -> int:
        got = self.get(key)
        if got is None:
            return default
        value, origin = got
        try:
            number = int(value.strip(), 10)
        except ValueError:
            raise self.err(origin, f"expected a whole number, not {value.strip()!r}") from None
        if minimum is not None and number < minimum:
            raise self.err(origin, f"must be at least {minimum}, not {number}")
        return number

    def string(self, key: str) -> tuple[str, SettingOrigin] | None:
        return self.get(key)

    def patterns(self, key: str, legacy: str, default: str) -> tuple[str, tuple[str, ...], re.Pattern[str] | None]:
        got = self.get(key) or self.get(legacy)  # translateDeprecatedConfigs: the new key wins
        value, origin = got if got is not None else (default, SettingOrigin(key))
        items = tuple(parse_list(value))
        compiled = compile_patterns(items, path=self.props.path, line=origin.line, key=origin.key)
        return origin.key, items, compiled


#: The key that declares how a custom replication policy class names topics (``default`` or ``identity``).
POLICY_NAMING_KEY = "mm2ctl.replication.policy.naming"


def _policy(flow: _FlowSettings, source: str, cli_naming: str | None) -> ReplicationPolicy:
    policy_class = naming.DEFAULT_POLICY_CLASS
    got_class = flow.string("replication.policy.class")
    if got_class is not None:
        policy_class = got_class[0].strip()
    declared: str | None = None
    got_naming = flow.string(POLICY_NAMING_KEY)
    if got_naming is not None:
        declared = got_naming[0].strip().lower()
        if declared not in naming.NAMING_SCHEMES:
            raise flow.err(got_naming[1], f"must be default or identity, not {got_naming[0].strip()!r}")
    custom = policy_class not in naming.KNOWN_POLICY_NAMING
    if cli_naming is not None and custom:  # the option declares custom classes; known ones name their own way
        declared = cli_naming
    if custom and declared is None:
        assert got_class is not None
        raise flow.err(
            got_class[1],
            f"unsupported replication policy {policy_class!r}: mm2ctl knows {naming.DEFAULT_POLICY_CLASS}, "
            f"{naming.IDENTITY_POLICY_CLASS} and {naming.STRIMZI_IDENTITY_POLICY_CLASS}. For a custom class, "
            f"declare how it names topics: {POLICY_NAMING_KEY} = default|identity in the MM2 config, "
            "or --policy-naming default|identity",
        )
    separator: str | None = None
    got = flow.string("replication.policy.separator")
    if got is not None:
        separator = got[0]
        if not naming.is_legal_topic_fragment(separator):
            raise flow.err(
                got[1],
                f"{separator!r} cannot be part of a topic name (use letters, digits, '.', '_' or '-'; "
                "check for trailing spaces)",
            )
    heartbeats = naming.DEFAULT_HEARTBEATS_TOPIC
    got = flow.string("default.replication.policy.heartbeats.topic.name")
    if got is not None:
        heartbeats = got[0].strip()
        if not naming.is_legal_topic_fragment(heartbeats):
            raise flow.err(got[1], f"{heartbeats!r} is not a valid topic name")
    try:
        return naming.replication_policy(
            policy_class,
            separator=separator,
            internal_separator_enabled=flow.boolean("replication.policy.internal.topic.separator.enabled", True),
            heartbeats_topic_name=heartbeats,
            source_cluster_alias=source,
            naming=declared,
        )
    except ValueError as exc:
        assert got_naming is not None  # only a declaration in the setup can contradict a known class
        raise flow.err(got_naming[1], str(exc)) from None


def _build_pair(
    config: MM2Config, props: Properties, source: str, target: str, enabled: bool, policy_naming: str | None
) -> PairConfig:
    flow = _FlowSettings(props, source, target)

    policy = _policy(flow, source, policy_naming)

    location = OffsetSyncsLocation.SOURCE
    got = flow.string("offset-syncs.topic.location")
    if got is not None:
        try:
            location = OffsetSyncsLocation(got[0].strip())
        except ValueError:
            raise flow.err(got[1], f"must be source or target, not {got[0].strip()!r}") from None

    inc_key, inc, inc_re = flow.patterns("topics", "topics", TOPICS_DEFAULT)
    exc_key, exc, exc_re = flow.patterns("topics.exclude", "topics.blacklist", TOPICS_EXCLUDE_DEFAULT)
    topic_filter = IncludeExcludeFilter(inc_key, inc, exc_key, exc, inc_re, exc_re)
    inc_key, inc, inc_re = flow.patterns("groups", "groups", GROUPS_DEFAULT)
    exc_key, exc, exc_re = flow.patterns("groups.exclude", "groups.blacklist", GROUPS_EXCLUDE_DEFAULT)
    group_filter = IncludeExcludeFilter(inc_key, inc, exc_key, exc, inc_re, exc_re)

    offsets_topic = naming.dedicated_offsets_topic(source)
    for key in ("offset.storage.topic", f"{target}.offset.storage.topic"):  # workerConfig: top level wins
        got = _get(props, key)
        if got is not None:
            offsets_topic = got[0].strip()
            break
    group_got = _get(props, f"{target}.group.id")
    group_id = group_got[0].strip() if group_got else naming.dedicated_group_id(source)

    return PairConfig(
        source=source,
        target=target,
        enabled=enabled,
        heartbeats_enabled=flow.boolean("emit.heartbeats.enabled", True),
        replication_policy=policy,
        offset_syncs_location=location,
        topic_filter=topic_filter,
        group_filter=group_filter,
        offset_lag_max=flow.integer("offset.lag.max", OFFSET_LAG_MAX_DEFAULT),
        sync_group_offsets_enabled=flow.boolean("sync.group.offsets.enabled", False),
        sync_group_offsets_interval_seconds=flow.integer(
            "sync.group.offsets.interval.seconds", SYNC_GROUP_OFFSETS_INTERVAL_DEFAULT
        ),
        emit_checkpoints_enabled=flow.boolean("emit.checkpoints.enabled", True),
        emit_checkpoints_interval_seconds=flow.integer(
            "emit.checkpoints.interval.seconds", EMIT_CHECKPOINTS_INTERVAL_DEFAULT
        ),
        emit_offset_syncs_enabled=flow.boolean("emit.offset-syncs.enabled", True),
        dedicated_offsets_topic=offsets_topic,
        dedicated_group_id=group_id,
        _config=config,
    )


def _parse_clusters(props: Properties) -> tuple[str, ...]:
    got = _get(props, "clusters")
    if got is None:
        raise ConfigError(
            "is required: list the cluster aliases, e.g. clusters = primary, backup",
            path=props.path,
            key="clusters",
        )
    value, origin = got
    aliases = parse_list(value)
    if not aliases:
        raise ConfigError(
            "is empty: list at least two cluster aliases", path=props.path, line=origin.line, key="clusters"
        )
    seen: list[str] = []
    for alias in aliases:
        if not alias:
            raise ConfigError(
                "has an empty alias (two commas in a row?)", path=props.path, line=origin.line, key="clusters"
            )
        if not is_cluster_alias(alias):
            raise ConfigError(
                f"alias {alias!r} cannot contain '->' or whitespace",
                path=props.path,
                line=origin.line,
                key="clusters",
            )
        if alias not in seen:
            seen.append(alias)
    return tuple(seen)


_FLOW_KEY = re.compile(r"^(?P<source>.+?)->(?P<target>.+?)\.enabled$")


def _where(props: Properties, key: str) -> str:
    """How a warning names a setting: ``file:line: key``, or the resource field / connector it came from."""
    origin = props.origin(key)
    line = props.line(key)
    return f"{props.path}{f':{line}' if line is not None else ''}: {origin or key}"


def _warnings(props: Properties, clusters: tuple[str, ...], pairs: dict[str, PairConfig]) -> list[str]:
    found: list[str] = []
    flow_prefixes = tuple(f"{name}." for name in pairs)
    for key in props:
        match = _FLOW_KEY.match(key)
        if match and not key.startswith(flow_prefixes):
            found.append(f"{_where(props, key)}: names a cluster not in clusters; MM2 ignores it")
    for legacy, new in (("topics.blacklist", "topics.exclude"), ("groups.blacklist", "groups.exclude")):
        for key in props:
            if key == legacy or key.endswith(f".{legacy}"):
                shadow = key[: -len(legacy)] + new
                why = f"ignored because {shadow} is set" if shadow in props else f"deprecated: use {new}"
                found.append(f"{_where(props, key)}: {why}")
    for pair in pairs.values():
        if not pair.enabled or pair.emit_offset_syncs_enabled:
            continue
        for key in props:
            if key.startswith(("offset-syncs.topic.", f"{pair.name}.offset-syncs.topic.")):
                found.append(
                    f"{_where(props, key)}: MirrorSourceConnector refuses offset-syncs.topic.* settings while "
                    f"{pair.name} disables offset syncs (emit.offset-syncs.enabled=false); remove them"
                )
    for name in pairs:
        prefix = f"{name}."
        for key in props:
            if key.startswith(prefix) and is_client_setting(key[len(prefix) :]):
                found.append(
                    f"{_where(props, key)}: MM2 does not pass flow-level client settings to "
                    f"its clients; use {prefix}source.cluster., {prefix}target.cluster. or "
                    f"{prefix}source.consumer. (and similar) prefixes"
                )
    return found


def parse_mm2_config(
    props: Properties,
    *,
    policy_naming: str | None = None,
    source: ConfigSource | None = None,
    shape: str = "properties",
) -> MM2Config:
    """Build the model from properties, read from a file or made by an adapter (``core.config.sources``).

    ``policy_naming`` (``--policy-naming``) declares how a custom replication policy class names topics; it
    wins over ``mm2ctl.replication.policy.naming`` in the properties. ``source`` records what the user gave
    (a file, a resource and its secrets, a Connect URL) so a plan can name it and apply can read it again.
    """
    if policy_naming is not None and policy_naming not in naming.NAMING_SCHEMES:
        raise ConfigError(f"--policy-naming must be default or identity, not {policy_naming!r}")
    clusters = _parse_clusters(props)
    config = MM2Config(path=props.path, clusters=clusters, warnings=(), source=source, shape=shape, _props=props)
    for upstream in clusters:
        for downstream in clusters:
            if upstream == downstream:
                continue
            flow = _FlowSettings(props, upstream, downstream)
            enabled_key = f"{upstream}->{downstream}.enabled"
            enabled = flow.boolean("enabled", False) if enabled_key in props else False
            config._pairs[f"{upstream}->{downstream}"] = _build_pair(
                config, props, upstream, downstream, enabled, policy_naming
            )
    for pair in config.pairs(enabled_only=True):
        config._validate_client(pair.source, pair)
        config._validate_client(pair.target, pair)
        config._validate_isolation(pair)
    object.__setattr__(config, "warnings", tuple(_warnings(props, clusters, config._pairs)))
    return config


def load_mm2_config(path: str | os.PathLike[str], *, policy_naming: str | None = None) -> MM2Config:
    """Read an MM2 ``connect-mirror-maker.properties`` file as MM2 would, and check what mm2ctl needs.

    Raises ConfigError (naming file, line and key, never a secret value) for anything MM2 would reject
    or mm2ctl cannot follow: a missing ``clusters``, an enabled flow whose cluster has no
    ``bootstrap.servers``, a bad boolean or number, an unknown replication policy, a regex that does not
    compile, an unsupported security setup, or a ``${provider:...}`` reference.
    """
    return parse_mm2_config(load_properties(path), policy_naming=policy_naming)


def mm2_config_from_text(text: str, *, path: str = "<string>", policy_naming: str | None = None) -> MM2Config:
    """Like :func:`load_mm2_config` for text in memory (tests, and configs fetched from elsewhere)."""
    return parse_mm2_config(parse_properties(text, path=path), policy_naming=policy_naming)
