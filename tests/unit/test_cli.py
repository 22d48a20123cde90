"""The CLI's contract with scripts: one-line errors, documented exit codes, --json results, a --pair checked
before any I/O, shell completion, helpful --help."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer

import mm2ctl
from mm2ctl.cli.main import app, main
from mm2ctl.core.exit_codes import ExitCode, meaning_of
from mm2ctl.lab.control import ClusterInfo, LabInfo
from mm2ctl.plans.serialize import write_plan_file
from tests.unit.test_plan_samples import sample_plan


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


# --- in process: the root app's one error handler, as the console script runs it ---------------------------


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """``mm2ctl ARGS`` in this process (no interpreter start-up): exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 0 if code is None else 1), out.out, out.err


MISSING_MM2 = "/nonexistent/mm2ctl-test/mm2.properties"

#: Every command that takes --pair, each with a --mm2-config that does not exist: were the MM2 file read
#: before the flow is checked, the message would name the file instead.
PAIR_COMMANDS = {
    "inspect": ["inspect", "--mm2-config", MISSING_MM2],
    "plan connectors": ["plan", "connectors", "stop", "--mm2-config", MISSING_MM2, "--out", "never.yaml"],
    "plan reset-connector-offsets": ["plan", "reset-connector-offsets", "--mm2-config", MISSING_MM2, "-o", "x.yaml"],
    "plan truncate-offset-syncs": ["plan", "truncate-offset-syncs", "--mm2-config", MISSING_MM2, "-o", "x.yaml"],
    "plan reset-mm2": ["plan", "reset-mm2", "--mm2-config", MISSING_MM2, "--out", "never.yaml"],
    "plan failover": ["plan", "failover", "--mm2-config", MISSING_MM2, "--out", "never.yaml"],
    "drill --mm2-config": ["drill", "--mm2-config", MISSING_MM2, "--connect-url", "http://127.0.0.1:9"],
}


@pytest.mark.parametrize("command", sorted(PAIR_COMMANDS))
def test_a_malformed_pair_is_refused_before_any_file_is_read(
    command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    args = PAIR_COMMANDS[command]
    code, out, err = run_main(capsys, *args, "--pair", "A=>B")
    assert code == ExitCode.CONFIG, err
    assert err == "mm2ctl: error: 'A=>B' is not a flow name; write it as SOURCE->TARGET\n"
    assert out == ""
    # The control: with a well-formed flow the same command goes on, and fails on the missing file.
    code, _, err = run_main(capsys, *args, "--pair", "A->B")
    assert err == f"mm2ctl: error: {MISSING_MM2}: file not found\n"
    assert not list(tmp_path.iterdir())  # no plan file, nothing written


def test_a_malformed_pair_is_refused_before_the_drill_looks_for_its_lab(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    lab = str(tmp_path / "no-lab")
    assert run_main(capsys, "drill", "--lab-dir", lab, "--pair", "A->B")[0] == ExitCode.LAB
    code, _, err = run_main(capsys, "drill", "--lab-dir", lab, "--pair", "A=>B")
    assert code == ExitCode.CONFIG and "'A=>B' is not a flow name" in err


def test_every_given_inspect_pair_is_checked(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "inspect", "--mm2-config", MISSING_MM2, "--pair", "A->B", "--pair", "B->B")
    assert code == ExitCode.CONFIG and "'B->B': source and target are the same cluster" in err


def test_version_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "version", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["version"] == mm2ctl.__version__ and doc["command"] == "version"
    assert (doc["exit_code"], doc["exit_meaning"]) == (0, "success")


def test_show_renders_a_plan_and_its_json(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    plan = sample_plan()
    write_plan_file(plan, tmp_path / "plan.yaml")
    code, out, _ = run_main(capsys, "show", str(tmp_path / "plan.yaml"))
    assert code == 0 and out.startswith(f"plan {plan.plan_id} (reset-mm2, pair A->B)")
    assert "[cannot be undone by rollback]" in out
    code, out, _ = run_main(capsys, "show", str(tmp_path / "plan.yaml"), "--json")
    assert code == 0 and json.loads(out)["plan_id"] == plan.plan_id


def test_apply_json_error_is_one_line_on_stderr_and_nothing_on_stdout(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    write_plan_file(sample_plan(mm2_config=MISSING_MM2), tmp_path / "plan.yaml")
    code, out, err = run_main(capsys, "apply", str(tmp_path / "plan.yaml"), "--dry-run", "--json")
    assert code == ExitCode.CONFIG
    assert out == ""
    assert err == f"mm2ctl: error: the MM2 properties file {MISSING_MM2} is gone; pass --mm2-config\n"


def test_rollback_json_of_a_missing_journal_is_a_journal_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run_main(capsys, "rollback", str(tmp_path / "none.jsonl"), "--json")
    assert code == ExitCode.JOURNAL and out == "" and err.startswith("mm2ctl: error: ")


def test_lab_down_json_without_a_lab_is_the_lab_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_main(capsys, "lab", "down", "--dir", str(tmp_path / "nothing-here"), "--json")
    assert code == ExitCode.LAB and out == ""
    assert err.startswith("mm2ctl: error: no lab in ") and err.count("\n") == 1


def test_lab_down_json_reports_what_it_stopped(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])  # a pid that no longer runs: nothing for lab down to stop
    dead.wait()
    cluster = ClusterInfo(alias="primary", bootstrap="127.0.0.1:9", cluster_id="x", pid=dead.pid)
    info = LabInfo(
        dir=str(tmp_path),
        kafka_version="3.9.2",
        replication_policy="default",
        offset_syncs_location="source",
        clusters={"primary": cluster},
        connect_url="http://127.0.0.1:9",
        connect_pid=dead.pid,
        connect_group="g",
        connect_offsets_topic="connect-offsets",
        connectors={},
        mm2_config=str(tmp_path / "mm2.properties"),
        started_at=0.0,
    )
    (tmp_path / "lab.json").write_text(info.to_json())
    code, out, _ = run_main(capsys, "lab", "down", "--dir", str(tmp_path), "--json")
    assert code == 0
    assert json.loads(out) == {
        "command": "lab down",
        "dir": str(tmp_path.resolve()),
        "stopped_pids": [],
        "removed": False,
        "exit_code": 0,
        "exit_meaning": "success",
    }


def test_exit_code_meanings_are_the_readme_table() -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    section = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    table = dict(re.findall(r"^\| (\d+) \| (.+) \|$", section, flags=re.MULTILINE))
    assert {int(k): v.replace("`", "") for k, v in table.items()} == {int(c): c.meaning for c in ExitCode}
    assert meaning_of(130) == "interrupted" and meaning_of(99) == "exit code 99"


def _commands(command: Any, path: str = "mm2ctl") -> list[tuple[str, Any]]:
    """Every command under ``command`` (typer's click objects), with its command line."""
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, f"{path} {name}")
    return found


@pytest.mark.parametrize(("path", "command"), _commands(typer.main.get_command(app)), ids=lambda v: str(v))
def test_every_command_and_option_says_what_it_is_for(path: str, command: Any) -> None:
    assert (command.help or "").strip(), f"{path} has no help"
    silent = [p.name for p in command.params if not (getattr(p, "help", None) or "").strip()]
    assert not silent, f"{path}: no help for {silent}"


# --- as a subprocess: completion, python -m ----------------------------------------------------------------


def test_python_m_mm2ctl_runs_as_mm2ctl() -> None:
    out = run_cli("version")
    assert out.returncode == 0 and out.stdout.strip() == mm2ctl.__version__
    usage = run_cli("plan", "--help")
    assert "Usage: mm2ctl plan" in usage.stdout


def _console_script() -> str:
    script = Path(sys.executable).parent / "mm2ctl"
    assert script.exists(), "the mm2ctl console script is not installed next to this interpreter"
    return str(script)


def _from_bash(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``argv`` as a child of bash, as a user's shell would: typer finds the shell to complete for by
    walking up the process tree, so without a bash parent (a CI runner, a background job) it finds none."""
    return subprocess.run(
        ["/bin/bash", "-c", '"$@"; exit $?', "bash", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_install_completion_writes_a_bash_script_for_mm2ctl(tmp_path: Path) -> None:
    env = {**os.environ, "HOME": str(tmp_path), "SHELL": "/bin/bash"}
    shown = _from_bash([sys.executable, "-m", "mm2ctl", "--show-completion"], env)
    assert shown.returncode == 0, shown.stderr
    assert "_MM2CTL_COMPLETE=complete_bash" in shown.stdout and "complete -o default -F" in shown.stdout
    assert shown.stdout.rstrip().endswith(" mm2ctl")
    installed = _from_bash([_console_script(), "--install-completion"], env)
    assert installed.returncode == 0, installed.stderr
    script = tmp_path / ".bash_completions" / "mm2ctl.sh"
    assert script.read_text().strip() == shown.stdout.strip()
    assert str(script) in (tmp_path / ".bashrc").read_text()


@pytest.mark.parametrize("how", ["console script", "python -m"])
def test_completion_answers_for_mm2ctl(how: str) -> None:
    argv = [_console_script()] if how == "console script" else [sys.executable, "-m", "mm2ctl"]
    env = {**os.environ, "_MM2CTL_COMPLETE": "complete_bash", "COMP_WORDS": "mm2ctl plan tr", "COMP_CWORD": "2"}
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["truncate-offset-syncs"]
    # Completing after a malformed --pair neither fails nor checks the flow.
    env["COMP_WORDS"], env["COMP_CWORD"] = "mm2ctl plan failover --pair A=>B --mm2", "5"
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.split() == ["--mm2-config"], done.stderr


def test_an_unexpected_error_is_one_line_with_its_secrets_masked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib

    cli_main = importlib.import_module("mm2ctl.cli.main")  # the module; mm2ctl.cli.main is also its function

    def explode(**_kwargs: object) -> None:
        raise RuntimeError("GET http://admin:hunter2@connect:8083/connectors failed; password=s3cret")

    monkeypatch.delenv("MM2CTL_DEBUG", raising=False)
    monkeypatch.setattr(cli_main, "app", explode)
    with pytest.raises(SystemExit) as info:
        cli_main.main([])
    assert info.value.code == ExitCode.ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mm2ctl: internal error: RuntimeError: ")
    assert "hunter2" not in err and "s3cret" not in err


def test_inspect_and_exporter_take_the_monitoring_options() -> None:
    inspect_help = run_cli("inspect", "--help")
    for option in ("--connect-url", "--rows", "--lag-threshold", "--lag-seconds-thresh", "prometheus"):
        assert option in inspect_help.stdout, option
    exporter_help = run_cli("exporter", "--help")
    assert exporter_help.returncode == 0
    for option in ("--mm2-config", "--connect-url", "--listen", "--interval", "--connect-password"):
        assert option in exporter_help.stdout, option


def test_the_lag_threshold_defaults_to_the_inspectors() -> None:
    import inspect as pyinspect

    from mm2ctl.cli.exporter_cmd import exporter
    from mm2ctl.cli.inspect_cmd import inspect
    from mm2ctl.inspector.selection import DEFAULT_LAG_SECONDS_THRESHOLD, DEFAULT_LAG_THRESHOLD

    for command in (inspect, exporter):
        default = pyinspect.signature(command).parameters["lag_threshold"].default
        assert default == DEFAULT_LAG_THRESHOLD
        seconds = pyinspect.signature(command).parameters["lag_seconds_threshold"].default
        assert seconds == DEFAULT_LAG_SECONDS_THRESHOLD


def test_a_negative_lag_seconds_threshold_is_bad_usage(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n")
    for command in ("inspect", "exporter"):
        extra = ("--listen", "127.0.0.1:1") if command == "exporter" else ()
        out = run_cli(command, "--mm2-config", str(config), "--lag-seconds-threshold", "-5", *extra)
        assert out.returncode == ExitCode.USAGE, (command, out.stderr)
        assert "Invalid value for '--lag-seconds-threshold'" in out.stderr


def test_prometheus_format_needs_an_output_file(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n")
    out = run_cli("inspect", "--mm2-config", str(config), "--format", "prometheus")
    assert out.returncode == ExitCode.CONFIG
    assert "--format prometheus writes a file" in out.stderr


def test_exporter_refuses_a_bad_listen_address(tmp_path: Path) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n")
    out = run_cli("exporter", "--mm2-config", str(config), "--listen", "9464")
    assert out.returncode == ExitCode.CONFIG
    assert "--listen expects HOST:PORT" in out.stderr


@pytest.mark.parametrize("command", [["inspect"], ["exporter", "--listen", "127.0.0.1:0"], ["report"]])
def test_an_unknown_engine_is_refused_before_any_cluster_is_reached(
    command: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "mm2.properties"
    config.write_text(
        "clusters=a,b\na.bootstrap.servers=127.0.0.1:9\nb.bootstrap.servers=127.0.0.1:9\na->b.enabled=true\n"
    )
    code, _, err = run_main(capsys, *command, "--mm2-config", str(config), "--engine", "fast")
    assert code == ExitCode.CONFIG, err
    assert err.splitlines()[-1] == "mm2ctl: error: --engine 'fast': expected one of auto, spark"
