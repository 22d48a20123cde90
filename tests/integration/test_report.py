"""`mm2ctl report` on a real MM2 flow with planted problems, opened in a real headless Chromium.

One isolated flow carries the groups: ``g-ready`` (exactly translated, MM2 caught up, no member on the target),
``g-active`` (a live member on the target), ``g-lag`` (its topic gets 500 records while MirrorSourceConnector
is stopped, above the report's lag threshold of 100) and ``g-ahead`` (its target offset overwritten with the
source's offset number, so a failover now skips messages). The report runs the inspection itself once
(``--exact``), and is made once more from the rows `inspect` saved (Parquet group rows, JSON-lines partition
rows); both must say the same per group.

The page is driven through Playwright with Debian's Chromium (``.ci/run`` installs the ``chromium`` package;
Playwright's own browser download does not work here): it loads with no console error and no request beyond
its own file, its charts are drawn (the screenshot of each chart area has many colours and a fair share of
non-white pixels), the readiness table names the planted not-ready groups with their reasons, and filtering
and sorting work in the page.
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually
from tests.integration.test_inspect import ActiveConsumer

pytestmark = pytest.mark.integration

CHROMIUM = "/usr/bin/chromium"
#: Chromium's flags on this machine: no sandbox as root, and none of its background connections.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip
LAG_THRESHOLD = 100
READY_DEADLINE_MS = 60_000


@dataclass
class Planted:
    name: str
    lab: LabInfo
    page: Path  # the report that ran its own inspection
    saved_page: Path  # the report made from the rows inspect saved
    tmp: Path

    def g(self, suffix: str) -> str:
        return f"iso-{self.name}-{suffix}"


def _mm2ctl(*args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "mm2ctl", *args],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp / "state")},
    )  # fmt: skip
    return proc


def _stored_next(connect: Any, connector: str) -> dict[tuple[str, int], int]:
    got = connect.get_offsets(connector)
    return {(o.partition["topic"], o.partition["partition"]): o.offset["offset"] + 1 for o in got.offsets if o.offset}


@pytest.fixture(scope="module")
def planted(lab_pool: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Planted]:
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    tmp = tmp_path_factory.mktemp("report")
    name = f"rep{uuid.uuid4().hex[:8]}"
    t = lambda s: f"iso-{name}-{s}"  # noqa: E731
    src, dst = {"bootstrap.servers": lab.source.bootstrap}, {"bootstrap.servers": lab.target.bootstrap}
    source, target = KafkaAdmin.connect(src), KafkaAdmin.connect(dst)
    # Before MM2 sees it: a topic whose log starts at 200, and a group at 250 in it.
    source.create_topics({t("ahead"): 1})
    records.produce(src, t("ahead"), [(None, f"a{i}".encode(), 0) for i in range(300)])
    source.delete_records({(t("ahead"), 0): 200})
    source.alter_group_offsets({t("g-ahead"): {(t("ahead"), 0): 250}})
    flow = lab_core.add_flow(lab, name)
    remote = load_mm2_config(flow.mm2_config).pair(f"{flow.source_alias}->{flow.target_alias}").remote_topic

    def synced(group: str, tp: tuple[str, int]) -> bool:
        return target.committed_offsets([group])[group].offsets.get(tp) is not None

    source.create_topics({t("ready"): 2, t("busy"): 1})
    records.produce(src, t("ready"), [(None, f"r{i}".encode(), i % 2) for i in range(200)])
    records.produce(src, t("busy"), [(None, f"b{i}".encode(), 0) for i in range(100)])
    source.alter_group_offsets(
        {
            t("g-ready"): {(t("ready"), 0): 60, (t("ready"), 1): 40},
            t("g-active"): {(t("ready"), 0): 50},
            t("g-lag"): {(t("busy"), 0): 50},
        }
    )
    for group, topic, partition in [
        (t("g-ready"), t("ready"), 0), (t("g-ready"), t("ready"), 1), (t("g-lag"), t("busy"), 0),
        (t("g-ahead"), t("ahead"), 0),
    ]:  # fmt: skip
        remote_tp = (remote(topic), partition)
        eventually(
            lambda g=group, tp=remote_tp: synced(g, tp),
            timeout_s=120,
            what=f"MM2 to sync {group} {topic}/{partition}",
        )
    # Replication without translation: the source's offset number written over MM2's translated one.
    assert target.alter_group_offsets({t("g-ahead"): {(remote(t("ahead")), 0): 250}})[t("g-ahead")][0].error is None
    active = ActiveConsumer(lab.target.bootstrap, t("g-active"), remote(t("ready")))
    connect = build_connect_client([lab.connect_url])
    try:
        eventually(
            lambda: target.describe_groups([t("g-active")])[t("g-active")].members == 1,
            timeout_s=60,
            what="an active member in g-active on the target",
        )
        wanted = {(t("ready"), 0): 100, (t("ready"), 1): 100, (t("busy"), 0): 100}
        eventually(
            lambda: all(_stored_next(connect, flow.connectors["source"]).get(tp) == n for tp, n in wanted.items()),
            timeout_s=120,
            what="MM2 to copy the topics and store its position",
        )
        connect.stop(flow.connectors["source"])
        connect.wait_for_state(flow.connectors["source"], {"STOPPED"}, timeout=60)
        records.produce(src, t("busy"), [(None, f"w{i}".encode(), 0) for i in range(500)])  # 500 > LAG_THRESHOLD

        setup = ["--mm2-config", flow.mm2_config, "--connect-url", lab.connect_url]
        spark = ["--spark-conf", "spark.sql.shuffle.partitions=4"]
        page = tmp / "report.html"
        proc = _mm2ctl("report", *setup, *spark, "--exact", "--lag-threshold", str(LAG_THRESHOLD), "-o", str(page),
                       tmp=tmp)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert f"wrote {page}" in proc.stderr

        saved = tmp / "saved"
        for rows, fmt, out in (("groups", "parquet", saved / "groups"), ("partitions", "json", saved / "p.jsonl")):
            proc = _mm2ctl("inspect", *setup, *spark, "--exact", "--rows", rows, "--format", fmt, "--output",
                           str(out), tmp=tmp)  # fmt: skip
            assert proc.returncode == 10, proc.stderr  # problems found
        saved_page = tmp / "saved.html"
        proc = _mm2ctl(
            "report", "--group-rows", str(saved / "groups"), "--partition-rows", str(saved / "p.jsonl"),
            "--mm2-config", flow.mm2_config, "--lag-threshold", str(LAG_THRESHOLD), "-o", str(saved_page), "--json",
            tmp=tmp,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["output"] == str(saved_page)
        yield Planted(name, lab, page, saved_page, tmp)
    finally:
        active.close()
        for connector in flow.connectors.values():
            connect.delete(connector)
        connect.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: .ci/run installs Debian's chromium package")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class Loaded:
    page: Any
    console_errors: list[str]
    page_errors: list[str]
    requests: list[str]


def _load(browser: Any, path: Path) -> Loaded:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    loaded = Loaded(page, [], [], [])
    page.on("console", lambda m: loaded.console_errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: loaded.page_errors.append(str(e)))
    page.on("request", lambda r: loaded.requests.append(r.url))
    page.goto(path.as_uri())
    page.wait_for_function("window.mm2ctlReport && window.mm2ctlReport.ready", timeout=READY_DEADLINE_MS)
    return loaded


@pytest.fixture(scope="module")
def loaded(browser: Any, planted: Planted) -> Iterator[Loaded]:
    page = _load(browser, planted.page)
    yield page
    page.page.close()


def test_the_page_loads_with_no_console_error_and_no_network_request(loaded: Loaded, planted: Planted) -> None:
    assert loaded.console_errors == [] and loaded.page_errors == []
    assert loaded.requests == [planted.page.as_uri()]  # its own file, nothing else
    assert loaded.page.evaluate("window.mm2ctlReport.charts") == 7  # one flow
    assert planted.page.stat().st_size > 3_000_000  # plotly.js is in the file


def _colours_and_ink(png: bytes) -> tuple[int, float]:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 24) or []
    ink = sum(count for count, (r, g, b) in colours if min(r, g, b) < 235) / (image.width * image.height)
    return len(colours), ink


def test_a_screenshot_shows_the_charts_drawn(loaded: Loaded, planted: Planted) -> None:
    page = loaded.page
    shot = planted.tmp / "report.png"
    page.screenshot(path=str(shot), full_page=True)
    if os.environ.get("MM2CTL_TEST_LAB_DIR"):  # kept beside the labs for a person to look at
        for kept in (shot, planted.page):
            shutil.copy(kept, Path(os.environ["MM2CTL_TEST_LAB_DIR"]) / kept.name)
    for chart in ("group-statuses", "partition-statuses", "failover", "lag", "sync-age", "checkpoint-age"):
        area = page.locator(f".chart-{chart}")
        colours, ink = _colours_and_ink(area.screenshot())
        assert colours > 20 and ink > 0.02, (chart, colours, ink)  # a blank or empty chart has a few colours
    assert page.locator(".chart-group-statuses .bars path").count() >= 2  # two statuses at least
    assert page.locator(".chart-lag .hm image, .chart-lag .heatmaplayer image").count() >= 1
    skipped = page.evaluate(
        "() => document.querySelector('.chart-failover').data.filter(t => t.name.startsWith('skip'))"
        ".flatMap(t => t.y.map((g, i) => [g, t.x[i]]))"
    )
    assert any(g == planted.g("g-ahead") and x > 0 for g, x in skipped), skipped


def _readiness_rows(page: Any) -> dict[str, dict[str, str]]:
    rows = page.evaluate(
        "() => Array.from(document.querySelectorAll('#table-readiness tbody tr')).map(tr => "
        "Object.fromEntries(Array.from(tr.children).map(td => [td.dataset.key, td.textContent])))"
    )
    return {r["group"]: r for r in rows}


def test_the_readiness_table_names_the_planted_not_ready_groups_with_their_reason(
    loaded: Loaded, planted: Planted
) -> None:
    rows = _readiness_rows(loaded.page)
    assert rows[planted.g("g-active")]["ready"] == "not ready"
    assert "active members on the target (group Stable)" in rows[planted.g("g-active")]["reason"]
    assert rows[planted.g("g-lag")]["ready"] == "not ready"
    assert (
        f"MM2 lags more than {LAG_THRESHOLD} records on 1 partition(s) (most: 500 on"
        in rows[planted.g("g-lag")]["reason"]
    )
    assert rows[planted.g("g-ready")]["ready"] == "ready", rows[planted.g("g-ready")]
    assert rows[planted.g("g-ready")]["reason"] == "ready to cut over"


def test_filtering_and_sorting_the_table_in_the_page(browser: Any, planted: Planted) -> None:
    loaded = _load(browser, planted.page)
    page = loaded.page
    holder = page.locator("[data-table='readiness']")
    everyone = set(_readiness_rows(page))
    assert {planted.g(s) for s in ("g-ready", "g-active", "g-lag", "g-ahead")} <= everyone
    holder.locator("input[data-role='filter']").fill("g-act")
    assert set(_readiness_rows(page)) == {planted.g("g-active")}
    holder.locator("input[data-role='filter']").fill("")
    holder.locator("select[data-key='ready']").select_option(label="not ready")
    not_ready = _readiness_rows(page)
    assert planted.g("g-ready") not in not_ready and planted.g("g-active") in not_ready
    assert {r["ready"] for r in not_ready.values()} == {"not ready"}
    holder.locator("select[data-key='ready']").select_option(label="ready or not")
    holder.locator("th[data-key='group']").click()
    ordered = page.evaluate(
        "() => Array.from(document.querySelectorAll('#table-readiness tbody td[data-key=group]'))"
        ".map(td => td.textContent)"
    )
    assert ordered == sorted(ordered, key=lambda s: s.lower()) and set(ordered) == everyone
    assert loaded.console_errors == [] and loaded.page_errors == []
    page.close()


def _data(path: Path) -> dict[str, Any]:
    found = re.search(r"<script type='application/json' id='mm2ctl-data'>(.*?)</script>", path.read_text(), re.S)
    assert found, path
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def test_a_report_from_the_saved_rows_says_the_same_per_group(planted: Planted) -> None:
    def verdicts(path: Path) -> dict[str, tuple[bool, str]]:
        table = _data(path)["tables"]["readiness"]
        words = table["dictionaries"]
        rows = [
            {c: words[c][v] if c in words else v for c, v in zip(table["columns"], r, strict=True)}
            for r in table["rows"]
        ]
        return {r["group"]: (r["ready"], r["reason"]) for r in rows}

    assert verdicts(planted.saved_page) == verdicts(planted.page)
    text = planted.saved_page.read_text()
    assert "saved inspection: " in text and f"Flow {planted.name}src-&gt;{planted.name}dst" in text
