"""The user's ``--groups`` and ``--topics`` regexes: checked once, with one message, wherever they are given.

``inspect``, ``exporter`` and the failover and failback planners narrow what MM2 mirrors with Python regexes
matched anywhere in a name (``re.search``; anchor with ``^…$``). A regex that does not compile is bad input:
the command stops before reading anything, naming the option.
"""

from __future__ import annotations

import re

from mm2ctl.core.errors import ConfigError


def option_regex(value: str, option: str) -> re.Pattern[str]:
    """``value`` compiled, or a ``ConfigError`` naming ``option`` (``--groups``) and why it does not compile."""
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"{option} {value!r} is not a valid regular expression: {exc}") from exc
