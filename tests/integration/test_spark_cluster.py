"""The inspection on a real Spark standalone cluster.

``spark-submit --master spark://… --deploy-mode client`` of the job module, against the ``spark_cluster``
fixture (a master and two one-core workers): its rows must equal the embedded ``local[*]`` run's
(``mm2ctl inspect``) on the same state, and its tasks must have run on the two workers' executors, never in
the driver. Spark's Kafka source goes to the driver and the executors as ``--packages``, resolved by the
driver into mm2ctl's Ivy home (``inspector.spark.packages.submit_arguments``), as the README tells an operator.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from mm2ctl.connect_client import build_connect_client
from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.inspector import job
from mm2ctl.inspector.spark.packages import submit_arguments
from mm2ctl.lab import control as lab_core
from mm2ctl.lab import spark_cluster as cluster_core
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually

pytestmark = [pytest.mark.integration, pytest.mark.extended]

#: The one column that depends on when the admin state was read rather than on the state: the age of the
#: group's newest checkpoint as of that moment. The two runs read the same frozen state seconds apart, so it
#: differs between them by those seconds. Every other column (the checkpoint's own timestamp included) is
#: the state's. (A status also reads the clock, but only within two checkpoint intervals, 2 s in the lab, of
#: MM2's last checkpoint: the checkpoint connector is stopped before either run reads anything.)
READ_TIME_COLUMNS = ("group_checkpoint_age_seconds",)


def _rows(path: Path) -> list[tuple[Any, ...]]:
    table = pq.read_table(path)
    columns = [c for c in table.column_names if c not in READ_TIME_COLUMNS]
    return sorted(
        (tuple(row[c] for c in columns) for row in table.select(columns).to_pylist()),
        key=lambda row: tuple((v is None, str(v)) for v in row),
    )


def _events(folder: Path) -> list[dict[str, Any]]:
    files = [f for f in folder.iterdir() if f.is_file()]
    assert len(files) == 1, f"expected one event log in {folder}: {files}"
    return [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]


def _tasks_per_executor(events: list[dict[str, Any]]) -> Counter[str]:
    return Counter(
        e["Task Info"]["Executor ID"]
        for e in events
        if e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success"
    )


def _executor_of(worker_web_url: str, app_id: str) -> list[str]:
    """The executors this worker ran for the application (a finished application's are 'finished')."""
    state = cluster_core.read_json(worker_web_url)
    ran = [*state.get("executors", []), *state.get("finishedexecutors", [])]
    return [str(e["id"]) for e in ran if e.get("appid") == app_id]


def test_the_inspection_on_a_standalone_cluster_gives_the_embedded_runs_rows(
    lab: LabInfo, spark_cluster: cluster_core.SparkCluster, tmp_path: Path
) -> None:
    name = f"sparkcl{uuid.uuid4().hex[:6]}"
    src = {"bootstrap.servers": lab.source.bootstrap}
    source, target = KafkaAdmin.connect(src), KafkaAdmin.connect({"bootstrap.servers": lab.target.bootstrap})
    t = lambda s: f"iso-{name}-{s}"  # noqa: E731
    flow = lab_core.add_flow(lab, name)
    remote = load_mm2_config(flow.mm2_config).pair(f"{flow.source_alias}->{flow.target_alias}").remote_topic
    connect = build_connect_client([lab.connect_url])
    try:
        source.create_topics({t("a"): 4, t("b"): 2})
        records.produce(src, t("a"), [(None, f"a{i}".encode(), i % 4) for i in range(1600)])
        records.produce(src, t("b"), [(None, f"b{i}".encode(), i % 2) for i in range(600)])
        # g1 sits at the log end of every partition. MM2 translates a committed offset only from a sync at or
        # below it, and of a burst it may write no more than the sync of the partition's last record (it holds
        # at most 10 syncs in flight and keeps only the newest one waiting per partition); that one it always
        # writes. A group committed inside the burst may stay untranslatable for good.
        committed = {
            t("g1"): {(t("a"), p): 400 for p in range(4)} | {(t("b"), p): 300 for p in range(2)},
            t("g2"): {(t("a"), p): 100 + 50 * p for p in range(4)},
            t("g3"): {(t("b"), 0): 300, (t("b"), 1): 100},
        }
        source.alter_group_offsets(committed)

        def synced() -> bool:
            # g1 synced on every partition is enough: the runs compare rows of a frozen state, and whatever
            # MM2 synced of the other groups by then is the same state for both.
            first = t("g1")
            found = target.committed_offsets([first])[first].offsets
            return all(found.get((remote(topic), p)) is not None for topic, p in committed[first])

        eventually(synced, timeout_s=180, what="MM2 to sync a group's offsets to the target")
        # The state stops moving: MM2 neither copies, syncs nor checkpoints any more. A group that commits
        # afterwards is one MM2 never synced (a problem row, so both runs exit 10).
        for role in ("checkpoint", "source"):
            connect.stop(flow.connectors[role])
            connect.wait_for_state(flow.connectors[role], {"STOPPED"}, timeout=60)
        source.alter_group_offsets({t("g-late"): {(t("a"), 0): 200}})

        embedded_out, cluster_out, events = tmp_path / "embedded", tmp_path / "cluster", tmp_path / "events"
        events.mkdir()
        started = time.monotonic()
        embedded = subprocess.run(
            [
                sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_config,
                "--format", "parquet", "--output", str(embedded_out),
            ],
            capture_output=True, text=True, timeout=600, check=False,
            env={**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")},
        )  # fmt: skip
        embedded_s = time.monotonic() - started
        assert embedded.returncode == ExitCode.PROBLEMS_FOUND, embedded.stderr[-3000:]

        submit = cluster_core.submit_command(
            spark_cluster,
            str(Path(job.__file__)),
            ["--mm2-config", flow.mm2_config, "--format", "parquet", "--output", str(cluster_out)],
            options=submit_arguments(),
            conf={
                "spark.ui.enabled": "false",
                # Both executors registered before the first job, so neither worker can be left idle.
                "spark.scheduler.minRegisteredResourcesRatio": "1.0",
                "spark.eventLog.enabled": "true",
                "spark.eventLog.dir": events.as_uri(),
                "spark.eventLog.compress": "false",
                "spark.eventLog.rolling.enabled": "false",
            },
        )
        started = time.monotonic()
        on_cluster = subprocess.run(
            submit, capture_output=True, text=True, timeout=600, check=False, env=cluster_core.submit_environment()
        )
        cluster_s = time.monotonic() - started
        assert on_cluster.returncode == ExitCode.PROBLEMS_FOUND, on_cluster.stderr[-3000:]
        print(f"embedded local[*] run {embedded_s:.1f}s; spark-submit to {spark_cluster.master_url} {cluster_s:.1f}s")

        embedded_rows, cluster_rows = _rows(embedded_out), _rows(cluster_out)
        assert len(embedded_rows) == 4 + 2 + 4 + 2 + 1
        assert cluster_rows == embedded_rows
        statuses = Counter(r["status"] for r in pq.read_table(cluster_out).to_pylist())
        assert statuses["not_synced"] >= 1 and statuses["synced"] >= 1, statuses

        # The tasks ran on the workers' executors: a job that fell back to local mode runs them in "driver".
        log = _events(events)
        app_id = next(e["App ID"] for e in log if e["Event"] == "SparkListenerApplicationStart")
        tasks = _tasks_per_executor(log)
        assert "driver" not in tasks, tasks
        per_worker = [_executor_of(url, app_id) for url in spark_cluster.worker_web_urls]
        assert all(len(ids) == 1 for ids in per_worker), per_worker
        assert all(tasks[ids[0]] > 0 for ids in per_worker), (per_worker, tasks)
        assert set(tasks) == {ids[0] for ids in per_worker}, (per_worker, tasks)
    finally:
        for connector in flow.connectors.values():
            connect.delete(connector)
        connect.close()
