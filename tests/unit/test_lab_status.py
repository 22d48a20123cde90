"""``LabStatus.healthy``: what ``mm2ctl lab status`` exits 6 for."""

from __future__ import annotations

import pytest

from mm2ctl.lab.control import ClusterInfo, ClusterStatus, LabInfo, LabStatus

OWN = {"source": "mm2-primary-backup-source", "checkpoint": "mm2-primary-backup-checkpoint"}


def status(connectors: dict[str, str], *, reachable: bool = True) -> LabStatus:
    info = LabInfo(
        dir="/lab",
        kafka_version="4.3.1",
        replication_policy="default",
        offset_syncs_location="source",
        clusters={"primary": ClusterInfo(alias="primary", bootstrap="127.0.0.1:9", cluster_id="x", pid=1)},
        connect_url="http://127.0.0.1:9",
        connect_pid=1,
        connect_group="g",
        connect_offsets_topic="connect-offsets",
        connectors=OWN,
        mm2_config="/lab/mm2.properties",
        started_at=0.0,
    )
    cluster = ClusterStatus("primary", "127.0.0.1:9", "x", process_alive=True, reachable=reachable, topics=3)
    return LabStatus(info, (cluster,), True, {name: {"state": s} for name, s in connectors.items()})


@pytest.mark.parametrize(
    ("connectors", "reachable", "healthy"),
    [
        ({n: "RUNNING" for n in OWN.values()}, True, True),
        # another flow stopped by a failover plan, or paused: the lab still runs
        ({**{n: "RUNNING" for n in OWN.values()}, "mm2-x-source": "STOPPED", "mm2-y-source": "PAUSED"}, True, True),
        ({**{n: "RUNNING" for n in OWN.values()}, "mm2-x-source": "FAILED"}, True, False),
        ({OWN["source"]: "RUNNING", OWN["checkpoint"]: "STOPPED"}, True, False),  # the lab's own flow stopped
        ({OWN["source"]: "RUNNING"}, True, False),  # one of the lab's own connectors missing
        ({n: "RUNNING" for n in OWN.values()}, False, False),
    ],
)
def test_healthy_means_the_lab_runs_and_no_connector_failed(
    connectors: dict[str, str], reachable: bool, healthy: bool
) -> None:
    assert status(connectors, reachable=reachable).healthy is healthy
