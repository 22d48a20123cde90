"""What MirrorMaker 2 runs in the lab: the three connectors' configs and the matching MM2 properties file.

Both are derived from one ``Mm2Setup`` so the Connect-mode connectors and the ``mm2.properties`` that
``mm2ctl inspect --mm2-config`` reads can never disagree. Intervals are seconds, not MM2's minutes, so
tests see topics, groups, checkpoints and synced group offsets react quickly.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field

POLICY_CLASSES = {
    "default": "org.apache.kafka.connect.mirror.DefaultReplicationPolicy",
    "identity": "org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
}

SOURCE_CONNECTOR_CLASS = "org.apache.kafka.connect.mirror.MirrorSourceConnector"
CHECKPOINT_CONNECTOR_CLASS = "org.apache.kafka.connect.mirror.MirrorCheckpointConnector"
HEARTBEAT_CONNECTOR_CLASS = "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector"

ROLES = ("source", "checkpoint", "heartbeat")

#: Topics and groups whose names start with this belong to isolated flows (``lab.add_flow``); the lab's own
#: primary->backup flow excludes them, so a test that stops, resets or truncates its flow disturbs no other.
ISOLATED_PREFIX = "iso-"

#: Kafka's default topic/group excludes, plus the isolated flows' names.
LAB_TOPICS_EXCLUDE = r"mm2.*\.internal, .*\.replica, __.*, iso-.*"
LAB_GROUPS_EXCLUDE = r"console-consumer-.*, connect-.*, __.*, iso-.*"

_BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"


def _escape(value: str) -> str:
    """A properties-file value: ``\\`` is an escape there, so a regex's ``\\.`` must be written ``\\\\.``."""
    return value.replace("\\", "\\\\")


@dataclass(frozen=True, slots=True)
class Mm2Setup:
    source_alias: str
    target_alias: str
    source_bootstrap: str
    target_bootstrap: str
    replication_policy: str  # "default" | "identity"
    offset_syncs_location: str  # "source" | "target"
    connector_prefix: str = "mm2-primary-backup"
    topics: str = ".*"
    topics_exclude: str = LAB_TOPICS_EXCLUDE
    groups: str = ".*"
    groups_exclude: str = LAB_GROUPS_EXCLUDE
    roles: tuple[str, ...] = ROLES
    #: Java client security settings the connectors use for both clusters (MM2's principal); empty: PLAINTEXT.
    connector_client: Mapping[str, str] = field(default_factory=dict)
    #: The same for the MM2 properties file mm2ctl reads (mm2ctl's principal).
    file_client: Mapping[str, str] = field(default_factory=dict)
    #: How the KafkaMirrorMaker2 resource authenticates mm2ctl (``tls`` and ``authentication`` of a cluster
    #: spec); empty: neither.
    resource_cluster_security: Mapping[str, object] = field(default_factory=dict)
    #: More settings of the MirrorSourceConnector (``emit.offset-syncs.enabled``,
    #: ``source.consumer.isolation.level``, ``exactly.once.support``), also in the file as ``A->B.<key>``.
    source_settings: Mapping[str, str] = field(default_factory=dict)

    @property
    def connector_names(self) -> dict[str, str]:
        """MM2 role → connector name."""
        return {role: f"{self.connector_prefix}-{role}" for role in self.roles}

    @property
    def offset_syncs_disabled(self) -> bool:
        """The flow runs with ``emit.offset-syncs.enabled=false`` (KIP-1031)."""
        return self.source_settings.get("emit.offset-syncs.enabled", "true").strip().lower() == "false"

    def _common(self) -> dict[str, str]:
        common = self._with_offset_syncs()
        if self.offset_syncs_disabled:
            # MirrorSourceConnector refuses any offset-syncs.topic.* setting once offset syncs are disabled
            # ("can't setup offset-syncs feature while emit.offset-syncs.enabled set to false").
            common = {k: v for k, v in common.items() if not k.startswith("offset-syncs.topic.")}
        return common

    def _with_offset_syncs(self) -> dict[str, str]:
        return {
            **{f"source.cluster.{k}": v for k, v in self.connector_client.items()},
            **{f"target.cluster.{k}": v for k, v in self.connector_client.items()},
            "source.cluster.alias": self.source_alias,
            "target.cluster.alias": self.target_alias,
            "source.cluster.bootstrap.servers": self.source_bootstrap,
            "target.cluster.bootstrap.servers": self.target_bootstrap,
            "replication.policy.class": POLICY_CLASSES[self.replication_policy],
            "offset-syncs.topic.location": self.offset_syncs_location,
            "offset-syncs.topic.replication.factor": "1",
            "checkpoints.topic.replication.factor": "1",
            "heartbeats.topic.replication.factor": "1",
            "replication.factor": "1",
            "key.converter": _BYTES,
            "value.converter": _BYTES,
            "header.converter": _BYTES,
            "tasks.max": "1",
        }

    def connector_configs(self) -> dict[str, dict[str, str]]:
        """Connector name → config, for ``PUT /connectors/{name}/config``."""
        common = self._common()
        names = {role: f"{self.connector_prefix}-{role}" for role in ROLES}
        configs = {
            names["source"]: {
                **common,
                "connector.class": SOURCE_CONNECTOR_CLASS,
                "topics": self.topics,
                "topics.exclude": self.topics_exclude,
                "refresh.topics.interval.seconds": "1",
                "sync.topic.configs.interval.seconds": "5",
                "sync.topic.acls.enabled": "false",
                **self.source_settings,
            },
            names["checkpoint"]: {
                **common,
                "connector.class": CHECKPOINT_CONNECTOR_CLASS,
                "topics": self.topics,
                "topics.exclude": self.topics_exclude,
                "groups": self.groups,
                "groups.exclude": self.groups_exclude,
                "refresh.groups.interval.seconds": "1",
                "emit.checkpoints.enabled": "true",
                "emit.checkpoints.interval.seconds": "1",
                "sync.group.offsets.enabled": "true",
                "sync.group.offsets.interval.seconds": "1",
            },
            names["heartbeat"]: {
                **common,
                "connector.class": HEARTBEAT_CONNECTOR_CLASS,
                "emit.heartbeats.interval.seconds": "1",
            },
        }
        return {names[role]: configs[names[role]] for role in self.roles}

    def mm2_properties(self) -> str:
        """The same setup as a MirrorMaker 2 properties file (``connect-mirror-maker.properties`` format)."""
        s, t = self.source_alias, self.target_alias
        return f"""# MirrorMaker 2 configuration of the mm2ctl lab, written by `mm2ctl lab up`.
# The lab runs these flows as Connect-mode connectors on a distributed worker bootstrapped to '{t}';
# this file describes the same setup in MM2's own format, for `mm2ctl inspect --mm2-config`.

clusters = {s}, {t}
{s}.bootstrap.servers = {self.source_bootstrap}
{t}.bootstrap.servers = {self.target_bootstrap}
{self._file_security()}
{s}->{t}.enabled = true
{t}->{s}.enabled = false
{self._flow_settings()}
replication.policy.class = {POLICY_CLASSES[self.replication_policy]}
{"" if self.offset_syncs_disabled else f"offset-syncs.topic.location = {self.offset_syncs_location}"}

topics = {_escape(self.topics)}
topics.exclude = {_escape(self.topics_exclude)}
groups = {_escape(self.groups)}
groups.exclude = {_escape(self.groups_exclude)}

emit.checkpoints.enabled = true
emit.checkpoints.interval.seconds = 1
sync.group.offsets.enabled = true
sync.group.offsets.interval.seconds = 1
refresh.topics.interval.seconds = 1
refresh.groups.interval.seconds = 1
emit.heartbeats.interval.seconds = 1

# Single-broker clusters: every topic MM2 creates gets one replica.
replication.factor = 1
{"" if self.offset_syncs_disabled else "offset-syncs.topic.replication.factor = 1"}
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
"""

    def _flow_settings(self) -> str:
        """The source connector's extra settings, as the flow's (``A->B.<key>``)."""
        flow = f"{self.source_alias}->{self.target_alias}"
        return "".join(f"{flow}.{k} = {_escape(v)}\n" for k, v in self.source_settings.items())

    def _file_security(self) -> str:
        if not self.file_client:
            return ""
        lines = "".join(f"{k} = {_escape(v)}\n" for k, v in self.file_client.items())
        return f"\n# How mm2ctl connects to both clusters (its own least-privilege principal).\n{lines}"

    def strimzi_resource(self, name: str) -> str:
        """The same setup as a Strimzi ``KafkaMirrorMaker2`` resource (kafka.strimzi.io/v1beta2), whose Secrets
        are the lab's ``secrets/`` folder: what ``--mm2-config`` with ``--secrets`` reads."""
        import yaml

        def cluster(alias: str, bootstrap: str) -> dict[str, object]:
            # A copy per cluster: shared objects would be written as YAML anchors, which people rarely write.
            return {
                "alias": alias,
                "bootstrapServers": bootstrap,
                **copy.deepcopy(dict(self.resource_cluster_security)),
            }

        connectors = self.connector_configs()
        names = {role: f"{self.connector_prefix}-{role}" for role in ROLES}

        def connector_config(role: str) -> dict[str, str]:
            config = connectors[names[role]]
            skip = ("connector.class", "tasks.max", "topics", "topics.exclude", "groups", "groups.exclude")
            return {
                k: v
                for k, v in config.items()
                if not k.startswith(("source.cluster.", "target.cluster.")) and k not in skip
            }

        mirror: dict[str, object] = {"sourceCluster": self.source_alias, "targetCluster": self.target_alias}
        for role, key in (
            ("source", "sourceConnector"),
            ("checkpoint", "checkpointConnector"),
            ("heartbeat", "heartbeatConnector"),
        ):
            if names[role] in connectors:
                mirror[key] = {"tasksMax": 1, "config": connector_config(role)}
        mirror.update(
            {
                "topicsPattern": self.topics,
                "topicsExcludePattern": self.topics_exclude,
                "groupsPattern": self.groups,
                "groupsExcludePattern": self.groups_exclude,
            }
        )
        resource = {
            "apiVersion": "kafka.strimzi.io/v1beta2",
            "kind": "KafkaMirrorMaker2",
            "metadata": {"name": name},
            "spec": {
                "replicas": 1,
                "connectCluster": self.target_alias,
                "clusters": [
                    cluster(self.source_alias, self.source_bootstrap),
                    cluster(self.target_alias, self.target_bootstrap),
                ],
                "mirrors": [mirror],
            },
        }
        header = (
            "# The mm2ctl lab's MirrorMaker 2 setup as a Strimzi KafkaMirrorMaker2 resource (written by mm2ctl lab).\n"
            "# It describes the same setup as the lab's MM2 properties file; read it with\n"
            "#   mm2ctl inspect --mm2-config <this file> --secrets <lab folder>/secrets\n"
        )
        return header + yaml.safe_dump(resource, sort_keys=False, default_flow_style=False, width=120)
