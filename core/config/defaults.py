"""Kafka's defaults for the MM2 settings mm2ctl compares between a flow's connectors, by release.

A connector that leaves a setting unset uses Kafka's default for it, as defined by the release it runs on
(``MirrorConnectorConfig``, ``ReplicationPolicy``, ``MirrorClientConfig``). Two connectors agree when the
values they will *use* are equal: one that sets ``replication.policy.separator = .`` and one that leaves it
unset name the same topics.

The defaults have been stable since the releases that introduced them:

- ``replication.policy.class``: ``DefaultReplicationPolicy``, in every release.
- ``replication.policy.separator``: ``.``, in every release.
- ``replication.policy.internal.topic.separator.enabled``: the separator has named the internal topics since
  3.1 (KIP-690); the key (3.5) keeps that as its default, ``true``. Before 3.1 internal topics always used ``.``,
  which is the key at ``false``.
- ``offset-syncs.topic.location``: ``source`` (the key came with 3.0; before, the syncs always lived there).

A release mm2ctl does not know (None, or a malformed string) takes the newest defaults.
"""

from __future__ import annotations

import re

from mm2ctl.core.config.naming import DEFAULT_POLICY_CLASS, DEFAULT_SEPARATOR

#: key -> ((first release, default from it on), …), newest first; a release older than every entry takes the
#: last entry's ``before`` default (``_BEFORE``).
_DEFAULTS: dict[str, tuple[tuple[tuple[int, int], str], ...]] = {
    "replication.policy.class": (((0, 0), DEFAULT_POLICY_CLASS),),
    "replication.policy.separator": (((0, 0), DEFAULT_SEPARATOR),),
    "replication.policy.internal.topic.separator.enabled": (((3, 1), "true"), ((0, 0), "false")),
    "offset-syncs.topic.location": (((0, 0), "source"),),
}


def _release(text: str | None) -> tuple[int, int] | None:
    match = re.match(r"\s*(\d+)\.(\d+)", text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def kafka_default(key: str, release: str | None = None) -> str | None:
    """The value a connector of Kafka ``release`` uses for ``key`` when it is unset; None when Kafka has no
    default mm2ctl compares (a key of mm2ctl's own, or one not in the table)."""
    entries = _DEFAULTS.get(key)
    if entries is None:
        return None
    version = _release(release)
    for since, value in entries:
        if version is None or version >= since:
            return value
    return entries[-1][1]


def default_origin(release: str | None) -> str:
    """How a default is named as the origin of a value."""
    return f"Kafka {release}'s default" if _release(release) else "Kafka's default"


__all__ = ["default_origin", "kafka_default"]
