"""Fingerprints: what a plan was computed from, so apply can refuse a plan the world has moved past.

A plan is only correct for the live state it was made from. The planner reads that state as named *parts*
(``"connector:mm2-source:offsets"``, ``"topic:A:mm2-offset-syncs.B.internal:0:end"``, ...), each a JSON value;
each part is hashed on its own and the plan's digest is the hash of the part digests. Keeping the per-part
digests (not just one overall hash) is what lets ``apply`` say *what* changed instead of only "stale".

Canonical JSON (sorted keys, no whitespace, UTF-8, no NaN) makes the digest independent of dict order and of
which serializer wrote the plan. Parts must already be redacted (``core.security.redaction.redact_json``): a digest is
not the secret, but a hash of a low-entropy password is still guessable, so secrets never get hashed either.

Two distinct refusals, checked in this order:

- ``ForeignPlanError``: the plan was made for *other* clusters (a cluster id or the Connect worker's Kafka
  cluster id differs). Re-planning against these clusters is a different decision, not a refresh.
- ``StalePlanError``: same clusters, but state the plan read has changed; re-plan.

This module sits below ``plans.document`` (the plan imports ``Fingerprint``), so it imports the plan only for
type checking.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

from mm2ctl.core.errors import ForeignPlanError, PlanError, StalePlanError

if TYPE_CHECKING:
    from mm2ctl.plans.document import Plan

#: A JSON value as the model stores it: dicts frozen to read-only mappings, lists to tuples.
FrozenJSON: TypeAlias = bool | int | float | str | tuple["FrozenJSON", ...] | Mapping[str, "FrozenJSON"] | None
#: A JSON value as callers hand it in (lists and dicts welcome; they are frozen on the way in).
JSONable: TypeAlias = Any

_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def freeze_json(value: JSONable, *, where: str = "value") -> FrozenJSON:
    """Deep-copy a JSON value into immutable form, rejecting anything JSON cannot carry faithfully.

    Freezing is what makes the "frozen" plan truly immutable (a frozen dataclass holding a dict is not),
    and normalising lists to tuples is what makes a YAML round-trip compare equal.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise PlanError(f"{where}: {value!r} is not representable in JSON")
        return value
    if isinstance(value, Mapping):
        out: dict[str, FrozenJSON] = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise PlanError(f"{where}: mapping key {k!r} must be a string, got {type(k).__name__}")
            out[k] = freeze_json(v, where=f"{where}.{k}")
        return MappingProxyType(out)
    if isinstance(value, (list, tuple)):
        return tuple(freeze_json(v, where=f"{where}[{i}]") for i, v in enumerate(value))
    raise PlanError(f"{where}: {type(value).__name__} is not a JSON value")


def thaw_json(value: FrozenJSON) -> JSONable:
    """The inverse of ``freeze_json``: plain dicts and lists for json/yaml dumpers."""
    if isinstance(value, Mapping):
        return {k: thaw_json(v) for k, v in value.items()}
    if isinstance(value, (tuple, list)):
        return [thaw_json(v) for v in value]
    return value


def _plain_mapping(value: object) -> dict[str, Any]:
    """``json.dumps``'s hook for the frozen mappings of ``freeze_json`` (tuples it writes as lists itself)."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


def canonical_json(value: JSONable) -> str:
    """Sorted keys, no whitespace, no NaN: the one byte form every digest and journal CRC is taken over.

    Frozen values are written as they are, without thawing a copy first: the C encoder writes tuples as
    lists and asks ``_plain_mapping`` for a read-only mapping, so a 100,000-row plan is encoded in one pass.
    """
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=_plain_mapping
    )


def digest_of(value: JSONable) -> str:
    """sha256 (hex) of the canonical JSON of ``value``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Fingerprint:
    """The digest of everything a plan read, plus one digest per named part.

    ``digest`` is derived from ``parts`` (``digest_of(parts)``) and checked on construction, so a hand-edited
    or truncated fingerprint in a plan file is caught at load time rather than silently weakening apply.
    """

    digest: str
    parts: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parts = dict(self.parts)
        for name, d in parts.items():
            if not isinstance(name, str) or not name:
                raise PlanError(f"fingerprint part name {name!r} must be a non-empty string")
            if not isinstance(d, str) or not _HEX64.match(d):
                raise PlanError(f"fingerprint part {name!r}: {d!r} is not a sha256 hex digest")
        if not isinstance(self.digest, str) or not _HEX64.match(self.digest):
            raise PlanError(f"fingerprint digest {self.digest!r} is not a sha256 hex digest")
        expected = digest_of(parts)
        if self.digest != expected:
            raise PlanError("fingerprint digest does not match its parts (the plan file was edited or damaged)")
        object.__setattr__(self, "parts", MappingProxyType(dict(sorted(parts.items()))))


def fingerprint_of(parts: Mapping[str, JSONable]) -> Fingerprint:
    """Fingerprint live state given as named parts. Parts must be redacted already (see module docstring).

    Each part is digested as it is: its canonical JSON is the same frozen or not, and ``canonical_json``
    refuses what JSON cannot carry, so no frozen copy of a thousand groups' offsets is made first."""
    digests = {name: _part_digest(name, value) for name, value in parts.items()}
    return Fingerprint(digest=digest_of(digests), parts=digests)


def _part_digest(name: str, value: JSONable) -> str:
    try:
        return digest_of(value)
    except (TypeError, ValueError) as exc:
        raise PlanError(f"{name}: not a JSON value ({exc})") from exc


def diff_fingerprints(planned: Fingerprint, live: Fingerprint) -> list[str]:
    """Names of the parts that differ, sorted: changed, vanished since planning, or newly present.

    A part present on only one side counts as changed: a connector that appeared or a partition that was
    added is exactly the kind of drift that makes a plan's steps wrong.
    """
    if planned.digest == live.digest:
        return []
    names = set(planned.parts) | set(live.parts)
    return sorted(n for n in names if planned.parts.get(n) != live.parts.get(n))


def describe_diff(planned: Fingerprint, live: Fingerprint) -> list[str]:
    """Like ``diff_fingerprints`` but each name says how it changed, for a human-facing message."""
    out = []
    for name in diff_fingerprints(planned, live):
        if name not in live.parts:
            out.append(f"{name} (gone)")
        elif name not in planned.parts:
            out.append(f"{name} (new)")
        else:
            out.append(f"{name} (changed)")
    return out


def check_not_foreign(
    plan: Plan,
    *,
    live_clusters: Mapping[str, str],
    live_connect_cluster_id: str | None = None,
) -> None:
    """Refuse a plan made for other clusters: ``ForeignPlanError`` naming the alias and both ids.

    ``live_clusters`` maps alias -> the cluster id the broker reports now. Every alias the plan names must
    resolve to the same id. If the plan targets a Connect worker, that worker's ``kafka_cluster_id``
    (``GET /``) must match too: a same-named connector on another Connect cluster is a different connector.
    """
    problems: list[str] = []
    for alias, planned_id in sorted(plan.clusters.items()):
        live_id = live_clusters.get(alias)
        if live_id is None:
            problems.append(f"cluster alias {alias!r} (planned id {planned_id}) is not configured now")
        elif live_id != planned_id:
            problems.append(f"cluster {alias!r} has id {live_id}, the plan was made for {planned_id}")
    if plan.connect is not None:
        if live_connect_cluster_id is None:
            problems.append(
                "the plan targets a Connect worker (Kafka cluster "
                f"{plan.connect.kafka_cluster_id}) but none was checked"
            )
        elif live_connect_cluster_id != plan.connect.kafka_cluster_id:
            problems.append(
                f"the Connect worker belongs to Kafka cluster {live_connect_cluster_id}, "
                f"the plan was made for {plan.connect.kafka_cluster_id}"
            )
    if problems:
        raise ForeignPlanError(f"plan {plan.plan_id} was made for other clusters: " + "; ".join(problems))


def check_not_stale(planned: Fingerprint, live: Fingerprint) -> None:
    """Refuse a plan whose inputs changed: ``StalePlanError`` naming every changed part."""
    changes = describe_diff(planned, live)
    if changes:
        shown = ", ".join(changes[:20])
        more = f" and {len(changes) - 20} more" if len(changes) > 20 else ""
        raise StalePlanError(f"live state changed since the plan was made: {shown}{more}; re-run `mm2ctl plan`")


def check_plan_against_live(
    plan: Plan,
    *,
    live_clusters: Mapping[str, str],
    live_connect_cluster_id: str | None,
    live_fingerprint: Fingerprint,
) -> None:
    """Both checks in the order apply needs them: a foreign plan is reported as foreign, never as stale."""
    check_not_foreign(plan, live_clusters=live_clusters, live_connect_cluster_id=live_connect_cluster_id)
    check_not_stale(plan.fingerprint, live_fingerprint)
