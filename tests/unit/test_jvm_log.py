"""Where the Spark driver JVM's output goes: the log file's place and bound, log4j2's option."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from mm2ctl.cli import run_log
from mm2ctl.inspector.spark.jvm_log import log4j2_config_path, log4j_java_option
from mm2ctl.inspector.spark.session import embedded_settings

JAVA_OPTIONS = "spark.driver.extraJavaOptions"


@pytest.fixture(autouse=True)
def _fresh_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MM2CTL_STATE_DIR", str(tmp_path / "state"))
    run_log.start(verbose=False)


def test_the_log_lives_in_the_state_dir_and_is_named_on_failure(tmp_path: Path) -> None:
    assert run_log.failure_line() is None  # no JVM started: nothing to name
    path = run_log.jvm_log("inspect")
    assert path is not None and path.parent == tmp_path / "state" / "logs"
    assert path.name.startswith("inspect-") and path.suffix == ".log" and path.exists()
    assert path.stat().st_mode & 0o077 == 0  # the JVM's output may name hosts and paths: the owner's only
    assert run_log.failure_line() is None  # the run failed before the JVM wrote anything: nothing to point at
    path.write_text("Error: Invalid maximum heap size: -Xmxlots\n")
    assert run_log.failure_line() == f"mm2ctl: Spark's JVM wrote its output to {path}"


def test_verbose_keeps_the_jvm_on_the_terminal() -> None:
    run_log.start(verbose=True)
    assert run_log.verbose()
    assert run_log.jvm_log("inspect") is None
    assert run_log.failure_line() is None


def test_old_logs_are_pruned_to_a_bound(tmp_path: Path) -> None:
    logs = tmp_path / "state" / "logs"
    logs.mkdir(parents=True)
    now = time.time()
    for i in range(run_log.KEEP_LOGS + 5):
        old = logs / f"inspect-old{i:02d}.log"
        old.write_text("x")
        os.utime(old, (now - 1000 + i, now - 1000 + i))
    (logs / "notes.txt").write_text("not a log")
    newest = run_log.jvm_log("inspect")
    kept = sorted(p.name for p in logs.glob("*.log"))
    assert len(kept) == run_log.KEEP_LOGS and newest is not None and newest.name in kept
    assert "inspect-old00.log" not in kept and f"inspect-old{run_log.KEEP_LOGS + 4:02d}.log" in kept
    assert (logs / "notes.txt").exists()


def test_an_unwritable_state_dir_falls_back_to_a_temporary_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("MM2CTL_STATE_DIR", str(blocker / "state"))  # under a file: cannot be created
    path = run_log.jvm_log("inspect")
    assert path is not None and path.exists() and path.name.startswith("mm2ctl-inspect-")
    path.unlink()


def test_log4j2_option_is_added_to_the_driver_options_unless_the_user_chose_a_config() -> None:
    ours = f"-Dlog4j2.configurationFile={log4j2_config_path()}"
    assert log4j2_config_path().is_file()
    assert log4j_java_option(None) in (ours, f'"{ours}"')
    assert log4j_java_option("-XX:+UseParallelGC").startswith("-XX:+UseParallelGC -Dlog4j2.configurationFile=")
    mine = "-Xss4m -Dlog4j2.configurationFile=/etc/my-log4j2.xml"
    assert log4j_java_option(mine) == mine
    assert log4j_java_option("-Dlog4j.configurationFile=x.xml") == "-Dlog4j.configurationFile=x.xml"


def test_a_config_path_with_spaces_stays_one_java_option(monkeypatch: pytest.MonkeyPatch) -> None:
    from mm2ctl.inspector.spark import jvm_log

    monkeypatch.setattr(jvm_log, "log4j2_config_path", lambda: Path('/opt/my "apps"/log4j2.properties'))
    assert log4j_java_option("-Xss4m") == r'-Xss4m "-Dlog4j2.configurationFile=/opt/my \"apps\"/log4j2.properties"'


def test_embedded_settings_merge_the_log_option_and_keep_the_users_conf_winning() -> None:
    plain = embedded_settings("local[2]", None, log_to_file=False)
    assert plain[JAVA_OPTIONS] == "-XX:+UseParallelGC"
    logged = embedded_settings("local[2]", None, log_to_file=True)
    assert logged[JAVA_OPTIONS].startswith("-XX:+UseParallelGC -Dlog4j2.configurationFile=")
    # The user's options replace the collector default, as before; the log option is still added.
    users = embedded_settings("local[2]", {JAVA_OPTIONS: "-Xss4m"}, log_to_file=True)
    assert users[JAVA_OPTIONS].startswith("-Xss4m -Dlog4j2.configurationFile=")
    assert "UseParallelGC" not in users[JAVA_OPTIONS]
    remote = embedded_settings("spark://h:7077", None, log_to_file=True)
    assert remote[JAVA_OPTIONS].startswith("-Dlog4j2.configurationFile=")
    assert "spark-sql-kafka-0-10_" in remote["spark.jars.packages"]


def test_librdkafka_lines_go_to_the_runs_log_file_not_the_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import logging

    from mm2ctl.core.kafka.client_log import librdkafka_log

    run_log.start(verbose=False, command="plan")
    assert run_log.failure_line() is None
    librdkafka_log.warning("OFFSET [rdkafka#consumer-4]: offset reset: Offset out of range")
    logging.getLogger("mm2ctl.plans").warning("mm2ctl's own line")
    (path,) = (tmp_path / "state" / "logs").glob("plan-*.log")
    assert "Offset out of range" in path.read_text()
    assert "mm2ctl's own line" not in path.read_text()
    assert "rdkafka" not in capsys.readouterr().err
    assert run_log.failure_line() == f"mm2ctl: library log lines of this run are in {path}"
    # A JVM started later appends to the same file.
    assert run_log.jvm_log("inspect") == path


def test_py4j_lines_go_to_the_runs_log_file_not_the_terminal(tmp_path: Path) -> None:
    import io
    import logging

    root = logging.getLogger()
    terminal = io.StringIO()
    stderr = logging.StreamHandler(terminal)
    root.addHandler(stderr)
    try:
        run_log.start(verbose=False, command="exporter")
        record = logging.makeLogRecord(
            {"levelno": logging.ERROR, "levelname": "ERROR", "msg": "Exception while sending command.",
             "pathname": "/venv/lib/python3.11/site-packages/py4j/java_gateway.py"}
        )  # fmt: skip
        root.handle(record)
        logging.getLogger("mm2ctl.exporter").error("mm2ctl's own line")
        (path,) = (tmp_path / "state" / "logs").glob("exporter-*.log")
        assert "Exception while sending command." in path.read_text()
        assert "mm2ctl's own line" not in path.read_text()
        assert "Exception while sending command." not in terminal.getvalue()
        assert "mm2ctl's own line" in terminal.getvalue()
    finally:
        run_log.start(verbose=True)
        root.removeHandler(stderr)


def test_verbose_sends_librdkafka_lines_to_the_terminal(tmp_path: Path) -> None:
    import logging

    from mm2ctl.core.kafka.client_log import LIBRDKAFKA_LOGGER

    run_log.start(verbose=True, command="plan")
    library = logging.getLogger(LIBRDKAFKA_LOGGER)
    assert library.propagate and not [h for h in library.handlers if type(h).__name__ == "_LibraryLog"]
    assert not (tmp_path / "state" / "logs").exists()
