"""The lab's Kafka Streams application (``mm2ctl.lab.streams_app``) forms a streams group (KIP-1071) on the
source cluster: it copies or counts what it reads, commits its positions to the log end, has its internal
topics in count mode, and leaves the group when stopped.

librdkafka neither lists nor describes a streams group (it answers a classic group in state Dead), so the
group's state and members are read with Kafka's own ``StreamsGroupCommand``; its committed offsets read
through librdkafka's OffsetFetch like any group's.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.jars import kafka_classpath
from mm2ctl.lab.process import java_executable
from mm2ctl.lab.streams_app import start_streams_app
from tests.integration.support import eventually, source_conf, uniq

pytestmark = pytest.mark.integration

COUNT = 200


def _streams_group_state(lab: LabInfo, group: str) -> tuple[str, int]:
    """(state, member count) of a streams group, from ``StreamsGroupCommand --describe --state``."""
    proc = subprocess.run(
        [
            java_executable(),
            "-cp",
            kafka_classpath(lab.kafka_version),
            "org.apache.kafka.tools.streams.StreamsGroupCommand",
            "--bootstrap-server",
            lab.source.bootstrap,
            "--describe",
            "--group",
            group,
            "--state",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    # GROUP  COORDINATOR (ID)  STATE  #MEMBERS, the coordinator written "host:port (id)".
    rows = [line.split() for line in proc.stdout.splitlines() if line.startswith(group + " ")]
    assert len(rows) == 1, proc.stdout + proc.stderr
    return rows[0][-2], int(rows[0][-1])


def _topic_with_records(lab: LabInfo, name: str) -> tuple[str, str]:
    """An input topic of 2 partitions holding ``COUNT`` records (values v000…), and an empty output topic."""
    topic, output = f"in-{name}", f"out-{name}"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 2, output: 2})
    records.produce(source_conf(lab), topic, [(b"k%d" % i, b"v%03d" % i, i % 2) for i in range(COUNT)])
    return topic, output


def test_passthrough_copies_commits_to_the_log_end_and_leaves_the_group(lab: LabInfo, tmp_path: Path) -> None:
    name = uniq("streams-pass")
    topic, output = _topic_with_records(lab, name)
    admin = KafkaAdmin.connect(source_conf(lab))
    ends = {tp: b.latest for tp, b in admin.partition_bounds([(topic, 0), (topic, 1)]).items()}
    assert ends == {(topic, 0): COUNT // 2, (topic, 1): COUNT // 2}

    with start_streams_app(lab.source.bootstrap, name, topic, output, log_path=tmp_path / "app.log") as app:
        eventually(
            lambda: sum(b.latest or 0 for b in admin.partition_bounds([(output, 0), (output, 1)]).values()) >= COUNT,
            timeout_s=20,
            what="the app to copy every record",
        )
        eventually(
            lambda: admin.committed_offsets([name])[name].offsets == ends,
            timeout_s=10,
            what="the streams group's committed offsets at the input's log end",
        )
        assert _streams_group_state(lab, name) == ("Stable", 1)

    assert app.returncode == 0, (tmp_path / "app.log").read_text()
    values = sorted(r.value for r in records.read_partitions(source_conf(lab), output) if r.value is not None)
    assert values == [b"v%03d" % i for i in range(COUNT)]
    assert _streams_group_state(lab, name) == ("Empty", 0)
    assert admin.committed_offsets([name])[name].offsets == ends


def test_count_has_a_repartition_and_a_changelog_topic(lab: LabInfo, tmp_path: Path) -> None:
    name = uniq("streams-count")
    topic, output = _topic_with_records(lab, name)
    admin = KafkaAdmin.connect(source_conf(lab))

    with start_streams_app(
        lab.source.bootstrap, name, topic, output, mode="count", log_path=tmp_path / "app.log"
    ) as app:
        internal = sorted(t for t in admin.list_topics() if t.startswith(f"{name}-"))
        assert [t.rsplit("-", 1)[1] for t in internal] == ["changelog", "repartition"], internal
        # Every value is distinct, so each count written is 1.
        eventually(
            lambda: sum(b.latest or 0 for b in admin.partition_bounds([(output, 0), (output, 1)]).values()) >= COUNT,
            timeout_s=20,
            what="the app to count every record",
        )

    assert app.returncode == 0, (tmp_path / "app.log").read_text()
    counted = {r.key: r.value for r in records.read_partitions(source_conf(lab), output)}
    assert counted == {b"v%03d" % i: b"1" for i in range(COUNT)}
