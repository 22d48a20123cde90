"""A Prometheus server of a test's own, running the shipped alert rules, and the Grafana dashboard's queries.

Prometheus (Debian's `prometheus` package, which `.ci/run` installs) runs on loopback with a 1 s scrape and
evaluation interval and examples/prometheus/mm2ctl-rules.yaml.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from mm2ctl.lab.process import free_port
from tests.integration.support import eventually

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "prometheus" / "mm2ctl-rules.yaml"
#: Metrics with a sample only while records wait to be copied: their panels are run where they do.
WAITING_ONLY = frozenset({"mm2ctl_replication_retention_margin_seconds"})


class Prometheus:
    """A Prometheus server of the test's own on loopback, scraping the exporter every second."""

    def __init__(self, folder: Path, target: str) -> None:
        binary = shutil.which("prometheus")
        if binary is None:
            if os.environ.get("CI"):
                pytest.fail("prometheus is missing: .ci/run installs Debian's prometheus package")
            pytest.skip("prometheus is not installed (Debian: apt-get install prometheus)")
        folder.mkdir(parents=True, exist_ok=True)
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(RULES)],
            "scrape_configs": [{"job_name": "mm2ctl", "static_configs": [{"targets": [target]}]}],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        self.log = folder / "prometheus.log"
        self.proc = subprocess.Popen(
            [
                binary,
                f"--config.file={folder / 'prometheus.yml'}",
                f"--storage.tsdb.path={folder / 'data'}",
                f"--web.listen-address={self.url.removeprefix('http://')}",
            ],
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        eventually(self._ready, timeout_s=60, what="Prometheus ready")

    def _ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-3000:]
        try:
            return requests.get(f"{self.url}/-/ready", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    def query(self, promql: str) -> list[dict[str, Any]]:
        answer = requests.get(f"{self.url}/api/v1/query", params={"query": promql}, timeout=10).json()
        assert answer["status"] == "success", answer
        return list(answer["data"]["result"])

    def value(self, promql: str) -> float | None:
        result = self.query(promql)
        assert len(result) <= 1, result
        return float(result[0]["value"][1]) if result else None

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=30)


def panel_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(title, query) of every target of every panel of ``dashboard``, rows' panels included."""
    panels = [p for top in dashboard["panels"] for p in [top, *top.get("panels", [])] if p["type"] != "row"]
    return [(p["title"], t["expr"]) for p in panels for t in p["targets"]]
