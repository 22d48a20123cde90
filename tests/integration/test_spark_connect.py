"""A real Spark Connect server from the installed pyspark (``mm2ctl.lab.spark_connect``), read through.

The server runs on loopback with Spark's Kafka source as a package; a client process that has no driver JVM
of its own reads a lab topic through it with the inspector's reader (``kafka_read.read_topic``), and gets
exactly the records a Kafka consumer sees. ``spark_compat``'s Arrow helpers work on the remote session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2ctl.core import records
from mm2ctl.core.admin import KafkaAdmin
from mm2ctl.lab import spark_connect
from mm2ctl.lab.lab import LabInfo
from mm2ctl.lab.process import is_alive
from tests.integration.support import source_conf, uniq

pytestmark = pytest.mark.integration

CLIENT = Path(__file__).with_name("connect_client_read.py")


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[spark_connect.SparkConnectServer]:
    """One server for the module, beside the labs; stopped at the end, its port closed."""
    base = os.environ.get("MM2CTL_TEST_LAB_DIR")
    if base:
        Path(base).mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="spark-connect-", dir=base))
    else:
        folder = tmp_path_factory.mktemp("spark-connect")
    server = spark_connect.start(folder)
    try:
        yield server
    finally:
        spark_connect.stop(server)
        assert not is_alive(server.pid) and not spark_connect.listening(server.port)


def test_a_client_reads_a_lab_topic_through_the_connect_server(
    lab: LabInfo, connect_server: spark_connect.SparkConnectServer
) -> None:
    topic = uniq("connect")
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 3})
    records.produce(source_conf(lab), topic, [(f"k{i}".encode(), f"v{i}".encode(), i % 3) for i in range(300)])
    expected = sorted(
        (r.partition, r.offset, (r.key or b"").hex(), (r.value or b"").hex())
        for r in records.read_partitions(source_conf(lab), topic)
    )
    assert len(expected) == 300

    proc = subprocess.run(
        [sys.executable, str(CLIENT), connect_server.url, lab.source.bootstrap, topic],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"{proc.stderr[-3000:]}\n--- server log:\n{connect_server.log.read_text()[-3000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["session"].startswith("pyspark.sql.connect")
    assert result["driver_jvm_here"] is False  # the query ran on the server
    got = sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in result["records"])
    assert got == expected
    assert result["arrow"] == [{"name": None, "offset": None}, {"name": "a", "offset": 2**63 - 1}]
