"""The user's narrowing of what MM2 mirrors: ``--groups``, ``--topics``, ``--active-only``.

The regexes are checked when the selection is made (``core.patterns``), so a bad one stops the command before
it reads anything, whichever entry point took it (``mm2ctl inspect``, ``mm2ctl exporter``, the spark-submit
job). They match anywhere in a name (anchor with ``^…$``), after MM2's own filters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mm2ctl.core.patterns import option_regex


@dataclass(frozen=True, slots=True)
class Selection:
    groups: str | None = None
    topics: str | None = None
    active_only: bool = False
    _groups: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)
    _topics: re.Pattern[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.groups is not None:
            object.__setattr__(self, "_groups", option_regex(self.groups, "--groups"))
        if self.topics is not None:
            object.__setattr__(self, "_topics", option_regex(self.topics, "--topics"))

    def group_ok(self, group: str) -> bool:
        return self._groups is None or self._groups.search(group) is not None

    def topic_ok(self, topic: str) -> bool:
        return self._topics is None or self._topics.search(topic) is not None
