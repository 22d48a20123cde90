"""``plan failover --spark-checkpoint`` + ``apply`` move a Structured Streaming query across a real MirrorMaker 2
flow, proven by content (docs/design.md, "The two forms of the result").

Each case runs a real query on the embedded Spark session against a topic of the lab's source cluster, with
``Trigger.AvailableNow`` and ``maxOffsetsPerTrigger`` (a few batches), stops it, produces more, waits until MM2
has copied everything, plans and applies the failover, runs the query on the target from what mm2ctl wrote, and
compares what both runs processed with what was produced: nothing lost, nothing processed twice. The topic's
source offsets are ahead of its copy's by a different amount per partition (``spark_queries.SHIFT``), so a
position that crossed untranslated would name other records.

- (a) default replication policy: a stateless query; ``auto`` gives the ``startingOffsets`` JSON (the checkpoint
  form needs the identity policy), and a new query on the remote topic starts from it. Then back: more records
  arrive on the source (MM2 copies them), ``plan failback --spark-checkpoint`` of the target query's checkpoint
  translates its position on the remote topic back to the source topic (the copy's offset plus ``SHIFT``), and a
  new query on the source topic starts from it: across the three runs, nothing lost, nothing processed twice.
- (b) identity policy: a stateful query (per key a running count and the values counted); ``auto`` gives the
  translated copy of the checkpoint, and the query resumes from it on the target with its state: its final
  counts are the produced counts.
- (c) a flow with offset syncs disabled: every position comes from the timestamp fallback, proven by content
  (``timestamp_verified``); the JSON form, and still nothing lost or processed twice.
- (d) a query that read past what MM2 has copied (its source connector paused): ``plan failover`` with MM2's
  position (``--connect-url``) exits 21 in one line, with or without ``--stop-mirroring``, and writes no plan.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import requests

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.lab.control import LabInfo
from tests.integration.spark_queries import (
    PARTITIONS,
    SHIFT,
    Mirrored,
    Run,
    apply,
    checkpoint_read,
    compare,
    final_counts,
    mirrored_topic,
    next_offsets,
    plan_failback,
    plan_failover,
    run_counting_query,
    run_records_query,
    sink_rows,
)
from tests.integration.support import eventually
from tests.integration.test_remediate import mm2ctl

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FIRST, LATER = 60, 40  # records per partition before the query stops, and after
BACK = 15  # records per partition produced after the query ran on the target, read after the failback
#: Methods whose target offset is the copy of the record at the source position, proven by content.
EXACT = {"verified_delta", "verified_search", "offset_sync_exact"}
#: Methods a failback proves a position with by content (``plans.planners.failback.PROVEN``).
PROVEN = {"verified_delta", "verified_search", "timestamp_verified"}


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    d = tmp_path / "state"
    d.mkdir()
    return d


def _first_run_stops_mid_stream(m: Mirrored, values: list[str], checkpoint: Path, batches: int) -> None:
    """The source run processed the first records, each once, in several batches, and its checkpoint's last
    committed batch resumes right after them; then more records arrive."""
    assert batches >= 2, batches
    first = compare(Counter(v for p in PARTITIONS for _k, v in m.produced[p][:FIRST]), values)
    assert first.exact, first
    (source,) = checkpoint_read(checkpoint).kafka_sources
    assert source.positions == {m.topic: {p: SHIFT[p] + FIRST for p in PARTITIONS}}, source.positions
    m.produce(LATER)


def _query_rows(m: Mirrored, query: dict[str, Any], target_topic: str, methods: set[str]) -> None:
    """One row per partition: the query's source position, translated to the copy of the same record."""
    rows = {r["partition"]: r for r in query["rows"]}
    assert set(rows) == set(PARTITIONS), query["rows"]
    for p, r in rows.items():
        assert (r["name"], r["source_index"]) == (f"spark:{query['query_id']}", 0), r
        assert (r["source_topic"], r["target_topic"]) == (m.topic, target_topic), r
        assert (r["source_offset"], r["target_offset"]) == (SHIFT[p] + FIRST, FIRST), r
        assert r["method"] in methods, r


def test_a_stateless_query_fails_over_and_back_by_starting_offsets_under_the_default_policy(
    lab: LabInfo, spark: Any, tmp_path: Path, state_dir: Path
) -> None:
    m = mirrored_topic(lab, "sqa" + uuid.uuid4().hex[:6])
    m.produce(FIRST)
    checkpoint = tmp_path / "orders-query"
    first = run_records_query(spark, lab.source.bootstrap, m.topic, checkpoint, tmp_path / "source.jsonl")
    rows = sink_rows(first.sink)
    assert next_offsets(rows, m.topic) == {p: SHIFT[p] + FIRST for p in PARTITIONS}
    _first_run_stops_mid_stream(m, [r["value"] for r in rows], checkpoint, len(first.batches))
    read = checkpoint_read(checkpoint)
    m.wait_copied()

    missing = tmp_path / "no-such-query"
    code, doc, err = plan_failover(m, state_dir, missing)
    assert code == ExitCode.SPARK_CHECKPOINT, (code, doc, err)
    assert doc is None and str(missing) in err, (doc, err)

    plan = state_dir / "plan.yaml"
    code, doc, err = plan_failover(m, state_dir, checkpoint, plan=plan)
    assert code == ExitCode.OK, err
    assert doc is not None
    (query,) = doc["spark_queries"]
    assert (query["query_id"], query["batch_id"], query["form"]) == (read.query_id, read.batch_id, "json"), query
    assert query["refusals"], query  # the checkpoint form needs the identity policy
    output = tmp_path / f"orders-query.{m.flow.target_alias}.starting-offsets.json"
    assert Path(query["output"]) == output, query
    _query_rows(m, query, m.remote, EXACT)
    assert not output.exists()  # a plan writes nothing

    apply(plan, state_dir)
    text = output.read_text(encoding="utf-8")
    assert json.loads(text) == {m.remote: {str(p): FIRST for p in PARTITIONS}}
    assert checkpoint_read(checkpoint) == read  # the old checkpoint is never touched

    second = run_records_query(
        spark, lab.target.bootstrap, m.remote, tmp_path / "orders-query-target", tmp_path / "target.jsonl",
        starting_offsets=text,
    )  # fmt: skip
    assert second.batches, "the query on the target processed nothing"
    on_target = sink_rows(second.sink)
    assert {r["topic"] for r in on_target} == {m.remote}
    result = compare(m.values(), (r["value"] for r in sink_rows(first.sink, second.sink)))
    assert result.exact, result
    _fails_back(m, spark, tmp_path, state_dir, first, second)


def _fails_back(m: Mirrored, spark: Any, tmp_path: Path, state_dir: Path, first: Run, second: Run) -> None:
    """The query that ran on the target (from the failover's startingOffsets, on the remote topic) stopped at
    the target's log end; more records arrive on the source and are copied, so its position is mid-stream on the
    target. ``plan failback`` translates it back to the source topic, and a new query there resumes from it."""
    (on_target,) = checkpoint_read(second.checkpoint).kafka_sources
    assert on_target.positions == {m.remote: {p: FIRST + LATER for p in PARTITIONS}}, on_target.positions
    m.produce(BACK)
    m.wait_copied()
    read = checkpoint_read(second.checkpoint)

    plan = state_dir / "failback.yaml"
    code, doc, err = plan_failback(m, state_dir, second.checkpoint, plan=plan)
    assert code == ExitCode.OK, err
    assert doc is not None
    (query,) = doc["spark_queries"]
    assert (query["query_id"], query["batch_id"], query["form"]) == (read.query_id, read.batch_id, "json"), query
    assert any("renames" in r for r in query["refusals"]), query  # the default policy renames the topic
    output = tmp_path / f"{second.checkpoint.name}.{m.flow.source_alias}.starting-offsets.json"
    assert Path(query["output"]) == output, query
    rows = {r["partition"]: r for r in query["rows"]}
    assert set(rows) == set(PARTITIONS), query["rows"]
    for p, r in rows.items():
        assert (r["name"], r["source_index"]) == (f"spark:{query['query_id']}", 0), r
        assert (r["source_topic"], r["target_topic"]) == (m.remote, m.topic), r
        assert (r["source_offset"], r["target_offset"]) == (FIRST + LATER, SHIFT[p] + FIRST + LATER), r
        assert r["method"] in PROVEN, r
    assert not output.exists()  # a plan writes nothing

    apply(plan, state_dir)
    text = output.read_text(encoding="utf-8")
    assert json.loads(text) == {m.topic: {str(p): SHIFT[p] + FIRST + LATER for p in PARTITIONS}}
    assert checkpoint_read(second.checkpoint) == read  # the target query's checkpoint is never touched

    third = run_records_query(
        spark, m.lab.source.bootstrap, m.topic, tmp_path / "orders-query-back", tmp_path / "back.jsonl",
        starting_offsets=text,
    )  # fmt: skip
    back = sink_rows(third.sink)
    assert back and {r["topic"] for r in back} == {m.topic}, back
    result = compare(m.values(), (r["value"] for r in sink_rows(first.sink, second.sink, third.sink)))
    assert result.exact, result


@pytest.mark.lab(policy="identity")
def test_a_stateful_query_resumes_with_its_state_from_a_translated_checkpoint_under_the_identity_policy(
    lab: LabInfo, spark: Any, tmp_path: Path, state_dir: Path
) -> None:
    m = mirrored_topic(lab, "sqb" + uuid.uuid4().hex[:6])
    assert m.remote == m.topic
    m.produce(FIRST)
    checkpoint = tmp_path / "counts-query"
    first = run_counting_query(spark, lab.source.bootstrap, m.topic, checkpoint, tmp_path / "source.jsonl")
    counted = final_counts(first.sink)
    assert {k: r["count"] for k, r in counted.items()} == m.counts(), counted
    _first_run_stops_mid_stream(m, [v for r in counted.values() for v in r["values"]], checkpoint, len(first.batches))
    read = checkpoint_read(checkpoint)
    assert read.state_operators, read  # the count's state
    m.wait_copied()

    moved = tmp_path / "moved"
    moved.mkdir()
    plan = state_dir / "plan.yaml"
    code, doc, err = plan_failover(m, state_dir, checkpoint, "--spark-output", str(moved), plan=plan)
    assert code == ExitCode.OK, err
    assert doc is not None
    (query,) = doc["spark_queries"]
    assert (query["query_id"], query["batch_id"]) == (read.query_id, read.batch_id), query
    assert (query["form"], query["refusals"]) == ("checkpoint", []), query
    copy = moved / f"counts-query.{m.flow.target_alias}"
    assert Path(query["output"]) == copy, query
    _query_rows(m, query, m.topic, EXACT)
    assert not copy.exists()  # a plan writes nothing

    apply(plan, state_dir)
    assert checkpoint_read(checkpoint) == read  # the old checkpoint is never touched
    copied = checkpoint_read(copy)
    assert (copied.query_id, copied.batch_id, copied.state_operators) == (
        read.query_id,
        read.batch_id,
        read.state_operators,
    )
    assert [s.positions for s in copied.kafka_sources] == [{m.topic: {p: FIRST for p in PARTITIONS}}]

    second = run_counting_query(spark, lab.target.bootstrap, m.topic, copy, tmp_path / "target.jsonl")
    assert second.batches and min(second.batches) == read.batch_id + 1, second  # it resumed, not restarted
    # The target run's own rows hold the totals: its state started from the source run's.
    final = final_counts(second.sink)
    assert {k: r["count"] for k, r in final.items()} == m.counts(), final
    result = compare(m.values(), (v for r in final.values() for v in r["values"]))
    assert result.exact, result


def test_a_query_fails_over_by_timestamp_on_a_flow_with_offset_syncs_disabled(
    lab: LabInfo, spark: Any, tmp_path: Path, state_dir: Path
) -> None:
    m = mirrored_topic(lab, "sqc" + uuid.uuid4().hex[:6], source_settings={"emit.offset-syncs.enabled": "false"})
    assert m.flow.setup.offset_syncs_disabled
    m.produce(FIRST)
    checkpoint = tmp_path / "events-query"
    first = run_records_query(spark, lab.source.bootstrap, m.topic, checkpoint, tmp_path / "source.jsonl")
    rows = sink_rows(first.sink)
    assert next_offsets(rows, m.topic) == {p: SHIFT[p] + FIRST for p in PARTITIONS}
    _first_run_stops_mid_stream(m, [r["value"] for r in rows], checkpoint, len(first.batches))
    m.wait_copied(syncs=False)

    plan = state_dir / "plan.yaml"
    code, doc, err = plan_failover(m, state_dir, checkpoint, "--spark-form", "json", plan=plan)
    assert code == ExitCode.OK, err
    assert doc is not None
    (query,) = doc["spark_queries"]
    assert query["form"] == "json", query
    output = tmp_path / f"events-query.{m.flow.target_alias}.starting-offsets.json"
    assert Path(query["output"]) == output, query
    _query_rows(m, query, m.remote, {"timestamp_verified"})

    apply(plan, state_dir)
    text = output.read_text(encoding="utf-8")
    assert json.loads(text) == {m.remote: {str(p): FIRST for p in PARTITIONS}}
    second = run_records_query(
        spark, lab.target.bootstrap, m.remote, tmp_path / "events-query-target", tmp_path / "target.jsonl",
        starting_offsets=text,
    )  # fmt: skip
    result = compare(m.values(), (r["value"] for r in sink_rows(first.sink, second.sink)))
    assert result.exact, result


def _connector_state(lab: LabInfo, connector: str) -> str:
    status = requests.get(f"{lab.connect_url}/connectors/{connector}/status", timeout=10).json()
    return str(status["connector"]["state"])


def _mm2_stored_next(lab: LabInfo, connector: str) -> dict[tuple[str, int], int]:
    """MM2's next source offset to copy per (topic, partition), as its connector's stored offsets say."""
    body = requests.get(f"{lab.connect_url}/connectors/{connector}/offsets", timeout=10).json()
    return {(o["partition"]["topic"], o["partition"]["partition"]): o["offset"]["offset"] + 1 for o in body["offsets"]}


def _one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert len(errors) == 1 and "Traceback" not in stderr, stderr
    return errors[0]


def test_a_query_past_what_mm2_copied_exits_21_in_one_line(
    lab: LabInfo, spark: Any, tmp_path: Path, state_dir: Path
) -> None:
    m = mirrored_topic(lab, "sqd" + uuid.uuid4().hex[:6])
    m.produce(FIRST)
    m.wait_copied()
    source = m.flow.connectors["source"]
    requests.put(f"{lab.connect_url}/connectors/{source}/pause", timeout=10).raise_for_status()
    try:
        eventually(lambda: _connector_state(lab, source) == "PAUSED", what=f"{source} PAUSED")
        m.produce(LATER)  # not copied: MM2 is paused
        checkpoint = tmp_path / "late-query"
        first = run_records_query(spark, lab.source.bootstrap, m.topic, checkpoint, tmp_path / "source.jsonl")
        assert next_offsets(sink_rows(first.sink), m.topic) == {p: SHIFT[p] + FIRST + LATER for p in PARTITIONS}
        mm2_next = _mm2_stored_next(lab, source)
        assert all(mm2_next[(m.topic, p)] <= SHIFT[p] + FIRST for p in PARTITIONS), mm2_next  # MM2 is behind

        plan = state_dir / "plan.yaml"
        code, doc, err = plan_failover(m, state_dir, checkpoint, "--connect-url", lab.connect_url, plan=plan)
        assert code == ExitCode.NOT_COPIED, (code, doc, err)
        line = _one_error_line(err)
        assert line.startswith("mm2ctl: error: MM2 has not copied up to the position of 2 group partition(s): "), line
        assert f"spark:{checkpoint_read(checkpoint).query_id}" in line and "--stop-mirroring" in line, line

        code, doc, err = plan_failover(
            m, state_dir, checkpoint, "--connect-url", lab.connect_url, "--stop-mirroring", plan=plan
        )
        assert code == ExitCode.NOT_COPIED, (code, doc, err)
        assert _one_error_line(err).startswith(
            f"mm2ctl: error: MM2 has not copied up to the position of the Spark query at {checkpoint} on 2 partition(s)"
        ), err
        assert doc is None and not plan.exists()
    finally:
        requests.put(f"{lab.connect_url}/connectors/{source}/resume", timeout=10).raise_for_status()


def test_a_query_is_refused_from_mm2s_checkpoints_in_one_line(lab: LabInfo, state_dir: Path, tmp_path: Path) -> None:
    """MM2 keeps no checkpoint of a Spark query, so ``--from checkpoints`` cannot move one: refused before any
    read of the query, and no plan written."""
    (tmp_path / "query").mkdir()
    plan = state_dir / "plan.yaml"
    proc = mm2ctl(
        "plan", "failover", "--pair", "primary->backup", "--mm2-config", lab.mm2_config, "--groups", "^none$",
        "--from", "checkpoints", "--spark-checkpoint", str(tmp_path / "query"), "--out", str(plan), state=state_dir,
    )  # fmt: skip
    assert proc.returncode == ExitCode.PLAN_INVALID, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert errors == [
        "mm2ctl: error: --spark-checkpoint: MM2 keeps no checkpoint of a Spark query; translate it --from syncs"
    ], proc.stderr
    assert "Traceback" not in proc.stderr and not plan.exists()
