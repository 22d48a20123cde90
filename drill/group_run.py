"""One group-types drill in progress (``GroupTypesRun``): its options, its names (topic, groups, output topics)
and what each group has processed so far, which every step of ``drill.group_types`` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mm2ctl.core.progress import Progress
from mm2ctl.lab.control import LabInfo

#: The drill's topic has these partitions.
PARTITIONS = (0, 1)
#: How a row's group was moved: left to MirrorMaker 2, mm2ctl's failover, mm2ctl's failback after it.
METHODS = ("mm2", "mm2ctl", "failback")
#: (partition, sequence number): one record of the drill's topic, by content.
Seq = tuple[int, int]


@dataclass(frozen=True)
class GroupTypesOptions:
    """How much data and how long to wait. The defaults take about 70 s on the lab (2 cores, busy); mm2ctl's
    plan and apply (four runs of ``python -m mm2ctl``) are half of it."""

    #: Records per partition before the groups stop on the source, after it, and before the failback.
    first: int = 60
    later: int = 40
    more: int = 20
    #: Records the share group accepts per partition on the source (each below ``first``).
    accepted: tuple[int, ...] = (40, 25)
    #: The offset the share group releases in every partition, below every ``accepted`` (-1: none). It leaves a
    #: gap: the group resumes there after a move, and what it accepted past it is delivered again, as the plan
    #: counts it.
    released: int = 10
    #: How long MM2 gets to sync the classic and consumer groups' offsets, and how long they must then stay
    #: unchanged (MM2 syncs every second in the lab) to count as synced.
    mm2_sync_timeout_s: float = 60.0
    mm2_sync_stable_s: float = 3.0
    #: How long any one client may take to reach the end of the topic. A share consumer cannot tell where it
    #: is: it stops ``share_idle_s`` after its last delivery (before the end), or ``share_quiet_s`` after it
    #: subscribed when nothing came at all. On the lab a share consumer's first delivery comes about 5 s after
    #: it subscribes (its assignment arrives with the next share-group heartbeat, every 5 s by default), so
    #: ``share_quiet_s`` must be well above that.
    client_timeout_s: float = 90.0
    share_idle_s: float = 10.0
    share_quiet_s: float = 9.0


#: The options a drill runs with unless told otherwise (a frozen value, so one instance serves every call).
DEFAULT_OPTIONS = GroupTypesOptions()


@dataclass
class GroupTypesRun:
    """One drill in progress: where it runs and what each group has processed so far."""

    lab: LabInfo
    name: str
    workdir: Path
    progress: Progress
    options: GroupTypesOptions
    pair: str = ""
    mm2_config: str = ""
    connectors: list[str] = field(default_factory=list)
    #: The flow's MirrorCheckpointConnector.
    checkpoint_connector: str = ""
    #: group -> the records it has processed (consumed, acknowledged) so far, on any cluster.
    processed: dict[str, set[Seq]] = field(default_factory=dict)
    produced: int = 0

    @property
    def src(self) -> dict[str, str]:
        return {"bootstrap.servers": self.lab.source.bootstrap}

    @property
    def dst(self) -> dict[str, str]:
        return {"bootstrap.servers": self.lab.target.bootstrap}

    @property
    def topic(self) -> str:
        return f"iso-{self.name}-in"

    @property
    def remote(self) -> str:
        return self.topic if self.lab.replication_policy == "identity" else f"{self.name}src.{self.topic}"

    def group(self, method: str, group_type: str) -> str:
        return f"iso-{self.name}-{'mm2' if method == 'mm2' else 'ctl'}-{group_type}"

    def output(self, label: str) -> str:
        """A streams application's output topic: ``iso-<name>out-…`` is outside this flow's ``iso-<name>-.*``
        and the lab flow's filters, so nothing mirrors it."""
        return f"iso-{self.name}out-{label}"
