"""Topic names MM2 derives, exactly as Kafka's replication policies derive them (DESIGN §4).

Everything here follows ``DefaultReplicationPolicy`` / ``IdentityReplicationPolicy`` and the
``ReplicationPolicy`` interface defaults in ``connect/mirror-client``. A wrong name is silent and
expensive: an inspection that reads ``mm2-offset-syncs.A.internal`` when MM2 writes
``mm2-offset-syncs.B.internal`` sees an empty topic and reports every group as unsynced. So the rules live
in one place and every part of mm2ctl asks this module, never formats a name itself.

Facts carried over from Kafka's source:

* ``replication.policy.separator`` (default ``.``) separates the source alias from the topic in remote
  names. Since Kafka 3.1 (KIP-690) it is also used *inside* the internal names, in every position:
  ``mm2-offset-syncs<sep><alias><sep>internal`` and ``<alias><sep>checkpoints<sep>internal``. Setting
  ``replication.policy.internal.topic.separator.enabled=false`` restores ``.`` for internal names, and
  Kafka only reads that flag when a separator is explicitly configured.
* The offset-syncs topic is named after "the other" cluster: with ``offset-syncs.topic.location=source``
  (the default) it lives on the source and carries the *target* alias; with ``target`` it lives on the
  target and carries the *source* alias.
* The checkpoints topic is ``checkpointsTopic(source)`` under both policies: Identity inherits it.
* ``IdentityReplicationPolicy`` keeps topic names, except heartbeats (any name ending with the heartbeats
  topic name), which it still prefixes like the default policy so that cycles of heartbeats stay visible.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

DEFAULT_POLICY_CLASS = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY_CLASS = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
DEFAULT_SEPARATOR = "."
DEFAULT_HEARTBEATS_TOPIC = "heartbeats"
OFFSET_SYNCS_PREFIX = "mm2-offset-syncs"


class OffsetSyncsLocation(StrEnum):
    """Where MM2 keeps the offset-syncs topic (``offset-syncs.topic.location``)."""

    SOURCE = "source"
    TARGET = "target"


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split(Pattern.quote(sep))`` as Java does it: trailing empty strings are dropped."""
    parts = text.split(separator)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


@dataclass(frozen=True, slots=True)
class ReplicationPolicy:
    """A configured MM2 replication policy: how remote and internal topics are named.

    Build one with :func:`replication_policy`. ``source_cluster_alias`` only matters for the identity
    policy, where it is the answer to :meth:`topic_source` (MM2's connectors configure it the same way).
    """

    is_identity: bool = False
    separator: str = DEFAULT_SEPARATOR
    internal_separator_enabled: bool = True
    heartbeats_topic_name: str = DEFAULT_HEARTBEATS_TOPIC
    source_cluster_alias: str | None = None

    @property
    def class_name(self) -> str:
        """The Java class MM2 would instantiate for this policy."""
        return IDENTITY_POLICY_CLASS if self.is_identity else DEFAULT_POLICY_CLASS

    @property
    def internal_separator(self) -> str:
        """The separator used inside MM2's internal topic names (``.`` when the 3.1 behaviour is off)."""
        return self.separator if self.internal_separator_enabled else "."

    # --- remote topics ------------------------------------------------------------------------------

    def _looks_like_heartbeat(self, topic: str) -> bool:
        return topic.endswith(self.heartbeats_topic_name)

    def _default_topic_source(self, topic: str) -> str | None:
        parts = _java_split(topic, self.separator)
        return parts[0] if len(parts) >= 2 else None

    def _default_upstream_topic(self, topic: str) -> str | None:
        source = self._default_topic_source(topic)
        return None if source is None else topic[len(source) + len(self.separator) :]

    def remote_topic(self, source_alias: str, topic: str) -> str:
        """The name ``topic`` from cluster ``source_alias`` gets on the target (``formatRemoteTopic``)."""
        if self.is_identity and not self._looks_like_heartbeat(topic):
            return topic
        return f"{source_alias}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        """The alias a remote topic came from, or None when the name does not say (``topicSource``)."""
        if self.is_identity and not self._looks_like_heartbeat(topic):
            return self.source_cluster_alias
        return self._default_topic_source(topic)

    def upstream_topic(self, topic: str) -> str | None:
        """The topic's name one hop upstream, or None when it is not a remote topic (``upstreamTopic``).

        The identity policy returns ``topic`` itself: any topic may be remote and keeps its name.
        """
        if self.is_identity and not self._looks_like_heartbeat(topic):
            return topic
        return self._default_upstream_topic(topic)

    def original_topic(self, topic: str) -> str:
        """The name on the first cluster of a multi-hop chain (``originalTopic``)."""
        seen = topic
        while True:
            upstream = self.upstream_topic(seen)
            if upstream is None or upstream == seen:
                return seen
            seen = upstream

    # --- internal topics ----------------------------------------------------------------------------

    def _internal_suffix(self) -> str:
        return f"{self.internal_separator}internal"

    def _checkpoints_suffix(self) -> str:
        return f"{self.internal_separator}checkpoints{self._internal_suffix()}"

    def offset_syncs_topic(self, cluster_alias: str) -> str:
        """``mm2-offset-syncs<sep><alias><sep>internal``; pass the alias :func:`offset_syncs_alias` picks."""
        return f"{OFFSET_SYNCS_PREFIX}{self.internal_separator}{cluster_alias}{self._internal_suffix()}"

    def checkpoints_topic(self, source_alias: str) -> str:
        """``<source><sep>checkpoints<sep>internal``, on the target cluster, under both policies."""
        return f"{source_alias}{self._checkpoints_suffix()}"

    def heartbeats_topic(self) -> str:
        """The local heartbeats topic name (``heartbeats`` unless renamed)."""
        return self.heartbeats_topic_name

    def is_heartbeats_topic(self, topic: str) -> bool:
        """True for ``heartbeats`` and its remote copies (``A.heartbeats``, ``B.A.heartbeats``)."""
        return self.original_topic(topic) == self.heartbeats_topic_name

    def is_checkpoints_topic(self, topic: str) -> bool:
        """True for any cluster's checkpoints topic under this separator."""
        return topic.endswith(self._checkpoints_suffix())

    def is_mm2_internal_topic(self, topic: str) -> bool:
        """True for MM2's own internal topics (offset syncs, checkpoints, ``mm2-offsets`` …)."""
        return topic.endswith(self._internal_suffix())

    def is_internal_topic(self, topic: str) -> bool:
        """True for topics MM2 never replicates: its own, Kafka's (``__…``, ``.…``) and Connect's."""
        return (
            self.is_mm2_internal_topic(topic)
            or topic.startswith("__")
            or topic.startswith(".")
            or topic.endswith("-internal")
            or topic.endswith(".internal")
        )


def replication_policy(
    class_name: str = DEFAULT_POLICY_CLASS,
    *,
    separator: str | None = None,
    internal_separator_enabled: bool = True,
    heartbeats_topic_name: str = DEFAULT_HEARTBEATS_TOPIC,
    source_cluster_alias: str | None = None,
) -> ReplicationPolicy:
    """Build the policy MM2 would build from these settings.

    ``separator=None`` means "not configured": then Kafka ignores ``internal_separator_enabled`` and the
    separator is ``.`` everywhere. Raises ValueError for a class other than the two built-in policies
    (the config reader turns that into a ConfigError naming the key).
    """
    if class_name not in (DEFAULT_POLICY_CLASS, IDENTITY_POLICY_CLASS):
        raise ValueError(f"unsupported replication policy class {class_name!r}")
    return ReplicationPolicy(
        is_identity=class_name == IDENTITY_POLICY_CLASS,
        separator=DEFAULT_SEPARATOR if separator is None else separator,
        internal_separator_enabled=True if separator is None else internal_separator_enabled,
        heartbeats_topic_name=heartbeats_topic_name,
        source_cluster_alias=source_cluster_alias,
    )


def offset_syncs_alias(source: str, target: str, location: OffsetSyncsLocation | str) -> str:
    """The alias in the offset-syncs topic name: the *other* cluster from where the topic lives."""
    return target if OffsetSyncsLocation(location) is OffsetSyncsLocation.SOURCE else source


def offset_syncs_cluster(source: str, target: str, location: OffsetSyncsLocation | str) -> str:
    """The alias of the cluster that holds the offset-syncs topic."""
    return source if OffsetSyncsLocation(location) is OffsetSyncsLocation.SOURCE else target


def dedicated_offsets_topic(source: str) -> str:
    """Dedicated-mode MM2's default connector-offsets topic on the target (``mm2-offsets.<source>.internal``).

    MirrorMakerConfig hard-codes the dots here; the replication separator does not apply.
    """
    return f"mm2-offsets.{source}.internal"


def dedicated_group_id(source: str) -> str:
    """Dedicated-mode MM2's default Connect worker group id for a pair (``<source>-mm2``)."""
    return f"{source}-mm2"


_LEGAL_TOPIC_CHARS = re.compile(r"[A-Za-z0-9._-]+")


def is_legal_topic_fragment(text: str) -> bool:
    """True when ``text`` uses only characters Kafka allows in topic names."""
    return bool(_LEGAL_TOPIC_CHARS.fullmatch(text))
