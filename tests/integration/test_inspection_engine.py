"""The inspection engine on the lab, proved from Spark's own metrics and from the processes themselves.

- One inspection scans each internal topic exactly once: Spark's SQL status store lists every Kafka scan that
  ran, with the records it read, and each topic's records appear in exactly one of them.
- A live session reads only what MM2 wrote since its last run, and its rows equal a cold run's on the same
  state; a tombstone in the offset-syncs topic makes it read the topic in full again, and it says so.
- Over many runs in one session, with MM2 writing all along, the driver JVM's threads and what the session keeps
  cached stay bounded; so do a real ``mm2ctl exporter``'s threads and resident memory (its python process and
  its JVM, from /proc) over many inspection cycles.
- ``mm2ctl exporter`` stops cleanly when its whole process group gets SIGTERM (systemd's default), the JVM
  included.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.connect_client import ConnectClient, build_connect_client
from mm2ctl.core.config.mm2_config import PairConfig, load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.codecs import encode_offset_sync_key
from mm2ctl.inspector.inspection import InspectOptions, Inspector, preflight
from mm2ctl.inspector.kept import driver_rows
from mm2ctl.inspector.reads import kafka_read
from mm2ctl.inspector.spark.lazy_session import LazySession
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabFlow, LabInfo
from mm2ctl.lab.process import free_port
from tests.integration.support import eventually

pytestmark = pytest.mark.integration

#: Columns that tell the time of the run, not the state it read.
CLOCK_COLUMNS = ("group_checkpoint_age_seconds",)
PARTITIONS = 2


@dataclass
class Setup:
    lab: LabInfo
    flow: LabFlow
    pair: PairConfig
    name: str
    connect: ConnectClient

    @property
    def topic(self) -> str:
        return f"iso-{self.name}-t"

    def kafka(self, alias: str) -> dict[str, str]:
        return dict(load_mm2_config(self.flow.mm2_config).kafka_config(alias, self.pair.name))

    def produce(self, count: int, start: int) -> None:
        rows = [(None, f"r{start + i}".encode(), i % PARTITIONS) for i in range(count)]
        records.produce(self.kafka(self.pair.source), self.topic, rows)

    def topic_end(self, alias: str, topic: str) -> int:
        admin = KafkaAdmin.connect(self.kafka(alias), name=alias)
        return int(admin.partition_bounds([(topic, 0)])[(topic, 0)].latest or 0)

    def syncs_end(self) -> int:
        return self.topic_end(self.pair.offset_syncs_cluster, self.pair.offset_syncs_topic)

    def checkpoints_end(self) -> int:
        return self.topic_end(self.pair.target, self.pair.checkpoints_topic)

    def records_in(self, alias: str, topic: str) -> int:
        return sum(1 for _ in records.read_partitions(self.kafka(alias), topic, [0]))

    def stop_mirroring(self) -> None:
        for role in ("source", "checkpoint"):
            self.connect.stop(self.flow.connectors[role])
        for role in ("source", "checkpoint"):
            self.connect.wait_for_state(self.flow.connectors[role], {"STOPPED"}, timeout=60)

    def resume_mirroring(self) -> None:
        for role in ("source", "checkpoint"):
            self.connect.resume(self.flow.connectors[role])
        for role in ("source", "checkpoint"):
            self.connect.wait_for_state(self.flow.connectors[role], {"RUNNING"}, timeout=60)


@pytest.fixture(scope="module")
def setup(lab_pool: Any) -> Iterator[Setup]:
    from tests.integration.conftest import DEFAULT_KEY

    lab = lab_pool.get(DEFAULT_KEY)
    name = f"eng{uuid.uuid4().hex[:8]}"
    source = KafkaAdmin.connect({"bootstrap.servers": lab.source.bootstrap})
    source.create_topics({f"iso-{name}-t": PARTITIONS})
    flow = lab_core.add_flow(lab, name)
    pair = load_mm2_config(flow.mm2_config).pair(f"{flow.source_alias}->{flow.target_alias}")
    connect = build_connect_client([lab.connect_url])
    s = Setup(lab, flow, pair, name, connect)
    s.produce(400, 0)
    groups = {f"iso-{name}-g{i}": {(s.topic, p): 50 * (i + 1) for p in range(PARTITIONS)} for i in range(3)}
    source.alter_group_offsets(groups)
    eventually(lambda: s.checkpoints_end() >= len(groups) * PARTITIONS, timeout_s=180, what="MM2's checkpoints")
    s.stop_mirroring()
    try:
        yield s
    finally:
        for connector in flow.connectors.values():
            connect.delete(connector)
        connect.close()


def _inspector(spark: Any, setup: Setup, *, cache: bool = False, live: bool = False) -> Inspector:
    """An inspector of the setup's pair; without ``cache`` it neither starts from saved files nor saves any,
    so each new one is a cold run. A ``live`` one keeps its classified rows between runs, as the exporter's."""
    config = load_mm2_config(setup.flow.mm2_config)
    options = InspectOptions(pairs=(setup.pair.name,), state_cache=cache)
    return Inspector(spark, config, options, preflight(config, options), live=live)


def _executions(spark: Any) -> list[Any]:
    store = spark._jsparkSession.sharedState().statusStore()
    found, it = [], store.executionsList().iterator()
    while it.hasNext():
        found.append(it.next())
    return found


def _node_rows(spark: Any, after: int, node: Callable[[str, str], bool]) -> list[int]:
    """Spark's own "number of output rows" of every plan node that ``node`` (its name, its description)
    matches, in the SQL executions after ``after``: the nonzero ones, in order of size."""
    store = spark._jsparkSession.sharedState().statusStore()
    found: dict[int, int] = {}
    for execution in _executions(spark):
        if execution.executionId() <= after:
            continue
        values = store.executionMetrics(execution.executionId())
        nodes = store.planGraph(execution.executionId()).allNodes().iterator()
        while nodes.hasNext():
            plan_node = nodes.next()
            if not node(plan_node.name(), plan_node.desc()):
                continue
            metrics = plan_node.metrics().iterator()
            while metrics.hasNext():
                metric = metrics.next()
                value = values.get(metric.accumulatorId())
                if metric.name() == "number of output rows" and value.isDefined():
                    rows = int(str(value.get()).replace(",", ""))
                    if rows:
                        found[metric.accumulatorId()] = rows
    return sorted(found.values())


def kafka_scans(spark: Any, after: int) -> list[int]:
    """The records each Kafka scan read, for every scan that ran in the SQL executions after ``after``: the
    rows of each ``BatchScan`` of Spark's Kafka source. A cached frame's plan still shows the scan that filled
    it, with no rows read in the executions that only read the cache."""
    return _node_rows(spark, after, lambda name, desc: name.startswith("BatchScan") and "KafkaScan" in desc)


def _joined(kind: str) -> Callable[[str, str], bool]:
    return lambda name, desc: name.endswith("HashJoin") and f", {kind}," in desc


def _last_execution(spark: Any) -> int:
    return max((e.executionId() for e in _executions(spark)), default=-1)


def _rows(inspector: Inspector) -> list[dict[str, Any]]:
    result = inspector.run()
    try:
        rows = [{k: v for k, v in r.items() if k not in CLOCK_COLUMNS} for r in result.rows.to_arrow().to_pylist()]
        return rows + [dict(note=n.message, topic=n.topic) for n in result.notes]
    finally:
        result.close()


#: What a test's reads of the internal topics read: the records of each read since the last call, in order of size.
Reads = Callable[[Any, int], list[int]]


@pytest.fixture(params=["spark", "driver"])
def reads(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Reads:
    """Each read through Spark's Kafka source (``kafka_scans``: every read is made to go there), or on the
    driver (where reads this small are made: the records of each ``inspector.reads.kafka_read.read_on_driver``)."""
    if request.param == "spark":
        monkeypatch.setattr(kafka_read, "DRIVER_READ_MAX_OFFSETS", 0)
        return kafka_scans
    made: list[int] = []
    real = kafka_read.read_on_driver

    def counted(*args: Any, **kwargs: Any) -> Any:
        table = real(*args, **kwargs)
        made.append(table.num_rows)
        return table

    monkeypatch.setattr(kafka_read, "read_on_driver", counted)

    def on_driver(_spark: Any, _after: int) -> list[int]:
        got = sorted(n for n in made if n)
        made.clear()
        return got

    on_driver(None, 0)
    return on_driver


def test_one_run_scans_each_internal_topic_once_and_a_later_one_only_what_is_new(
    spark: Any, setup: Setup, reads: Reads
) -> None:
    inspector = _inspector(spark, setup, live=True)
    try:
        mark = _last_execution(spark)
        cold = inspector.run()
        try:
            assert cold.group_partitions == 3 * PARTITIONS
        finally:
            cold.close()
        syncs = setup.records_in(setup.pair.offset_syncs_cluster, setup.pair.offset_syncs_topic)
        checkpoints = setup.records_in(setup.pair.target, setup.pair.checkpoints_topic)
        assert reads(spark, mark) == sorted([syncs, checkpoints])

        # MM2 copies more and writes more syncs; the live session reads only those, and keeps what a cold run
        # of the same state would find.
        before = setup.syncs_end()
        setup.resume_mirroring()
        setup.produce(200, 400)
        eventually(lambda: setup.syncs_end() > before, timeout_s=120, what="new offset syncs")
        setup.stop_mirroring()
        checkpoints_before = setup.checkpoints_end()
        new = setup.records_in(setup.pair.offset_syncs_cluster, setup.pair.offset_syncs_topic) - syncs
        new_checkpoints = setup.records_in(setup.pair.target, setup.pair.checkpoints_topic) - checkpoints
        mark = _last_execution(spark)
        warm = _rows(inspector)
        assert reads(spark, mark) == sorted(n for n in (new, new_checkpoints) if n)
        assert setup.checkpoints_end() == checkpoints_before
        fresh = _inspector(spark, setup)
        try:
            assert warm == _rows(fresh)
        finally:
            fresh.close()
    finally:
        inspector.close()


def _on_driver(spark: Any, setup: Setup, starts: list[int], *, live: bool = False, **more: Any) -> Inspector:
    """An inspector of the setup's pair on the driver engine: its Spark session starts (``starts`` counts it) only
    if a run asks for one."""

    def start() -> Any:
        starts.append(1)
        return spark

    config = load_mm2_config(setup.flow.mm2_config)
    options = InspectOptions(pairs=(setup.pair.name,), state_cache=False, **more)
    checked = preflight(config, options)
    return Inspector(LazySession(None, start), config, options, checked, live=live, on_driver=True)


@pytest.mark.parametrize("only_problems", [False, True])
def test_a_small_inspection_on_the_driver_starts_no_spark_and_gives_spark_s_rows(
    spark: Any, setup: Setup, only_problems: bool
) -> None:
    """The driver engine reads the internal topics through librdkafka and runs every rule in-process: no Spark
    session is started and Spark's store shows no query, and its rows, notes and figures are the Spark run's."""
    starts: list[int] = []
    driver = _on_driver(spark, setup, starts, only_problems=only_problems)
    mark = _last_execution(spark)
    try:
        result = driver.run()
        try:
            on_driver, summary = _table(result), result.summary
        finally:
            result.close()
    finally:
        driver.close()
    assert starts == [] and driver.started_spark is None
    assert _last_execution(spark) == mark
    config = load_mm2_config(setup.flow.mm2_config)
    options = InspectOptions(pairs=(setup.pair.name,), state_cache=False, only_problems=only_problems)
    in_spark = Inspector(spark, config, options, preflight(config, options))
    try:
        result = in_spark.run()
        try:
            assert on_driver == _table(result)
            assert summary.statuses == result.summary.statuses
        finally:
            result.close()
    finally:
        in_spark.close()
    if not only_problems:
        assert len(on_driver) == 3 * PARTITIONS


def test_a_live_session_on_the_driver_starts_spark_only_for_a_history_of_two_mappings(spark: Any, setup: Setup) -> None:
    """A live session on the driver engine folds a group's new commit with no Spark session; a tombstone in the
    offset syncs makes it read their whole history, which holds two mappings: Spark starts then and finds the
    current one, and the rows are a Spark run's on the same state."""
    starts: list[int] = []
    inspector = _on_driver(spark, setup, starts, live=True)
    group = f"iso-{setup.name}-g0"
    try:
        first = {(r["group"], r["partition"]): r for r in _rows(inspector) if "group" in r}
        source = KafkaAdmin.connect(setup.kafka(setup.pair.source))
        source.alter_group_offsets({group: {(setup.topic, 1): 120}})
        second = {(r["group"], r["partition"]): r for r in _rows(inspector) if "group" in r}
        assert first[(group, 1)]["source_offset"] == 50 and second[(group, 1)]["source_offset"] == 120
        assert starts == [] and inspector.started_spark is None

        _tombstone(setup)
        notes, warm = _syncs_notes_and_table(setup, inspector)
        assert any(n.startswith("read again in full: a tombstone") for n in notes), notes
        assert starts == [1]
    finally:
        inspector.close()
    assert warm == _cold_table(spark, setup)


def _tombstone(setup: Setup) -> None:
    """A tombstone for the offset syncs of the setup topic's partition 0."""
    key = encode_offset_sync_key(setup.topic, 0)
    records.produce(setup.kafka(setup.pair.offset_syncs_cluster), setup.pair.offset_syncs_topic, [(key, None, 0)])


def _syncs_notes_and_table(setup: Setup, inspector: Inspector) -> tuple[list[str], list[dict[str, Any]]]:
    """One run's notes about the offset-syncs topic, and its rows (``_table``)."""
    result = inspector.run()
    try:
        return [n.message for n in result.notes if n.topic == setup.pair.offset_syncs_topic], _table(result)
    finally:
        result.close()


def _cold_table(spark: Any, setup: Setup) -> list[dict[str, Any]]:
    """A new inspector's one run on Spark (``_table``), the inspector closed after it."""
    fresh = _inspector(spark, setup)
    try:
        cold = fresh.run()
        try:
            return _table(cold)
        finally:
            cold.close()
    finally:
        fresh.close()


def test_a_tombstone_makes_the_session_read_the_syncs_in_full_again(spark: Any, setup: Setup, reads: Reads) -> None:
    inspector = _inspector(spark, setup, live=True)
    try:
        inspector.run().close()
        _tombstone(setup)
        total = setup.records_in(setup.pair.offset_syncs_cluster, setup.pair.offset_syncs_topic)
        mark = _last_execution(spark)
        notes, warm = _syncs_notes_and_table(setup, inspector)
        assert any(n.startswith("read again in full: a tombstone") for n in notes), notes
        assert total in reads(spark, mark)
    finally:
        inspector.close()
    # The warm run after the tombstone gives exactly a cold run's rows on the same state (MM2 is stopped).
    assert warm == _cold_table(spark, setup)
    # the tombstone deleted partition 0's syncs: nothing translates its groups any more
    assert len(warm) == 3 * PARTITIONS
    assert all(r["translated_offset"] is None for r in warm if r["partition"] == 0), warm
    assert all(r["translated_offset"] is not None for r in warm if r["partition"] == 1), warm


def test_a_new_process_starts_from_the_saved_state_and_reads_only_what_is_new(setup: Setup, tmp_path: Path) -> None:
    """``mm2ctl inspect`` processes sharing one cache folder: the second reads only the offset syncs written
    since the first (its progress names the records and the offsets), and its rows equal a ``--no-cache``
    run's, which reads the topic in full and saves nothing; a damaged file is thrown away, with a note, and the
    topic read in full."""
    syncs_topic = setup.pair.offset_syncs_topic
    first = _inspect_process(setup, tmp_path, "first")
    saved = sorted((tmp_path / "saved").iterdir())
    assert [f.name.split("-")[0] for f in saved] == ["checkpoints", "offset"], saved
    first_end = setup.syncs_end()
    assert f"{syncs_topic}: reading {first_end} record(s) in full (0: [0, {first_end}))" in first.said

    setup.resume_mirroring()
    setup.produce(100, 10_000)
    eventually(lambda: setup.syncs_end() > first_end, timeout_s=120, what="new offset syncs")
    setup.stop_mirroring()
    end = setup.syncs_end()
    warm = _inspect_process(setup, tmp_path, "warm")
    assert f"{syncs_topic}: reading {end - first_end} record(s) past the kept ones (0: [{first_end}, {end}))" in (
        warm.said
    )
    assert "in full" not in warm.said, warm.said
    cold = _inspect_process(setup, tmp_path, "cold", "--no-cache")
    assert f"{syncs_topic}: reading {end} record(s) in full (0: [0, {end}))" in cold.said
    assert sorted((tmp_path / "saved").iterdir()) == saved, "--no-cache saved or removed a file"
    assert warm.rows == cold.rows

    syncs_file = next(f for f in saved if f.name.startswith("offset"))
    syncs_file.write_bytes(syncs_file.read_bytes()[:100])
    again = _inspect_process(setup, tmp_path, "damaged")
    assert "read again in full: its saved state is unreadable (ArrowInvalid)" in again.said
    assert f"{syncs_topic}: reading {end} record(s) in full (0: [0, {end}))" in again.said
    assert again.rows == cold.rows


@dataclass(frozen=True)
class InspectRun:
    said: str  # stderr (the progress lines) and stdout
    rows: list[dict[str, Any]]  # sorted, less notes and the clock's columns


def _inspect_process(setup: Setup, tmp_path: Path, run: str, *more: str) -> InspectRun:
    """One ``mm2ctl inspect`` process of the setup's pair, its saved state under ``tmp_path/saved``; its
    progress lines on stderr (a pipe)."""
    out = tmp_path / f"{run}.json"
    done = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", setup.flow.mm2_config,
            "--pair", setup.pair.name, "--format", "json", "--output", str(out),
            "--spark-conf", "spark.sql.shuffle.partitions=4", *more,
        ],
        capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "MM2CTL_INSPECT_CACHE": str(tmp_path / "saved"), "MM2CTL_STATE_DIR": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode in (0, 10), done.stderr[-3000:]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    kept = [{k: v for k, v in r.items() if k not in CLOCK_COLUMNS} for r in rows if "note" not in r]
    return InspectRun(done.stderr + done.stdout, sorted(kept, key=lambda r: json.dumps(r, sort_keys=True, default=str)))


def _job_ids(spark: Any) -> set[int]:
    """The ids of the Spark jobs this session ran that Spark's own status listener still holds (the newest)."""
    found, jobs = set(), spark._jsparkSession.sparkContext().statusStore().jobsList(None).iterator()
    while jobs.hasNext():
        found.add(int(jobs.next().jobId()))
    return found


@pytest.fixture(params=["driver", "spark"])
def classified_on(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Where a live run classifies a few changed groups: on the driver (its runs and checkpoints held there),
    or, with the driver's limit at 0, in Spark."""
    if request.param == "spark":
        monkeypatch.setattr(driver_rows, "DRIVER_MAX_ROWS", 0)
    return str(request.param)


def test_a_live_run_classifies_again_only_the_groups_that_changed(spark: Any, setup: Setup, classified_on: str) -> None:
    """When one group commits on the source, and then when its offsets move on the target, the live session's
    next run classifies that group's rows and keeps the other groups'. On the driver, the run starts no Spark
    job at all (Spark's status listener counts none). In Spark: its own row counts of the source group offsets it
    scanned (every group's in the first run), of the live checkpoints it joined, and of the kept rows it read
    back. Either way its rows equal a cold run's."""
    from mm2ctl.inspector.transforms.classify import fresh_checkpoint_age

    # Every checkpoint is past the age that proves MM2 is keeping up (MM2 is stopped), so the clock changes no
    # row between the runs.
    time.sleep(fresh_checkpoint_age(setup.pair).total_seconds())
    group = f"iso-{setup.name}-g0"
    moves = [
        (setup.pair.source, (setup.topic, 0), 120 + len(classified_on), "source_offset"),
        (setup.pair.target, (setup.pair.remote_topic(setup.topic), 1), 7 + len(classified_on), "target_offset"),
    ]
    inspector = _inspector(spark, setup, live=True)
    try:
        mark = _last_execution(spark)
        inspector.run().close()
        assert _node_rows(spark, mark, _scanned_group_offsets) == [3 * PARTITIONS]
        for cluster, tp, offset, column in moves:
            admin = KafkaAdmin.connect(setup.kafka(cluster), name=cluster)
            admin.alter_group_offsets({group: {tp: offset}})
            mark, last_job = _last_execution(spark), max(_job_ids(spark), default=-1)
            result = inspector.run()
            ran = len({j for j in _job_ids(spark) if j > last_job})
            try:
                warm = _table(result) + [dict(note=n.message, topic=n.topic) for n in result.notes]
            finally:
                result.close()
            if classified_on == "driver":
                assert ran == 0, (group, ran)
            else:
                assert ran > 0
                assert _node_rows(spark, mark, _scanned_group_offsets) == [PARTITIONS], group
                picked = _node_rows(spark, mark, _joined("LeftSemi"))  # its checkpoints, its kept rows
                assert picked and set(picked) == {PARTITIONS}, (group, picked)
                assert sum(_node_rows(spark, mark, _joined("LeftAnti"))) == 2 * PARTITIONS, group  # the rows kept
            cold = _one_run(spark, setup, cache=False)
            assert sorted(warm, key=_key) == sorted(cold, key=_key)
            moved = [r for r in warm if r.get("group") == group and r.get("partition") == tp[1]]
            assert [r[column] for r in moved] == [offset], moved
        # New records on every source partition change every group's rows: all of them are classified again,
        # on the driver too while they are few.
        latest = {r["partition"]: r["source_latest"] for r in warm if r.get("group") == group}
        setup.produce(2 * PARTITIONS, 10_000)
        last_job = max(_job_ids(spark), default=-1)
        result = inspector.run()
        ran = len({j for j in _job_ids(spark) if j > last_job})
        try:
            warm = _table(result)
        finally:
            result.close()
        assert (ran == 0) == (classified_on == "driver"), ran
        assert sorted(warm, key=_key) == sorted(_one_run(spark, setup, cache=False), key=_key)
        assert {r["partition"]: r["source_latest"] - 2 for r in warm if r.get("group") == group} == latest
    finally:
        inspector.close()


def _key(row: dict[str, Any]) -> str:
    return json.dumps(row, sort_keys=True, default=str)


def _scanned_group_offsets(name: str, desc: str) -> bool:
    """The scan of the source group offsets the driver hands Spark (the target's have ``written_by`` too)."""
    return "Scan" in name and "committed_offset#" in desc and "written_by#" not in desc


def _one_run(spark: Any, setup: Setup, *, cache: bool) -> list[dict[str, Any]]:
    """A new inspector's one run (``_rows``), the inspector closed after it."""
    inspector = _inspector(spark, setup, cache=cache)
    try:
        return _rows(inspector)
    finally:
        inspector.close()


def _table(result: Any) -> list[dict[str, Any]]:
    """A run's rows, sorted, less the columns that tell the time of the run."""
    rows = [{k: v for k, v in r.items() if k not in CLOCK_COLUMNS} for r in result.rows.to_arrow().to_pylist()]
    return sorted(rows, key=lambda r: json.dumps(r, sort_keys=True, default=str))


def _jvm_threads(spark: Any) -> int:
    return int(spark._jvm.java.lang.management.ManagementFactory.getThreadMXBean().getThreadCount())


def _kept_blocks(spark: Any) -> int:
    return int(spark.sparkContext._jsc.getPersistentRDDs().size())


@pytest.mark.extended
def test_many_runs_keep_threads_and_cached_state_bounded(spark: Any, setup: Setup) -> None:
    """Twelve runs in one live session while MM2 mirrors a trickle of new records. The first run keeps three
    frames in Spark (the offset syncs' runs, the live checkpoints and the classified rows); from then on the
    session holds the runs and checkpoints on the driver (``inspector.kept``), so Spark keeps only the first
    run's rows (and each topic's frame until the driver first folds new records of it), and the live checkpoints
    held there stay one per key. The driver JVM's thread count does not grow once the state is built."""
    inspector = _inspector(spark, setup, live=True)
    setup.resume_mirroring()
    threads, kept, held_checkpoints = [], [], []
    held = _kept_blocks(spark)  # what other tests of the session left cached
    try:
        for run in range(12):
            setup.produce(20, 1000 + 20 * run)
            inspector.run().close()
            threads.append(_jvm_threads(spark))
            kept.append(_kept_blocks(spark))
            topics = inspector.kept(setup.pair.name)
            assert topics.held_runs is not None and topics.live_checkpoints.held is not None, run
            held_checkpoints.append(topics.live_checkpoints.held.num_rows)
    finally:
        setup.stop_mirroring()
        inspector.close()
    # A kept frame is dropped once the driver folds its topic's new records, and never made again for Spark to
    # keep; the first run's rows stay.
    assert kept[0] == held + 3 and kept == sorted(kept, reverse=True) and kept[-1] >= held + 1, kept
    assert held_checkpoints == [held_checkpoints[0]] * len(held_checkpoints), held_checkpoints
    assert max(threads[6:]) <= max(threads[:6]) + 2, threads
    assert _kept_blocks(spark) == held  # close released them


#: Inspections the exporter completes while it is sampled; the first third is its warm-up. The JVM's resident
#: memory still grows over the first dozen (its heap and Arrow's buffers for the Python workers reaching their
#: working size), so fewer would judge the warm-up, not a trend.
EXPORTER_CYCLES = 30
#: How much the last third's resident memory (of each process) may exceed the middle third's peak: room for the
#: heap the JVM still grows into and what Spark's cleaner frees late. A process that kept 2% of its size per
#: run would pass it over the five cycles between the two thirds.
RSS_SLACK = 0.10
#: Threads the last third may have beyond the middle third's peak (pools that start a thread now and then).
THREAD_SLACK = 6


@dataclass(frozen=True)
class Footprint:
    """One sample of the exporter: its python process and Spark's driver JVM (its child)."""

    python_rss_kib: int
    jvm_rss_kib: int
    python_threads: int  # less librdkafka's
    jvm_threads: int
    #: librdkafka's threads (named ``rdk:…``): they live as long as a client, and a run that reads an
    #: internal topic on the driver has one open while it reads, so a sample may or may not catch them.
    rdkafka_threads: int


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def _spark_jvms(pid: int) -> list[int]:
    """The exporter's Spark driver JVMs: the children that run SparkSubmit (not the short-lived Java helpers a
    run may start, which would make the samples depend on when they were taken)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            if "org.apache.spark.deploy.SparkSubmit" in _cmdline(int(child)):
                found.append(int(child))
    return found


def _rdkafka_threads(pid: int) -> int:
    count = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            count += (task / "comm").read_text().startswith("rdk:")
        except FileNotFoundError:  # the thread ended while it was listed
            continue
    return count


def _footprint(pid: int, jvm: int | None) -> Footprint:
    """The exporter's and its Spark JVM's memory and threads (the JVM's 0 without one: the driver engine)."""
    me, driver = _status(pid), _status(jvm) if jvm is not None else {"VmRSS": "0 kB", "Threads": "0"}
    rdkafka = _rdkafka_threads(pid)
    return Footprint(
        python_rss_kib=int(me["VmRSS"].split()[0]),
        jvm_rss_kib=int(driver["VmRSS"].split()[0]),
        python_threads=int(me["Threads"]) - rdkafka,
        jvm_threads=int(driver["Threads"]),
        rdkafka_threads=rdkafka,
    )


def _success(port: int) -> float | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    found = re.search(r"^mm2ctl_inspection_last_success_timestamp_seconds (\S+)$", text, re.M)
    return float(found[1]) if found else None


def _success_after(port: int, seen: float) -> float | None:
    t = _success(port)
    return t if t is not None and t > seen else None


@pytest.mark.extended
@pytest.mark.parametrize("engine", ["spark", "auto"])
def test_the_exporter_keeps_its_threads_and_memory_bounded_over_many_cycles(
    setup: Setup, tmp_path: Path, engine: str
) -> None:
    """A real ``mm2ctl exporter`` inspects the flow every second while MM2 mirrors a trickle of new records;
    after each completed inspection the python process and its JVM are sampled from /proc. Once warmed up,
    their resident memory and threads stop growing: the last third of the samples peaks no higher than the
    middle third (a trend over many cycles, not one sample, so a late GC or cleaner pass does not decide). Then
    SIGTERM to its process group stops it with exit 0, every process of the group gone. On the driver engine
    (``auto``, the default at this size) Spark starts only if a run needs it: in a full run of this module the
    flow's offset syncs hold the tombstone an earlier test wrote, a history of two mappings, so its first run
    starts Spark; alone, none starts. Either way at most that one Spark JVM runs, and it is sampled too."""
    port = free_port()
    log = tmp_path / "exporter.err"
    proc = subprocess.Popen(
        [
            sys.executable, "-m", "mm2ctl", "exporter", "--mm2-config", setup.flow.mm2_config,
            "--listen", f"127.0.0.1:{port}", "--interval", "1", "--engine", engine,
        ],
        stdout=subprocess.DEVNULL, stderr=log.open("w"), text=True, start_new_session=True,
        env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip
    samples: list[Footprint] = []
    setup.resume_mirroring()
    try:
        last = eventually(lambda: _success(port), timeout_s=240, what="the exporter's first inspection")
        started = _spark_jvms(proc.pid)
        assert len(started) == 1 if engine == "spark" else len(started) <= 1, started
        jvm = started[0] if started else None
        if jvm is not None:  # a small live session: its driver's heap starts small and shrinks to what it keeps
            assert {"-Xms64m", "-XX:MaxHeapFreeRatio=40"} <= set(_cmdline(jvm).split()), _cmdline(jvm)
        while len(samples) < EXPORTER_CYCLES:
            setup.produce(10, 5000 + 10 * len(samples))
            last = eventually(
                lambda seen=last: _success_after(port, seen),
                timeout_s=120, what=f"inspection {len(samples) + 1} of the exporter",
            )  # fmt: skip
            samples.append(_footprint(proc.pid, jvm))
        assert proc.poll() is None, log.read_text()[-3000:]
        # SIGTERM to its process group stops it cleanly, its JVM with it.
        group = os.getpgid(proc.pid)
        assert _spark_jvms(proc.pid) == started  # no Spark JVM started, or the one the first run started
        if jvm is not None:
            assert any("java" in _cmdline(pid) for pid in _group_members(group)), _group_members(group)
        os.killpg(group, signal.SIGTERM)
        assert proc.wait(timeout=120) == 0, log.read_text()[-3000:]
        eventually(lambda: not _group_members(group), timeout_s=60, what="every process of the group to exit")
        assert "mm2ctl exporter: stopped" in log.read_text()
    finally:
        setup.stop_mirroring()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
    third = len(samples) // 3
    middle, final = samples[third : 2 * third], samples[2 * third :]
    table = "\n".join(str(s) for s in samples)
    for rss in (lambda s: s.python_rss_kib, lambda s: s.jvm_rss_kib):
        assert max(map(rss, final)) <= max(map(rss, middle)) * (1 + RSS_SLACK), table
    assert max(s.jvm_threads for s in final) <= max(s.jvm_threads for s in middle) + THREAD_SLACK, table
    assert max(s.python_threads for s in final) <= max(s.python_threads for s in middle) + THREAD_SLACK, table
    # librdkafka's threads come and go with its clients: bounded by what the first two thirds saw at their peak
    # (a client left open each run would add its threads run after run).
    before = samples[: 2 * third]
    assert max(s.rdkafka_threads for s in final) <= max(s.rdkafka_threads for s in before) + THREAD_SLACK, table
    text = log.read_text()
    assert "Traceback" not in text and "internal error" not in text, text[-3000:]


def _group_members(group: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(stat[2]) == group and stat[0] != "Z":
            members.append(int(entry.name))
    return members


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""
