"""Exit 22 through the real CLI: a share group moving to a cluster that cannot host one is refused in one line,
and nothing is written there.

The lab's clusters run Kafka 4.3.1, which hosts share and streams groups; a cluster stops hosting them when its
``share.version`` and ``streams.version`` features are downgraded to 0 (``kafka-features downgrade``, the
Admin API's ``updateFeatures``), which is what a cluster that never enabled them, or a Kafka before 4.2, looks
like to a client. The test owns its lab, since it takes the features away from both clusters in turn.

- ``plan failover`` to a target without them: exit 22, no plan file, no group on the target.
- A plan made while the target hosted them, applied after it lost them: exit 22 before any write.
- ``plan failback`` of a share group on the target to a source without them: exit 22, no group on the source.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.group_admin import GroupAdmin
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.jars import kafka_classpath
from mm2ctl.lab.process import JvmSpec, run_java_tool
from mm2ctl.lab.share_consumer import accept_prefix, read_from_earliest
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration

#: The features a cluster needs to host each group type, and the level that turns each on.
GROUP_TYPE_FEATURES = {"share.version": 1, "streams.version": 1}
BOTH = frozenset({"share", "streams"})


def _features(lab: LabInfo, alias: str, action: str, level: int | None, log: Path) -> None:
    """``kafka-features --bootstrap-server <alias> <action> --feature f=<level or its on level> ...``."""
    args = [f"--feature={f}={on if level is None else level}" for f, on in GROUP_TYPE_FEATURES.items()]
    tool = JvmSpec(
        name=f"kafka-features {action} ({alias})",
        main_class="org.apache.kafka.tools.FeatureCommand",
        args=("--bootstrap-server", lab.clusters[alias].bootstrap, action, *args),
        classpath=kafka_classpath(lab.kafka_version),
        heap="256m",
    )
    run_java_tool(tool, log, timeout_s=120)


@contextlib.contextmanager
def group_types_off(lab: LabInfo, alias: str, log: Path) -> Iterator[None]:
    """Cluster ``alias`` hosts neither share nor streams groups inside the block; both again after it."""
    admin = GroupAdmin(lab.client_config(alias), alias)
    _features(lab, alias, "downgrade", 0, log)
    try:
        eventually(lambda: admin.hosts(BOTH) == frozenset(), what=f"{alias} hosting no share group")
        yield
    finally:
        _features(lab, alias, "upgrade", None, log)
        eventually(lambda: admin.hosts(BOTH) == BOTH, what=f"{alias} hosting share groups again")


def _refused_in_one_line(proc_stderr: str, cluster: str, group: str) -> None:
    errors = [line for line in proc_stderr.splitlines() if line.startswith("mm2ctl: error:")]
    assert errors == [
        f"mm2ctl: error: {cluster} cannot host the share group(s) {group}: share and streams groups need Kafka 4.2 "
        "or later there"
    ], proc_stderr
    assert "Traceback" not in proc_stderr


def _groups_on(lab: LabInfo, alias: str) -> set[str]:
    return {g.group for g in GroupAdmin(lab.client_config(alias), alias).list_groups()}


@pytest.mark.lab(own="unhosted")
def test_a_share_group_moving_to_a_cluster_without_share_groups_exits_22_and_writes_nothing(
    lab: LabInfo, tmp_path: Path
) -> None:
    name = "unhosted" + uuid.uuid4().hex[:6]
    topic, share, back = f"iso-{name}-t", f"iso-{name}-share", f"iso-{name}-back"
    src, dst = source_conf(lab), target_conf(lab)
    KafkaAdmin.connect(src).create_topics({topic: 2})
    flow = lab_core.add_flow(lab, name)
    remote = f"{flow.source_alias}.{topic}"
    records.produce(src, topic, [(b"k", b"v%d" % i, p) for p in (0, 1) for i in range(50)])
    read_from_earliest(src, share)
    assert accept_prefix(src, share, topic, {0: 20, 1: 10}) == {0: 20, 1: 10}
    target = KafkaAdmin.connect(dst)
    eventually(
        lambda: [target.partition_bounds([(remote, p)])[(remote, p)].latest for p in (0, 1)] == [50, 50],
        timeout_s=120,
        what="MM2 copied the topic",
    )
    pair, log = f"{flow.source_alias}->{flow.target_alias}", tmp_path / "kafka-features.log"
    state = tmp_path / "state"
    state.mkdir()
    plan = state / "failover.yaml"
    failover = ("plan", "failover", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", share)

    with group_types_off(lab, "backup", log):
        refused = mm2ctl(*failover, "--out", str(plan), state=state)
    assert refused.returncode == int(ExitCode.UNHOSTED_GROUP_TYPE) == 22, refused.stderr
    _refused_in_one_line(refused.stderr, flow.target_alias, share)
    assert not plan.exists()

    # Planned while the target hosted share groups; applied after it lost them: refused before any write.
    planned = mm2ctl(*failover, "--out", str(plan), state=state)
    assert planned.returncode == 0, planned.stderr
    with group_types_off(lab, "backup", log):
        applied = mm2ctl("apply", str(plan), "--auto-approve", "--journal", str(state / "j.jsonl"), state=state)
    assert applied.returncode == 22, applied.stdout + applied.stderr
    _refused_in_one_line(applied.stderr, flow.target_alias, share)
    assert share not in _groups_on(lab, "backup")

    # Back: a share group on the target, on the remote topic, cannot move to a source without share groups.
    read_from_earliest(dst, back)
    assert accept_prefix(dst, back, remote, {0: 5, 1: 5}) == {0: 5, 1: 5}
    with group_types_off(lab, "primary", log):
        refused = mm2ctl(
            "plan", "failback", "--pair", pair, "--mm2-config", flow.mm2_config, "--groups", back,
            "--out", str(state / "failback.yaml"), state=state,
        )  # fmt: skip
    assert refused.returncode == 22, refused.stderr
    _refused_in_one_line(refused.stderr, flow.source_alias, back)
    assert not (state / "failback.yaml").exists()
    assert back not in _groups_on(lab, "primary")
