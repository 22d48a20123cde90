"""Offsets as a plan records them: KIP-875 connector offsets, committed group offsets, and the raw records of
Connect's offsets topic.

Preconditions (what must still hold) and payloads (what to write) both speak of these, so they live apart
from either. All are frozen; a connector offset's JSON maps are deep-frozen.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass

from mm2ctl.core.errors import PlanError
from mm2ctl.plans.fingerprint import FrozenJSON, freeze_json
from mm2ctl.plans.validation import check_b64, check_int, check_str, set_field


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedConnectorOffset:
    """One entry of KIP-875's ``{"offsets": [{"partition": {...}, "offset": {...}}]}``.

    ``offset`` None means "reset this partition" in a PATCH body.
    """

    partition: Mapping[str, FrozenJSON]
    offset: Mapping[str, FrozenJSON] | None

    def __post_init__(self) -> None:
        if not isinstance(self.partition, Mapping) or not self.partition:
            raise PlanError("partition: expected a non-empty mapping")
        set_field(self, "partition", freeze_json(self.partition, where="partition"))
        if self.offset is not None:
            if not isinstance(self.offset, Mapping):
                raise PlanError("offset: expected a mapping or null")
            set_field(self, "offset", freeze_json(self.offset, where="offset"))


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupOffset:
    """A committed offset of a group for one partition; None means "no committed offset"."""

    topic: str
    partition: int
    offset: int | None

    def __post_init__(self) -> None:
        check_str(self.topic, "topic")
        check_int(self.partition, "partition")
        if self.offset is not None:
            check_int(self.offset, "offset")


@dataclass(frozen=True, slots=True, kw_only=True)
class TombstoneRecord:
    """One ``connect-offsets`` key to tombstone, byte-exact, on the partition it was read from.

    ``original_value_b64`` is what rollback re-produces (None: the key had no live value).
    """

    partition: int
    key_b64: str
    original_value_b64: str | None

    def __post_init__(self) -> None:
        check_int(self.partition, "partition")
        key = check_b64(self.key_b64, "key_b64")
        if not key:
            raise PlanError("key_b64: must not be empty")
        if self.original_value_b64 is not None:
            check_b64(self.original_value_b64, "original_value_b64")

    @property
    def key(self) -> bytes:
        return base64.b64decode(self.key_b64)

    @property
    def original_value(self) -> bytes | None:
        return None if self.original_value_b64 is None else base64.b64decode(self.original_value_b64)
