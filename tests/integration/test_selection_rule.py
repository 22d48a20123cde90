"""``--groups`` means the same in every command: whole names, as MM2's own filters match.

The same expressions go over the same group names on the lab through each command's own selection: the
inspection's (``inspect``, the exporter and ``report`` all select through ``InspectOptions.selection`` while
the admin state is read), ``plan failover``'s and ``plan failback``'s. Each must select the same set; and the
real ``mm2ctl inspect --groups`` and ``mm2ctl plan failover --groups`` name the same groups.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from mm2ctl.core.config.mm2_config import load_mm2_config
from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.inspector.reads.pair_admin import collect_pair_state
from mm2ctl.inspector.selection import Selection
from mm2ctl.lab import control as lab_core
from mm2ctl.lab.control import LabInfo
from mm2ctl.plans.document import PlanKind
from mm2ctl.plans.live_state import open_live_state
from mm2ctl.plans.planners import PlanBuilder
from mm2ctl.plans.planners.failback import FailbackOptions, plan_failback
from mm2ctl.plans.planners.failover.planner import FailoverOptions, plan_failover
from tests.integration.support import eventually, source_conf, target_conf
from tests.integration.test_remediate import mm2ctl

pytestmark = pytest.mark.integration


def test_every_command_selects_the_same_groups(lab: LabInfo, tmp_path: Path) -> None:
    name = "sel" + uuid.uuid4().hex[:6]
    topic = f"iso-{name}-t"
    billing, v2, old = f"iso-{name}-billing", f"iso-{name}-billing-v2", f"iso-{name}-old-billing"
    KafkaAdmin.connect(source_conf(lab)).create_topics({topic: 1})
    flow = lab_core.add_flow(lab, name, roles=("source",))
    remote = f"{flow.source_alias}.{topic}"
    records.produce(source_conf(lab), topic, [(b"k", b"v%d" % i, 0) for i in range(50)])
    target = KafkaAdmin.connect(target_conf(lab))
    eventually(lambda: target.partition_bounds([(remote, 0)])[(remote, 0)].latest == 50, what="MM2 copied")
    every = (billing, v2, old)
    KafkaAdmin.connect(source_conf(lab)).alter_group_offsets({g: {(topic, 0): 30} for g in every})
    target.alter_group_offsets({g: {(remote, 0): 20} for g in every})  # as if they consumed on B after a failover

    config = load_mm2_config(Path(flow.mm2_config))
    pair = config.pair(f"{flow.source_alias}->{flow.target_alias}")
    live = open_live_state(flow.mm2_config)

    def inspected(expression: str) -> set[str]:
        state = collect_pair_state(config, pair, Selection(groups=expression), driver_jvm=lambda: None)
        return set(state.source_group_offsets.column("group").to_pylist())

    def failed_over(expression: str) -> set[str]:
        _, report = plan_failover(PlanBuilder(live, PlanKind.FAILOVER), FailoverOptions(pair.name, groups=expression))
        return {row.group for row in report.rows}

    def failed_back(expression: str) -> set[str]:
        _, report = plan_failback(PlanBuilder(live, PlanKind.FAILBACK), FailbackOptions(pair.name, groups=expression))
        return {row.group for row in report.rows}

    expected = {
        billing: {billing},
        f"{billing}.*": {billing, v2},
        ".*billing.*": set(every),
    }
    for expression, groups in expected.items():
        selected = {"inspect": inspected(expression), "failover": failed_over(expression)}
        selected["failback"] = failed_back(expression)
        assert selected == dict.fromkeys(selected, groups), expression

    # The commands themselves, as a user runs them.
    out = mm2ctl(
        "inspect", "--mm2-config", flow.mm2_config, "--groups", billing, "--format", "json", "--quiet", state=tmp_path
    )  # fmt: skip
    assert out.returncode in (0, 10), out.stderr
    by_inspect = {json.loads(line)["group"] for line in out.stdout.splitlines() if line.strip()}
    plan = mm2ctl(
        "plan", "failover", "--pair", pair.name, "--mm2-config", flow.mm2_config, "--groups", billing,
        "--out", str(tmp_path / "plan.yaml"), "--json", state=tmp_path,
    )  # fmt: skip
    assert plan.returncode == 0, plan.stderr
    by_plan = {row["group"] for row in json.loads(plan.stdout)["rows"]}
    assert by_inspect == by_plan == {billing}
