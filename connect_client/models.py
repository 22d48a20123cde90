"""Typed, frozen views of the Connect REST payloads mm2ctl reads and writes.

Planners fingerprint and compare these, so they are immutable values rather than raw dicts. Mapping-valued
fields (configs, partitions, offsets) are kept as plain dicts so that they serialise and deep-copy without
ceremony; they are excluded from hashing and must be treated as read-only.

``from_json`` parsers raise ``KeyError``/``TypeError``/``ValueError`` on a payload of the wrong shape; the
client turns those into ``ConnectError`` at the boundary, with the cause chained.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mm2ctl.connect_client.versions import (
    OFFSETS_ALTER_SINCE,
    OFFSETS_READ_SINCE,
    STOP_SINCE,
    Version,
    apache_kafka_version,
    at_least,
    parse_version,
)


class ConnectorState(StrEnum):
    """Connector and task states as ``GET /connectors/{c}/status`` reports them (STOPPED is connector-only
    and has no tasks; KIP-875, 3.5+). A plan's preconditions name them too."""

    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    UNASSIGNED = "UNASSIGNED"
    RESTARTING = "RESTARTING"


#: Every state in ``ConnectorState``, as the strings the REST API sends.
STATES = frozenset(s.value for s in ConnectorState)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class ServerInfo:
    """What ``GET /`` says about the worker: the version string drives every feature check."""

    version: str
    commit: str | None = None
    kafka_cluster_id: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ServerInfo:
        version = data["version"]
        if not isinstance(version, str):
            raise TypeError(f"version is {type(version).__name__}, not a string")
        return cls(
            version=version,
            commit=_str_or_none(data.get("commit")),
            kafka_cluster_id=_str_or_none(data.get("kafka_cluster_id")),
        )

    @property
    def version_tuple(self) -> Version | None:
        """The version as reported (``7.6.0-ccs`` gives (7, 6, 0)); None if it has no leading number."""
        return parse_version(self.version)

    @property
    def kafka_version(self) -> Version | None:
        """The Apache Kafka release this worker corresponds to (``7.6.0-ccs`` gives (3, 6, 0))."""
        return apache_kafka_version(self.version)

    def supports_stop(self) -> bool:
        """``PUT /connectors/{c}/stop`` exists (Kafka >= 3.5)."""
        return at_least(self.kafka_version, STOP_SINCE)

    def supports_offsets_read(self) -> bool:
        """``GET /connectors/{c}/offsets`` exists (Kafka >= 3.5)."""
        return at_least(self.kafka_version, OFFSETS_READ_SINCE)

    def supports_offsets_alter(self) -> bool:
        """``PATCH``/``DELETE /connectors/{c}/offsets`` exist (Kafka >= 3.6); older ones need tombstones."""
        return at_least(self.kafka_version, OFFSETS_ALTER_SINCE)


@dataclass(frozen=True)
class TaskStatus:
    """One task's state; ``trace`` carries the worker's stack trace when the task FAILED."""

    id: int
    state: str
    worker_id: str | None
    trace: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskStatus:
        return cls(
            id=int(data["id"]),
            state=str(data["state"]),
            worker_id=_str_or_none(data.get("worker_id")),
            trace=_str_or_none(data.get("trace")),
        )


@dataclass(frozen=True)
class ConnectorStatus:
    """``GET /connectors/{c}/status``: the connector's own state and each of its tasks'."""

    name: str
    state: str
    worker_id: str | None
    tasks: tuple[TaskStatus, ...]
    type: str | None
    trace: str | None = None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectorStatus:
        connector = data["connector"]
        tasks = data.get("tasks") or []
        return cls(
            name=str(data["name"]),
            state=str(connector["state"]),
            worker_id=_str_or_none(connector.get("worker_id")),
            tasks=tuple(sorted((TaskStatus.from_json(t) for t in tasks), key=lambda t: t.id)),
            type=_str_or_none(data.get("type")),
            trace=_str_or_none(connector.get("trace")),
        )

    def reached(self, states: Collection[str], *, include_tasks: bool = True) -> bool:
        """True when the connector (and, if asked, every task it has) is in one of ``states``.

        A connector with no tasks is judged on its own state: STOPPED connectors never have tasks, and
        a connector whose tasks have not been assigned yet has nothing else to judge.
        """
        wanted = {s.upper() for s in states}
        if self.state.upper() not in wanted:
            return False
        return not include_tasks or all(t.state.upper() in wanted for t in self.tasks)

    def describe(self) -> str:
        """One line for error messages: the states, never the (long) traces."""
        tasks = ", ".join(f"{t.id}:{t.state}" for t in self.tasks) or "none"
        return f"connector {self.state} on {self.worker_id or '?'}, tasks [{tasks}]"


@dataclass(frozen=True)
class ConnectorInfo:
    """``GET /connectors/{c}``: name, config, task ids and type (source/sink)."""

    name: str
    config: dict[str, str] = field(hash=False)
    tasks: tuple[int, ...]
    type: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectorInfo:
        config = data.get("config") or {}
        return cls(
            name=str(data["name"]),
            config={str(k): str(v) for k, v in dict(config).items()},
            tasks=tuple(sorted(int(t["task"]) for t in data.get("tasks") or [])),
            type=_str_or_none(data.get("type")),
        )


@dataclass(frozen=True)
class ConnectorOverview:
    """One entry of ``GET /connectors?expand=status&expand=info``; either part may be absent."""

    name: str
    status: ConnectorStatus | None
    info: ConnectorInfo | None

    @classmethod
    def from_json(cls, name: str, data: Mapping[str, Any]) -> ConnectorOverview:
        status = data.get("status")
        info = data.get("info")
        return cls(
            name=name,
            status=ConnectorStatus.from_json(status) if status else None,
            info=ConnectorInfo.from_json(info) if info else None,
        )


@dataclass(frozen=True)
class ConnectorOffset:
    """One KIP-875 ``{partition, offset}`` pair; ``offset=None`` in a PATCH removes its offset."""

    partition: dict[str, Any] = field(hash=False)
    offset: dict[str, Any] | None = field(hash=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectorOffset:
        partition = data["partition"]
        offset = data.get("offset")
        if not isinstance(partition, Mapping):
            raise TypeError("partition is not an object")
        if offset is not None and not isinstance(offset, Mapping):
            raise TypeError("offset is neither an object nor null")
        return cls(partition=dict(partition), offset=dict(offset) if offset is not None else None)

    def to_json(self) -> dict[str, Any]:
        return {
            "partition": dict(self.partition),
            "offset": dict(self.offset) if self.offset is not None else None,
        }


@dataclass(frozen=True)
class ConnectorOffsets:
    """A connector's offsets as ``GET /connectors/{c}/offsets`` returns them and ``PATCH`` accepts them."""

    offsets: tuple[ConnectorOffset, ...] = ()

    @classmethod
    def of(cls, pairs: Sequence[ConnectorOffset]) -> ConnectorOffsets:
        return cls(offsets=tuple(pairs))

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ConnectorOffsets:
        return cls(offsets=tuple(ConnectorOffset.from_json(o) for o in data["offsets"]))

    def to_json(self) -> dict[str, Any]:
        """The exact KIP-875 body: ``{"offsets": [{"partition": {...}, "offset": {...} | null}, ...]}``."""
        return {"offsets": [o.to_json() for o in self.offsets]}

    def __iter__(self) -> Iterator[ConnectorOffset]:
        return iter(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets)
