"""Translate a source group offset to its target position: the conservative rule (docs/design.md,
"Translation"), and a verified
exact translation that proves its answer by comparing records.

Why two rules. §5 (what MM2 itself does since 3.5) only ever trusts a sync's exact pair: ``upstream == c``
gives ``downstream``; otherwise ``downstream + 1``, which never skips a record but replays up to one sync
interval. ``downstream + (c - upstream)`` would be exact if source and target offsets advanced in lock
step after the sync, but transaction markers, aborted records, compaction and filters make gaps on one
side only, and MM2 coalesces the syncs it would write at those gaps under load. So that candidate is only a
*guess*, accepted when the records prove it:

- ``R`` is the record a consumer at ``c`` reads next on the source: the first record with offset >= c
  (``c`` may point at a marker or an aborted record). ``P`` is the record it read last: the last record
  below ``c``.
- The right target position is the offset of ``R``'s copy ``R'``, and the record just before ``R'`` must be
  ``P'``. Records are compared by a digest of timestamp, key, value and headers.
- The candidate position is tried first (``verified_delta``); otherwise every target position between this
  sync's downstream and the next sync's downstream is searched (``verified_search``): the copy of ``R``
  cannot lie outside, because the next sync pins a later record.
- The consumer is caught up (``c`` at the source end, no ``R``), or ``R`` has not been replicated yet: the
  position is just after ``P'``, accepted only when ``P'`` is the last record on the target (anything after
  it that is not ``R'`` means the target is not the copy we think it is).
- Anything unproven falls back to the conservative rule, and the row says so.

Reads are bounded (``window``, ``max_scan``) so a plan over a badly gapped topic degrades to the
conservative rule instead of reading a partition end to end. Everything here is pure: the records come
through a ``RecordSource`` the caller implements (Kafka in a planner, a list in a unit test).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from mm2ctl.plans.payloads import TranslationMethod

#: How far around ``c`` the source is read to find ``R`` and ``P``, and around the candidate on the target.
DEFAULT_WINDOW = 64
#: The most target records a search reads for one partition; beyond it the conservative rule applies.
DEFAULT_MAX_SCAN = 20_000


@dataclass(frozen=True, slots=True, order=True)
class Sync:
    """One offset sync of a partition: the upstream offset and the downstream offset of the same record."""

    upstream: int
    downstream: int


@dataclass(frozen=True, slots=True)
class Digested:
    """A record reduced to what verification compares: its offset, a digest of its content, and its timestamp
    (which the timestamp fallback looks the record up by on the other cluster)."""

    offset: int
    digest: str
    timestamp_ms: int | None = None


def record_digest(
    timestamp_ms: int, key: bytes | None, value: bytes | None, headers: Sequence[tuple[str, bytes | None]]
) -> str:
    """A digest of what MM2 copies unchanged: timestamp, key, value and headers (None differs from b"")."""
    h = hashlib.sha256()

    def put(b: bytes | None) -> None:
        if b is None:
            h.update(b"\xff")
        else:
            h.update(len(b).to_bytes(8, "big") + b)

    h.update(timestamp_ms.to_bytes(8, "big", signed=True))
    put(key)
    put(value)
    h.update(len(headers).to_bytes(4, "big"))
    for name, v in headers:
        put(name.encode())
        put(v)
    return h.hexdigest()


class RecordSource(Protocol):
    """Reads one side of one partition: the records with offsets in ``[start, end)``, in offset order."""

    def read(self, start: int, end: int) -> Sequence[Digested]: ...


@dataclass(frozen=True, slots=True)
class Bounds:
    """A partition's earliest and end offsets."""

    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Translation:
    """The target position for one group partition, how it was found, and (for review) why."""

    offset: int
    method: TranslationMethod
    detail: str = ""
    #: ``downstream + (c - upstream)``: what an exact-looking but unverified translation would have said.
    delta_candidate: int | None = None


def newest_sync_at_or_below(syncs: Sequence[Sync], committed: int) -> int | None:
    """Index of the newest sync with ``upstream <= committed`` in ``syncs`` (sorted by upstream)."""
    i = bisect.bisect_right([s.upstream for s in syncs], committed) - 1
    return i if i >= 0 else None


def agree(a: Sync, b: Sync) -> bool:
    """Do two syncs describe one mapping? A higher upstream offset has a higher downstream offset, and one
    upstream offset has one downstream offset (the same sync written twice agrees with itself)."""
    if a.upstream < b.upstream:
        return a.downstream < b.downstream
    if a.upstream > b.upstream:
        return a.downstream > b.downstream
    return a.downstream == b.downstream


#: One source partition's offset-sync records in the order MM2 wrote them (their order in the topic): a sync,
#: or None for a tombstone (a record with the partition's key and no value). Malformed records are left out.
SyncHistory = Sequence[Sync | None]


def current_mapping_start(history: SyncHistory) -> int:
    """Where the partition's current mapping starts in ``history``: the index of its first record.

    **The rule** (docs/design.md, "Translation", the one rule ``inspect`` and every planner apply): the current mapping
    is the longest run of the most recently written syncs that all agree with each other (``agree``), after the
    partition's last tombstone. So:

    - syncs written out of order stay, as long as they agree (MM2 wrote ``254->159`` before ``252->158``);
    - a sync written twice is one sync;
    - a contradiction between two syncs (a target recreated and refilled, MM2 copying the same records again
      after a restart, a source recreated) drops the older of the two and everything written before it;
    - a tombstone deletes its key's earlier records, as compaction would.

    Computed newest first: each sync joins the run while it agrees with every sync written after it, which
    for a run that is a chain means with its two neighbours by upstream offset.
    """
    chain: list[Sync] = []  # the run so far, sorted by (upstream, downstream): a chain, so neighbours decide
    for i in range(len(history) - 1, -1, -1):
        s = history[i]
        if s is None:
            return i + 1
        j = bisect.bisect_left(chain, s)
        if j < len(chain) and chain[j] == s:
            continue
        if (j > 0 and not agree(chain[j - 1], s)) or (j < len(chain) and not agree(chain[j], s)):
            return i + 1
        chain.insert(j, s)
    return 0


def normalize_syncs(history: SyncHistory) -> list[Sync]:
    """The syncs of the partition's current mapping (``current_mapping_start``), sorted by upstream, one per
    upstream offset: what every translation in mm2ctl reads."""
    return sorted({s for s in history[current_mapping_start(history) :] if s is not None})


def oldest(syncs: Sequence[Sync]) -> Sync | None:
    """The mapping's sync with the lowest upstream offset: a group committed below it is untranslatable."""
    return syncs[0] if syncs else None


def inverted(syncs: Sequence[Sync]) -> list[Sync]:
    """The same mapping read the other way (downstream -> upstream), for translating a position on the
    target back to the source (failback). A chain stays a chain when its two sides swap."""
    return [Sync(s.downstream, s.upstream) for s in syncs]


def conservative(syncs: Sequence[Sync], committed: int) -> Translation | None:
    """The rule: exact sync → downstream; older sync → downstream + 1; none → None (untranslatable)."""
    i = newest_sync_at_or_below(syncs, committed)
    if i is None:
        return None
    s = syncs[i]
    if s.upstream == committed:
        return Translation(s.downstream, TranslationMethod.OFFSET_SYNC_EXACT, f"sync {s.upstream}->{s.downstream}")
    return Translation(
        s.downstream + 1,
        TranslationMethod.OFFSET_SYNC_NEXT,
        f"newest sync {s.upstream}->{s.downstream} is below {committed}: downstream + 1",
    )


def _first_at_or_after(recs: Sequence[Digested], offset: int) -> int | None:
    i = bisect.bisect_left([r.offset for r in recs], offset)
    return i if i < len(recs) else None


def verified(
    syncs: Sequence[Sync],
    committed: int,
    *,
    source: RecordSource,
    target: RecordSource,
    source_bounds: Bounds,
    target_bounds: Bounds,
    window: int = DEFAULT_WINDOW,
    max_scan: int = DEFAULT_MAX_SCAN,
) -> Translation | None:
    """The verified exact position (see the module docstring), or the conservative one when unproven.

    ``syncs`` must be ``normalize_syncs`` output. None when no sync has ``upstream <= committed``.
    """
    base = conservative(syncs, committed)
    if base is None:
        return None
    i = newest_sync_at_or_below(syncs, committed)
    assert i is not None
    u, d = syncs[i].upstream, syncs[i].downstream
    candidate = d + (committed - u)

    def fallback(why: str) -> Translation:
        return Translation(base.offset, base.method, f"{base.detail}; not verified: {why}", candidate)

    if committed > source_bounds.end:
        return fallback(f"committed offset {committed} is beyond the source end {source_bounds.end}")
    c = max(committed, source_bounds.start)
    after = source.read(c, min(source_bounds.end, c + window))
    r = after[0] if after else None
    if r is None and c + window < source_bounds.end:
        return fallback(f"no record in the {window} offsets after {c} on the source")
    before = source.read(max(source_bounds.start, c - window), c)
    p = before[-1] if before else None
    if p is None and c - window > source_bounds.start:
        return fallback(f"no record in the {window} offsets before {c} on the source")
    if r is None and p is None:
        return fallback("the source partition holds no records")

    # The target window: from a little before this sync's downstream (P' may precede it when c == u) to
    # the next sync's downstream, which pins a record at or after R.
    lo = max(target_bounds.start, d - window)
    hi = target_bounds.end if i + 1 >= len(syncs) else min(target_bounds.end, syncs[i + 1].downstream + 1)
    hi = min(hi, lo + max_scan)
    recs = target.read(lo, hi)
    if not recs:
        return fallback("the target holds no records where the sync points")
    truncated = hi < target_bounds.end and (i + 1 >= len(syncs) or hi <= syncs[i + 1].downstream)

    def proves(j: int) -> bool:
        """Is ``recs[j]`` the copy of R, preceded by the copy of P?"""
        if r is None or recs[j].digest != r.digest:
            return False
        if p is None:
            return True
        if j > 0:
            return recs[j - 1].digest == p.digest
        return False  # P' lies before the window: unproven here

    aligned = _aligned_from_sync(syncs[i], c, r, p, source, recs, max_scan)
    if aligned is not None:
        method = TranslationMethod.VERIFIED_DELTA if aligned == candidate else TranslationMethod.VERIFIED_SEARCH
        what = f"source {r.offset}" if r is not None else "the source end"
        return Translation(
            aligned,
            method,
            f"the records from sync {u}->{d} agree one by one on both sides up to {what}: target {aligned}",
            candidate,
        )
    if r is not None:
        at = _first_at_or_after(recs, candidate)
        if at is not None and proves(at):
            return Translation(
                recs[at].offset,
                TranslationMethod.VERIFIED_DELTA,
                f"record at source {r.offset} found at target {recs[at].offset} (downstream + delta)",
                candidate,
            )
        first = _first_at_or_after(recs, d) or 0
        for j in range(first, len(recs)):
            if proves(j):
                return Translation(
                    recs[j].offset,
                    TranslationMethod.VERIFIED_SEARCH,
                    f"record at source {r.offset} found at target {recs[j].offset} by search; "
                    f"downstream + delta ({candidate}) was wrong",
                    candidate,
                )
    # Caught up (no R), or R not replicated yet: just after P', if P' is the target's last record.
    if p is not None and not truncated:
        last = recs[-1]
        if last.digest == p.digest and hi >= target_bounds.end:
            method = (
                TranslationMethod.VERIFIED_DELTA if last.offset + 1 == candidate else TranslationMethod.VERIFIED_SEARCH
            )
            what = "the source end" if r is None else f"source {r.offset}, not replicated yet"
            return Translation(
                last.offset + 1,
                method,
                f"last consumed record (source {p.offset}) is the target's last record "
                f"({last.offset}); position after it ({what})",
                candidate,
            )
    return fallback("no target record matched the source record at the committed offset")


def _aligned_from_sync(
    sync: Sync,
    committed: int,
    r: Digested | None,
    p: Digested | None,
    source: RecordSource,
    target_window: Sequence[Digested],
    max_scan: int,
) -> int | None:
    """The target position by counting records from the sync: MM2 copies every record in order, so the k-th
    source record from the sync's upstream offset is the k-th target record from its downstream offset. Proven
    when every record on the way agrees (so runs of identical records cannot mislead a search); None when they
    do not, or the target does not hold them all yet (the caller's other proofs then apply)."""
    if committed - sync.upstream > max_scan:
        return None
    stop = r.offset + 1 if r is not None else committed
    ours = source.read(sync.upstream, stop)
    if not ours or ours[0].offset != sync.upstream or (r is None and (p is None or ours[-1] != p)):
        return None
    start = bisect.bisect_left([x.offset for x in target_window], sync.downstream)
    theirs = target_window[start : start + len(ours)]
    if not theirs or theirs[0].offset != sync.downstream or len(theirs) < len(ours):
        return None
    if any(a.digest != b.digest for a, b in zip(ours, theirs, strict=True)):
        return None
    return theirs[-1].offset if r is not None else theirs[-1].offset + 1
