"""The report's pure logic: the readiness rule, what the page aggregates above its row limit, reading saved
inspections (and refusing bad ones with one line and exit 20), the masked setup, and no Spark on the way."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from mm2ctl.core.errors import InspectionFileError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.report import digest as digest_module
from mm2ctl.report.digest import ROW_LIMIT, WORST_ROWS, Recovery, digest
from mm2ctl.report.inputs import GROUP_ROW_SCHEMA, PARTITION_ROW_SCHEMA, InspectionTables, read_rows, read_saved
from mm2ctl.report.readiness import GroupFacts, assess, is_active_state, judge

FLOW = "primary->backup"


def group_row(group: str, topic: str = "orders", partition: int = 0, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in GROUP_ROW_SCHEMA.names}
    row.update(
        cluster_pair=FLOW, group=group, topic=topic, partition=partition, status="synced", is_ok=True,
        message="Successfully synced, operating normally.", translated_offset=10,
        translation_method="offset_sync_exact", target_group_state="Empty", replay_if_failover_now=0,
        skip_if_failover_now=0, replay_if_failover_now_at_least=0, skip_if_failover_now_at_most=0,
    )  # fmt: skip
    row.update(values)
    return row


def partition_row(topic: str = "orders", partition: int = 0, lag: int | None = 0, **values: Any) -> dict[str, Any]:
    row: dict[str, Any] = {name: None for name in PARTITION_ROW_SCHEMA.names}
    row.update(cluster_pair=FLOW, topic=topic, partition=partition, status="replicating", is_ok=True, message="m",
               replication_lag_records=lag, records_lost_to_retention=0, offset_sync_age_seconds=5.0)  # fmt: skip
    row.update(values)
    return row


def groups_table(*rows: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=GROUP_ROW_SCHEMA)


def partitions_table(*rows: dict[str, Any]) -> pa.Table:
    return pa.Table.from_pylist(list(rows), schema=PARTITION_ROW_SCHEMA)


# --- readiness ---------------------------------------------------------------------------------------------


def test_a_group_with_every_condition_met_is_ready() -> None:
    assert judge(GroupFacts(FLOW, "g", partitions=3), lag_threshold=100).ready
    assert judge(GroupFacts(FLOW, "g", partitions=3), lag_threshold=100).text == "ready to cut over"


@pytest.mark.parametrize(
    ("facts", "reason"),
    [
        ({"not_inspected": 1}, "1 of 4 partition(s) not inspected: a lookup failed"),
        (
            {"untranslatable": 2, "untranslatable_statuses": ("no_offset_syncs",)},
            "2 of 4 partition(s) untranslatable (no_offset_syncs)",
        ),
        ({"approximate": 3}, "3 of 4 partition(s) translated to a bound, not exactly"),
        ({"not_copied": 2}, "MM2 has not copied up to the group's position on 2 of 4 partition(s)"),
        ({"active_state": "Stable"}, "active members on the target (group Stable)"),
        (
            {"lagging": 1, "max_lag": 12_345, "max_lag_at": "orders/2"},
            "MM2 lags more than 100 records on 1 partition(s) (most: 12,345 on orders/2)",
        ),
        ({"lag_unknown": 4}, "MM2's replication lag unknown on 4 of 4 partition(s)"),
        ({"partition_rows_given": False}, "MM2's replication lag unknown: no replicated-partition rows"),
    ],
)  # fmt: skip
def test_each_failed_condition_is_a_reason(facts: dict[str, Any], reason: str) -> None:
    verdict = judge(GroupFacts(FLOW, "g", partitions=4, **facts), lag_threshold=100)
    assert not verdict.ready
    assert len(verdict.reasons) == 1 and verdict.reasons[0].startswith(reason), verdict.reasons


def test_group_states_are_active_in_any_spelling() -> None:
    for state in (
        "Stable",
        "STABLE",
        "PreparingRebalance",
        "PREPARING_REBALANCE",
        "CompletingRebalance",
        "Reconciling",
    ):
        assert is_active_state(state), state
    for state in ("Empty", "EMPTY", "Dead", None, "Unknown"):
        assert not is_active_state(state), state


def test_assess_reads_every_condition_from_the_rows() -> None:
    groups = groups_table(
        group_row("ready", partition=0), group_row("ready", partition=1, translation_method="verified_delta"),
        group_row("bound", translation_method="offset_sync_next"),
        group_row("empty", topic="idle", status="source_partition_empty", translated_offset=None,
                  translation_method=None),
        group_row("active", target_group_state="STABLE"),
        group_row("lagging", topic="busy"),
        group_row("failed", topic="gone", status="error", is_ok=False, translated_offset=None, translation_method=None),
        group_row("behind", status="not_yet_copied", is_ok=False, translation_method="offset_sync_next"),
    )  # fmt: skip
    partitions = partitions_table(
        partition_row(partition=0, lag=3), partition_row(partition=1, lag=100), partition_row("idle", lag=0),
        partition_row("busy", lag=101),
    )  # fmt: skip
    verdicts = {group: v for (_, group), v in assess(groups, partitions, lag_threshold=100).items()}
    assert verdicts["ready"].ready  # lag 100 is not more than 100
    assert verdicts["bound"].reasons == (
        "1 of 1 partition(s) translated to a bound, not exactly (--exact reads records to find the position)",
    )
    assert verdicts["empty"].reasons == ("1 of 1 partition(s) untranslatable (source_partition_empty)",)
    assert verdicts["active"].reasons == ("active members on the target (group STABLE)",)
    assert verdicts["lagging"].reasons == ("MM2 lags more than 100 records on 1 partition(s) (most: 101 on busy/0)",)
    assert verdicts["failed"].reasons[0].startswith("1 of 1 partition(s) not inspected")
    assert verdicts["behind"].reasons == (
        "1 of 1 partition(s) translated to a bound, not exactly (--exact reads records to find the position)",
        "MM2 has not copied up to the group's position on 1 of 1 partition(s) (wait for MM2, or plan failover "
        "--stop-mirroring)",
    )
    assert any("lag unknown on 1 of 1" in r for r in verdicts["failed"].reasons)  # no partition row for gone/0
    without = assess(groups, None, lag_threshold=100)
    assert not without[(FLOW, "ready")].ready


# --- what the page shows -----------------------------------------------------------------------------------


def tables(groups: pa.Table, partitions: pa.Table | None = None) -> InspectionTables:
    return InspectionTables(groups, partitions, dt.datetime(2026, 11, 1, tzinfo=dt.UTC), "test")


def many_rows(n: int) -> pa.Table:
    rows = []
    for i in range(n):
        problem = i % 997 == 0
        rows.append(
            group_row(
                f"g{i // 100:04d}", topic=f"t{i % 7}", partition=i % 100,
                status="target_ahead" if problem else "synced", is_ok=not problem,
                skip_if_failover_now=i if problem else 0, replay_if_failover_now=None,
                replay_if_failover_now_at_least=i % 13,
            )
        )  # fmt: skip
    return groups_table(*rows)


def test_below_the_row_limit_every_row_is_listed() -> None:
    d = digest(tables(many_rows(500)), lag_threshold=100)
    assert not d.aggregated and len(d.rows.rows) == d.rows.total == 500


def test_above_the_row_limit_the_page_lists_the_worst_rows_and_sums_per_topic_and_group() -> None:
    n = ROW_LIMIT + 2_000
    groups = many_rows(n)
    d = digest(tables(groups), lag_threshold=100)
    assert d.aggregated and d.rows.total == n and len(d.rows.rows) == WORST_ROWS
    at = {c: i for i, c in enumerate(d.rows.columns)}
    listed = d.rows.rows
    problems = [r for r in listed if not r[at["is_ok"]]]
    assert len(problems) == len([i for i in range(n) if i % 997 == 0])  # every problem row, first
    assert listed[: len(problems)] == problems
    assert [r[at["skip"]] for r in problems] == sorted((r[at["skip"]] for r in problems), reverse=True)
    # per topic: every row counted, and the replay sums are the rows' bounds
    topics = {r[1]: r for r in d.topics.rows}
    assert sum(r[2] for r in topics.values()) == n
    assert topics["t0"][6] == sum(i % 13 for i in range(n) if i % 7 == 0)
    # per group: one readiness line each
    assert d.readiness.total == len({f"g{i // 100:04d}" for i in range(n)}) == len(d.readiness.rows)
    assert d.totals["group_partition_problems"] == len(problems)


def test_the_readiness_table_lists_groups_not_ready_first_up_to_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_module, "GROUP_LIMIT", 3)
    groups = groups_table(*(group_row(f"ok{i}") for i in range(4)), group_row("z-bad", target_group_state="Stable"))
    d = digest(tables(groups, partitions_table(partition_row(lag=0))), lag_threshold=100)
    assert d.readiness.total == 5 and [r[1] for r in d.readiness.rows] == ["z-bad", "ok0", "ok1"]
    assert d.totals["ready_groups"] == 4


def test_failover_sums_keep_true_counts_and_bounds_apart() -> None:
    groups = groups_table(
        group_row("g", partition=0, replay_if_failover_now=5, skip_if_failover_now=0,
                  replay_if_failover_now_at_least=5),
        group_row("g", partition=1, replay_if_failover_now=None, skip_if_failover_now=None,
                  replay_if_failover_now_at_least=7, skip_if_failover_now_at_most=2,
                  translation_method="offset_sync_next"),
    )  # fmt: skip
    (flow,) = digest(tables(groups), lag_threshold=100).flows
    assert flow.failover.rows == [["g", 5, 7, 0, 2]]


def test_each_flow_shows_its_recovery_point_and_retention_margin_above_its_charts() -> None:
    from mm2ctl.report.page import render

    partitions = partitions_table(
        partition_row(partition=0, lag=1_000, replication_lag_seconds=167.25, retention_margin_seconds=433.0,
                      retention_margin_basis="retention.ms"),
        partition_row(partition=1, lag=176, replication_lag_seconds=43.0, retention_margin_seconds=557.0,
                      retention_margin_basis="retention.ms"),
        partition_row(partition=2, lag=0, replication_lag_seconds=0.0),
    )  # fmt: skip
    (flow,) = digest(tables(groups_table(group_row("g")), partitions), lag_threshold=100).flows
    assert flow.recovery == Recovery(1_176, 167.25, 433.0, "retention.ms")
    html = render(
        tables(groups_table(group_row("g")), partitions),
        setup=None,
        lag_threshold=1,
        generated_at=dt.datetime.now(dt.UTC),
        version="1",
    ).html
    section = html[html.index("<section id='flow-0'") :]
    line = section[: section.index("<div class='charts'")]
    assert "<span class='recovery-records'>1,176 records</span>" in line
    assert "<span class='recovery-seconds'>167.2 s</span>" in line
    assert "<span class='retention-margin'>433.0 s (retention.ms)</span>" in line


def test_partition_rows_saved_before_the_lag_in_seconds_still_read(tmp_path: Path) -> None:
    old = {k: v for k, v in partition_row(lag=5).items() if k not in ("replication_lag_seconds",
           "retention_margin_seconds", "retention_margin_basis")}  # fmt: skip
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(old) + "\n")
    got = read_rows(path, PARTITION_ROW_SCHEMA).to_pylist()
    assert got[0]["replication_lag_records"] == 5 and got[0]["replication_lag_seconds"] is None
    (flow,) = digest(tables(groups_table(group_row("g")), read_rows(path, PARTITION_ROW_SCHEMA)), 100).flows
    assert flow.recovery == Recovery(5, None, None, None)


# --- saved inspections ---------------------------------------------------------------------------------------


def test_a_missing_path_is_one_line_and_exit_20(tmp_path: Path) -> None:
    with pytest.raises(InspectionFileError) as info:
        read_rows(tmp_path / "nope.jsonl", GROUP_ROW_SCHEMA)
    assert info.value.exit_code == ExitCode.INSPECTION_FILE == 20
    assert str(info.value) == f"{tmp_path / 'nope.jsonl'}: no such file or folder"


def test_partition_rows_given_as_group_rows_say_which_option_they_belong_to(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps(partition_row()) + "\n")
    with pytest.raises(InspectionFileError, match=r"these look like partition rows: give them with --partition-rows"):
        read_rows(path, GROUP_ROW_SCHEMA)
    assert read_rows(path, PARTITION_ROW_SCHEMA).to_pylist() == [partition_row()]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('"cluster_pair","group"\r\n"a->b","g"\r\n', "neither Parquet nor JSON lines"),
        ("PAR1 this is not really parquet", "not a readable Parquet inspection"),
        ('{"cluster_pair": "a->b"}\n', "not the group rows `inspect` writes: no group, topic, partition"),
    ],
)
def test_a_malformed_saved_inspection_is_one_line(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "rows"
    path.write_text(content)
    with pytest.raises(InspectionFileError) as info:
        read_rows(path, GROUP_ROW_SCHEMA)
    assert problem in str(info.value) and "\n" not in str(info.value)


def test_an_empty_folder_holds_no_inspection(tmp_path: Path) -> None:
    with pytest.raises(InspectionFileError, match="no Parquet part file"):
        read_rows(tmp_path, GROUP_ROW_SCHEMA)


@pytest.mark.spark
def test_the_rows_inspect_writes_read_back_the_same(spark: Any, tmp_path: Path) -> None:
    """The inspection's own writers (JSON lines, Spark's Parquet folder) give the report the same tables."""
    from mm2ctl.inspector.inspection import SparkRows
    from mm2ctl.inspector.output.row_files import write_json_lines, write_parquet
    from mm2ctl.inspector.schemas import GROUP_ROWS_SCHEMA, PARTITION_HEALTH_SCHEMA, arrow_schema

    full_group = {f.name: None for f in GROUP_ROWS_SCHEMA.fields}
    group_values = group_row("g1", partition=3, source_offset=42, target_offset=40, group_checkpoint_age_seconds=1.5)
    group_values["checkpoint_timestamp"] = dt.datetime(2026, 11, 1, 12, 0, tzinfo=dt.UTC)
    full_group.update(group_values, sync_count=2)
    full_partition = {f.name: None for f in PARTITION_HEALTH_SCHEMA.fields}
    full_partition.update(partition_row(lag=7), remote_topic="primary.orders", newest_sync_timestamp=None)
    groups = SparkRows(spark.createDataFrame([full_group], GROUP_ROWS_SCHEMA))
    partitions = pa.Table.from_pylist([full_partition], schema=arrow_schema(PARTITION_HEALTH_SCHEMA))
    with (tmp_path / "g.jsonl").open("w") as out:
        write_json_lines(groups.to_arrow(), out)
    groups.write("parquet", str(tmp_path / "g-parquet"))
    with (tmp_path / "p.jsonl").open("w") as out:
        write_json_lines(partitions, out)
    (tmp_path / "p-parquet").mkdir()
    write_parquet(partitions, str(tmp_path / "p-parquet" / "part-0.parquet"))
    want_groups = [{k: group_values[k] for k in GROUP_ROW_SCHEMA.names}]
    want_partitions = [partition_row(lag=7)]
    for g, p in (("g.jsonl", "p-parquet"), ("g-parquet", "p.jsonl")):
        saved = read_saved(str(tmp_path / g), str(tmp_path / p))
        assert saved.groups.to_pylist() == want_groups
        assert saved.partitions is not None and saved.partitions.to_pylist() == want_partitions


# --- the page and the command ----------------------------------------------------------------------------------


def test_the_setup_header_masks_secrets(tmp_path: Path) -> None:
    from mm2ctl.core.config.describe import describe_setup
    from mm2ctl.core.config.mm2_config import load_mm2_config
    from mm2ctl.report.page import render

    secret = "pa55-w0rd-never-shown"
    path = tmp_path / "mm2.properties"
    path.write_text(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
        "B.security.protocol = SASL_SSL\nB.sasl.mechanism = PLAIN\n"
        "B.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="u" password="{secret}";\nB.ssl.truststore.password = {secret}\n'
    )
    setup = describe_setup(load_mm2_config(path))
    now = dt.datetime.now(dt.UTC)
    page = render(tables(groups_table(group_row("g"))), setup=setup, lag_threshold=1, generated_at=now, version="9.9.9")
    html = page.html
    assert secret not in html
    assert "sasl.jaas.config" in html and "mm2ctl 9.9.9" in html and "Flow A-&gt;B" in html


def test_the_page_holds_its_scripts_and_data_and_fetches_nothing() -> None:
    from mm2ctl.report.page import render

    groups = groups_table(group_row("</script><script>alert(1)</script>"))
    page = render(tables(groups), setup=None, lag_threshold=1, generated_at=dt.datetime.now(dt.UTC), version="1").html
    assert not re.search(r"<script[^>]+src=|<link[^>]+stylesheet", page)
    assert "default-src 'none'" in page and "connect-src 'none'" in page
    assert page.count("</script>") == 3  # the data, plotly.js, the page's own script: nothing else closes one
    data = re.search(r"id='mm2ctl-data'>(.*?)</script>", page, re.S)
    assert data
    readiness = json.loads(data.group(1))["tables"]["readiness"]
    assert readiness["dictionaries"]["group"][readiness["rows"][0][1]] == "</script><script>alert(1)</script>"


def test_report_needs_rows_or_a_setup_and_refuses_inspection_options_for_saved_rows(tmp_path: Path) -> None:
    from tests.unit.test_cli import run_cli

    out = run_cli("report", "-o", str(tmp_path / "r.html"))
    assert out.returncode == ExitCode.CONFIG and "give the setup to inspect" in out.stderr
    rows = tmp_path / "g.jsonl"
    rows.write_text(json.dumps(group_row("g")) + "\n")
    out = run_cli("report", "--group-rows", str(rows), "--exact", "-o", str(tmp_path / "r.html"))
    assert out.returncode == ExitCode.CONFIG and "--exact only apply when report runs the inspection" in out.stderr
    out = run_cli("report", "--group-rows", str(tmp_path / "missing"), "-o", str(tmp_path / "r.html"))
    assert out.returncode == ExitCode.INSPECTION_FILE
    errors = [line for line in out.stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert errors == [f"mm2ctl: error: {tmp_path / 'missing'}: no such file or folder"], out.stderr


def test_a_saved_inspection_becomes_a_report_without_spark(tmp_path: Path) -> None:
    groups, parts = tmp_path / "g.jsonl", tmp_path / "p.jsonl"
    groups.write_text("".join(json.dumps(group_row(f"g{i}", partition=i)) + "\n" for i in range(3)))
    parts.write_text("".join(json.dumps(partition_row(partition=i)) + "\n" for i in range(3)))
    page = tmp_path / "r.html"
    code = (
        "import sys\nfrom mm2ctl.cli.main import main\n"
        f"try:\n    main(['report', '--group-rows', {str(groups)!r}, '--partition-rows', {str(parts)!r}, "
        f"'-o', {str(page)!r}, '--json'])\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j'))\n"
        "assert not loaded, loaded\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["ready_groups"] == 3 and page.stat().st_size > 3_000_000
