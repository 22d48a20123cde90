"""What an inspection decoded of MM2's internal topics, saved between processes (``--no-cache`` turns it off).

A live session keeps each pair's decoded offset syncs (the current mapping's runs) and live checkpoints in
memory and reads only the records past them (``inspector.kept.pair_topics``). Each run saves the same state here,
so that the next process starts where the last one stopped and reads only the records written since:

* one file per (pair, internal topic, the Kafka cluster id of the cluster that holds it), under
  ``$MM2CTL_INSPECT_CACHE``, else ``inspect-state`` in mm2ctl's cache (``$MM2CTL_CACHE``, else
  ``~/.cache/mm2ctl``);
* an Arrow IPC file (zstd): the kept rows (``inspector.transforms.sync_runs.RUN_COLUMNS`` or
``schemas.CHECKPOINTS_SCHEMA``) and,
  in the schema's metadata, the snapshot they were read up to (topic id, each partition's ``[earliest,
  end)``) and what the pair keeps beside the rows (the partitions' numbering, their newest syncs, the
  malformed records counted);
* written to a temporary file in the same folder, then renamed over the old one, so another process reads
  the old file or the new one, never a half-written one;
* the folder holds at most ``MAX_BYTES`` (``$MM2CTL_INSPECT_CACHE_MB``): the least recently used files go
  first. It holds topic, group and partition names and offsets, never a setting of a cluster (no address,
  no credential), and its files are readable by their owner only.

Whether a saved state may be used is the live session's rule (``inspector.reads.internal_topics.plan_read``), run
against the topic as it is now: a new topic id, other partitions, an end offset below the saved one or an earliest
offset above it throw it away and the topic is read in full, with a note saying why. A file that cannot be
read (truncated, corrupt, written by another mm2ctl version or format) is thrown away the same way.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.ipc as ipc

from mm2ctl.core.atomic_file import replaced
from mm2ctl.core.java.maven import cache_root

if TYPE_CHECKING:
    from mm2ctl.inspector.reads.internal_topics import TopicSnapshot

#: Bumped whenever what a file holds changes meaning; a file of another format is read in full again.
FORMAT = 1
#: The folder's size bound, unless ``$MM2CTL_INSPECT_CACHE_MB`` says otherwise.
MAX_BYTES = 1 << 30
#: A temporary file older than this was left by a process that died while writing.
_STALE_TEMP_S = 3600.0
_META_KEY = b"mm2ctl-inspect-state"
SYNCS, CHECKPOINTS = "offset-syncs", "checkpoints"


def cache_dir() -> Path:
    """Where saved inspection state lives: ``$MM2CTL_INSPECT_CACHE``, else ``inspect-state`` in mm2ctl's cache."""
    folder = os.environ.get("MM2CTL_INSPECT_CACHE")
    return Path(folder) if folder else cache_root() / "inspect-state"


def _max_bytes() -> int:
    value = os.environ.get("MM2CTL_INSPECT_CACHE_MB")
    return int(float(value) * (1 << 20)) if value else MAX_BYTES


@dataclass(frozen=True, slots=True)
class StateKey:
    """Whose state a file holds: one pair's decoding of one internal topic on one Kafka cluster."""

    kind: str  # SYNCS or CHECKPOINTS
    pair: str
    cluster_id: str
    topic: str

    def file_name(self) -> str:
        digest = hashlib.sha256(f"{self.kind}\0{self.pair}\0{self.cluster_id}\0{self.topic}".encode()).hexdigest()
        return f"{self.kind}-{digest[:32]}.arrow"


@dataclass(frozen=True, slots=True)
class SavedState:
    """A topic's decoded state: ``table`` read up to ``bounds`` of the topic ``topic_id``, and ``extra``
    (JSON values) that the owner keeps beside the rows."""

    key: StateKey
    topic_id: str
    bounds: Mapping[int, tuple[int, int]]
    table: pa.Table
    extra: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Unusable:
    """A saved file that cannot be used, and why (it has been removed)."""

    reason: str


def save(state: SavedState, folder: Path | None = None) -> Path:
    """Write ``state`` atomically (a temporary file, then a rename) and keep the folder within its bound."""
    folder = folder or cache_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    meta = {
        "format": FORMAT,
        "version": _version(),
        "kind": state.key.kind,
        "pair": state.key.pair,
        "cluster_id": state.key.cluster_id,
        "topic": state.key.topic,
        "topic_id": state.topic_id,
        "bounds": {str(p): list(b) for p, b in sorted(state.bounds.items())},
        "rows": state.table.num_rows,
        "extra": state.extra,
    }
    table = state.table.replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
    target = folder / state.key.file_name()
    options = ipc.IpcWriteOptions(compression="zstd")
    with replaced(target, "wb") as out, ipc.new_file(out, table.schema, options=options) as writer:
        writer.write_table(table)
    prune(folder, keep=target)
    return target


def load(key: StateKey, folder: Path | None = None) -> SavedState | Unusable | None:
    """The state saved for ``key``; None when there is none; ``Unusable`` (the file removed) when the file
    cannot be read or was written by another format or mm2ctl version."""
    path = (folder or cache_dir()) / key.file_name()
    try:
        with pa.memory_map(str(path), "r") as source:
            table = ipc.open_file(source).read_all()
    except FileNotFoundError:
        return None
    except (OSError, pa.ArrowException) as exc:
        return _discard(path, f"its saved state is unreadable ({type(exc).__name__})")
    try:
        meta = json.loads((table.schema.metadata or {})[_META_KEY])
    except (KeyError, ValueError):
        return _discard(path, "its saved state has no readable description")
    if meta.get("format") != FORMAT or meta.get("version") != _version():
        written = f"mm2ctl {meta.get('version')}, format {meta.get('format')}"
        return _discard(path, f"its saved state was written by another version ({written})")
    if (meta.get("kind"), meta.get("pair"), meta.get("cluster_id"), meta.get("topic")) != (
        key.kind,
        key.pair,
        key.cluster_id,
        key.topic,
    ) or meta.get("rows") != table.num_rows:
        return _discard(path, "its saved state does not describe this topic")
    os.utime(path)  # least recently used goes first
    bounds = {int(p): (int(b[0]), int(b[1])) for p, b in meta["bounds"].items()}
    return SavedState(key, str(meta["topic_id"]), bounds, table.replace_schema_metadata(None), meta["extra"])


def discard(key: StateKey, folder: Path | None = None) -> None:
    """Remove the file saved for ``key`` (one its owner could not use)."""
    ((folder or cache_dir()) / key.file_name()).unlink(missing_ok=True)


def _discard(path: Path, reason: str) -> Unusable:
    path.unlink(missing_ok=True)
    return Unusable(reason)


def prune(folder: Path, *, keep: Path | None = None) -> None:
    """Remove temporary files left by dead writers, then the least recently used files until the folder
    holds at most its bound (``keep``, the file just written, stays)."""
    now = time.time()
    files = []
    for path in folder.iterdir():
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        if path.name.startswith("."):  # a temporary file (``core.atomic_file.replaced``)
            if now - stat.st_mtime > _STALE_TEMP_S:
                path.unlink(missing_ok=True)
            continue
        files.append((stat.st_mtime, stat.st_size, path))
    total = sum(size for _, size, _ in files)
    for _, size, path in sorted(files):
        if total <= _max_bytes():
            break
        if path != keep:
            path.unlink(missing_ok=True)
            total -= size


def _version() -> str:
    from mm2ctl import __version__

    return str(__version__)


def state_key(kind: str, pair: str, snapshot: TopicSnapshot | None) -> StateKey | None:
    """The file a pair's decoding of an internal topic is saved in; None without the ids that key it."""
    if snapshot is None or snapshot.cluster_id is None or snapshot.topic_id is None:
        return None
    return StateKey(kind, pair, snapshot.cluster_id, snapshot.topic)
