"""What every planner shares: the live reader, the plan header (clusters, Connect worker), a step list.

Planners decide *what* to change from live state and nothing else: they never write. The fingerprint
parts they read are collected as they go (``PlanBuilder.read``), so a plan's fingerprint covers exactly
what its steps were derived from, and apply re-reads those same parts through ``plans.live_state``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from mm2ctl.connect_client import ServerInfo
from mm2ctl.core.config.flows import parse_flow
from mm2ctl.core.errors import ConfigError, PlanError
from mm2ctl.core.security.redaction import strip_url_credentials
from mm2ctl.plans.connect_target import ConnectTarget
from mm2ctl.plans.document import Plan, PlanKind, SetupSource, UntranslatablePartition, new_plan
from mm2ctl.plans.fingerprint import JSONable, fingerprint_of
from mm2ctl.plans.live_state import LiveState
from mm2ctl.plans.payloads import Payload
from mm2ctl.plans.preconditions import Precondition
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import Target


@dataclass
class PlanBuilder:
    """Accumulates steps (indices assigned in order), fingerprint parts and notes for one plan."""

    live: LiveState
    kind: PlanKind
    pair: str | None = None
    steps: list[Step] = field(default_factory=list)
    parts: dict[str, JSONable] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    aliases: set[str] = field(default_factory=set)
    untranslatable: list[UntranslatablePartition] = field(default_factory=list)

    def read(self, part: str) -> Any:
        """Read a fingerprint part live and remember it; planners decide from what this returns."""
        if part not in self.parts:
            self.parts[part] = self.live.read_part(part)
        return self.parts[part]

    def read_many(self, parts: Iterable[str]) -> dict[str, Any]:
        """``read`` of many parts, batched where the reader can (``LiveState.read_parts``)."""
        wanted = list(parts)
        missing = [p for p in wanted if p not in self.parts]
        self.parts.update(self.live.read_parts(missing))
        return {p: self.parts[p] for p in wanted}

    def add(
        self,
        kind: StepKind,
        target: Target,
        payload: Payload,
        precondition: Precondition,
        *,
        before: JSONable,
        after: JSONable,
        description: str,
        irreversible_reason: str | None = None,
    ) -> Step:
        step = Step(
            index=len(self.steps),
            kind=kind,
            target=target,
            payload=payload,
            precondition=precondition,
            before=before,
            after=after,
            reversible=irreversible_reason is None,
            irreversible_reason=irreversible_reason,
            description=description,
        )
        self.steps.append(step)
        return step

    def connect_target(self) -> ConnectTarget | None:
        if self.live.connect is None:
            return None
        info: ServerInfo = self.live.server_info()
        if not info.kafka_cluster_id:
            raise PlanError("the Connect worker did not report its Kafka cluster id (GET /)")
        urls = tuple(strip_url_credentials(u) for u in self.live.connect.urls)
        return ConnectTarget(urls=urls, kafka_cluster_id=info.kafka_cluster_id, version=info.version)

    def _mm2_path(self) -> str | None:
        """The file the setup was read from (a properties file or a resource); None for live connectors."""
        source = self.live.mm2.source
        if source is None:
            return os.path.abspath(self.live.mm2.path)
        return None if source.mm2_config is None else os.path.abspath(source.mm2_config)

    def build(self, description: str) -> Plan:
        aliases = set(self.aliases)
        if self.pair is not None:
            aliases |= set(parse_flow(self.pair))
        return new_plan(
            kind=self.kind,
            pair=self.pair,
            clusters=self.live.cluster_ids(aliases),
            connect=self.connect_target(),
            fingerprint=fingerprint_of(self.parts),
            steps=self.steps,
            notes=self.notes,
            description=description,
            mm2_config=self._mm2_path(),
            mm2_source=None if self.live.mm2.source is None else SetupSource.of(self.live.mm2.source.absolute()),
            untranslatable=self.untranslatable,
        )


def offsets_cluster_for_worker(live: LiveState, explicit: str | None) -> str:
    """The MM2 alias of the cluster the Connect worker keeps its offsets topic on.

    The worker's config is not readable over REST, but ``GET /`` reports its Kafka cluster id, so the alias
    is the one whose cluster has that id. ``explicit`` (``--offsets-cluster``) is checked the same way, so
    tombstones can never be written to a same-named topic on the wrong cluster.
    """
    worker_id = live.server_info().kafka_cluster_id
    if explicit is not None:
        actual = live.cluster_ids([explicit])[explicit]
        if worker_id and actual != worker_id:
            raise ConfigError(
                f"--offsets-cluster {explicit} has cluster id {actual}, but the Connect worker uses "
                f"Kafka cluster {worker_id}"
            )
        return explicit
    ids = live.cluster_ids(live.mm2.clusters)
    matches = [a for a, cid in ids.items() if cid == worker_id]
    if not matches:
        raise ConfigError(
            f"no cluster in {live.mm2.path} is the Connect worker's Kafka cluster ({worker_id}); pass --offsets-cluster"
        )
    return sorted(matches)[0]
