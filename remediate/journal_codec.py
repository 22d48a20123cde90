"""The journal's line codec: one entry per line, canonical JSON (sorted keys) plus ``crc32`` of the canonical
JSON of the entry without it (the format is described in ``remediate.journal``)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from mm2ctl.plans.fingerprint import JSONable, canonical_json

JOURNAL_FORMAT = "mm2ctl-journal"
JOURNAL_FORMAT_VERSION = 3
#: Versions this reader understands: 1 had one step in progress at a time; 2 adds concurrent batches of group
#: steps; 3 adds a run of connector stops in progress together (``remediate.connector_stops``).
READABLE_FORMAT_VERSIONS = frozenset({1, 2, 3})


class EntryType(StrEnum):
    HEADER = "header"
    RESUME_STARTED = "resume_started"
    STEP_STARTED = "step_started"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    APPLY_FINISHED = "apply_finished"
    ROLLBACK_STARTED = "rollback_started"
    ROLLBACK_STEP_STARTED = "rollback_step_started"
    ROLLBACK_STEP_COMPLETED = "rollback_step_completed"
    ROLLBACK_STEP_FAILED = "rollback_step_failed"
    ROLLBACK_FINISHED = "rollback_finished"
    TORN_TAIL_DISCARDED = "torn_tail_discarded"


def _crc(entry: Mapping[str, JSONable]) -> str:
    return f"{zlib.crc32(canonical_json(entry).encode('utf-8')):08x}"


def encode_line(entry: Mapping[str, JSONable], *, substitute: tuple[str, str] | None = None) -> bytes:
    """One journal line: canonical JSON of ``entry`` plus its CRC, newline-terminated.

    The entry is encoded once: canonical JSON lists the keys in order, so the fields sorting before and after
    ``crc32`` are encoded apart and joined around it, which gives both the text the CRC covers and the line.
    ``substitute``: ``(placeholder, json)`` puts text encoded beforehand where the string ``placeholder``
    is (the header's plan, whose canonical JSON was already made for its digest)."""
    if "crc32" in entry:
        raise ValueError("entry must not carry its own crc32")
    head = canonical_json({k: v for k, v in entry.items() if k < "crc32"})[1:-1]
    tail = canonical_json({k: v for k, v in entry.items() if k > "crc32"})[1:-1]
    if substitute is not None:
        placeholder, text = substitute
        quoted = json.dumps(placeholder)
        head, tail = head.replace(quoted, text, 1), tail.replace(quoted, text, 1)
    body = "{" + head + ("," if head and tail else "") + tail + "}"
    crc = f'"crc32":"{zlib.crc32(body.encode("utf-8")):08x}"'
    return ("{" + head + ("," if head else "") + crc + ("," if tail else "") + tail + "}\n").encode("utf-8")


def decode_line(raw: bytes) -> dict[str, Any]:
    """Parse and verify one line (without its newline). ``ValueError`` says what is wrong with it."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a JSON line ({exc})") from exc
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    crc = obj.pop("crc32", None)
    if not isinstance(crc, str):
        raise ValueError("no crc32")
    if crc != _crc(obj):
        raise ValueError(f"crc32 mismatch (recorded {crc}, content {_crc(obj)})")
    if not isinstance(obj.get("seq"), int) or not isinstance(obj.get("type"), str):
        raise ValueError("no seq/type")
    return obj
