"""`mm2ctl report`'s page at 5 k, 50 k and 1 M group partitions: how big the file is, how long it takes to make,
and how long Debian's Chromium takes to open it until every chart is drawn.

The rows are made here, in the report's schemas (``mm2ctl.report.inputs``), shaped like the load of
``inspect_scale.py``: groups of 100 partitions over 10 topics of 10 partitions, 94 % ``synced``, 2 % each
``target_ahead``, ``stale_sync`` and ``not_synced``, half of the translations exact; one replicated-partition
row per topic partition, 1 % of them lagging. Making a page needs no lab (the report reads rows, not clusters),
so the figures are the page's alone.

The load time is the page's own clock: ``performance.now()`` when its script has drawn the last chart and
built the tables (``window.mm2ctlReport.renderMs``), from the navigation's start, the median of ``--loads``
fresh pages in one headless Chromium (Playwright, ``/usr/bin/chromium``).

    .venv/bin/python bench/report_scale.py                      # 5k, 50k and 1M
    .venv/bin/python bench/report_scale.py --rows 5000 --json   # one size, one JSON line
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
from bench_lab import loadavg, print_figures

from mm2ctl import __version__
from mm2ctl.report.inputs import GROUP_ROW_SCHEMA, PARTITION_ROW_SCHEMA, InspectionTables
from mm2ctl.report.page import render, write_report

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
FLOW = "isobenchsrc->isobenchdst"
TOPICS, PARTITIONS = 10, 10
STATUSES = ["target_ahead", "stale_sync", "not_synced"]  # 2 % each; the rest synced


def make_rows(n: int) -> InspectionTables:
    """``n`` group partitions, groups of 100, and the replicated partitions they read."""
    cols: dict[str, list[Any]] = {name: [] for name in GROUP_ROW_SCHEMA.names}
    for i in range(n):
        t, p = (i % 100) // PARTITIONS, i % PARTITIONS
        bucket = (i * 7919) % 100
        status = STATUSES[bucket // 2] if bucket < 6 else "synced"
        exact = (i // 100) % 2 == 0
        replay = (i * 31) % 400
        skip = 25 if status == "target_ahead" else 0
        values = {
            "cluster_pair": FLOW, "group": f"iso-bench-g{i // 100:05d}", "topic": f"iso-bench-t{t}", "partition": p,
            "status": status, "is_ok": status == "synced",
            "message": "Successfully synced, operating normally." if status == "synced" else f"Not synced: {status}",
            "source_offset": 5_000 + i % 5_000, "target_offset": 4_990 + i % 5_000, "target_group_state": "Empty",
            "translated_offset": 4_995 + i % 5_000,
            "translation_method": "offset_sync_exact" if exact else "offset_sync_next",
            "replay_if_failover_now": replay if exact else None, "skip_if_failover_now": skip if exact else None,
            "replay_if_failover_now_at_least": replay, "skip_if_failover_now_at_most": skip,
            "group_checkpoint_age_seconds": float(5 + (i // 100) % 600), "error": None,
        }  # fmt: skip
        for name, value in values.items():
            cols[name].append(value)
    parts: dict[str, list[Any]] = {name: [] for name in PARTITION_ROW_SCHEMA.names}
    for k in range(min(n, TOPICS * PARTITIONS)):
        lagging = k % 100 == 0
        values = {
            "cluster_pair": FLOW, "topic": f"iso-bench-t{k // PARTITIONS}", "partition": k % PARTITIONS,
            "status": "lagging" if lagging else "replicating", "is_ok": not lagging, "message": "m",
            "replication_lag_records": 10_019 if lagging else 20, "records_lost_to_retention": 0,
            "offset_sync_age_seconds": float(k % 90), "error": None,
        }  # fmt: skip
        for name, value in values.items():
            parts[name].append(value)
    return InspectionTables(
        pa.table(cols, schema=GROUP_ROW_SCHEMA),
        pa.table(parts, schema=PARTITION_ROW_SCHEMA),
        dt.datetime.now(dt.UTC),
        "bench/report_scale.py",
    )


def load_times(path: Path, loads: int) -> list[float]:
    """Milliseconds until the page has drawn everything, for ``loads`` fresh pages."""
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for _ in range(loads):
                page = browser.new_page(viewport={"width": 1400, "height": 1000})
                errors: list[str] = []
                page.on("console", lambda m, errors=errors: errors.append(m.text) if m.type == "error" else None)
                page.goto(path.as_uri())
                page.wait_for_function("window.mm2ctlReport && window.mm2ctlReport.ready", timeout=300_000)
                times.append(float(page.evaluate("window.mm2ctlReport.renderMs")))
                assert not errors, errors
                page.close()
        finally:
            browser.close()
    return times


def measure(n: int, loads: int, folder: Path) -> dict[str, Any]:
    started = time.monotonic()
    tables = make_rows(n)
    made = time.monotonic()
    page = render(tables, setup=None, lag_threshold=10_000, generated_at=dt.datetime.now(dt.UTC), version=__version__)
    path = write_report(folder / f"report-{n}.html", page.html)
    rendered = time.monotonic()
    times = load_times(path, loads)
    return {
        "rows": n,
        "groups": page.totals["groups"],
        "aggregated": page.aggregated,
        "bytes": path.stat().st_size,
        "rows_made_s": round(made - started, 2),
        "render_s": round(rendered - made, 2),
        "load_ms_median": round(statistics.median(times)),
        "load_ms": [round(t) for t in times],
        "loadavg": loadavg(),
    }


def report(figures: dict[str, Any]) -> list[str]:
    lines = ["| group partitions | file | made in | opened in Chromium (median) | listed |", "|---|---|---|---|---|"]
    for f in figures["sizes"]:
        listed = "the 1,000 worst rows" if f["aggregated"] else "every row"
        lines.append(
            f"| {f['rows']:,} | {f['bytes'] / 1_048_576:.2f} MiB | {f['render_s']:.2f} s | "
            f"{f['load_ms_median'] / 1000:.2f} s (of {', '.join(str(t) for t in f['load_ms'])} ms) | {listed} |"
        )
    lines.append(f"load average: {figures['sizes'][-1]['loadavg']}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, action="append", help="group partitions; repeatable (5k, 50k, 1M)")
    parser.add_argument("--loads", type=int, default=5, help="page loads per size (the median is kept)")
    parser.add_argument("--keep", metavar="DIR", help="write the pages here and keep them")
    parser.add_argument("--json", action="store_true", help="one JSON line instead of the table")
    args = parser.parse_args()
    sizes = args.rows or [5_000, 50_000, 1_000_000]
    with tempfile.TemporaryDirectory(prefix="mm2ctl-report-bench-") as tmp:
        folder = Path(args.keep) if args.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        figures = {"sizes": [measure(n, args.loads, folder) for n in sizes]}
    print_figures(figures, args.json, report)


if __name__ == "__main__":
    main()
