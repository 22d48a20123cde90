"""Find the MM2 connectors of a flow on a Connect worker: by connector class and cluster aliases, not name.

Operators name MM2 connectors anything (``mm2-source``, ``us-east-to-west``); what identifies the flow
``A->B`` is ``connector.class`` plus ``source.cluster.alias``/``target.cluster.alias`` in each config, so
that is what is matched. One connector per role is expected; two for the same role is ambiguous and refused.
"""

from __future__ import annotations

from collections.abc import Iterable

from mm2ctl.core.config.connector_names import ALL_ROLES, DEDICATED_NAMES, ROLE_CLASSES, connectors_by_role
from mm2ctl.core.errors import PlanError
from mm2ctl.plans.live_state import LiveState

__all__ = ["ALL_ROLES", "DEDICATED_NAMES", "ROLE_CLASSES", "find_pair_connectors", "parse_roles"]


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
    configs = {
        name: overview.info.config if overview.info is not None else {}
        for name, overview in live.require_connect().list_connectors().items()
    }
    out: dict[str, str] = {}
    for role, names in connectors_by_role(configs, source, target, roles).items():
        if len(names) > 1:
            raise PlanError(
                f"more than one {role} connector for {source}->{target}: {names}; "
                "name the connectors with --connector instead"
            )
        out[role] = names[0]
    return out
