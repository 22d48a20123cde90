"""Fold a later read's offset-sync records into the runs a live session keeps on its driver.

The runs (``_part``, ``_u0``, ``_d0``, ``_n``, ``_records``) are each source partition's current mapping: the
syncs ``_u0 + i -> _d0 + i`` for ``0 <= i < _n``, disjoint and increasing on both sides. A later read's
records fold in when they extend that mapping: every new sync agrees with the kept runs and with the other
new syncs (a sync at or below the reach of the syncs before it in position order lies on them; one beyond
it is ahead on the target too), and no tombstone arrived. Otherwise the current mapping must be found again
from the whole history, and the fold says why (the caller reads the topic in full).

A live cycle reads a few hundred records past its last snapshot, so the fold works on Python values per
partition the read touched; the runs of other partitions are not looked at. The records come as
``records_of`` shapes them from the decoded topic (``inspector.rules.decoding``): a record per row with its
partition number, upstream and downstream offsets (null for a tombstone), record offset and timestamp, and
a malformed record's reason.

Only pyarrow and the standard library are imported (the ``inspector.rules`` convention).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

PART, U0, D0, N, RECORDS = "_part", "_u0", "_d0", "_n", "_records"
RUN_COLUMNS = (PART, U0, D0, N, RECORDS)
RUNS_SCHEMA = pa.schema([pa.field(PART, pa.int32()), *(pa.field(c, pa.int64()) for c in (U0, D0, N, RECORDS))])
#: Why ``fold`` gives up on the kept runs: the caller reads the topic in full again.
TANGLED = "a tombstone or a contradicting sync arrived: the current mappings are found again"
CONTRADICTS = "new offset syncs contradict the kept ones: the current mappings are found again"

Run = tuple[int, int, int, int]  # (u0, d0, n, records)


@dataclass(frozen=True, slots=True)
class Record:
    """One well-formed record of a known partition: a sync, or a tombstone (``upstream`` None)."""

    upstream: int | None
    downstream: int | None
    offset: int
    timestamp: dt.datetime | None


@dataclass(frozen=True, slots=True)
class Folded:
    """What ``fold`` made of a read: the runs after it (None when the topic must be read in full, and
    ``reason`` why), each touched partition's newest record, and the malformed records per reason."""

    runs: pa.Table | None
    reason: str | None
    newest: dict[int, Record] = field(default_factory=dict)
    malformed: Counter[str] = field(default_factory=Counter)


def records_of(decoded: pa.Table, numbering: pa.Table) -> tuple[dict[int, list[Record]], Counter[str]]:
    """The decoded offset-sync records (``decode_offset_syncs``' columns) by partition number
    (``numbering``: ``cluster_pair``, ``topic``, ``partition``, ``_part``), and the malformed ones per reason.
    Kept: well-formed records of record partition 0 (MM2 writes and reads no other) of numbered partitions."""
    malformed = Counter(r for r in decoded.column("malformed_reason").to_pylist() if r is not None)
    good = decoded.filter(
        pc.and_(pc.is_null(decoded.column("malformed_reason")), pc.equal(decoded.column("record_partition"), 0))
    )
    key = ["cluster_pair", "topic", "partition"]
    wanted = [*key, "upstream_offset", "downstream_offset", "record_offset", "record_timestamp"]
    keyed = good.select(wanted).join(numbering.select([*key, PART]), key, join_type="inner")
    found: dict[int, list[Record]] = defaultdict(list)
    columns = [keyed.column(c).to_pylist() for c in (PART, "upstream_offset", "downstream_offset", "record_offset")]
    times = keyed.column("record_timestamp").to_pylist()
    for (part, up, down, offset), ts in zip(zip(*columns, strict=True), times, strict=True):
        found[part].append(Record(up, down, offset, ts))
    return dict(found), malformed


def _disagrees(u0: int, d0: int, last_u: int | None, last_d: int | None) -> bool:
    """Whether a run starting at ``(u0, d0)`` (in position order) disagrees with the chain before it, whose
    reach is ``(last_u, last_d)``: inside the reach it must lie on the chain, beyond it be ahead on the target."""
    if last_u is None or last_d is None:
        return False
    if u0 <= last_u:
        return d0 != last_d - (last_u - u0)
    return d0 <= last_d


def _chain_breaks(runs: Iterable[Run]) -> bool:
    """Whether some run of ``runs`` (sorted by ``u0``) disagrees with the runs before it."""
    last_u = last_d = None
    for u0, d0, n, _ in runs:
        if _disagrees(u0, d0, last_u, last_d):
            return True
        last_u = u0 + n - 1 if last_u is None else max(last_u, u0 + n - 1)
        last_d = d0 + n - 1 if last_d is None else max(last_d, d0 + n - 1)
    return False


def merged(runs: Sequence[Run]) -> list[Run]:
    """A chain's runs (sorted by ``u0``) merged where they touch: a run starting inside the reach of the runs
    before it, or just after it and just after it on the target too, joins them."""
    out: list[list[int]] = []
    for u0, d0, n, records in runs:
        if out:
            last = out[-1]
            last_u, last_d = last[0] + last[2] - 1, last[1] + last[2] - 1
            if u0 <= last_u or (u0 == last_u + 1 and d0 == last_d + 1):
                last[2] = max(last_u, u0 + n - 1) - last[0] + 1
                last[3] += records
                continue
        out.append([u0, d0, n, records])
    return [(u, d, n, r) for u, d, n, r in out]


def _as_run(record: Record) -> Run:
    """A sync record as a run of one sync."""
    assert record.upstream is not None and record.downstream is not None
    return (record.upstream, record.downstream, 1, 1)


def _tangled(records: Sequence[Record]) -> bool:
    """Whether a partition's new records hold more than one mapping: a tombstone, or syncs that disagree."""
    if any(r.upstream is None for r in records):
        return True
    in_order = sorted(records, key=lambda r: (r.upstream or 0, r.offset))  # no tombstone here
    return _chain_breaks(_as_run(r) for r in in_order)


def fold(runs: pa.Table, records: dict[int, list[Record]], malformed: Counter[str]) -> Folded:
    """``runs`` (``RUNS_SCHEMA``) with ``records`` (``records_of``) folded in, or why they cannot be."""
    newest = {part: max(rs, key=lambda r: r.offset) for part, rs in records.items()}
    if any(_tangled(rs) for rs in records.values()):
        return Folded(None, TANGLED, newest, malformed)
    touched = pa.array(sorted(records), pa.int32())
    mask = pc.is_in(runs.column(PART), value_set=touched)
    kept: dict[int, list[Run]] = defaultdict(list)
    near = runs.filter(mask)
    for part, u0, d0, n, recs in zip(*(near.column(c).to_pylist() for c in RUN_COLUMNS), strict=True):
        kept[part].append((u0, d0, n, recs))
    rows: list[tuple[int, Run]] = []
    for part, rs in records.items():
        candidates = sorted(kept[part] + [_as_run(r) for r in rs])
        if _chain_breaks(candidates):
            return Folded(None, CONTRADICTS, newest, malformed)
        rows += [(part, run) for run in merged(candidates)]
    fresh = pa.table(
        {
            PART: pa.array([p for p, _ in rows], pa.int32()),
            **{c: pa.array([run[i] for _, run in rows], pa.int64()) for i, c in enumerate((U0, D0, N, RECORDS))},
        },
        schema=RUNS_SCHEMA,
    )
    return Folded(pa.concat_tables([runs.filter(pc.invert(mask)).cast(RUNS_SCHEMA), fresh]), None, newest, malformed)
