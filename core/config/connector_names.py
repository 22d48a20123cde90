"""MirrorMaker 2's three connectors as a Connect worker or dedicated MM2 names and stores them.

What identifies a flow's connectors on a worker is their class and cluster aliases, never their names
(operators name them anything); dedicated-mode MM2 names them after the class. MirrorSourceConnector stores
one source offset per replicated partition, ``{"cluster","topic","partition"} -> {"offset": u}`` with ``u``
the last upstream offset it copied (docs/design.md, "Connect offsets" and "MM2's position"), whether read over REST or
from an offsets topic.

Pure functions only: the planners and the inspector read the worker and the topics, and ask these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeGuard

ROLE_CLASSES = {
    "source": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "checkpoint": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    "heartbeat": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
ALL_ROLES = tuple(ROLE_CLASSES)
#: Dedicated-mode MM2 names its connectors after the class's simple name.
DEDICATED_NAMES = {role: cls.rsplit(".", 1)[1] for role, cls in ROLE_CLASSES.items()}


def connectors_by_role(
    configs: Mapping[str, Mapping[str, str]], source: str, target: str, roles: Iterable[str] = ALL_ROLES
) -> dict[str, list[str]]:
    """role -> the names of the connectors (sorted) whose config runs that role for ``source->target``.

    ``configs`` is connector name -> its config, as ``GET /connectors?expand=info`` gives it. Roles with no
    connector are left out; more than one name for a role is the caller's ambiguity to report.
    """
    wanted = set(roles)
    found: dict[str, list[str]] = {}
    for name, config in configs.items():
        if config.get("source.cluster.alias") != source or config.get("target.cluster.alias") != target:
            continue
        for role, cls in ROLE_CLASSES.items():
            if role in wanted and config.get("connector.class") in (cls, cls.rsplit(".", 1)[1]):
                found.setdefault(role, []).append(name)
    return {r: sorted(found[r]) for r in ALL_ROLES if r in found}


def next_offsets_to_copy(
    entries: Iterable[tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]], source_alias: str
) -> dict[tuple[str, int], int]:
    """(topic, partition) -> the next upstream offset MirrorSourceConnector will copy (its stored ``u`` + 1).

    ``entries`` are its stored (partition map, offset map) pairs; a null or malformed offset, or a partition
    of another source cluster, is not a position and is skipped.
    """
    out: dict[tuple[str, int], int] = {}
    for partition, offset in entries:
        if not isinstance(partition, Mapping) or not isinstance(offset, Mapping):
            continue
        topic, number, stored = partition.get("topic"), partition.get("partition"), offset.get("offset")
        if partition.get("cluster") not in (None, source_alias):
            continue
        if not isinstance(topic, str) or not _is_int(number) or not _is_int(stored):
            continue
        out[(topic, number)] = stored + 1
    return out


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
