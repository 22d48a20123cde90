"""What a failover drill is given: how much load (``DrillOptions``), the MM2 flow it drills through
(``DrillTarget``), and, once that flow exists, what every step reads (``DrillContext``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.progress import Progress
from mm2ctl.drill.result import Strategy
from mm2ctl.plans.live_state import LiveState


@dataclass(frozen=True)
class DrillOptions:
    """How much data and for how long. The defaults take about 40 s on a 2-core machine."""

    partitions: int = 3
    #: Records per partition produced before MM2 exists, and how many of them retention "deleted".
    head: int = 150
    deleted: int = 60
    #: Records per second (all partitions) of the transactional producer while MM2 runs.
    rate: float = 150.0
    #: Seconds of transactional traffic before the group commits, and after it (MM2 lags behind).
    before_commit_s: float = 4.0
    after_commit_s: float = 4.0
    #: How long MM2 gets to catch up and checkpoint the group before the failover.
    settle_timeout_s: float = 120.0
    #: Abort every other transaction of a partition, and commit the group just before an aborted one.
    aborted_transactions: bool = False
    #: (g): MM2's copy throttled to this many bytes a second on the target while the traffic runs (only where
    #: the drill can set a client quota: the lab).
    #: Far below the burst's rate (MM2 copies a few percent of it), not so low that the broker, which delays a
    #: throttled client in proportion to how far it went over, keeps MM2 waiting long after the quota is lifted.
    behind_bytes_per_s: int = 3_000
    #: (g): numbered records of about 130 bytes per partition produced at once after the traffic, MM2 throttled;
    #: (g)'s copy of the group commits in the middle of them.
    behind_records: int = 1_500


@dataclass(frozen=True)
class DrillTarget:
    """The MM2 flow the drill runs through, once it exists (the lab creates one after the head is deleted)."""

    mm2_config: str
    pair: str
    connect_url: str
    topic: str
    group: str
    #: Stop the pair's connectors in (d) (``--stop-mirroring``). The lab's own drill flow always does.
    stop_mirroring: bool = True
    #: The drill owns the flow, so (f) may truncate one partition's offset syncs (``drill.sync_truncation``).
    owns_flow: bool = False
    #: Throttle MM2's copy to a rate in bytes a second, or lift it (None): (g) runs only where this is given.
    throttle: Callable[[int | None], None] | None = None


#: The options a drill runs with unless told otherwise (a frozen value, so one instance serves every call).
DEFAULT_OPTIONS = DrillOptions()

#: Called after the source topic has lost its head, before any consumer runs; returns the flow to drill.
FlowFactory = Callable[[], DrillTarget]


@dataclass(frozen=True)
class DrillContext:
    """The drill once its flow exists: the clusters' clients, the topic on both sides, the group, where plans
    go, and the notes every step adds to (in the order they are found)."""

    options: DrillOptions
    target: DrillTarget
    flow: PairConfig
    live: LiveState
    source_conf: Mapping[str, str]
    src_admin: KafkaAdmin
    dst_conf: Mapping[str, str]
    dst_admin: KafkaAdmin
    topic: str
    remote: str
    group: str
    workdir: Path
    progress: Progress
    notes: list[str] = field(default_factory=list)

    def copy_of_group(self, strategy: Strategy) -> str:
        """The copy of the group a strategy commits to: ``<group>.drill-<letter>``."""
        return f"{self.group}.drill-{strategy.value}"
