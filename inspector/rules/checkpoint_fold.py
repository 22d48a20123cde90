"""Fold a later read's checkpoint records into the live checkpoints a live session keeps on its driver.

The checkpoints topic is compacted on (group, target topic, partition): what it says of a key is its newest
record (by record offset, then record partition), and a tombstone deletes the key. A read's newest record of
a key replaces the kept one; every other key stays. Malformed records are counted and passed over.

Only pyarrow and the standard library are imported (the ``inspector.rules`` convention).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

KEY = ["cluster_pair", "group", "topic", "partition"]


@dataclass(frozen=True, slots=True)
class FoldedCheckpoints:
    """The live checkpoints after a read, the groups its well-formed records name, and its malformed records
    per reason."""

    live: pa.Table
    groups: set[str]
    malformed: Counter[str]


def fold_checkpoints(kept: pa.Table, decoded: pa.Table) -> FoldedCheckpoints:
    """``kept`` (the live checkpoints, ``CHECKPOINTS_SCHEMA``'s columns) with ``decoded`` (the records written
    since, ``decode_checkpoints``' columns) folded in."""
    reasons = decoded.column("malformed_reason")
    malformed = Counter(r for r in reasons.to_pylist() if r is not None)
    good = decoded.filter(pc.is_null(reasons))
    groups = set(pc.unique(good.column("group")).to_pylist())
    order = good.sort_by([(c, "ascending") for c in [*KEY, "record_offset", "record_partition"]])
    keys = [order.column(c).to_pylist() for c in KEY]
    rows = list(zip(*keys, strict=True))
    last = [i for i in range(len(rows)) if i + 1 == len(rows) or rows[i + 1] != rows[i]]
    newest = order.take(pa.array(last, pa.int64()))
    touched = newest.select(KEY)
    unchanged = kept.join(touched, KEY, join_type="left anti") if touched.num_rows else kept
    live = newest.filter(pc.invert(newest.column("is_tombstone"))).select(kept.column_names).cast(kept.schema)
    unchanged = unchanged.select(kept.column_names).cast(kept.schema)
    return FoldedCheckpoints(pa.concat_tables([unchanged, live]), groups, malformed)
