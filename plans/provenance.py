"""What mm2ctl writes into a committed offset's metadata: which plan wrote it and how it was found.

Every offset ``apply`` commits carries ``mm2ctl:<plan id>:<method>`` (``verified_delta``, ``log_end``, …), and
every offset ``rollback`` restores carries ``mm2ctl:<plan id>:rollback``; the write sends no leader epoch (a
source epoch means nothing on the other cluster). A consumer's own commit replaces the metadata, so a read of the
group tells mm2ctl's write from a commit the application made since, even at the same offset. Share groups keep
no metadata (``alterShareGroupOffsets`` sets start offsets only).
"""

from __future__ import annotations

from collections.abc import Iterable

from mm2ctl.core.admin import TP
from mm2ctl.plans.payloads import GroupOffsetRow

PREFIX = "mm2ctl"
ROLLBACK = "rollback"
#: A read-back that found MM2 had moved an offset below the plan and wrote the plan's again.
READ_BACK = "read_back"


def provenance(plan_id: str, method: str) -> str:
    """The metadata of an offset the plan ``plan_id`` wrote with ``method``."""
    return f"{PREFIX}:{plan_id}:{method}"


def parse_provenance(metadata: str | None) -> tuple[str, str] | None:
    """(plan id, method) of metadata mm2ctl wrote, or None for any other (a consumer's, MM2's, none)."""
    if not metadata:
        return None
    parts = metadata.split(":")
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


def write_metadata(plan_id: str, rows: Iterable[GroupOffsetRow]) -> dict[TP, str]:
    """Each row's metadata for a group write of plan ``plan_id``."""
    return {(r.topic, r.partition): provenance(plan_id, r.method.value) for r in rows}


def same_metadata(plan_id: str, partitions: Iterable[TP], method: str) -> dict[TP, str]:
    """One ``method``'s metadata for every partition (a rollback's restore, a read-back's rewrite)."""
    return dict.fromkeys(partitions, provenance(plan_id, method))
