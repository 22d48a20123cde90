"""What an inspection hands back: plain Python values, and a handle on its full row set.

``inspector.inspection.Inspector.run`` returns an ``InspectionResult``. Everything a person or a monitor reads
is here as values: the counts per pair and status, the pair's totals, per-group figures, the first problem
rows, the replicated-partition rows, MM2's position and what the run noticed. The full group-partition rows
stay in Spark behind ``RowSet`` (an Arrow table on demand, or Spark's writers), and ``close`` releases them.
Nothing in this module imports Spark, so the CLI that formats a result does not either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

if TYPE_CHECKING:
    from mm2ctl.inspector.reads.mm2_position import Mm2Position

#: How many problem rows an inspection hands back for the table (``--format table``): the first in report
#: order (pair, group, topic, partition).
PROBLEM_ROWS = 40
#: The columns of a problem row, as the table prints them.
PROBLEM_COLUMNS = (
    "topic",
    "partition",
    "source_offset",
    "target_offset",
    "status",
    "message",
    "explanation",
    "error",
)
#: The order every printed or streamed report lists its group-partition rows in.
ORDER = ("cluster_pair", "group", "topic", "partition")
#: The order of the replicated-partition rows.
PARTITION_ORDER = ("cluster_pair", "topic", "partition")


@dataclass(frozen=True, slots=True)
class StatusCount:
    """A pair's group partitions in one status: the table's line."""

    pair: str
    status: str
    is_ok: bool
    partitions: int
    groups: int
    replay_if_failover_now_at_least: int | None
    skip_if_failover_now_at_most: int | None


@dataclass(frozen=True, slots=True)
class PairTotals:
    partitions: int
    problem_partitions: int
    problem_groups: int
    #: Groups with rows, and of them those MM2 has checkpointed (any inspected partition).
    groups: int
    checkpointed_groups: int
    #: The oldest group's newest checkpoint, in seconds (None: no group has one).
    oldest_checkpoint_age_seconds: float | None
    #: Groups with rows per group type (``classic``, ``consumer``, ``share``, ``streams``; ``unknown`` when
    #: the listing of every type failed).
    groups_by_type: Mapping[str, int] = field(default_factory=dict)
    #: Group partitions whose target offset mm2ctl wrote (its metadata names the plan: ``target_written_by``).
    written_by_mm2ctl: int = 0


@dataclass(frozen=True, slots=True)
class GroupFigures:
    """A consumer group of a pair: its newest checkpoint's age, and what a failover now replays and skips."""

    pair: str
    group: str
    checkpoint_age_seconds: float | None
    failover_replay_messages: int
    failover_skip_messages: int
    #: status -> group partitions
    statuses: Mapping[str, int]
    #: ``classic``, ``consumer``, ``share`` or ``streams``; None when the listing of every type failed.
    group_type: str | None = None


@dataclass(frozen=True, slots=True)
class Summary:
    statuses: tuple[StatusCount, ...]
    totals: Mapping[str, PairTotals]
    groups: tuple[GroupFigures, ...]
    #: The first ``PROBLEM_ROWS`` problem rows in report order, as dicts of ``PROBLEM_COLUMNS`` plus ``group``.
    problem_rows: tuple[Mapping[str, Any], ...]
    problems: int

    @property
    def group_partitions(self) -> int:
        return sum(t.partitions for t in self.totals.values())


def _sum(values: Iterable[int | None]) -> int | None:
    """Spark's ``sum``: None when every value is."""
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def summarize(
    figures: Sequence[Mapping[str, Any]], pairs: Sequence[str], *, problem_rows: int = PROBLEM_ROWS
) -> Summary:
    """The counts of ``group_figures``' rows (as dicts), for ``pairs`` in that order (a pair with no rows gets
    zeros)."""
    by_status: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    by_group: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for f in figures:
        by_status.setdefault((f["cluster_pair"], f["status"]), []).append(f)
        by_group.setdefault((f["cluster_pair"], f["group"]), []).append(f)
    statuses = tuple(
        StatusCount(
            pair=pair,
            status=status,
            is_ok=all(f["is_ok"] for f in rows),
            partitions=sum(f["partitions"] for f in rows),
            groups=len(rows),
            replay_if_failover_now_at_least=_sum(f["replay_at_least"] for f in rows),
            skip_if_failover_now_at_most=_sum(f["skip_at_most"] for f in rows),
        )
        for (pair, status), rows in sorted(by_status.items())
    )
    groups = tuple(
        GroupFigures(
            pair=pair,
            group=group,
            checkpoint_age_seconds=min(
                (f["checkpoint_age"] for f in rows if f["checkpoint_age"] is not None), default=None
            ),
            failover_replay_messages=sum(int(f["replay"] or 0) for f in rows),
            failover_skip_messages=sum(int(f["skip"] or 0) for f in rows),
            statuses={f["status"]: f["partitions"] for f in rows},
            group_type=next((f["group_type"] for f in rows if f.get("group_type")), None),
        )
        for (pair, group), rows in sorted(by_group.items())
    )
    totals = {pair: _totals(pair, statuses, [g for g in groups if g.pair == pair], by_group) for pair in pairs}
    problems = [
        {"cluster_pair": f["cluster_pair"], "group": f["group"], **p} for f in figures for p in (f["problems"] or [])
    ]
    problems.sort(key=lambda r: (r["cluster_pair"], r["group"], r["topic"], r["partition"]))
    return Summary(
        statuses=statuses,
        totals=totals,
        groups=groups,
        problem_rows=tuple(problems[:problem_rows]),
        problems=sum(t.problem_partitions for t in totals.values()),
    )


def _totals(
    pair: str,
    statuses: Sequence[StatusCount],
    groups: Sequence[GroupFigures],
    by_group: Mapping[tuple[str, str], list[Mapping[str, Any]]],
) -> PairTotals:
    mine = [s for s in statuses if s.pair == pair]
    ages = [g.checkpoint_age_seconds for g in groups if g.checkpoint_age_seconds is not None]
    return PairTotals(
        partitions=sum(s.partitions for s in mine),
        problem_partitions=sum(s.partitions for s in mine if not s.is_ok),
        problem_groups=sum(1 for g in groups if not all(f["is_ok"] for f in by_group[(pair, g.group)])),
        groups=len(groups),
        checkpointed_groups=len(ages),
        oldest_checkpoint_age_seconds=max(ages, default=None),
        groups_by_type=dict(sorted(Counter(g.group_type or "unknown" for g in groups).items())),
        written_by_mm2ctl=sum(int(f.get("written_by_mm2ctl") or 0) for g in groups for f in by_group[(pair, g.group)]),
    )


@dataclass(frozen=True, slots=True)
class PartitionStatusCount:
    """A pair's replicated partitions in one status, with the lag and loss they add up to."""

    pair: str
    status: str
    is_ok: bool
    partitions: int
    replication_lag_records: int | None
    records_lost_to_retention: int | None
    max_offset_sync_age_seconds: float | None


def summarize_partitions(partitions: pa.Table) -> tuple[PartitionStatusCount, ...]:
    """Counts per pair and status of the replicated-partition rows, for the table."""
    groups: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in partitions.to_pylist():
        groups.setdefault((row["cluster_pair"], row["status"]), []).append(row)
    return tuple(
        PartitionStatusCount(
            pair=pair,
            status=status,
            is_ok=all(r["is_ok"] for r in rows),
            partitions=len(rows),
            replication_lag_records=_sum(r["replication_lag_records"] for r in rows),
            records_lost_to_retention=_sum(r["records_lost_to_retention"] for r in rows),
            max_offset_sync_age_seconds=max(
                (r["offset_sync_age_seconds"] for r in rows if r["offset_sync_age_seconds"] is not None), default=None
            ),
        )
        for (pair, status), rows in sorted(groups.items())
    )


@dataclass(frozen=True, slots=True)
class RecoveryPoint:
    """What a flow would lose if its source died now: the records MM2 has not copied (over its partitions),
    the age of the oldest of them (the largest ``replication_lag_seconds``), and the least time before
    retention deletes one (the smallest ``retention_margin_seconds``, with its basis). None: not known."""

    pair: str
    records: int | None
    seconds: float | None
    margin_seconds: float | None
    margin_basis: str | None


def recovery_points(partitions: pa.Table) -> dict[str, RecoveryPoint]:
    """Each pair's ``RecoveryPoint`` from its replicated-partition rows."""
    rows: dict[str, list[Mapping[str, Any]]] = {}
    for row in partitions.to_pylist():
        rows.setdefault(row["cluster_pair"], []).append(row)
    out = {}
    for pair, its in sorted(rows.items()):
        seconds = [r["replication_lag_seconds"] for r in its if r.get("replication_lag_seconds") is not None]
        margins = [
            (r["retention_margin_seconds"], r["retention_margin_basis"])
            for r in its
            if r.get("retention_margin_seconds") is not None
        ]
        margin, basis = min(margins) if margins else (None, None)
        records = _sum(r["replication_lag_records"] for r in its)
        out[pair] = RecoveryPoint(pair, records, max(seconds, default=None), margin, basis)
    return out


@dataclass(frozen=True, slots=True)
class TopicNote:
    """What a run noticed about an internal topic: missing, unreadable, malformed records skipped, or read
    again in full."""

    cluster_pair: str
    topic: str
    cluster: str
    message: str


class RowSet(Protocol):
    """The full group-partition rows of a run, held by Spark until the result is closed."""

    def to_arrow(self) -> pa.Table:
        """Every row, in report columns and ``ORDER``."""
        ...

    def write(self, fmt: str, path: str) -> None:
        """Spark's own writer (``parquet``, ``csv``, ``json``): a folder of part files at a path or URI."""
        ...


@dataclass(slots=True)
class InspectionResult:
    pairs: tuple[str, ...]
    summary: Summary
    #: One row per replicated source partition, report columns, in ``PARTITION_ORDER``.
    partitions: pa.Table
    positions: tuple[Mm2Position, ...]
    notes: tuple[TopicNote, ...]
    rows: RowSet
    #: Releases what the run cached in Spark (the rows); the result's values stay.
    release: Any = field(default=None, repr=False)

    @property
    def group_partitions(self) -> int:
        return self.summary.group_partitions

    @property
    def problems(self) -> int:
        return self.summary.problems

    @property
    def replicated_partitions(self) -> int:
        return int(self.partitions.num_rows)

    @property
    def partition_problems(self) -> int:
        if self.partitions.num_rows == 0:
            return 0
        return int(self.partitions.num_rows - sum(1 for ok in self.partitions.column("is_ok").to_pylist() if ok))

    def close(self) -> None:
        """Release the rows Spark holds for this result (``rows`` cannot be read after)."""
        if self.release is not None:
            self.release()
            self.release = None
