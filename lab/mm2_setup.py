"""What MirrorMaker 2 runs in the lab: the three connectors' configs and the matching MM2 properties file.

Both are derived from one ``Mm2Setup`` so the Connect-mode connectors and the ``mm2.properties`` that
``mm2ctl inspect --mm2-config`` reads can never disagree. Intervals are seconds, not MM2's minutes, so
tests see topics, groups, checkpoints and synced group offsets react quickly.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def connector_names(self) -> dict[str, str]:
        """MM2 role → connector name."""
        return {role: f"{self.connector_prefix}-{role}" for role in self.roles}

    def _common(self) -> dict[str, str]:
        return {
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

{s}->{t}.enabled = true
{t}->{s}.enabled = false

replication.policy.class = {POLICY_CLASSES[self.replication_policy]}
offset-syncs.topic.location = {self.offset_syncs_location}

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
offset-syncs.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
"""
