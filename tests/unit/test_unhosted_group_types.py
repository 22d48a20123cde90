"""A share or streams group moving to a cluster too old for its type is refused before anything is written
(``LiveState.require_hosted``: the planners call it for the groups they move, ``apply`` for a plan's groups).
The cluster's answer comes from ``GroupAdmin.hosts``, whose real answers (Kafka 4.3.1: both types; 3.9.2:
neither) ``tests/integration/test_group_types.py`` checks."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.errors import UnhostedGroupTypeError
from mm2ctl.core.exit_codes import ExitCode
from mm2ctl.plans.live_state import LiveState

MM2 = "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"


class Hosts:
    """What ``GroupAdmin.hosts`` would answer, and which types it was asked about."""

    def __init__(self, hosted: Iterable[str]) -> None:
        self.hosted = frozenset(hosted)
        self.asked: list[frozenset[str]] = []

    def hosts(self, types: Iterable[str]) -> frozenset[str]:
        wanted = frozenset(types)
        self.asked.append(wanted)
        return wanted & self.hosted


def live_with(hosted: Iterable[str], tmp_path: Path) -> tuple[LiveState, Hosts]:
    path = tmp_path / "mm2.properties"
    path.write_text(MM2)
    live = LiveState(mm2=mm2_config_from_text(MM2, path=str(path)), connect=None)
    admin = Hosts(hosted)
    live._group_admins["b"] = admin  # type: ignore[assignment]
    return live, admin


def test_an_old_cluster_refuses_the_share_and_streams_groups_it_cannot_host(tmp_path: Path) -> None:
    live, admin = live_with([], tmp_path)
    live.note_group_type("b", "queue", "share")
    live.note_group_type("b", "app", "streams")
    with pytest.raises(UnhostedGroupTypeError) as refused:
        live.require_hosted("b", ["classic-group", "queue", "app"])
    assert str(refused.value) == (
        "b cannot host the share, streams group(s) app, queue: share and streams groups need Kafka 4.2 or later there"
    )
    assert refused.value.exit_code == ExitCode.UNHOSTED_GROUP_TYPE == 22
    assert admin.asked == [frozenset({"share", "streams"})]


def test_a_cluster_that_hosts_the_types_and_classic_groups_alone_pass(tmp_path: Path) -> None:
    live, admin = live_with(["share", "streams"], tmp_path)
    live.require_hosted("b", ["classic-group"])
    assert admin.asked == []  # no share or streams group: the cluster is not asked
    live.note_group_type("b", "queue", "share")
    live.require_hosted("b", ["queue", "classic-group"])
    assert admin.asked == [frozenset({"share"})]
