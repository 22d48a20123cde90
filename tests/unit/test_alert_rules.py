"""The shipped alert rules: promtool checks them and runs their unit tests (each alert fires on one series and
stays quiet on another); every alert has a test and a runbook line in docs/monitoring.md, and reads only metrics
mm2ctl exposes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from mm2ctl.inspector.output.prometheus import METRIC_NAMES

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "examples" / "prometheus" / "mm2ctl-rules.yaml"
RULE_TESTS = ROOT / "tests" / "prometheus" / "mm2ctl-rules.test.yaml"


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("promtool is missing: .ci/run installs Debian's prometheus package")
        pytest.skip("promtool is not installed (Debian: apt-get install prometheus)")
    return found


def _alerts() -> list[dict[str, object]]:
    rules = yaml.safe_load(RULES.read_text())
    return [rule for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


def test_promtool_checks_the_rules() -> None:
    out = subprocess.run([_promtool(), "check", "rules", str(RULES)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"SUCCESS: {len(_alerts())} rules found" in out.stdout


def test_promtool_unit_tests_pass() -> None:
    out = subprocess.run(
        [_promtool(), "test", "rules", str(RULE_TESTS)], capture_output=True, text=True, check=False, cwd=ROOT
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "SUCCESS" in out.stdout


def test_every_alert_is_tested_carries_for_and_has_a_runbook_line() -> None:
    tests = yaml.safe_load(RULE_TESTS.read_text())["tests"]
    tested = {case["alertname"] for test in tests for case in test["alert_rule_test"] if case["exp_alerts"]}
    doc = (ROOT / "docs" / "monitoring.md").read_text()
    runbook = doc[doc.index("## Alerts and what to do") :]
    for alert in _alerts():
        name = str(alert["alert"])
        assert name in tested, f"{name} has no promtool test that fires it"
        assert "for" in alert, f"{name} has no for:"
        assert re.search(rf"^\| `{name}` \|", runbook, re.MULTILINE), (
            f"{name} has no runbook line in docs/monitoring.md"
        )


def test_the_rules_read_only_metrics_mm2ctl_exposes() -> None:
    exposed = {*METRIC_NAMES, "mm2ctl_inspection_errors_total"}
    used = {m for alert in _alerts() for m in re.findall(r"\bmm2ctl_[a-z_]+", str(alert["expr"]))}
    assert used and used <= exposed, used - exposed
