"""The CLI's contract with scripts: one-line errors, documented exit codes, helpful --help."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mm2ctl.core.exit_codes import ExitCode


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mm2ctl", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=False,
    )


def test_help_lists_the_commands() -> None:
    out = run_cli("--help")
    assert out.returncode == 0
    assert "lab" in out.stdout
    lab_help = run_cli("lab", "up", "--help")
    assert lab_help.returncode == 0
    for option in ("--dir", "--kafka-version", "--replication-policy", "--offset-syncs-location"):
        assert option in lab_help.stdout


def test_missing_lab_is_one_line_and_the_lab_exit_code(tmp_path: Path) -> None:
    out = run_cli("lab", "status", "--dir", str(tmp_path / "nothing-here"))
    assert out.returncode == ExitCode.LAB
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert lines[0].startswith("mm2ctl: error: no lab in ")
    assert "Traceback" not in out.stderr


def test_unknown_kafka_version_is_refused_before_anything_starts(tmp_path: Path) -> None:
    out = run_cli("lab", "up", "--dir", str(tmp_path / "lab"), "--kafka-version", "2.8.0")
    assert out.returncode == ExitCode.LAB
    assert "Kafka 2.8.0 is not a lab release; choose one of: 4.3.1, 3.9.2, 3.4.1" in out.stderr
    assert not (tmp_path / "lab").exists()


def test_refuses_to_wipe_a_folder_that_is_not_a_lab(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text("keep me")
    out = run_cli("lab", "up", "--dir", str(tmp_path))
    assert out.returncode == ExitCode.LAB
    assert "is not an mm2ctl lab folder" in out.stderr
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_bad_option_is_a_usage_error() -> None:
    out = run_cli("lab", "up", "--no-such-option")
    assert out.returncode == ExitCode.USAGE
    assert "No such option" in out.stderr


@pytest.mark.parametrize("code", list(ExitCode))
def test_exit_codes_are_distinct_and_documented(code: ExitCode) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert f"| {int(code)} |" in readme, f"README's exit-code table lacks {code.name}"
    assert len({int(c) for c in ExitCode}) == len(ExitCode)
