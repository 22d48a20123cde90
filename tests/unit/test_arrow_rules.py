"""A rule that Spark runs as an Arrow function reaches its Python workers by value: a worker without mm2ctl
runs it, and gives the rows the driver gives."""

from __future__ import annotations

import datetime as dt
import functools
import subprocess
import sys
from typing import Any

import pyarrow as pa
from pyspark import cloudpickle

from mm2ctl.core.kafka import codecs
from mm2ctl.inspector.rules import columns, decoding, row_status, translation
from mm2ctl.inspector.schemas import JOINED_SCHEMA, KAFKA_RECORD_SCHEMA, arrow_schema
from mm2ctl.inspector.spark.arrow_rules import Runner, batch_runner, partition_runner, ship_by_value
from mm2ctl.inspector.transforms import classify

#: Run in a fresh interpreter in which importing mm2ctl fails: unpickle the runner from stdin, run it over the
#: batches that follow, write the result as an Arrow stream.
_WORKER = """
import sys, importlib.abc, pickle
import pyarrow as pa

class NoMm2ctl(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "mm2ctl" or name.startswith("mm2ctl."):
            raise ImportError("mm2ctl is not installed here")
        return None

sys.meta_path.insert(0, NoMm2ctl())
for name in [m for m in sys.modules if m == "mm2ctl" or m.startswith("mm2ctl.")]:
    del sys.modules[name]
data = sys.stdin.buffer.read()
size = int.from_bytes(data[:8], "big")
run = pickle.loads(data[8:8 + size])
batches = pa.ipc.open_stream(data[8 + size:]).read_all().to_batches()
out = pa.Table.from_batches(list(run(iter(batches))))
with pa.ipc.new_stream(sys.stdout.buffer, out.schema) as writer:
    writer.write_table(out)
"""


def _rows() -> list[dict[str, Any]]:
    now = dt.datetime(2024, 6, 1, 12, tzinfo=dt.UTC)
    base = {
        "cluster_pair": "a->b", "topic": "orders", "partition": 0, "group": "g", "committed_offset": 100,
        "translated_offset": 98, "translation_method": "offset_sync_next", "latest_sync_upstream": 95,
        "latest_sync_downstream": 97, "oldest_sync_upstream": 10, "oldest_sync_downstream": 12, "sync_count": 3,
        "source_earliest": 0, "source_latest": 200, "remote_topic": "src.orders", "source_group_state": "Stable",
        "target_earliest": 0, "target_latest": 198, "target_offset": 98, "target_group_state": "Empty",
        "checkpoint_offset": 98, "checkpoint_timestamp": now, "group_type": "consumer",
    }  # fmt: skip
    return [
        base,
        {**base, "partition": 1, "target_offset": None, "checkpoint_offset": None, "translated_offset": None},
        {**base, "group": "s", "group_type": "share", "target_offset": None},
    ]


def _run_without_mm2ctl(run: Runner, table: pa.Table) -> pa.Table:
    """``run`` unpickled and run over ``table`` in a fresh interpreter that cannot import mm2ctl."""
    ship_by_value(sys.modules[partition_runner.__module__])
    pickled = cloudpickle.dumps(run)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    stdin = len(pickled).to_bytes(8, "big") + pickled + sink.getvalue().to_pybytes()
    done = subprocess.run([sys.executable, "-c", _WORKER], input=stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    return pa.ipc.open_stream(done.stdout).read_all()


def test_a_rule_runs_where_mm2ctl_is_not_installed() -> None:
    table = pa.Table.from_pylist(
        [{n: r.get(n) for n in JOINED_SCHEMA.names} for r in _rows()], schema=arrow_schema(JOINED_SCHEMA)
    )
    settings = classify.settings(sync_group_offsets_enabled=True)
    rule = functools.partial(row_status.classify_rows, settings=settings, vocabulary=classify.vocabulary())
    ship_by_value(row_status, columns)
    remote = _run_without_mm2ctl(partition_runner(rule), table)
    assert remote.to_pylist() == rule(table).to_pylist()
    assert [r["status"] for r in remote.to_pylist()] == ["synced", "not_synced", "not_checkpointed"]


def test_the_record_decode_runs_where_mm2ctl_is_not_installed() -> None:
    records = [
        codecs.encode_offset_sync(codecs.OffsetSync("orders", 3, 1000, 998)),
        (codecs.encode_offset_sync_key("zé", 1), None),
        (b"\x00\x02\xc3\x28\x00\x00\x00\x01", b"\x00" * 16),
        (None, b""),
    ]
    ts = dt.datetime(2024, 6, 1, tzinfo=dt.UTC)
    rows = [("a->b", k, v, "internal", 0, i, ts, 0) for i, (k, v) in enumerate(records)]
    table = pa.Table.from_pylist(
        [dict(zip(KAFKA_RECORD_SCHEMA.names, r, strict=True)) for r in rows], schema=arrow_schema(KAFKA_RECORD_SCHEMA)
    )
    ship_by_value(decoding)
    remote = _run_without_mm2ctl(batch_runner(decoding.decode_offset_syncs_table), table)
    assert remote.to_pylist() == decoding.decode_offset_syncs_table(table).to_pylist()
    assert [r["malformed_reason"] for r in remote.to_pylist()] == [None, None, decoding.INVALID_UTF8, decoding.NULL_KEY]


def test_the_translation_rule_runs_where_mm2ctl_is_not_installed() -> None:
    carried = ["group", "committed_offset"]
    probes = [{"group": g, "committed_offset": c, "_part": 1, "_run": False} for g, c in (("a", 5), ("b", 9))]
    runs = [{"_part": 1, "_u0": 5, "_d0": 7, "_n": 2, "_records": 2, "_run": True}]
    table = pa.Table.from_pylist(
        [*probes, *runs],
        schema=pa.schema(
            [("group", pa.string()), ("committed_offset", pa.int64()), ("_part", pa.int32())]
            + [(c, pa.int64()) for c in ("_u0", "_d0", "_n", "_records")]
            + [("_run", pa.bool_())]
        ),
    )
    rule = functools.partial(translation.translate_union, columns=carried)
    ship_by_value(translation, columns)
    remote = _run_without_mm2ctl(partition_runner(rule), table)
    assert remote.to_pylist() == rule(table).to_pylist()
    assert [(r["group"], r["translated_offset"], r["translation_method"]) for r in remote.to_pylist()] == [
        ("a", 7, "offset_sync_exact"),
        ("b", 9, "offset_sync_next"),
    ]
