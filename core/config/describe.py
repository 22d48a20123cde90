"""What ``mm2ctl config show`` and ``config diff`` report about a resolved MM2 setup.

``show`` answers "what does mm2ctl think MM2 is doing, and why": each enabled flow, the names of its topics
(offset syncs, checkpoints, heartbeats, the remote-topic rule), its settings, and for every value where it
came from (a file line, a resource field, a live connector, or MM2's default), and what the settings make of
the flow (``core.config.flow_conditions``: offset syncs disabled, aborted transactions copied). An alias or separator
typed wrong labels every row of an inspection wrongly and silently; this is where that shows.

``diff`` compares two setups (a file and the live connectors) on what decides the names and the behaviour
mm2ctl relies on: the flows, each flow's settings and topic names, and each cluster's address and security
protocol. Credentials are not compared: mm2ctl may rightly run as another principal than MM2. Live flows
between clusters the file does not name belong to another setup on the same Connect cluster and are left out.

Secrets are masked (``core.security.redaction``) before anything leaves this module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mm2ctl.core.config.flow_conditions import FlowCondition, configured_conditions
from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.security.redaction import is_secret_key, mask

#: (setting, deprecated name) for the flow settings reported, in the order shown.
_FLOW_KEYS: tuple[tuple[str, str | None], ...] = (
    ("replication.policy.class", None),
    ("replication.policy.separator", None),
    ("replication.policy.internal.topic.separator.enabled", None),
    ("offset-syncs.topic.location", None),
    ("topics", None),
    ("topics.exclude", "topics.blacklist"),
    ("groups", None),
    ("groups.exclude", "groups.blacklist"),
    ("offset.lag.max", None),
    ("sync.group.offsets.enabled", None),
    ("sync.group.offsets.interval.seconds", None),
    ("emit.checkpoints.enabled", None),
    ("emit.checkpoints.interval.seconds", None),
    ("emit.heartbeats.enabled", None),
    ("emit.offset-syncs.enabled", None),
)
#: The setting of the flow's source consumer reported beside the flow settings: whether MM2 copies aborted
#: transactions (``PairConfig.source_isolation``).
SOURCE_ISOLATION = "source.consumer.isolation.level"
#: Cluster settings compared by ``diff``: which cluster, and how it is reached (not who connects).
_CLUSTER_IDENTITY = ("bootstrap.servers", "security.protocol", "sasl.mechanism")


@dataclass(frozen=True)
class Setting:
    name: str
    value: str
    origin: str

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "value": self.value, "origin": self.origin}


@dataclass(frozen=True)
class FlowReport:
    name: str
    source: str
    target: str
    topics: dict[str, str]
    settings: list[Setting]
    clusters: dict[str, list[Setting]]
    #: What the settings make of the flow (``core.config.flow_conditions``): offset syncs disabled, aborted records.
    conditions: list[FlowCondition] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "target": self.target,
            "topics": dict(self.topics),
            "settings": [s.to_json() for s in self.settings],
            "clusters": {alias: [s.to_json() for s in items] for alias, items in self.clusters.items()},
            "conditions": [{"condition": c.condition.value, "message": c.message} for c in self.conditions],
        }


@dataclass(frozen=True)
class SetupReport:
    source: str
    clusters: list[str]
    flows: list[FlowReport]
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "clusters": list(self.clusters),
            "flows": [f.to_json() for f in self.flows],
            "warnings": list(self.warnings),
        }


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _resolved_values(pair: PairConfig) -> dict[str, str]:
    policy = pair.replication_policy
    return {
        "replication.policy.class": policy.class_name,
        "replication.policy.separator": policy.separator,
        "replication.policy.internal.topic.separator.enabled": _text(policy.internal_separator_enabled),
        "offset-syncs.topic.location": str(pair.offset_syncs_location),
        "topics": _text(pair.topic_filter.include),
        "topics.exclude": _text(pair.topic_filter.exclude),
        "groups": _text(pair.group_filter.include),
        "groups.exclude": _text(pair.group_filter.exclude),
        "offset.lag.max": str(pair.offset_lag_max),
        "sync.group.offsets.enabled": _text(pair.sync_group_offsets_enabled),
        "sync.group.offsets.interval.seconds": str(pair.sync_group_offsets_interval_seconds),
        "emit.checkpoints.enabled": _text(pair.emit_checkpoints_enabled),
        "emit.checkpoints.interval.seconds": str(pair.emit_checkpoints_interval_seconds),
        "emit.heartbeats.enabled": _text(pair.heartbeats_enabled),
        "emit.offset-syncs.enabled": _text(pair.emit_offset_syncs_enabled),
    }


def _topics(pair: PairConfig) -> dict[str, str]:
    policy = pair.replication_policy
    return {
        "offset_syncs": f"{pair.offset_syncs_topic} on {pair.offset_syncs_cluster}",
        "checkpoints": f"{pair.checkpoints_topic} on {pair.target}",
        "heartbeats": (
            f"{pair.heartbeats_topic} on {pair.target} (and {pair.remote_heartbeats_topic} from {pair.source})"
        ),
        "remote_topic_rule": f"<topic> on {pair.source} is {pair.remote_topic('<topic>')} on {pair.target}",
        "naming": f"{policy.naming} ({policy.class_name})",
    }


def _cluster_settings(config: MM2Config, alias: str, pair: str) -> list[Setting]:
    out = []
    for name, (value, origin) in sorted(config.client_settings_with_origins(alias, pair).items()):
        shown = mask(value) if is_secret_key(name) else value
        out.append(Setting(name, shown, origin))
    return out


def describe_setup(config: MM2Config) -> SetupReport:
    """What ``config show`` prints: every enabled flow, its topic names and settings, each with its origin."""
    flows = []
    naming_override = config.source.policy_naming if config.source is not None else None
    for pair in config.pairs():
        values = _resolved_values(pair)
        settings = []
        for key, legacy in _FLOW_KEYS:
            _, origin = config.flow_setting(pair.name, key, legacy=legacy)
            settings.append(Setting(key, values[key], origin))
        isolation, isolation_origin = pair.source_isolation
        settings.append(Setting(SOURCE_ISOLATION, isolation, isolation_origin))
        declared, origin = config.flow_setting(pair.name, "mm2ctl.replication.policy.naming")
        if naming_override is not None or declared is not None:
            origin = "--policy-naming" if naming_override is not None else origin
            settings.insert(1, Setting("mm2ctl.replication.policy.naming", pair.replication_policy.naming, origin))
        clusters = {alias: _cluster_settings(config, alias, pair.name) for alias in (pair.source, pair.target)}
        conditions = configured_conditions(config, pair)
        flows.append(FlowReport(pair.name, pair.source, pair.target, _topics(pair), settings, clusters, conditions))
    source = config.source.describe() if config.source is not None else config.path
    return SetupReport(source=source, clusters=list(config.clusters), flows=flows, warnings=list(config.warnings))


# --- diff ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One way two setups differ: ``what`` (a flow, a flow's setting, a cluster's setting) and each side's
    value (None: absent on that side), with where each came from."""

    what: str
    left: str | None
    right: str | None
    left_origin: str = ""
    right_origin: str = ""

    def to_json(self) -> dict[str, str | None]:
        return {
            "what": self.what,
            "left": self.left,
            "left_origin": self.left_origin,
            "right": self.right,
            "right_origin": self.right_origin,
        }


def _comparable(config: MM2Config) -> dict[str, dict[str, tuple[str, str]]]:
    """flow -> what -> (value, origin) for every compared item."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for flow in describe_setup(config).flows:
        items = {
            f"{s.name}": (s.value, s.origin) for s in flow.settings if s.name != "mm2ctl.replication.policy.naming"
        }
        for name, value in flow.topics.items():
            items[f"topic {name}"] = (value, "derived")
        for alias in (flow.source, flow.target):
            side = "source" if alias == flow.source else "target"
            for s in flow.clusters[alias]:
                if s.name in _CLUSTER_IDENTITY:
                    value = s.value
                    if s.name == "bootstrap.servers":
                        value = ",".join(sorted(v.strip() for v in value.split(",") if v.strip()))
                    items[f"{side} cluster {alias}: {s.name}"] = (value, s.origin)
        out[flow.name] = items
    return out


def diff_setups(left: MM2Config, right: MM2Config) -> list[Difference]:
    """Every difference between two setups' enabled flows (see the module docstring for what is compared).

    One Connect cluster may run the connectors of several MM2 setups: a flow of ``right`` that names none of
    ``left``'s clusters belongs to another setup and is not a difference.
    """
    a, b = _comparable(left), _comparable(right)
    ours = set(left.clusters)
    b = {flow: items for flow, items in b.items() if ours & set(flow.split("->"))}
    out: list[Difference] = []
    for flow in sorted(set(a) | set(b)):
        if flow not in b:
            out.append(Difference(f"flow {flow}", "enabled", None))
            continue
        if flow not in a:
            out.append(Difference(f"flow {flow}", None, "enabled"))
            continue
        for what in sorted(set(a[flow]) | set(b[flow])):
            va, vb = a[flow].get(what), b[flow].get(what)
            if (va[0] if va else None) != (vb[0] if vb else None):
                out.append(
                    Difference(
                        f"{flow}: {what}",
                        va[0] if va else None,
                        vb[0] if vb else None,
                        va[1] if va else "",
                        vb[1] if vb else "",
                    )
                )
    return out
