"""What the report's page shows, reduced from an inspection's rows to a size a browser opens at once.

Every figure is computed here with Arrow compute, so the page gets plain values: per flow, the partitions
per status, what a failover now would replay or skip per group, MM2's lag and records lost per topic partition,
the ages of offset syncs and checkpoints; across flows, a readiness line per group (``report.readiness``), a
line per topic, and the group-partition rows.

**Large inspections.** Up to ``ROW_LIMIT`` group partitions, the page lists every one. Above it, the page keeps
the per-topic and per-group lines and lists only the ``WORST_ROWS`` worst group partitions (problems first,
by status precedence, then the most messages skipped, then replayed), so its size no longer grows with the
inspection. The readiness table lists at most ``GROUP_LIMIT`` groups (groups not ready first), and each chart
at most ``CHART_BARS`` bars (the worst ones) or ``HEATMAP_TOPICS`` topics; the page says how many there were.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.inspector.statuses import OK_STATUSES, PRECEDENCE
from mm2ctl.report.inputs import InspectionTables
from mm2ctl.report.readiness import assess

#: Up to this many group partitions, the page lists every row; above it, the worst ``WORST_ROWS``.
ROW_LIMIT = 10_000
WORST_ROWS = 1_000
#: The readiness table's most groups (not ready first).
GROUP_LIMIT = 10_000
#: The most bars a chart draws (the worst ones), and the most topics of the lag heat map.
CHART_BARS = 40
HEATMAP_TOPICS = 30

#: Group-partition statuses from worst to best: the problems in precedence order, then the ok ones.
SEVERITY: tuple[str, ...] = tuple(
    [s.value for s in PRECEDENCE if s not in OK_STATUSES] + [s.value for s in PRECEDENCE if s in OK_STATUSES]
)


@dataclass(frozen=True)
class Listing:
    """Some rows of a table (``columns``), out of ``total``."""

    columns: tuple[str, ...]
    rows: list[list[Any]]
    total: int

    def to_json(self) -> dict[str, Any]:
        """Rows as lists; each text column's values replaced by their index in ``dictionaries[column]``, so a
        flow, a status or a reason shared by many rows is written once (the page decodes them)."""
        texts = [i for i in range(len(self.columns)) if any(isinstance(r[i], str) for r in self.rows)]
        dictionaries: dict[str, list[str | None]] = {}
        rows = [list(r) for r in self.rows]
        for i in texts:
            index: dict[str | None, int] = {}
            for r in rows:
                r[i] = index.setdefault(r[i], len(index))
            dictionaries[self.columns[i]] = list(index)
        return {"columns": list(self.columns), "rows": rows, "dictionaries": dictionaries, "total": self.total}


@dataclass(frozen=True)
class FlowDigest:
    flow: str
    #: (status, partitions, ok) in ``SEVERITY`` order, only statuses present.
    group_statuses: list[tuple[str, int, bool]]
    #: The same for the replicated partitions; None when their rows were not given.
    partition_statuses: list[tuple[str, int, bool]] | None
    #: group, replay (true counts), replay (bounds), skip (true counts), skip (bounds): the worst groups.
    failover: Listing
    #: topic, partition, lag, lost: every partition of the topics with the most lag and loss.
    lag: Listing | None
    #: "topic/partition", records lost: the partitions that lost the most.
    lost: Listing | None
    #: "topic/partition", offset-sync age (s): the oldest.
    sync_ages: Listing | None
    #: group, checkpoint age (s): the oldest.
    checkpoint_ages: Listing
    #: What losing the flow's source now would lose, and the least time retention leaves; None without
    #: replicated-partition rows.
    recovery: Recovery | None = None


@dataclass(frozen=True)
class Recovery:
    """A flow's recovery point (records waiting, the oldest one's age) and its smallest retention margin
    with its basis; None where no row knows."""

    records: int | None
    seconds: float | None
    margin_seconds: float | None
    margin_basis: str | None


@dataclass(frozen=True)
class Digest:
    flows: list[FlowDigest]
    readiness: Listing
    topics: Listing
    rows: Listing
    #: Whether ``rows`` holds only the worst rows (the inspection has more than ``ROW_LIMIT``).
    aggregated: bool
    totals: dict[str, int] = field(default_factory=dict)
    #: Inspected groups per group type (empty for an inspection written before rows carried the type).
    groups_by_type: dict[str, int] = field(default_factory=dict)


def _groups_by_type(g: pa.Table) -> dict[str, int]:
    if "group_type" not in g.column_names:
        return {}
    distinct = g.group_by(["cluster_pair", "group"]).aggregate([("group_type", "max")])
    counts: dict[str, int] = {}
    for kind in distinct["group_type_max"].to_pylist():
        counts[kind or "unknown"] = counts.get(kind or "unknown", 0) + 1
    return dict(sorted(counts.items()))


def _rank(status: pa.ChunkedArray) -> pa.Array:
    return pc.fill_null(pc.index_in(status, value_set=pa.array(SEVERITY)), len(SEVERITY))


def _with_failover(t: pa.Table) -> pa.Table:
    """Adds the true counts and, where only bounds are known, the bounds, as separate columns."""
    none = pa.scalar(None, pa.int64())
    bound_replay = pc.if_else(pc.is_null(t["replay_if_failover_now"]), t["replay_if_failover_now_at_least"], none)
    bound_skip = pc.if_else(pc.is_null(t["skip_if_failover_now"]), t["skip_if_failover_now_at_most"], none)
    return (
        t.append_column("replay_bound", bound_replay)
        .append_column("skip_bound", bound_skip)
        .append_column("rank", _rank(t["status"]))
        .append_column("problem", pc.cast(pc.invert(t["is_ok"]), pa.int64()))
    )


def _statuses(t: pa.Table) -> list[tuple[str, int, bool]]:
    if t.num_rows == 0:
        return []
    counts = t.group_by("status").aggregate([("status", "count"), ("is_ok", "min")]).to_pylist()
    order = {s: i for i, s in enumerate(SEVERITY)}
    found = [(r["status"], int(r["status_count"]), bool(r["is_ok_min"])) for r in counts]
    return sorted(found, key=lambda s: (s[2], order.get(s[0], len(order)), s[0]))


def _top(t: pa.Table, sort: Sequence[tuple[str, str]], columns: Sequence[str], limit: int) -> Listing:
    head = t.sort_by(list(sort)).slice(0, limit).select(list(columns))
    return Listing(tuple(columns), [list(r.values()) for r in head.to_pylist()], t.num_rows)


def _label(t: pa.Table) -> pa.Array:
    return pc.binary_join_element_wise(t["topic"], pc.cast(t["partition"], pa.string()), "/")


def _per_group(g: pa.Table) -> pa.Table:
    return g.group_by(["cluster_pair", "group"]).aggregate(
        [
            ("status", "count"),
            ("problem", "sum"),
            ("rank", "min"),
            ("replay_if_failover_now", "sum"),
            ("replay_bound", "sum"),
            ("skip_if_failover_now", "sum"),
            ("skip_bound", "sum"),
            ("group_checkpoint_age_seconds", "min"),
        ]
    )


def _flow_digest(flow: str, groups: pa.Table, per_group: pa.Table, partitions: pa.Table | None) -> FlowDigest:
    g = groups.filter(pc.equal(groups["cluster_pair"], flow))
    pg = per_group.filter(pc.equal(per_group["cluster_pair"], flow))
    zero = pa.scalar(0, pa.int64())
    failover = pg.select(["group"]).append_column("replay", pc.fill_null(pg["replay_if_failover_now_sum"], zero))
    for name, column in (
        ("replay_bound", pg["replay_bound_sum"]),
        ("skip", pg["skip_if_failover_now_sum"]),
        ("skip_bound", pg["skip_bound_sum"]),
    ):
        failover = failover.append_column(name, pc.fill_null(column, zero))
    failover = failover.append_column("skip_all", pc.add(failover["skip"], failover["skip_bound"]))
    failover = failover.append_column("replay_all", pc.add(failover["replay"], failover["replay_bound"]))
    aged = pg.filter(pc.is_valid(pg["group_checkpoint_age_seconds_min"]))
    lag = lost = sync_ages = None
    part_statuses = None
    if partitions is not None:
        p = partitions.filter(pc.equal(partitions["cluster_pair"], flow))
        p = p.append_column("where", _label(p))
        part_statuses = _statuses(p)
        lag, lost, sync_ages = _partition_charts(p)
    recovery = _recovery(p) if partitions is not None else None
    return FlowDigest(
        flow=flow,
        group_statuses=_statuses(g),
        partition_statuses=part_statuses,
        failover=_top(
            failover,
            [("skip_all", "descending"), ("replay_all", "descending"), ("group", "ascending")],
            ["group", "replay", "replay_bound", "skip", "skip_bound"],
            CHART_BARS,
        ),
        lag=lag,
        lost=lost,
        sync_ages=sync_ages,
        checkpoint_ages=_top(
            aged,
            [("group_checkpoint_age_seconds_min", "descending"), ("group", "ascending")],
            ["group", "group_checkpoint_age_seconds_min"],
            CHART_BARS,
        ),
        recovery=recovery,
    )


def _recovery(p: pa.Table) -> Recovery:
    """``Recovery`` of one flow's replicated-partition rows: the sum of records waiting, the oldest age, and
    the row with the smallest margin."""
    margins = p.filter(pc.is_valid(p["retention_margin_seconds"]))
    least = margins.sort_by([("retention_margin_seconds", "ascending")]).slice(0, 1).to_pylist()
    return Recovery(
        records=pc.sum(p["replication_lag_records"]).as_py(),
        seconds=pc.max(p["replication_lag_seconds"]).as_py(),
        margin_seconds=least[0]["retention_margin_seconds"] if least else None,
        margin_basis=least[0]["retention_margin_basis"] if least else None,
    )


def _partition_charts(p: pa.Table) -> tuple[Listing, Listing, Listing]:
    zero = pa.scalar(0, pa.int64())
    p = p.append_column("lag", pc.fill_null(p["replication_lag_records"], zero)).append_column(
        "lost", pc.fill_null(p["records_lost_to_retention"], zero)
    )
    per_topic = p.group_by("topic").aggregate([("lag", "sum"), ("lost", "sum")])
    per_topic = per_topic.append_column("weight", pc.add(per_topic["lag_sum"], per_topic["lost_sum"]))
    shown = per_topic.sort_by([("weight", "descending"), ("topic", "ascending")]).slice(0, HEATMAP_TOPICS)
    cells = p.filter(pc.is_in(p["topic"], value_set=shown["topic"].combine_chunks()))
    cells = cells.sort_by([("topic", "ascending"), ("partition", "ascending")])
    columns = ("topic", "partition", "replication_lag_records", "records_lost_to_retention")
    lag = Listing(columns, [list(r.values()) for r in cells.select(list(columns)).to_pylist()], per_topic.num_rows)
    losing = p.filter(pc.greater(p["lost"], 0))
    lost = _top(losing, [("lost", "descending"), ("where", "ascending")], ["where", "lost"], CHART_BARS)
    synced = p.filter(pc.is_valid(p["offset_sync_age_seconds"]))
    sync_ages = _top(
        synced,
        [("offset_sync_age_seconds", "descending"), ("where", "ascending")],
        ["where", "offset_sync_age_seconds"],
        CHART_BARS,
    )
    return lag, lost, sync_ages


def _readiness(per_group: pa.Table, tables: InspectionTables, lag_threshold: int) -> tuple[Listing, int]:
    judged = assess(tables.groups, tables.partitions, lag_threshold)
    rows = []
    for r in per_group.to_pylist():
        verdict = judged[(r["cluster_pair"], r["group"])]
        rank = r["rank_min"]
        bound_replay, bound_skip = r["replay_bound_sum"] or 0, r["skip_bound_sum"] or 0
        rows.append(
            [
                r["cluster_pair"],
                r["group"],
                verdict.ready,
                verdict.text,
                r["status_count"],
                r["problem_sum"],
                SEVERITY[rank] if rank < len(SEVERITY) else None,
                (r["replay_if_failover_now_sum"] or 0) + bound_replay,
                bound_replay > 0,
                (r["skip_if_failover_now_sum"] or 0) + bound_skip,
                bound_skip > 0,
                r["group_checkpoint_age_seconds_min"],
            ]
        )
    rows.sort(key=lambda row: (row[2], row[0], row[1]))  # not ready first
    columns = (
        "flow", "group", "ready", "reason", "partitions", "problems", "worst_status",
        "replay", "replay_is_bound", "skip", "skip_is_bound", "checkpoint_age_seconds",
    )  # fmt: skip
    ready = sum(1 for row in rows if row[2])
    return Listing(columns, rows[:GROUP_LIMIT], len(rows)), ready


def _topics(g: pa.Table) -> Listing:
    replay = pc.coalesce(g["replay_if_failover_now"], g["replay_if_failover_now_at_least"])
    skip = pc.coalesce(g["skip_if_failover_now"], g["skip_if_failover_now_at_most"])
    t = g.append_column("replay", replay).append_column("skip", skip)
    per_topic = t.group_by(["cluster_pair", "topic"]).aggregate(
        [
            ("status", "count"),
            ("group", "count_distinct"),
            ("problem", "sum"),
            ("rank", "min"),
            ("replay", "sum"),
            ("skip", "sum"),
        ]
    )
    order = [("problem_sum", "descending"), ("cluster_pair", "ascending"), ("topic", "ascending")]
    per_topic = per_topic.sort_by(order)
    rows = [
        [
            r["cluster_pair"],
            r["topic"],
            r["status_count"],
            r["group_count_distinct"],
            r["problem_sum"],
            SEVERITY[r["rank_min"]] if r["rank_min"] < len(SEVERITY) else None,
            r["replay_sum"] or 0,
            r["skip_sum"] or 0,
        ]
        for r in per_topic.to_pylist()
    ]
    columns = ("flow", "topic", "partitions", "groups", "problems", "worst_status", "replay", "skip")
    return Listing(columns, rows, len(rows))


#: The group-partition row columns the page lists.
ROW_COLUMNS = (
    "cluster_pair", "group", "topic", "partition", "status", "is_ok", "source_offset", "target_offset",
    "translated_offset", "translation_method", "replay", "skip", "message",
)  # fmt: skip


def _rows(g: pa.Table) -> tuple[Listing, bool]:
    aggregated = g.num_rows > ROW_LIMIT
    t = g.append_column("replay", pc.coalesce(g["replay_if_failover_now"], g["replay_if_failover_now_at_least"]))
    t = t.append_column("skip", pc.coalesce(g["skip_if_failover_now"], g["skip_if_failover_now_at_most"]))
    order = [("problem", "descending"), ("rank", "ascending"), ("skip", "descending"), ("replay", "descending")]
    order += [("cluster_pair", "ascending"), ("group", "ascending"), ("topic", "ascending"), ("partition", "ascending")]
    listed = _top(t, order, ROW_COLUMNS, WORST_ROWS if aggregated else ROW_LIMIT)
    return listed, aggregated


def digest(tables: InspectionTables, lag_threshold: int) -> Digest:
    """Everything the page shows of ``tables``; ``lag_threshold`` is readiness's (``--lag-threshold``)."""
    g = _with_failover(tables.groups)
    per_group = _per_group(g)
    flows = set(g["cluster_pair"].to_pylist())
    if tables.partitions is not None:
        flows |= set(tables.partitions["cluster_pair"].to_pylist())
    readiness, ready = _readiness(per_group, tables, lag_threshold)
    rows, aggregated = _rows(g)
    partitions = tables.partitions
    totals = {
        "group_partitions": g.num_rows,
        "group_partition_problems": int(pc.sum(g["problem"]).as_py() or 0),
        "groups": readiness.total,
        "ready_groups": ready,
        "replicated_partitions": partitions.num_rows if partitions is not None else 0,
        "replicated_partition_problems": (
            int(pc.sum(pc.invert(partitions["is_ok"])).as_py() or 0) if partitions is not None else 0
        ),
    }
    return Digest(
        flows=[_flow_digest(flow, g, per_group, partitions) for flow in sorted(flows)],
        readiness=readiness,
        topics=_topics(g),
        rows=rows,
        aggregated=aggregated,
        totals=totals,
        groups_by_type=_groups_by_type(g),
    )
