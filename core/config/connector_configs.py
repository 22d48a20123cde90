"""The MM2 setup a set of MirrorSource, MirrorCheckpoint and MirrorHeartbeat connector configs describes.

In Connect mode (and on Strimzi, which runs MM2 that way) there is no ``connect-mirror-maker.properties``:
each flow ``A->B`` is three connectors whose configs hold the aliases, the clusters' client settings under
``source.cluster.`` / ``target.cluster.``, and the flow's settings. This module turns those configs into the
properties of the equivalent MM2 file, so that ``core.config.mm2_config`` resolves them exactly as it resolves a file
and nothing downstream knows the difference. Each value keeps where it came from (a connector's setting, or
a field of a KafkaMirrorMaker2 resource), for errors and ``mm2ctl config show``.

How the three configs become one flow:

* ``source.cluster.alias`` / ``target.cluster.alias`` name the flow; the flow is enabled when it has a
  MirrorSourceConnector (a flow with only a heartbeat connector replicates nothing).
* ``source.cluster.<client setting>`` (``bootstrap.servers``, ``security.protocol``, ``ssl.*``, ``sasl.*``)
  becomes the cluster's own ``A.<setting>``. Two flows that disagree on a cluster's bootstrap servers or
  security protocol describe two different clusters under one alias: an error. Other differences (another
  user for the same cluster) keep the first flow's value and say so in the warnings.
* Everything else becomes a flow setting ``A->B.<key>``. The connector that acts on a setting is the one
  read: the checkpoint connector for ``groups*``, ``sync.group.offsets.*`` and ``emit.checkpoints.*``, the
  source connector for the rest. Settings both must agree on to name the same topics (the replication
  policy, its separator, the offset-syncs location) are compared as each connector will use them (an unset
  key takes Kafka's default, ``core.config.defaults``), and a disagreement is an error naming both values and
  where each came from.
* A flow without a checkpoint connector emits no checkpoints; one without a heartbeat connector, no heartbeats.

A value hidden behind a config provider (``${file:…}``) is resolved by the caller's ``resolve`` when it can
(a Strimzi Secret reference with ``--secrets``); otherwise the user is asked for it with a clear error. It is
never guessed.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from mm2ctl.core.config.defaults import default_origin, kafka_default
from mm2ctl.core.config.properties import Properties, Property, properties_of
from mm2ctl.core.errors import ConfigError

ROLE_CLASSES = {
    "source": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "checkpoint": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    "heartbeat": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
ROLES = tuple(ROLE_CLASSES)

#: Settings only the checkpoint connector acts on.
CHECKPOINT_KEYS = frozenset(
    {
        "groups",
        "groups.exclude",
        "groups.blacklist",
        "sync.group.offsets.enabled",
        "sync.group.offsets.interval.seconds",
        "emit.checkpoints.enabled",
        "emit.checkpoints.interval.seconds",
        "refresh.groups.interval.seconds",
    }
)
#: Settings the source and checkpoint connectors must agree on, or they name different topics.
SHARED_KEYS = (
    "replication.policy.class",
    "replication.policy.separator",
    "replication.policy.internal.topic.separator.enabled",
    "offset-syncs.topic.location",
    "mm2ctl.replication.policy.naming",
)
#: Connector keys that describe the connector, not the flow.
_NOT_FLOW = frozenset({"connector.class", "name", "tasks.max", "key.converter", "value.converter", "header.converter"})
_CLIENT_PREFIXES = ("ssl.", "sasl.")
_IDENTITY_KEYS = ("bootstrap.servers", "security.protocol")
_PROVIDER_REF = re.compile(r"\$\{[^}]*\}")


def role_of(connector_class: str) -> str | None:
    """``source``, ``checkpoint`` or ``heartbeat`` for an MM2 connector class (full or simple name)."""
    for role, cls in ROLE_CLASSES.items():
        if connector_class in (cls, cls.rsplit(".", 1)[1]):
            return role
    return None


@dataclass(frozen=True)
class MirrorConnector:
    """One MM2 connector: its name, role and config, each value with where it came from."""

    name: str
    role: str
    config: Mapping[str, Property]

    def value(self, key: str) -> str | None:
        prop = self.config.get(key)
        return None if prop is None else prop.value


#: Resolves a config-provider reference (the whole ``${…}`` text) to its value, or None when it cannot.
Resolver = Callable[[str], "str | None"]


def _is_client(name: str) -> bool:
    return name in _IDENTITY_KEYS or name.startswith(_CLIENT_PREFIXES)


class _Builder:
    def __init__(self, path: str, resolve: Resolver, overlay: Mapping[str, Property]) -> None:
        self.path = path
        self.resolve = resolve
        self.overlay = overlay
        self.entries: dict[str, Property] = {}
        self.warnings: list[str] = []

    def where(self, prop: Property, fallback: str) -> str:
        return prop.origin or fallback

    def resolved(self, key: str, prop: Property, connector: MirrorConnector, raw_key: str) -> Property:
        """``prop`` with its config-provider references resolved, or the ask for ``key``'s value."""
        if key in self.overlay:
            return self.overlay[key]
        refs = _PROVIDER_REF.findall(prop.value)
        if not refs:
            return prop
        value = prop.value
        for ref in refs:
            got = self.resolve(ref)
            if got is None:
                raise ConfigError(
                    f"is hidden behind a config provider ({ref}), which only the Connect worker can read; "
                    f"give its value as {key} in a properties file passed with --secrets FILE",
                    path=self.path,
                    line=prop.line,
                    key=self.where(prop, f"connector {connector.name}: {raw_key}"),
                )
            value = value.replace(ref, got)
        return Property(value, prop.line, prop.origin)

    def cluster_setting(self, alias: str, name: str, prop: Property, connector: MirrorConnector, raw: str) -> None:
        key = f"{alias}.{name}"
        prop = self.resolved(key, prop, connector, raw)
        seen = self.entries.get(key)
        if seen is None:
            self.entries[key] = prop
        elif seen.value.strip() != prop.value.strip():
            first = seen.origin or key
            here = prop.origin or f"connector {connector.name}: {raw}"
            if name in _IDENTITY_KEYS:
                raise ConfigError(
                    f"cluster {alias} has {name} {seen.value.strip()!r} in {first} but {prop.value.strip()!r} "
                    "here: one alias must name one cluster",
                    path=self.path,
                    line=prop.line,
                    key=here,
                )
            self.warnings.append(f"{here}: differs from {first}; mm2ctl uses the first for cluster {alias}")

    def flow_setting(self, flow: str, key: str, prop: Property, connector: MirrorConnector) -> None:
        full = f"{flow}.{key}"
        self.entries[full] = self.resolved(full, prop, connector, key)

    def put(self, key: str, value: str, origin: str) -> None:
        self.entries[key] = Property(value, None, origin)


def _flows(connectors: Iterable[MirrorConnector], path: str) -> dict[tuple[str, str], dict[str, MirrorConnector]]:
    flows: dict[tuple[str, str], dict[str, MirrorConnector]] = {}
    for c in connectors:
        source, target = c.value("source.cluster.alias"), c.value("target.cluster.alias")
        for side, alias in (("source", source), ("target", target)):
            if not alias or not alias.strip():
                prop = c.config.get(f"{side}.cluster.alias")
                raise ConfigError(
                    "is required: it names the flow's cluster",
                    path=path,
                    line=prop.line if prop else None,
                    key=prop.origin if prop and prop.origin else f"connector {c.name}: {side}.cluster.alias",
                )
        assert source is not None and target is not None
        roles = flows.setdefault((source.strip(), target.strip()), {})
        if c.role in roles:
            raise ConfigError(
                f"two {c.role} connectors for {source}->{target}: {roles[c.role].name} and {c.name}",
                path=path,
            )
        roles[c.role] = c
    return flows


def _effective(
    key: str, prop: Property | None, connector: MirrorConnector, release: str | None
) -> tuple[str | None, str, str]:
    """What ``connector`` uses for ``key``: (value, how to say it, where it came from). An unset key takes
    Kafka's default for the connector's release (``core.config.defaults``); None when Kafka has none."""
    if prop is not None:
        value = prop.value.strip()
        return value, repr(value), prop.origin or f"connector {connector.name}: {key}"
    default = kafka_default(key, release)
    where = f"not set on connector {connector.name}"
    if default is None:
        return None, "not set", where
    return default, f"{default!r}", f"{where}: {default_origin(release)}"


def _check_shared(flow: str, roles: Mapping[str, MirrorConnector], path: str, release: str | None) -> None:
    """The source and checkpoint connectors must use the same policy, separator and offset-syncs location, or
    they name different topics. Values are compared as each connector will use them: a key one connector
    leaves unset agrees with the other's when that is Kafka's default. mm2ctl's own naming declaration has no
    default: set on one connector only, it declares the flow's naming."""
    source, checkpoint = roles.get("source"), roles.get("checkpoint")
    if source is None or checkpoint is None:
        return
    for key in SHARED_KEYS:
        a, b = source.config.get(key), checkpoint.config.get(key)
        value_a, say_a, where_a = _effective(key, a, source, release)
        value_b, say_b, where_b = _effective(key, b, checkpoint, release)
        if value_a is None or value_b is None or value_a == value_b:
            continue
        raise ConfigError(
            f"the source and checkpoint connectors of {flow} disagree: {say_a} ({where_a}) vs {say_b} "
            f"({where_b}); they would name different topics",
            path=path,
            line=a.line if a else (b.line if b else None),
            key=key,
        )


def connectors_to_properties(
    connectors: Iterable[MirrorConnector],
    *,
    path: str,
    resolve: Resolver = lambda _ref: None,
    overlay: Mapping[str, Property] | None = None,
    release: str | None = None,
) -> tuple[Properties, list[str]]:
    """The MM2 properties (and warnings) equivalent to these connectors; see the module docstring.

    ``overlay`` holds values the user gave for settings the connectors hide (``--secrets FILE``), keyed as in
    an MM2 properties file (``A.sasl.jaas.config``, ``A->B.replication.policy.separator``). ``release`` is the
    Kafka release the connectors run (a Strimzi resource's ``spec.version``); None takes the newest defaults.
    """
    b = _Builder(path, resolve, overlay or {})
    flows = _flows(connectors, path)
    if not flows:
        raise ConfigError("no MirrorMaker 2 connector (MirrorSource, MirrorCheckpoint or MirrorHeartbeat)", path=path)
    aliases: list[str] = []
    for source, target in flows:
        for alias in (source, target):
            if alias not in aliases:
                aliases.append(alias)
    b.put("clusters", ", ".join(aliases), "the connectors' source.cluster.alias and target.cluster.alias")
    for (source, target), roles in flows.items():
        flow = f"{source}->{target}"
        _check_shared(flow, roles, path, release)
        ordered = [roles[r] for r in ("source", "checkpoint", "heartbeat") if r in roles]
        for c in ordered:
            for side, alias in (("source", source), ("target", target)):
                prefix = f"{side}.cluster."
                for key, prop in c.config.items():
                    if key.startswith(prefix) and _is_client(key[len(prefix) :]):
                        b.cluster_setting(alias, key[len(prefix) :], prop, c, key)
        names = ", ".join(c.name for c in ordered)
        b.put(f"{flow}.enabled", "true" if "source" in roles else "false", f"connectors {names}")
        owners = {"checkpoint": CHECKPOINT_KEYS}
        for role in ("heartbeat", "checkpoint", "source"):  # later roles win, except for what a role owns
            connector = roles.get(role)
            if connector is None:
                continue
            for key, prop in connector.config.items():
                if key in _NOT_FLOW or key in ("source.cluster.alias", "target.cluster.alias"):
                    continue
                if key.startswith(("source.cluster.", "target.cluster.")) and _is_client(key.split(".", 2)[2]):
                    continue
                owner = next((r for r, keys in owners.items() if key in keys), None)
                if owner is not None and owner != role and owner in roles:
                    continue
                b.flow_setting(flow, key, prop, connector)
        if "checkpoint" not in roles:
            b.put(f"{flow}.emit.checkpoints.enabled", "false", f"{flow} has no MirrorCheckpointConnector")
            b.put(f"{flow}.sync.group.offsets.enabled", "false", f"{flow} has no MirrorCheckpointConnector")
        if "heartbeat" not in roles:
            b.put(f"{flow}.emit.heartbeats.enabled", "false", f"{flow} has no MirrorHeartbeatConnector")
    for key, prop in (overlay or {}).items():
        b.entries.setdefault(key, prop)
    return properties_of(path, b.entries), b.warnings


def overlay_from(properties: Properties) -> dict[str, Property]:
    """An ``overlay`` for :func:`connectors_to_properties` from a ``--secrets FILE`` properties file."""
    return {k: Property(p.value, p.line, f"{properties.path}:{p.line} {k}") for k, p in properties.items()}
