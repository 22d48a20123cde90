"""The report's charts: Plotly figures, as the JSON ``Plotly.newPlot`` takes, made from a flow's digest.

Plotly's Python package builds and validates each figure; the page draws them with the plotly.js that
package carries, inlined (``report.page``). A chart with nothing to draw says so in its middle instead of
showing empty axes.
"""

from __future__ import annotations

import json
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots
from plotly.utils import PlotlyJSONEncoder

from mm2ctl.report.digest import HEATMAP_TOPICS, FlowDigest, Listing

OK_COLOR, PROBLEM_COLOR = "#2e7d32", "#c62828"
REPLAY_COLOR, REPLAY_BOUND_COLOR = "#1565c0", "#90caf9"
SKIP_COLOR, SKIP_BOUND_COLOR = "#c62828", "#ef9a9a"
_LAYOUT: dict[str, Any] = {
    "template": "plotly_white",
    "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
    "font": {"size": 11},
    "legend": {"orientation": "h", "y": -0.15},
}


def _as_json(fig: go.Figure) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(json.dumps(fig.to_plotly_json(), cls=PlotlyJSONEncoder))
    return data


def _empty(fig: go.Figure, text: str) -> go.Figure:
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    fig.add_annotation(text=text, showarrow=False, xref="paper", yref="paper", x=0.5, y=0.5)
    return fig


def _of(total: int, shown: int, what: str) -> str:
    return f"the {shown} {what} of {total:,}" if total > shown else ""


def _status_bars(statuses: list[tuple[str, int, bool]] | None, title: str, missing: str) -> go.Figure:
    fig = go.Figure(layout={**_LAYOUT, "title": {"text": title}, "height": 300, "showlegend": False})
    if statuses is None:
        return _empty(fig, missing)
    if not statuses:
        return _empty(fig, "no rows")
    fig.add_bar(
        x=[s for s, _, _ in statuses],
        y=[n for _, n, _ in statuses],
        marker_color=[OK_COLOR if ok else PROBLEM_COLOR for _, _, ok in statuses],
        text=[f"{n:,}" for _, n, _ in statuses],
        textposition="auto",
        hovertemplate="%{x}: %{y:,} partition(s)<extra></extra>",
    )
    fig.update_yaxes(
        title_text="partitions", rangemode="tozero", dtick=1 if max(n for _, n, _ in statuses) <= 8 else None
    )
    return fig


def _height(bars: int) -> int:
    return max(260, 90 + 18 * bars)


def failover_chart(failover: Listing) -> go.Figure:
    """Per group, what a failover now would replay and skip: true counts, and bounds where only they are known."""
    title = "What a failover now would replay and skip, per group"
    rows = list(reversed(failover.rows))  # the worst on top
    fig = make_subplots(rows=1, cols=2, shared_yaxes=True, subplot_titles=("replayed", "skipped"))
    fig.update_layout(**_LAYOUT, title={"text": title}, height=_height(len(rows)) + 30, barmode="stack")
    fig.update_layout(margin={**_LAYOUT["margin"], "t": 70})
    if not rows:
        return _empty(fig, "no group partitions")
    groups = [r[0] for r in rows]
    traces = (
        (1, 1, "replay: true count", REPLAY_COLOR),
        (2, 1, "replay: at least (bound)", REPLAY_BOUND_COLOR),
        (3, 2, "skip: true count", SKIP_COLOR),
        (4, 2, "skip: at most (bound)", SKIP_BOUND_COLOR),
    )
    for index, col, name, color in traces:
        fig.add_trace(
            go.Bar(
                y=groups,
                x=[r[index] for r in rows],
                name=name,
                orientation="h",
                marker_color=color,
                hovertemplate="%{y}: %{x:,} messages<extra>" + name + "</extra>",
            ),
            row=1,
            col=col,
        )
    note = _of(failover.total, len(rows), "groups that would skip or replay the most")
    if note:
        fig.update_layout(title={"text": f"{title} ({note})"})
    return fig


def lag_heatmap(lag: Listing | None) -> go.Figure:
    """MM2's replication lag per topic partition (records waiting to be copied); records lost in the hover."""
    title = "MM2's replication lag per topic partition (records waiting)"
    if lag is None:
        fig = go.Figure(layout={**_LAYOUT, "title": {"text": title}, "height": 300})
        return _empty(fig, "no replicated-partition rows given (--partition-rows)")
    topics = sorted({r[0] for r in lag.rows})
    partitions = sorted({r[1] for r in lag.rows})
    fig = go.Figure(layout={**_LAYOUT, "title": {"text": title}, "height": max(300, 120 + 22 * len(topics))})
    if not lag.rows:
        return _empty(fig, "no replicated partitions")
    row_of, col_of = {t: i for i, t in enumerate(topics)}, {p: i for i, p in enumerate(partitions)}
    z: list[list[int | None]] = [[None] * len(partitions) for _ in topics]
    lost: list[list[int | None]] = [[None] * len(partitions) for _ in topics]
    for topic, partition, records, lost_records in lag.rows:
        z[row_of[topic]][col_of[partition]] = records
        lost[row_of[topic]][col_of[partition]] = lost_records
    fig.add_heatmap(
        z=z,
        x=[str(p) for p in partitions],
        y=topics,
        customdata=lost,
        colorscale="YlOrRd",
        colorbar={"title": {"text": "records"}},
        hoverongaps=False,
        hovertemplate="%{y}/%{x}: %{z:,} waiting, %{customdata:,} lost to retention<extra></extra>",
    )
    fig.update_xaxes(title_text="partition", type="category")
    if lag.total > HEATMAP_TOPICS:
        fig.update_layout(title={"text": f"{title} (the {HEATMAP_TOPICS} topics of {lag.total:,} most behind)"})
    return fig


def _hbars(listing: Listing | None, title: str, unit: str, color: str, missing: str, empty: str) -> go.Figure:
    rows = list(reversed(listing.rows)) if listing is not None else []
    fig = go.Figure(layout={**_LAYOUT, "title": {"text": title}, "height": _height(len(rows)), "showlegend": False})
    if listing is None:
        return _empty(fig, missing)
    if not rows:
        return _empty(fig, empty)
    fig.add_bar(
        y=[r[0] for r in rows],
        x=[r[1] for r in rows],
        orientation="h",
        marker_color=color,
        hovertemplate="%{y}: %{x:,.0f} " + unit + "<extra></extra>",
    )
    fig.update_xaxes(title_text=unit)
    note = _of(listing.total, len(rows), "largest")
    if note:
        fig.update_layout(title={"text": f"{title} ({note})"})
    return fig


def flow_charts(flow: FlowDigest) -> list[dict[str, Any]]:
    """The charts of one flow, each ``{"id", "figure"}`` with ``figure`` as plotly.js takes it."""
    no_partitions = "no replicated-partition rows given (--partition-rows)"
    figures = {
        "group-statuses": _status_bars(flow.group_statuses, "Group partitions by status", "no group rows"),
        "partition-statuses": _status_bars(flow.partition_statuses, "Replicated partitions by status", no_partitions),
        "failover": failover_chart(flow.failover),
        "lag": lag_heatmap(flow.lag),
        "lost": _hbars(
            flow.lost, "Records lost to retention per topic partition", "records", PROBLEM_COLOR, no_partitions,
            "no records lost to retention",
        ),
        "sync-age": _hbars(
            flow.sync_ages, "Age of each partition's newest offset sync", "seconds", "#6a1b9a", no_partitions,
            "no offset sync found",
        ),
        "checkpoint-age": _hbars(
            flow.checkpoint_ages, "Age of each group's newest checkpoint", "seconds", "#00838f", "no group rows",
            "no checkpoint found",
        ),
    }  # fmt: skip
    return [{"id": name, "figure": _as_json(fig)} for name, fig in figures.items()]
