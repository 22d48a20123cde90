"""What ``plan failover`` is asked (``FailoverOptions``) and where it reads the groups' positions from
(``Source``); the planner's steps and the apply-time translation read them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from mm2ctl.core.translation.positions import Fallback
from mm2ctl.plans.planners.failover.spark_queries import SparkRequest


class Source(StrEnum):
    SYNCS = "syncs"
    CHECKPOINTS = "checkpoints"


@dataclass(frozen=True)
class FailoverOptions:
    pair: str
    #: ``--groups`` and ``--topics`` (``core.patterns``: whole names); None selects all.
    groups: str | None = None
    topics: str | None = None
    source: Source = Source.SYNCS
    source_unavailable: bool = False
    stop_mirroring: bool = False
    allow_rewind: bool = False
    catch_up_timeout_s: float = 300.0
    #: What translates a group partition no offset sync lies at or below (the source must be readable).
    fallback: Fallback = Fallback.TIMESTAMP
    #: Without ``stop_mirroring``: plan MM2's cautious answer for the rows MM2 has not copied up to yet,
    #: instead of refusing them (``NotCopiedError``).
    accept_cautious: bool = False
    #: The Spark queries to move with the groups (``--spark-checkpoint``, ``--spark-form``, ``--spark-output``).
    spark: SparkRequest = field(default_factory=SparkRequest)
