"""The user's ``--groups`` and ``--topics`` regexes: one meaning, checked once, wherever they are given.

Every command that takes them (``inspect``, ``exporter``, ``report``, ``plan failover``, ``plan failback``,
the spark-submit job) matches a regex against the **whole** name, as MirrorMaker 2's own ``groups`` and
``topics`` filters do: ``billing`` selects the group ``billing`` alone, ``billing.*`` adds ``billing-v2``, and
``.*billing.*`` every name that contains it. A tool that writes offsets must not widen a selection by a
substring. A regex that does not compile is bad input: the command stops before reading anything, naming the
option.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mm2ctl.core.errors import ConfigError

#: How the help of every command states the rule (the CLI's shared options quote it).
WHOLE_NAME_RULE = "a Python regex matched against the whole name, as MM2's own filters match ('billing.*')"


def option_regex(value: str, option: str) -> re.Pattern[str]:
    """``value`` compiled, or a ``ConfigError`` naming ``option`` (``--groups``) and why it does not compile."""
    try:
        return re.compile(value)
    except re.error as exc:
        raise ConfigError(f"{option} {value!r} is not a valid regular expression: {exc}") from exc


@dataclass(frozen=True, slots=True)
class NameRegex:
    """An optional ``--groups`` or ``--topics`` regex; ``None`` selects every name."""

    expression: str | None = None
    option: str = "--groups"
    _compiled: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.expression is not None:
            object.__setattr__(self, "_compiled", option_regex(self.expression, self.option))

    def matches(self, name: str) -> bool:
        """Whether ``name`` is selected: the whole name matches (``re.fullmatch``)."""
        return self._compiled is None or self._compiled.fullmatch(name) is not None
