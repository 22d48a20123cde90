"""What an inspection covers and how: the user's narrowing of what MM2 mirrors (``--groups``, ``--topics``,
``--active-only``) and the inspection's other options, as every entry point gives them (``InspectOptions``).

The regexes follow the one rule of ``core.patterns`` (whole names, as MM2's filters and the planners match),
checked when the selection is made, so a bad one stops the command before it reads anything, whichever entry
point took it. They apply after MM2's own filters.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mm2ctl.core.patterns import NameRegex


@dataclass(frozen=True, slots=True)
class Selection:
    groups: str | None = None
    topics: str | None = None
    active_only: bool = False
    _groups: NameRegex = field(default_factory=NameRegex, init=False, repr=False, compare=False)
    _topics: NameRegex = field(default_factory=NameRegex, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_groups", NameRegex(self.groups, "--groups"))
        object.__setattr__(self, "_topics", NameRegex(self.topics, "--topics"))

    def group_ok(self, group: str) -> bool:
        return self._groups.matches(group)

    def topic_ok(self, topic: str) -> bool:
        return self._topics.matches(topic)


#: More records than this waiting to be copied makes a replicated partition ``lagging`` (``--lag-threshold``).
DEFAULT_LAG_THRESHOLD = 10_000
#: A replicated partition whose oldest record waiting to be copied is older than this (seconds) is ``lagging``
#: (``--lag-seconds-threshold``): twice MM2's default ``offset.flush.interval.ms``, the most a healthy MM2's
#: stored position trails what it copied (``inspector.transforms.replication_health``).
DEFAULT_LAG_SECONDS_THRESHOLD = 120.0


@dataclass(frozen=True, slots=True)
class InspectOptions:
    pairs: tuple[str, ...] = ()
    selection: Selection = field(default_factory=Selection)
    only_problems: bool = False
    #: Read records on both clusters for every row whose translation is not exact (``inspector.exact``).
    exact: bool = False
    #: More records than this waiting to be copied makes a replicated partition ``lagging``.
    lag_threshold: int = DEFAULT_LAG_THRESHOLD
    #: An oldest record waiting older than this (seconds) makes a replicated partition ``lagging``.
    lag_seconds_threshold: float = DEFAULT_LAG_SECONDS_THRESHOLD
    #: Set ``spark.sql.shuffle.partitions`` for each run from its size (off when the user chose it).
    size_shuffles: bool = True
    #: Structured Streaming checkpoints whose Kafka sources get rows like a group's
    #: (``inspector.reads.spark_query_rows``), read again at every run.
    spark_checkpoints: tuple[str, ...] = ()
    #: Start from the decoded internal topics the last process saved, and save them (``inspector.kept.topic_cache``).
    state_cache: bool = True
