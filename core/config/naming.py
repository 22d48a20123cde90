"""Topic names MM2 derives, exactly as Kafka's replication policies derive them (docs/design.md, "Topic names").

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
* Strimzi's ``io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy`` (mirror-maker-2-extensions 1.2+)
  only extends Kafka's identity policy, so it names topics exactly as Kafka's does.
* Any other class is custom code mm2ctl cannot run. It is accepted when the user declares which of the two
  naming schemes it follows (``mm2ctl.replication.policy.naming``), as the custom policies people write
  usually keep one of them (a common migration layout: identity names for application topics, MM2's own
  names for its internal topics, which is what the identity scheme does).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

DEFAULT_POLICY_CLASS = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
IDENTITY_POLICY_CLASS = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
STRIMZI_IDENTITY_POLICY_CLASS = "io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy"
#: The classes whose naming mm2ctl knows, and the scheme each follows.
KNOWN_POLICY_NAMING = {
    DEFAULT_POLICY_CLASS: "default",
    IDENTITY_POLICY_CLASS: "identity",
    STRIMZI_IDENTITY_POLICY_CLASS: "identity",
}
#: The naming schemes a custom class may declare (``mm2ctl.replication.policy.naming``, ``--policy-naming``).
NAMING_SCHEMES = ("default", "identity")
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
    #: The class MM2 is configured with, when it is not the built-in class of this naming scheme.
    configured_class: str | None = None

    @property
    def class_name(self) -> str:
        """The Java class MM2 would instantiate for this policy."""
        if self.configured_class is not None:
            return self.configured_class
        return IDENTITY_POLICY_CLASS if self.is_identity else DEFAULT_POLICY_CLASS

    @property
    def naming(self) -> str:
        """``identity`` or ``default``: the naming scheme this policy follows."""
        return "identity" if self.is_identity else "default"

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
    naming: str | None = None,
) -> ReplicationPolicy:
    """Build the policy MM2 would build from these settings.

    ``separator=None`` means "not configured": then Kafka ignores ``internal_separator_enabled`` and the
    separator is ``.`` everywhere. ``naming`` (``default`` or ``identity``) declares the scheme of a custom
    class; for a known class it must agree with the class. Raises ValueError for a custom class without a
    declared naming, or a declaration that contradicts a known class (the config reader turns that into a
    ConfigError naming the key).
    """
    known = KNOWN_POLICY_NAMING.get(class_name)
    if naming is not None and naming not in NAMING_SCHEMES:
        raise ValueError(f"naming must be one of {', '.join(NAMING_SCHEMES)}, not {naming!r}")
    if known is None and naming is None:
        raise ValueError(f"unsupported replication policy class {class_name!r}")
    if known is not None and naming is not None and naming != known:
        raise ValueError(f"{class_name} names topics the {known} way, not the {naming} way")
    scheme = known or naming
    builtin = IDENTITY_POLICY_CLASS if scheme == "identity" else DEFAULT_POLICY_CLASS
    return ReplicationPolicy(
        is_identity=scheme == "identity",
        separator=DEFAULT_SEPARATOR if separator is None else separator,
        internal_separator_enabled=True if separator is None else internal_separator_enabled,
        heartbeats_topic_name=heartbeats_topic_name,
        source_cluster_alias=source_cluster_alias,
        configured_class=None if class_name == builtin else class_name,
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
