"""``inspector.reads.committed_offsets`` against the real lab: the driver JVM's AdminClient and librdkafka read the same
committed offsets, and the admin state ``collect_pair_state`` builds from either is the one it built when it
made a Python object per offset (kept below as ``_per_offset_tables``, the code it ran until then).

Each flow here is the lab's ``add_flow`` with only MM2's heartbeat connector: its properties file (aliases,
filters, the client settings of the principal mm2ctl runs as) without a connector that would move the groups'
offsets while they are read twice. The tests write every offset themselves, on both clusters.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)

from mm2ctl.core.config.mm2_config import MM2Config, PairConfig, load_mm2_config
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.security.authorization import principal_of
from mm2ctl.inspector.reads.committed_offsets import JVM, LIBRDKAFKA, JvmAdmin, read_columns
from mm2ctl.inspector.reads.pair_admin import PairState, _err, _Side, collect_pair_state
from mm2ctl.inspector.selection import Selection
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.mm2_setup import ROLES
from mm2ctl.lab.secured import MM2CTL
from tests.integration.support import eventually

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@dataclass(frozen=True)
class Flow:
    name: str
    mm2_file: str
    config: MM2Config
    pair: PairConfig
    groups: tuple[str, ...]

    def topic(self, suffix: str) -> str:
        return f"iso-{self.name}-{suffix}"

    def group(self, suffix: str) -> str:
        return f"iso-{self.name}-g{suffix}"


def _flow(lab: LabInfo, prefix: str, roles: tuple[str, ...] = ("heartbeat",)) -> Flow:
    """Topics and groups of every kind the admin state tells apart, written as the lab's admin principal:

    - ``ga``: offsets on both mirrored topics, and on the target on the remote topics and on a topic of the
      target's own (which is not a remote topic); two of its target offsets carry metadata, one mm2ctl's
      (``WRITTEN``, which both readers give as ``written_by``), one an application's;
    - ``gb``: on a mirrored topic and on a topic MM2 does not mirror, on the target on one remote partition;
    - ``gc``: only on the topic MM2 does not mirror (nothing to inspect);
    - ``gd``: on a mirrored topic, nothing on the target;
    - ``gnone``: never committed anything (not listed by the cluster, but asked for by name below).
    """
    name = f"{prefix}{uuid.uuid4().hex[:6]}"
    flow = lab_core.add_flow(lab, name, roles=roles)
    config = load_mm2_config(flow.mm2_config)
    pair = config.pair(f"{flow.source_alias}->{flow.target_alias}")
    f = Flow(name, flow.mm2_config, config, pair, ())
    # ``iso-x<name>-other``: neither this flow (``iso-<name>-…``) nor the lab's own flow (no ``iso-``) mirrors it.
    t1, t2, unmirrored, local = f.topic("t1"), f.topic("t2"), f"iso-x{name}-other", f.topic("local")
    source = KafkaAdmin.connect(lab.client_config(lab_core.SOURCE_ALIAS))
    target = KafkaAdmin.connect(lab.client_config(lab_core.TARGET_ALIAS))
    source.create_topics({t1: 3, t2: 2, unmirrored: 1})
    target.create_topics({pair.remote_topic(t1): 3, pair.remote_topic(t2): 2, local: 1})
    source.alter_group_offsets(
        {
            f.group("a"): {(t1, 0): 5, (t1, 1): 0, (t1, 2): 17, (t2, 0): 3, (t2, 1): 9},
            f.group("b"): {(t1, 1): 4, (unmirrored, 0): 2},
            f.group("c"): {(unmirrored, 0): 6},
            f.group("d"): {(t2, 1): 8},
        }
    )
    r1, r2 = pair.remote_topic(t1), pair.remote_topic(t2)
    target.alter_group_offsets(
        {
            f.group("a"): {(r1, 0): 4, (r1, 1): 0, (r1, 2): 16, (r2, 0): 3, (local, 0): 1},
            f.group("b"): {(r1, 1): 4},
        },
        metadata={f.group("a"): {(r1, 2): WRITTEN, (r2, 0): "the application's own"}},
    )
    return Flow(name, flow.mm2_config, config, pair, tuple(f.group(s) for s in ("a", "b", "c", "d", "none")))


WRITTEN = "mm2ctl:p0123:verified_delta"


def _jvm(spark: Any, flow: Flow, alias: str) -> JvmAdmin:
    return JvmAdmin(spark.sparkContext._gateway, flow.config.client_settings(alias, flow.pair.name), alias)


def _admin(flow: Flow, alias: str) -> KafkaAdmin:
    return KafkaAdmin.connect(flow.config.kafka_config(alias, flow.pair.name), name=alias)


def test_the_jvm_and_librdkafka_read_the_same_offsets(lab: LabInfo, spark: Any) -> None:
    flow = _flow(lab, "co")
    for alias in (flow.pair.source, flow.pair.target):
        admin = _admin(flow, alias)
        in_jvm = read_columns(admin, flow.groups, jvm=_jvm(spark, flow, alias))
        with_librdkafka = read_columns(admin, flow.groups)
        assert (in_jvm.read_through, with_librdkafka.read_through) == (JVM, LIBRDKAFKA)
        assert in_jvm.groups == with_librdkafka.groups == flow.groups
        assert in_jvm.table.equals(with_librdkafka.table)
        assert in_jvm.errors == with_librdkafka.errors == (None,) * len(flow.groups)
        # The admin facade's dicts, one request per group, as the inspection read them before.
        assert in_jvm.by_group() == admin.committed_offsets(flow.groups)
    source = read_columns(_admin(flow, flow.pair.source), flow.groups, jvm=_jvm(spark, flow, flow.pair.source))
    assert source.by_group()[flow.group("a")].offsets[(flow.topic("t1"), 2)] == 17
    assert source.table.num_rows == 5 + 2 + 1 + 1
    target = read_columns(_admin(flow, flow.pair.target), flow.groups, jvm=_jvm(spark, flow, flow.pair.target))
    written = target.table.filter(pc.is_valid(target.table.column("written_by")))
    assert written.column("written_by").cast(pa.string()).to_pylist() == [WRITTEN]
    assert written.column("partition").to_pylist() == [2]


def _per_offset_tables(config: MM2Config, pair: PairConfig, selection: Selection) -> tuple[pa.Table, pa.Table]:
    """The source and target group-offset tables as ``collect_pair_state`` built them from the admin facade's
    dicts, a Python object per offset, until the offsets came as columns (its code, unchanged but for the
    group states, which these tests leave alone)."""
    name = pair.name
    source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source)
    target = KafkaAdmin.connect(pair.target_kafka_config, name=pair.target)
    source_side = _Side(pair.source, principal_of(pair.source_kafka_config))
    target_side = _Side(pair.target, principal_of(pair.target_kafka_config))
    candidates = [
        g.group for g in source.list_groups() if pair.group_filter.matches(g.group) and selection.group_ok(g.group)
    ]
    committed = source.committed_offsets(candidates)
    groups: list[str] = []
    go_rows: dict[str, list[object]] = {k: [] for k in ("group", "topic", "partition", "committed_offset", "error")}
    partitions_of: dict[str, list[tuple[str, int]]] = {}
    remote_of: dict[str, str] = {}
    for group in candidates:
        offsets = committed[group]
        kept = [
            (tp, off)
            for tp, off in offsets.offsets.items()
            if pair.replicates_topic(tp[0]) and selection.topic_ok(tp[0])
        ]
        if not kept and offsets.error is None:
            continue
        groups.append(group)
        partitions_of[group] = sorted(tp for tp, _ in kept)
        for (topic, partition), off in sorted(kept):
            go_rows["group"].append(group)
            go_rows["topic"].append(topic)
            go_rows["partition"].append(partition)
            go_rows["committed_offset"].append(off)
            go_rows["error"].append(_err(offsets.error, source_side, "group", group))
            remote_of[topic] = pair.remote_topic(topic)
    target_committed = target.committed_offsets(groups)
    remote_names = set(remote_of.values())
    tgo: dict[str, list[object]] = {k: [] for k in ("group", "topic", "partition", "committed_offset", "error")}
    for group in groups:
        res = target_committed[group]
        if res.error is not None and not res.offsets:
            for topic, partition in partitions_of[group]:
                tgo["group"].append(group)
                tgo["topic"].append(remote_of[topic])
                tgo["partition"].append(partition)
                tgo["committed_offset"].append(None)
                tgo["error"].append(_err(res.error, target_side, "group", group))
            continue
        for (topic, partition), off in sorted(res.offsets.items()):
            if topic in remote_names:
                tgo["group"].append(group)
                tgo["topic"].append(topic)
                tgo["partition"].append(partition)
                tgo["committed_offset"].append(off)
                tgo["error"].append(None)

    def table(rows: dict[str, list[object]]) -> pa.Table:
        return pa.table(
            {
                "cluster_pair": pa.array([name] * len(rows["group"]), pa.string()),
                "group": pa.array(rows["group"], pa.string()),
                "topic": pa.array(rows["topic"], pa.string()),
                "partition": pa.array(rows["partition"], pa.int32()),
                "committed_offset": pa.array(rows["committed_offset"], pa.int64()),
                "error": pa.array(rows["error"], pa.string()),
            }
        )

    return table(go_rows), table(tgo)


_TABLES = (
    "source_group_offsets",
    "source_partitions",
    "target_partitions",
    "target_group_offsets",
    "source_groups",
    "target_groups",
)


def _same_state(a: PairState, b: PairState) -> None:
    for table in _TABLES:
        assert getattr(a, table).equals(getattr(b, table)), table


@pytest.mark.parametrize("topics", [None, ".*-t1"])
def test_the_admin_state_is_the_per_offset_one_either_way(lab: LabInfo, spark: Any, topics: str | None) -> None:
    flow = _flow(lab, "cs")
    selection = Selection(topics=topics)
    gateway = spark.sparkContext._gateway
    in_jvm = collect_pair_state(flow.config, flow.pair, selection, driver_jvm=lambda: gateway)
    with_librdkafka = collect_pair_state(flow.config, flow.pair, selection, driver_jvm=lambda: None)
    _same_state(in_jvm, with_librdkafka)
    source_rows, target_rows = _per_offset_tables(flow.config, flow.pair, selection)
    share = ["share_start_offset", "share_acknowledged_past"]  # of share groups, which this flow has none of
    assert in_jvm.source_group_offsets.drop_columns(share).equals(source_rows)
    assert all(in_jvm.source_group_offsets.column(c).null_count == source_rows.num_rows for c in share)
    assert in_jvm.target_group_offsets.drop_columns(["written_by"]).equals(target_rows)
    written = {
        (r["topic"], r["partition"]): r["written_by"]
        for r in in_jvm.target_group_offsets.to_pylist()
        if r["written_by"] is not None
    }
    assert written == {(flow.pair.remote_topic(flow.topic("t1")), 2): WRITTEN}
    groups = set(in_jvm.source_group_offsets.column("group").to_pylist())
    if topics is None:
        assert groups == {flow.group("a"), flow.group("b"), flow.group("d")}
        assert in_jvm.target_group_offsets.num_rows == 4 + 1  # ga's remote offsets, not its local one; gb's
    else:
        assert groups == {flow.group("a"), flow.group("b")}


def test_without_a_usable_jvm_the_reads_go_through_librdkafka(lab: LabInfo, spark: Any) -> None:
    """Spark Connect's Python process has no driver JVM (``driver_jvm`` answers None); a JVM without the Kafka
    client on its class path (here one started without the Kafka source's jars) cannot compile the reader."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    flow = _flow(lab, "cf")
    admin = _admin(flow, flow.pair.source)
    expected = read_columns(admin, flow.groups, jvm=_jvm(spark, flow, flow.pair.source))
    bare = launch_gateway(SparkConf(loadDefaults=False).setMaster("local[1]"))
    try:
        no_kafka = JvmAdmin(bare, flow.config.client_settings(flow.pair.source, flow.pair.name), flow.pair.source)
        got = read_columns(admin, flow.groups, jvm=no_kafka)
    finally:
        bare.shutdown()
        bare.proc.stdin.close()
        bare.proc.wait(timeout=60)
    assert got.read_through == LIBRDKAFKA
    assert got.table.equals(expected.table) and got.errors == expected.errors
    state = collect_pair_state(flow.config, flow.pair, Selection(), driver_jvm=lambda: None)
    assert state.source_group_offsets.num_rows == 5 + 1 + 1


@pytest.mark.parametrize(("engine", "through"), [("spark", "jvm"), ("auto", "librdkafka")])
def test_inspect_reads_the_committed_offsets_in_its_driver_jvm_when_spark_runs(
    lab: LabInfo, tmp_path: Path, engine: str, through: str
) -> None:
    """On Spark the committed offsets are read in Spark's driver JVM; on the driver engine (a small setup, no
    Spark session) through librdkafka. The same group partitions either way."""
    flow = _flow(lab, f"ci{engine}", roles=ROLES)  # every connector: MM2's internal topics exist
    env = {**os.environ, "MM2CTL_STATE_DIR": str(tmp_path / "state")}
    env.pop("MM2CTL_CONNECT_URL", None)
    out = subprocess.run(
        [
            sys.executable, "-m", "mm2ctl", "inspect", "--mm2-config", flow.mm2_file, "--pair", flow.pair.name,
            "--engine", engine,
        ],
        capture_output=True, text=True, timeout=600, env=env, check=False,
    )  # fmt: skip
    assert out.returncode in (0, 10), out.stderr
    assert f"{flow.pair.name}: committed offsets read through {through}" in out.stderr
    assert ("small enough to inspect on the driver" in out.stderr) is (engine == "auto"), out.stderr
    assert "7 group partition(s) inspected" in out.stderr  # ga's 5, gb's and gd's on the mirrored topics


# --- a denied group, on the secured lab --------------------------------------------------------------------


@pytest.mark.lab(security="sasl-ssl")
def test_a_denied_group_is_the_same_error_either_way(lab: LabInfo, spark: Any) -> None:
    """mm2ctl's principal may not DESCRIBE one group on the target: both clients answer that group's lookup
    with GROUP_AUTHORIZATION_FAILED, and its target rows in the admin state say so, the other groups' rows
    untouched (the Java client here runs over SASL_SSL with the settings the flow's file gives it)."""
    flow = _flow(lab, "cd")
    denied = flow.group("a")
    deny = AclBinding(
        ResourceType.GROUP,
        denied,
        ResourcePatternType.LITERAL,
        f"User:{MM2CTL}",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.DENY,
    )
    acls = KafkaAdmin.connect(lab.client_config(lab_core.TARGET_ALIAS)).client
    for future in acls.create_acls([deny]).values():
        future.result()
    try:
        target = _admin(flow, flow.pair.target)

        def denied_now() -> bool:
            return read_columns(target, [denied]).errors[0] is not None

        eventually(denied_now, timeout_s=30, what="the DENY taking effect")
        in_jvm = read_columns(target, flow.groups, jvm=_jvm(spark, flow, flow.pair.target))
        with_librdkafka = read_columns(target, flow.groups)
        gateway = spark.sparkContext._gateway
        state_in_jvm = collect_pair_state(flow.config, flow.pair, Selection(), driver_jvm=lambda: gateway)
        state_with_librdkafka = collect_pair_state(flow.config, flow.pair, Selection(), driver_jvm=lambda: None)
    finally:
        exactly = AclBindingFilter(
            deny.restype,
            deny.name,
            deny.resource_pattern_type,
            deny.principal,
            deny.host,
            deny.operation,
            deny.permission_type,
        )
        for future in acls.delete_acls([exactly]).values():
            future.result()
    assert in_jvm.read_through == JVM
    assert in_jvm.table.equals(with_librdkafka.table)
    index = flow.groups.index(denied)
    for got in (in_jvm, with_librdkafka):
        codes = [None if e is None else e.code for e in got.errors]
        assert codes == [("GROUP_AUTHORIZATION_FAILED" if i == index else None) for i in range(len(flow.groups))]
    _same_state(state_in_jvm, state_with_librdkafka)
    rows = state_in_jvm.target_group_offsets.to_pylist()
    marked = [r for r in rows if r["group"] == denied]
    assert len(marked) == 5  # one per partition ga has on the source, under the remote names
    expected = (
        f"User:{MM2CTL} is not authorized to DESCRIBE group '{denied}' on cluster {flow.pair.target} "
        "[GROUP_AUTHORIZATION_FAILED]"
    )
    assert all(r["committed_offset"] is None and r["error"] == expected for r in marked)
    assert all(r["error"] is None for r in rows if r["group"] != denied)
