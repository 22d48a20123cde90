"""MM2's position: MirrorSourceConnector's stored offsets turned into next offsets to copy, its connector found by
class and aliases, and every way the position cannot be read told apart (no way at all vs. a way that failed)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from mm2ctl.connect_client import ConnectorInfo, ConnectorOffset, ConnectorOffsets, ConnectorOverview, ServerInfo
from mm2ctl.core.config.connector_names import ROLE_CLASSES, connectors_by_role, next_offsets_to_copy
from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.errors import ConnectTransportError
from mm2ctl.inspector.reads.mm2_position import read_position

MM2 = """
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


def test_next_offsets_are_the_stored_offsets_plus_one() -> None:
    entries = [
        ({"cluster": "A", "topic": "orders", "partition": 0}, {"offset": 99}),
        ({"cluster": "A", "topic": "orders", "partition": 1}, {"offset": -1}),  # copied nothing yet... but stored
        ({"cluster": "C", "topic": "orders", "partition": 2}, {"offset": 5}),  # another source cluster
        ({"cluster": "A", "topic": "orders", "partition": 3}, None),  # deleted
        ({"cluster": "A", "topic": "orders", "partition": 4}, {"offset": True}),  # not a number
        ({"cluster": "A", "topic": 7, "partition": 5}, {"offset": 1}),
        (None, {"offset": 1}),
    ]
    assert next_offsets_to_copy(entries, "A") == {("orders", 0): 100, ("orders", 1): 0}


def test_connectors_are_found_by_class_and_aliases_not_name() -> None:
    configs = {
        "zz-src": {"connector.class": ROLE_CLASSES["source"], "source.cluster.alias": "A", "target.cluster.alias": "B"},
        "aa-src": {
            "connector.class": "MirrorSourceConnector",
            "source.cluster.alias": "A",
            "target.cluster.alias": "B",
        },
        "back": {"connector.class": ROLE_CLASSES["source"], "source.cluster.alias": "B", "target.cluster.alias": "A"},
        "cp": {"connector.class": ROLE_CLASSES["checkpoint"], "source.cluster.alias": "A", "target.cluster.alias": "B"},
        "other": {"connector.class": "FileStreamSource"},
    }
    assert connectors_by_role(configs, "A", "B") == {"source": ["aa-src", "zz-src"], "checkpoint": ["cp"]}
    assert connectors_by_role(configs, "A", "B", ["heartbeat"]) == {}


@dataclass
class FakeConnect:
    version: str = "4.3.1"
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    offsets: list[ConnectorOffset] = field(default_factory=list)
    fail: bool = False

    def list_connectors(self, **_kw: Any) -> dict[str, ConnectorOverview]:
        if self.fail:
            raise ConnectTransportError("no Connect worker answered at http://u:pw@connect:8083")
        return {n: ConnectorOverview(n, None, ConnectorInfo(n, c, (), "source")) for n, c in self.configs.items()}

    def supports_offsets_read(self) -> bool:
        return self.version >= "3.5"

    def server_info(self) -> ServerInfo:
        return ServerInfo(version=self.version, kafka_cluster_id=None)

    def get_offsets(self, name: str, **_kw: Any) -> ConnectorOffsets:
        assert name == "mm2-source"
        return ConnectorOffsets.of(self.offsets)


SOURCE = {"connector.class": ROLE_CLASSES["source"], "source.cluster.alias": "A", "target.cluster.alias": "B"}


def _read(connect: FakeConnect) -> Any:
    config = mm2_config_from_text(MM2)
    return read_position(config, config.pair("A->B"), connect)  # type: ignore[arg-type]


def test_rest_position() -> None:
    connect = FakeConnect(
        configs={"mm2-source": SOURCE},
        offsets=[ConnectorOffset({"cluster": "A", "topic": "orders", "partition": 0}, {"offset": 41})],
    )
    got = _read(connect)
    assert got.known and not got.failed and got.reason is None
    assert got.next_offsets == {("orders", 0): 42}
    assert got.read_from == "GET /connectors/mm2-source/offsets"


@pytest.mark.parametrize(
    ("connect", "reason"),
    [
        (FakeConnect(), "no MirrorSourceConnector for A->B on the Connect worker"),
        (
            FakeConnect(configs={"mm2-source": SOURCE, "again": SOURCE}),
            "more than one MirrorSourceConnector for A->B: ['again', 'mm2-source']",
        ),
        (FakeConnect(fail=True), "reading MM2's position failed: Connect: no Connect worker answered"),
        (
            FakeConnect(version="3.4.1", configs={"mm2-source": SOURCE}),
            "the Connect worker (Kafka 3.4.1) has no offsets API, and no cluster of the MM2 file is its Kafka cluster",
        ),
    ],
)
def test_a_way_that_fails_says_why_and_is_a_failure(connect: FakeConnect, reason: str) -> None:
    got = _read(connect)
    assert not got.known and got.failed
    assert got.reason is not None and got.reason.startswith(reason)
    assert "pw" not in got.reason


def test_no_way_at_all_is_unknown_not_failed() -> None:
    config = mm2_config_from_text(MM2)
    got = read_position(config, config.pair("A->B"), None, target_topics=frozenset({"A.orders"}))
    assert not got.known and not got.failed
    assert got.reason == (
        "no --connect-url to read MirrorSourceConnector's offsets from, and no dedicated-mode MM2 offsets topic "
        "mm2-offsets.A.internal on B"
    )
