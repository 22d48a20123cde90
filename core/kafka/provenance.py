"""The metadata mm2ctl puts on every offset it commits: ``mm2ctl:<plan id>:<method>``, the one owner of its format.

A consumer's own commit replaces a committed offset's metadata, and MM2 writes none, so the metadata tells an
offset mm2ctl wrote from one the application committed since, even at the same offset. ``plans.offset_metadata``
writes it; ``inspector.reads.committed_offsets`` reads it back with the offsets (``PREFIX_TEXT`` picks it out); rollback
and ``inspect`` read it.
"""

from __future__ import annotations

PREFIX = "mm2ctl"
#: What every metadata mm2ctl writes starts with.
PREFIX_TEXT = f"{PREFIX}:"


def provenance(plan_id: str, method: str) -> str:
    """The metadata of an offset the plan ``plan_id`` wrote with ``method``."""
    return f"{PREFIX}:{plan_id}:{method}"


def written_by(metadata: str | None) -> str | None:
    """``metadata`` when mm2ctl wrote it, else None. An offset committed through librdkafka carries its metadata's
    terminating NUL byte (confluent-kafka sends it): librdkafka reads it back without, the Java client with it.
    Either way the answer is the same text."""
    if not metadata or not metadata.startswith(PREFIX_TEXT):
        return None
    return metadata.rstrip("\x00")


def parse_provenance(metadata: str | None) -> tuple[str, str] | None:
    """(plan id, method) of metadata mm2ctl wrote, or None for any other (a consumer's, MM2's, none)."""
    if not metadata:
        return None
    parts = metadata.split(":")
    if len(parts) != 3 or parts[0] != PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]
