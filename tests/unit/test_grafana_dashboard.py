"""The Grafana dashboard (examples/grafana/mm2ctl.json) is importable as it is and uses only what the exporter
exports: its variables, its panels' queries, and the alert rules its panels link to. (Every panel's query is
run against a real Prometheus scraping the exporter in tests/integration/test_monitoring.py.)"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from mm2ctl.inspector.output.prometheus import METRIC_NAMES

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = json.loads((ROOT / "examples" / "grafana" / "mm2ctl.json").read_text(encoding="utf-8"))
RULES = yaml.safe_load((ROOT / "examples" / "prometheus" / "mm2ctl-rules.yaml").read_text(encoding="utf-8"))
ALERTS = {r["alert"]: r["expr"] for g in RULES["groups"] for r in g["rules"]}
#: The counter is exposed with ``_total``.
EXPORTED = {n + "_total" if n == "mm2ctl_inspection_errors" else n for n in METRIC_NAMES}
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def panels() -> list[dict[str, Any]]:
    found = []
    for p in DASHBOARD["panels"]:
        found += [p, *p.get("panels", [])]
    return [p for p in found if p["type"] != "row"]


def metrics(expr: str) -> set[str]:
    return set(re.findall(r"\bmm2ctl_[a-z_]+", expr))


def test_the_dashboard_has_the_fields_grafana_imports() -> None:
    assert DASHBOARD["uid"] and DASHBOARD["title"] and DASHBOARD["schemaVersion"] >= 36
    assert "id" not in DASHBOARD  # an import gets a new one
    ids = [p["id"] for p in DASHBOARD["panels"]]
    assert len(ids) == len(set(ids))
    for p in DASHBOARD["panels"]:
        assert set(p["gridPos"]) == {"h", "w", "x", "y"} and p["gridPos"]["x"] + p["gridPos"]["w"] <= 24


def test_the_variables_are_a_datasource_then_flow_and_group_from_exported_metrics() -> None:
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert list(variables) == ["datasource", "flow", "group"]
    assert (variables["datasource"]["type"], variables["datasource"]["query"]) == ("datasource", "prometheus")
    for name in ("flow", "group"):
        v = variables[name]
        assert v["type"] == "query" and v["datasource"] == DATASOURCE and v["multi"] and v["includeAll"]
        query = re.fullmatch(r"label_values\((.+), (\w+)\)", v["query"]["query"])
        assert query and query.group(2) == name and metrics(query.group(1)) <= EXPORTED
    assert "$flow" in variables["group"]["query"]["query"]  # groups of the flows chosen


def test_every_panel_queries_only_exported_metrics_through_the_datasource_variable() -> None:
    for p in panels():
        assert p["datasource"] == DATASOURCE, p["title"]
        assert p["targets"], p["title"]
        for target in p["targets"]:
            assert target["datasource"] == DATASOURCE
            used = metrics(target["expr"])
            assert used and used <= EXPORTED, (p["title"], used - EXPORTED)


def test_the_panels_cover_every_exported_metric() -> None:
    used = set().union(*(metrics(t["expr"]) for p in panels() for t in p["targets"]))
    assert used == EXPORTED


def test_panels_link_to_the_alert_rules_they_watch() -> None:
    linked: dict[str, list[str]] = {}
    for p in panels():
        for link in p.get("links", []):
            (alert,) = re.findall(r"rule%3A(\w+)$", link["url"])
            assert alert in ALERTS, (p["title"], alert)
            panel_metrics = set().union(*(metrics(t["expr"]) for t in p["targets"]))
            assert panel_metrics & metrics(ALERTS[alert]), (p["title"], alert)  # it shows what the rule watches
            assert alert in p["description"]
            linked.setdefault(alert, []).append(p["title"])
    assert set(linked) == set(ALERTS)
