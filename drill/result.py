"""What the failover drill found: per strategy (``Strategy``), the records each partition lost, read again and
read from aborted transactions (``StrategyOutcome``), and the drill as a whole (``DrillResult``), which the CLI
renders as its table (``cli.render``) or JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any


class Strategy(StrEnum):
    RAW = "a"
    MM2 = "b"
    CONSERVATIVE = "c"
    VERIFIED = "d"
    FAILBACK = "e"
    TIMESTAMP = "f"
    BEHIND = "g"


LABELS = {
    Strategy.RAW: "raw source offset copied",
    Strategy.MM2: "MM2 sync.group.offsets",
    Strategy.CONSERVATIVE: "mm2ctl conservative (--source-unavailable)",
    Strategy.VERIFIED: "mm2ctl verified (plan failover)",
    Strategy.FAILBACK: "mm2ctl failback after (d) (plan failback)",
    Strategy.TIMESTAMP: "mm2ctl timestamp (syncs of p0 truncated)",
    Strategy.BEHIND: "mm2ctl --stop-mirroring, MM2 throttled behind",
}

#: Strategies whose offsets are on the source cluster: a consumer resumes there (the others resume on the target).
ON_SOURCE = frozenset({Strategy.FAILBACK})


@dataclass(frozen=True)
class PartitionOutcome:
    partition: int
    source_committed: int
    commit_seq: int
    produced: int
    target_offset: int | None
    lost: int
    duplicated: int
    #: Source offsets between the newest offset sync at or below the commit point and the next one (or the
    #: partition's end): the sync interval MM2 actually left there. None when no sync covers the point.
    sync_interval: int | None = None
    #: Records of aborted transactions (MM2's copies) read before the first record at the commit point.
    aborted: int = 0


@dataclass(frozen=True)
class StrategyOutcome:
    strategy: Strategy
    label: str
    partitions: tuple[PartitionOutcome, ...]
    #: A one-line statement of the goal (None: measured, no goal) and whether it was met.
    goal: str | None
    met: bool | None
    detail: str = ""

    @property
    def lost(self) -> int:
        return sum(p.lost for p in self.partitions)

    @property
    def duplicated(self) -> int:
        return sum(p.duplicated for p in self.partitions)

    @property
    def aborted(self) -> int:
        return sum(p.aborted for p in self.partitions)


@dataclass(frozen=True)
class DrillResult:
    replication_policy: str
    pair: str
    topic: str
    remote_topic: str
    group: str
    partitions: int
    records: int
    deleted_before_mirroring: int
    transactions: int
    offset_lag_max: int
    strategies: tuple[StrategyOutcome, ...]
    seconds: float
    notes: tuple[str, ...] = ()
    #: Aborted transactions and their records (the aborted-transactions load), and how many of those records
    #: MM2 copied to the target.
    aborted_transactions: int = 0
    aborted_records: int = 0
    aborted_copied: int = 0

    @property
    def goals_met(self) -> bool:
        return all(s.met is not False for s in self.strategies)

    def outcome(self, strategy: Strategy) -> StrategyOutcome:
        return next(s for s in self.strategies if s.strategy is strategy)

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["goals_met"] = self.goals_met
        for s, out in zip(self.strategies, doc["strategies"], strict=True):
            out["strategy"] = s.strategy.value
            out["lost"], out["duplicated"], out["aborted"] = s.lost, s.duplicated, s.aborted
        return doc
