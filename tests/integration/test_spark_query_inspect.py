"""``inspect --spark-checkpoint`` on the lab: a real Structured Streaming query reads a mirrored topic to its end
and commits its batch; more records arrive and MM2 copies them; ``inspect`` then gives the query's partitions
rows like a group's, named after the query id in its checkpoint, at the checkpoint's offsets, translated to the
target, with what a failover now would skip. A missing checkpoint is exit 24 with one line naming it."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.translation.methods import EXACT_METHODS
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FIRST, LATER = 30, 20  # records per partition before the query runs, and after
PARTITIONS = (0, 1)


def _produce(conf: dict[str, str], topic: str, start: int, count: int) -> None:
    records.produce(
        conf, topic, [(b"k", b"p%d-%d" % (p, i), p) for p in PARTITIONS for i in range(start, start + count)]
    )


def _run_query(spark: Any, bootstrap: str, topic: str, checkpoint: Path) -> str:
    """Run a query over everything ``topic`` holds now, to its end, and stop; its id."""
    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = (
        stream.writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination(300)
    assert query.exception() is None
    return str(query.id)


def test_a_structured_streaming_query_gets_rows_like_a_group(lab: LabInfo, spark: Any, tmp_path: Path) -> None:
    name = "sq" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-events"
    src, dst = source_conf(lab), target_conf(lab)
    KafkaAdmin.connect(src).create_topics({topic: len(PARTITIONS)})
    flow = lab_core.add_flow(lab, name)
    remote = f"{flow.source_alias}.{topic}"
    _produce(src, topic, 0, FIRST)

    checkpoint = tmp_path / "checkpoint"
    query_id = _run_query(spark, lab.source.bootstrap, topic, checkpoint)
    assert json.loads((checkpoint / "metadata").read_text())["id"] == query_id
    _produce(src, topic, FIRST, LATER)
    eventually(
        lambda: all(
            b.latest == FIRST + LATER
            for b in KafkaAdmin.connect(dst).partition_bounds([(remote, p) for p in PARTITIONS]).values()
        ),
        timeout_s=120,
        what="MM2 copied the topic",
    )

    state = tmp_path / "state"
    state.mkdir()
    base = ("inspect", "--mm2-config", flow.mm2_config, "--format", "json", "--quiet")
    # --groups picks Kafka groups (none match here): the query's rows were asked for by --spark-checkpoint.
    # --exact: the translation plan failover would make, proven by content.
    proc = mm2ctl(*base, "--groups", f"iso-{name}-none", "--exact", "--spark-checkpoint", str(checkpoint), state=state)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert sorted((r["group"], r["topic"], r["partition"]) for r in rows) == [
        (f"spark:{query_id}", topic, p) for p in PARTITIONS
    ]
    for r in rows:
        assert r["group_type"] == "spark_query"
        assert (r["status"], r["is_ok"]) == ("not_checkpointed", True)
        assert (r["source_offset"], r["source_latest"], r["remote_topic"]) == (FIRST, FIRST + LATER, remote)
        # MM2 copied the topic from its start with no gaps: the same offsets on the target.
        assert (r["translated_offset"], r["target_latest"]) == (FIRST, FIRST + LATER)
        assert r["translation_method"] in EXACT_METHODS, r
        # Nothing in Kafka: no MM2 checkpoint, no target offset; a query started there without its position
        # begins at the log end and skips what MM2 copied after the batch.
        assert (r["checkpoint_offset"], r["target_offset"], r["source_group_state"]) == (None, None, None)
        assert (r["replay_if_failover_now"], r["skip_if_failover_now"]) == (0, LATER)
        assert "Spark Structured Streaming query" in r["explanation"]
        assert "mm2ctl translates its position" in r["explanation"]

    missing = tmp_path / "no-such-checkpoint"
    proc = mm2ctl(*base, "--spark-checkpoint", str(missing), state=state)
    assert proc.returncode == ExitCode.SPARK_CHECKPOINT == 24, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [f"mm2ctl: error: {missing}: no checkpoint folder here"]
