"""The report as one self-contained HTML file: plotly.js, the page's script and style, and the data, inline.

The file needs no network to open: every script and style is in it, and its Content-Security-Policy forbids
fetching anything (``default-src 'none'``), so a browser would refuse a request rather than make one. The
data (``report.digest`` and ``report.charts``) travels as one JSON document in a ``<script
type="application/json">`` element; ``page.js`` draws the charts from it and builds the sortable, filterable
tables. The header (setup, times, version) is written here as HTML, every value escaped, and the setup is
``config show``'s summary with secrets masked (``core.config.describe``), masked again on its way in.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from plotly.offline import get_plotlyjs

from mm2ctl.core.config.describe import SetupReport
from mm2ctl.core.security.redaction import redact_json, redact_text
from mm2ctl.report.charts import flow_charts
from mm2ctl.report.digest import GROUP_LIMIT, ROW_LIMIT, WORST_ROWS, Digest, Recovery, digest
from mm2ctl.report.inputs import InspectionTables

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; connect-src 'none'"
)


@dataclass(frozen=True)
class RenderedReport:
    html: str
    #: Counts for the command's summary line: group partitions, groups, ready groups, problems.
    totals: dict[str, int]
    #: Whether the rows were too many to list one by one (``digest.ROW_LIMIT``).
    aggregated: bool


def _asset(name: str) -> str:
    return resources.files("mm2ctl.report").joinpath(name).read_text(encoding="utf-8")


def _json_in_script(value: object) -> str:
    """JSON that can sit inside a ``<script>`` element: every ``<`` escaped, so nothing in it can end it."""
    return json.dumps(value, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")


def _inline_script(name: str, text: str) -> str:
    if "</script" in text.lower():
        raise RuntimeError(f"{name} holds '</script': it cannot be inlined as it is")
    return f"<script>{text}</script>"


def _time(at: dt.datetime) -> str:
    return at.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _e(value: object) -> str:
    return html.escape(redact_text(str(value)))


def _settings_table(rows: list[dict[str, str]]) -> str:
    body = "".join(
        f"<tr><td>{_e(r['name'])}</td><td>{_e(r['value'])}</td><td class='origin'>{_e(r['origin'])}</td></tr>"
        for r in rows
    )
    return f"<table class='settings'><tr><th>setting</th><th>value</th><th>from</th></tr>{body}</table>"


def setup_html(setup: SetupReport | None) -> str:
    """``config show``'s summary as HTML, secrets masked; or a line saying the setup was not given."""
    if setup is None:
        return "<p class='muted'>Setup not given: pass --mm2-config (or --from-connect) to show it here.</p>"
    doc: dict[str, Any] = redact_json(setup.to_json())
    parts = [f"<p>Read from {_e(doc['source'])}; clusters: {_e(', '.join(doc['clusters']))}.</p>"]
    for warning in doc["warnings"]:
        parts.append(f"<p class='warning'>{_e(warning)}</p>")
    for flow in doc["flows"]:
        topics = "".join(f"<li>{_e(k.replace('_', ' '))}: {_e(v)}</li>" for k, v in flow["topics"].items())
        clusters = "".join(f"<h4>{_e(alias)}</h4>{_settings_table(items)}" for alias, items in flow["clusters"].items())
        parts.append(
            f"<details><summary>Flow {_e(flow['name'])}</summary><ul>{topics}</ul>"
            f"{_settings_table(flow['settings'])}{clusters}</details>"
        )
    return "".join(parts)


def _header(tables: InspectionTables, d: Digest, setup: SetupReport | None, at: dt.datetime, version: str) -> str:
    t = d.totals
    cards = [
        (f"{t['ready_groups']:,} of {t['groups']:,}", "groups ready to cut over"),
        (f"{t['group_partition_problems']:,} of {t['group_partitions']:,}", "group partitions with a problem"),
        (
            f"{t['replicated_partition_problems']:,} of {t['replicated_partitions']:,}"
            if tables.partitions is not None
            else "not given",
            "replicated partitions with a problem",
        ),
    ]
    if d.groups_by_type:
        kinds = " · ".join(f"{kind} {count:,}" for kind, count in d.groups_by_type.items())
        cards.append((kinds, "groups by type (MM2 never checkpoints share or streams groups)"))
    card_html = "".join(f"<div class='card'><b>{_e(v)}</b><span>{_e(k)}</span></div>" for v, k in cards)
    return (
        "<header><h1>MirrorMaker 2 migration report</h1>"
        f"<p class='meta'>Inspection of {_time(tables.inspected_at)} ({_e(tables.origin)}). "
        f"Report made {_time(at)} by mm2ctl {_e(version)}.</p>"
        f"<div class='cards'>{card_html}</div>"
        f"<details class='setup'><summary>Setup</summary>{setup_html(setup)}</details></header>"
    )


def _seconds(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f} s"


def recovery_html(r: Recovery | None) -> str:
    """A flow's recovery point and retention margin, above its charts (the lag heat map among them)."""
    if r is None:
        return ""
    records = "unknown" if r.records is None else f"{r.records:,} records"
    margin = (
        "none (nothing waits, or the topics are compacted or kept without limit)"
        if r.margin_seconds is None
        else f"{_seconds(r.margin_seconds)} ({_e(r.margin_basis)})"
    )
    return (
        "<p class='recovery'><strong>Recovery point</strong> (what losing the source now would lose): "
        f"<span class='recovery-records'>{records}</span>, the oldest "
        f"<span class='recovery-seconds'>{_seconds(r.seconds)}</span> old. <strong>Retention margin</strong> "
        f"(the least time before the source deletes a record MM2 has not copied): "
        f"<span class='retention-margin'>{margin}</span>.</p>"
    )


def _sections(d: Digest, lag_threshold: int) -> str:
    nav = "".join(f"<a href='#flow-{i}'>{_e(f.flow)}</a>" for i, f in enumerate(d.flows))
    flows = "".join(
        f"<section id='flow-{i}' class='flow'><h2>Flow {_e(f.flow)}</h2>{recovery_html(f.recovery)}"
        f"<div class='charts' data-flow='{i}'></div></section>"
        for i, f in enumerate(d.flows)
    )
    rows_note = (
        f"{d.totals['group_partitions']:,} group partitions, more than {ROW_LIMIT:,}: the {WORST_ROWS:,} worst are "
        "listed (problems first, then the most messages skipped or replayed); the tables above sum them per group "
        "and per topic."
        if d.aggregated
        else "Every group partition of the inspection."
    )
    groups_note = (
        f" The {GROUP_LIMIT:,} groups listed are the first of {d.readiness.total:,} (groups not ready first)."
        if d.readiness.total > GROUP_LIMIT
        else ""
    )
    return (
        f"<nav><a href='#readiness'>readiness</a>{nav}<a href='#topics'>topics</a><a href='#rows'>rows</a></nav>"
        "<section id='readiness'><h2>Ready to cut over?</h2>"
        "<p class='muted'>A group is ready when every partition is exactly translated, it has no active members "
        f"on the target, and MM2 lags at most {lag_threshold:,} records on each of its partitions. Replay "
        "and skip count what the group's consumers would read twice or never see if they resumed now from the "
        "offsets on the target; a failover planned with mm2ctl plan failover writes the translated ones instead. "
        "Marked ≥ (at least) and ≤ (at most), they are bounds: the exact count is known only where the translation "
        f"is exact.{_e(groups_note)}</p>"
        "<div class='table' data-table='readiness'></div></section>"
        f"{flows}"
        "<section id='topics'><h2>Group partitions per topic</h2>"
        "<div class='table' data-table='topics'></div></section>"
        f"<section id='rows'><h2>Group partitions</h2><p class='muted'>{_e(rows_note)}</p>"
        "<div class='table' data-table='rows'></div></section>"
    )


def _data(d: Digest) -> dict[str, Any]:
    return {
        "flows": [{"flow": f.flow, "charts": flow_charts(f)} for f in d.flows],
        "tables": {"readiness": d.readiness.to_json(), "topics": d.topics.to_json(), "rows": d.rows.to_json()},
        "aggregated": d.aggregated,
    }


def render(
    tables: InspectionTables,
    *,
    setup: SetupReport | None,
    lag_threshold: int,
    generated_at: dt.datetime,
    version: str,
) -> RenderedReport:
    """The report page of an inspection."""
    d = digest(tables, lag_threshold)
    data = _json_in_script(_data(d))
    title = "mm2ctl report: " + ", ".join(f.flow for f in d.flows)
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{_CSP}\">"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<link rel='icon' href='data:,'><title>{_e(title)}</title><style>{_asset('page.css')}</style></head><body>"
        f"{_header(tables, d, setup, generated_at, version)}<main>{_sections(d, lag_threshold)}</main>"
        f"<script type='application/json' id='mm2ctl-data'>{data}</script>"
        f"{_inline_script('plotly.js', get_plotlyjs())}{_inline_script('page.js', _asset('page.js'))}</body></html>"
    )
    return RenderedReport(html=page, totals=dict(d.totals), aggregated=d.aggregated)


def write_report(path: str | Path, page: str) -> Path:
    """Write the page to ``path`` atomically (a temporary file beside it, renamed over it)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")  # created with the user's umask, as target is
    try:
        with tmp.open("w", encoding="utf-8") as f:
            f.write(page)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target
