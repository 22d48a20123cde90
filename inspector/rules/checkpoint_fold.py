"""MM2's live checkpoints: the one rule for what the compacted checkpoints topic holds, as Arrow functions.

The checkpoints topic is compacted on (group, target topic, partition): what it says of a key is its newest
record (by record offset, then record partition, should the topic have several), and a tombstone deletes the
key. Malformed records are counted and passed over. A later read's newest record of a key replaces the kept
one (a later read only ever holds later records); every other key stays.

Everything that reads the topic applies this module:

* the driver folds a live cycle's new records, or a small topic's whole history, with ``fold_checkpoints``;
* Spark runs ``live_rule`` over a large read, rows clustered by (pair, group), with the kept checkpoints
  marked ``KEPT`` beside the new records (``inspector.transforms.live_checkpoints``);
* ``plan failover --from checkpoints`` takes ``live_of`` the whole topic.

Only pyarrow, numpy and the standard library are imported (the ``inspector.rules`` convention), so Spark ships
the module to a Python worker by value.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

KEY = ["cluster_pair", "group", "topic", "partition"]
#: The columns of a live checkpoint (``inspector.schemas.CHECKPOINTS_SCHEMA``'s names).
CHECKPOINT_COLUMNS = [*KEY, "upstream_offset", "downstream_offset", "metadata", "record_offset", "record_timestamp"]
#: ``live_rule``'s input column telling a kept live checkpoint (true) from a record just read (false).
KEPT = "_kept"
#: A record's position in the topic: what "newest" orders by.
_POSITION = ["record_offset", "record_partition"]


@dataclass(frozen=True, slots=True)
class FoldedCheckpoints:
    """The live checkpoints after a read, the groups its well-formed records name, and its malformed records
    per reason."""

    live: pa.Table
    groups: set[str]
    malformed: Counter[str]


def newest_of_each_key(records: pa.Table) -> pa.Table:
    """The newest of ``records`` (well-formed, with ``KEY`` and ``_POSITION``'s columns) for each key, tombstones
    included: sorted by key, then position, a key's newest record is the last before the key changes. One sort
    and a comparison of neighbours, no per-record step."""
    n = records.num_rows
    if n <= 1:
        return records
    order = records.sort_by([(c, "ascending") for c in [*KEY, *_POSITION]])
    last = np.ones(n, bool)
    last[:-1] = False
    for name in KEY:
        column = order.column(name).combine_chunks()
        changes = pc.fill_null(pc.not_equal(column.slice(1), column.slice(0, n - 1)), True)
        last[:-1] |= np.asarray(changes, bool)
    return order.filter(pa.array(last))


def merged(kept: pa.Table, good: pa.Table) -> pa.Table:
    """``kept`` (live checkpoints) with ``good``, well-formed records read since: each key they hold takes its
    newest one among them (a tombstone deletes it); every other key stays. Columns and types: ``kept``'s."""
    newest = newest_of_each_key(good)
    if newest.num_rows and kept.num_rows:
        kept = kept.join(newest.select(KEY), KEY, join_type="left anti", use_threads=False)
    live = newest.filter(pc.invert(newest.column("is_tombstone"))).select(kept.column_names).cast(kept.schema)
    return pa.concat_tables([kept, live])


def well_formed(decoded: pa.Table) -> pa.Table:
    """The records of ``decoded`` (``decode_checkpoints_table``'s columns) that decoded."""
    return decoded.filter(pc.is_null(decoded.column("malformed_reason")))


def fold_checkpoints(kept: pa.Table, decoded: pa.Table) -> FoldedCheckpoints:
    """``kept`` (the live checkpoints, ``CHECKPOINT_COLUMNS``) with ``decoded`` (the records written since,
    ``decode_checkpoints_table``'s columns) folded in; with the read's groups and malformed records."""
    reasons = decoded.column("malformed_reason")
    malformed = Counter(pc.drop_null(reasons).to_pylist())
    good = well_formed(decoded)
    groups = set(pc.unique(good.column("group")).to_pylist())
    return FoldedCheckpoints(merged(kept, good), groups, malformed)


def live_of(decoded: pa.Table) -> pa.Table:
    """The live checkpoints of a whole topic's decoded records: ``CHECKPOINT_COLUMNS`` of each key's newest
    well-formed record, unless that is a tombstone."""
    good = well_formed(decoded)
    return merged(good.select(CHECKPOINT_COLUMNS).slice(0, 0), good)


def live_rule(rows: pa.Table) -> pa.Table:
    """Spark's rule: ``rows`` hold, for every key they name, its kept live checkpoint (``KEPT`` true, at most
    one) and the well-formed records read since (``KEPT`` false); the live checkpoints, ``CHECKPOINT_COLUMNS``."""
    kept_mask = rows.column(KEPT)
    kept = rows.filter(kept_mask).select(CHECKPOINT_COLUMNS)
    return merged(kept, rows.filter(pc.invert(kept_mask)))
