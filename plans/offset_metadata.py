"""What mm2ctl writes into a committed offset's metadata: which plan wrote it and how it was found.

Every offset ``apply`` commits carries ``mm2ctl:<plan id>:<method>`` (``verified_delta``, ``log_end``, …), and
every offset ``rollback`` restores carries ``mm2ctl:<plan id>:rollback``; the write sends no leader epoch (a
source epoch means nothing on the other cluster). A consumer's own commit replaces the metadata, so a read of the
group tells mm2ctl's write from a commit the application made since, even at the same offset. Share groups keep
no metadata (``alterShareGroupOffsets`` sets start offsets only). The format's owner is ``core.kafka.provenance``.
"""

from __future__ import annotations

from collections.abc import Iterable

from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.kafka.provenance import PREFIX, parse_provenance, provenance
from mm2ctl.plans.payloads import GroupOffsetRow

__all__ = ["PREFIX", "READ_BACK", "ROLLBACK", "parse_provenance", "provenance", "same_metadata", "write_metadata"]

ROLLBACK = "rollback"
#: A read-back that found MM2 had moved an offset below the plan and wrote the plan's again.
READ_BACK = "read_back"


def write_metadata(plan_id: str, rows: Iterable[GroupOffsetRow]) -> dict[TP, str]:
    """Each row's metadata for a group write of plan ``plan_id``."""
    return {(r.topic, r.partition): provenance(plan_id, r.method.value) for r in rows}


def same_metadata(plan_id: str, partitions: Iterable[TP], method: str) -> dict[TP, str]:
    """One ``method``'s metadata for every partition (a rollback's restore, a read-back's rewrite)."""
    return dict.fromkeys(partitions, provenance(plan_id, method))
