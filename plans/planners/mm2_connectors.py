"""Find the MM2 connectors of a flow on a Connect worker: by connector class and cluster aliases, not name.

Operators name MM2 connectors anything (``mm2-source``, ``us-east-to-west``); what identifies the flow
``A->B`` is ``connector.class`` plus ``source.cluster.alias``/``target.cluster.alias`` in each config, so
that is what is matched. One connector per role is expected; two for the same role is ambiguous and refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from mm2ctl.core.errors import PlanError
from mm2ctl.plans.live_state import LiveState

ROLE_CLASSES = {
    "source": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "checkpoint": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    "heartbeat": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
ALL_ROLES = tuple(ROLE_CLASSES)
#: Dedicated-mode MM2 names its connectors after the class's simple name.
DEDICATED_NAMES = {role: cls.rsplit(".", 1)[1] for role, cls in ROLE_CLASSES.items()}


def parse_roles(text: str | Iterable[str]) -> tuple[str, ...]:
    """``"source,checkpoint"`` -> ("source", "checkpoint") in canonical order; unknown roles refused."""
    items = [text] if isinstance(text, str) else list(text)
    roles = {r.strip() for item in items for r in item.split(",") if r.strip()}
    unknown = roles - set(ROLE_CLASSES)
    if unknown:
        raise PlanError(f"unknown role(s) {sorted(unknown)}; choose from {', '.join(ALL_ROLES)}")
    return tuple(r for r in ALL_ROLES if r in roles)


def find_pair_connectors(live: LiveState, source: str, target: str, roles: Iterable[str]) -> dict[str, str]:
    """role -> connector name for the flow ``source->target``; roles with no connector are left out."""
    wanted = set(roles)
    found: dict[str, list[str]] = {}
    for name, overview in live.require_connect().list_connectors().items():
        config = overview.info.config if overview.info is not None else {}
        if config.get("source.cluster.alias") != source or config.get("target.cluster.alias") != target:
            continue
        for role, cls in ROLE_CLASSES.items():
            if role in wanted and config.get("connector.class") in (cls, cls.rsplit(".", 1)[1]):
                found.setdefault(role, []).append(name)
    out: dict[str, str] = {}
    for role, names in found.items():
        if len(names) > 1:
            raise PlanError(
                f"more than one {role} connector for {source}->{target}: {sorted(names)}; "
                "name the connectors with --connector instead"
            )
        out[role] = names[0]
    return {r: out[r] for r in ALL_ROLES if r in out}
