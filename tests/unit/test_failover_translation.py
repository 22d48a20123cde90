"""``translate_partitions`` without a lab: the source's bounds unknown, so only the conservative rule runs
(no record is read, and no consumer is made). What it owns beyond the rule: the rows come back in the order
asked whatever order the partitions finish in, and a (partition, offset) is located once for every group at it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.translation.positions import Fallback
from mm2ctl.core.translation.rule import Bounds, Sync
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.planners.failover import rows as failover_rows
from mm2ctl.plans.planners.failover.rows import PartitionState, translate_partitions

MM2_TEXT = """
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


def _live(tmp_path: Path) -> LiveState:
    path = tmp_path / "mm2.properties"
    path.write_text(MM2_TEXT)
    return LiveState(mm2=mm2_config_from_text(MM2_TEXT, path=str(path)), connect=None)


def test_each_position_is_located_once_and_rows_keep_their_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = _live(tmp_path)
    flow = live.mm2.pair("A->B")
    located: list[tuple[int, int]] = []
    real = failover_rows.locate

    def counting(syncs: Any, committed: int, sides: Any, fallback: Fallback) -> Any:
        located.append((len(syncs), committed))
        return real(syncs, committed, sides, fallback)

    monkeypatch.setattr(failover_rows, "locate", counting)
    partitions = [("orders", p) for p in range(6)]
    syncs = {tp: [Sync(0, 0), Sync(50, 40 + tp[1])] for tp in partitions}
    state = PartitionState(
        syncs=syncs,
        source_bounds={},  # the source unknown: conservative, nothing read
        target_bounds={(flow.remote_topic(t), p): Bounds(0, 1_000) for t, p in partitions},
    )
    todo = sorted((tp, c, f"g{g}") for tp in partitions for c, g in ((10, 1), (10, 2), (10, 3), (60, 4), (60, 5)))
    rows = translate_partitions(live, flow, todo, state, fallback=Fallback.NONE)
    assert [(r.source_topic, r.partition, r.source_offset, r.group) for r in rows] == [
        (t, p, c, g) for (t, p), c, g in todo
    ]
    assert len(located) == 2 * len(partitions)  # two offsets per partition, five groups
    by_partition = {r.partition: r for r in rows if r.source_offset == 60}
    assert all(by_partition[p].target_offset == 40 + p + 1 for p in range(6))  # older sync + 1: its own syncs
    assert {r.target_offset for r in rows if r.source_offset == 10} == {1}
