"""Flow names, ``SOURCE->TARGET``: how MM2 names a replication flow (``A->B.enabled``) and how every
``--pair`` option takes one.

One parser for the whole of mm2ctl, so a malformed name is the same ``ConfigError`` (exit 3) on every
command, and no module splits on ``->`` by itself.
"""

from __future__ import annotations

from typing import NamedTuple

from mm2ctl.core.errors import ConfigError

SEPARATOR = "->"


class Flow(NamedTuple):
    """A replication flow from cluster alias ``source`` to cluster alias ``target``."""

    source: str
    target: str

    def __str__(self) -> str:
        return f"{self.source}{SEPARATOR}{self.target}"


def is_cluster_alias(text: str) -> bool:
    """Whether ``text`` can name a cluster in ``clusters``: not empty, no whitespace, no ``->``."""
    return bool(text) and SEPARATOR not in text and not any(ch.isspace() for ch in text)


def parse_flow(name: str) -> Flow:
    """``"A->B"`` -> ``Flow("A", "B")``; spaces around either alias are ignored, as MM2 ignores them.

    Raises ``ConfigError`` when ``name`` is not two aliases around one ``->``, an alias holds whitespace, or
    both aliases are the same cluster.
    """
    source, sep, target = name.partition(SEPARATOR)
    source, target = source.strip(), target.strip()
    if not sep or not source or not target or SEPARATOR in target:
        raise ConfigError(f"{name!r} is not a flow name; write it as SOURCE->TARGET")
    if not (is_cluster_alias(source) and is_cluster_alias(target)):
        raise ConfigError(f"{name!r} is not a flow name: a cluster alias holds no whitespace")
    if source == target:
        raise ConfigError(f"{name!r}: source and target are the same cluster")
    return Flow(source, target)
