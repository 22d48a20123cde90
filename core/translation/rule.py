"""Translate a source group offset to its target position: the conservative rule (docs/design.md,
"Translation"), and a verified
exact translation that proves its answer by comparing records.

Why two rules. The conservative rule (what MM2 itself does since 3.5) only ever trusts a sync's exact pair:
``upstream == c`` gives ``downstream``; otherwise ``downstream + 1``, which never skips a record but replays up
to one sync interval. ``downstream + (c - upstream)`` would be exact if source and target offsets advanced in lock
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

Transactions. A consumer reads ``read_committed``: it never sees a transaction marker (one offset each) nor
a record of an aborted transaction, which stays in the log. MirrorMaker 2's source consumer reads
uncommitted records unless it is told otherwise, and then copies aborted records to the target, where they
are ordinary records. So ``R`` and ``P`` are committed records; the source side also shows its aborted records
(``Digested.aborted``), and a record of an aborted transaction on either side may have a copy on the other or
none (``align``). On the target, the copies of the aborted records between ``P`` and ``R`` lie between
``P'`` and ``R'``: the answer is ``R'``, so a consumer resuming there reads none of them. The target is read
``read_committed``, so MM2's own aborted batches (exactly-once mode) are not there to compare.

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

from mm2ctl.core.translation.methods import TranslationMethod

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
    #: A record of an aborted transaction: no ``read_committed`` consumer reads it.
    aborted: bool = False


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


def align(ours: Sequence[Digested], theirs: Sequence[Digested]) -> list[tuple[int, int]] | None:
    """Pair the records of one side (``ours``, in log order) with their copies on the other (``theirs``,
    from where the copy of ``ours[0]`` should be), one by one: MM2 copies every record it reads, in order.

    A record of an aborted transaction, on either side, may have a counterpart or none (MM2 copies them only
    when its source consumer reads uncommitted records). Every committed record of ``ours`` must be paired,
    and every record of ``theirs`` before the last pair must be paired or aborted. Returns the (ours, theirs)
    index pairs, or None when a committed record finds no copy (a mismatch, or ``theirs`` ends first).
    """
    pairs: list[tuple[int, int]] = []
    i = j = 0
    while i < len(ours):
        if j < len(theirs) and ours[i].digest == theirs[j].digest:
            pairs.append((i, j))
            i += 1
            j += 1
        elif ours[i].aborted:
            i += 1
        elif j < len(theirs) and theirs[j].aborted:
            j += 1
        else:
            return None
    return pairs


def committed(recs: Sequence[Digested]) -> list[Digested]:
    """The records a ``read_committed`` consumer reads."""
    return [r for r in recs if not r.aborted]


def preceded_by(recs: Sequence[Digested], j: int, p: Digested | None, skipped: Sequence[Digested]) -> bool:
    """Is ``recs[j]`` (or the end of ``recs``, for ``j == len(recs)``) preceded by the copy of ``p``, with at
    most copies of ``skipped`` (the aborted records between ``p`` and the next committed record, in log
    order) and aborted records between them?"""
    if p is None:
        return True
    back = align([*reversed(skipped), p], list(reversed(recs[:j])))
    return back is not None


def copies_after(recs: Sequence[Digested], j: int, skipped: Sequence[Digested]) -> int:
    """How many records of ``recs`` after index ``j`` are, in order, copies of ``skipped`` (aborted source
    records) or aborted themselves: the run a consumer resuming after ``recs[j]`` should skip too."""
    k, i = j + 1, 0
    while k < len(recs):
        if recs[k].aborted:
            k += 1
        elif i < len(skipped) and recs[k].digest == skipped[i].digest:
            k += 1
            i += 1
        elif i < len(skipped):
            i += 1  # that aborted record was not copied
        else:
            break
    return k - j - 1


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
    reach = min(source_bounds.end, c + window)
    after = source.read(c, reach)
    r = next((x for x in after if not x.aborted), None)
    if r is None and c + window < source_bounds.end:
        return fallback(f"no committed record in the {window} offsets after {c} on the source")
    before = source.read(max(source_bounds.start, c - window), c)
    p = next((x for x in reversed(before) if not x.aborted), None)
    if p is None and c - window > source_bounds.start:
        return fallback(f"no committed record in the {window} offsets before {c} on the source")
    if r is None and p is None:
        return fallback("the source partition holds no committed records")
    # The records of aborted transactions between P and R (or after P, with no R): a consumer reads none.
    skipped = [
        x for x in (*before, *after) if (p is None or x.offset > p.offset) and (r is None or x.offset < r.offset)
    ]

    # The target window: from a little before this sync's downstream (P' may precede it when c == u) to the
    # downstream of the first sync at or after R, which pins R' or a later record (a sync between names an
    # aborted record MM2 copied); with no R, to the end (the copies of aborted records after P run on).
    lo = max(target_bounds.start, d - window)
    pin = None if r is None else next((k for k in range(i, len(syncs)) if syncs[k].upstream >= r.offset), None)
    hi = target_bounds.end if pin is None else min(target_bounds.end, syncs[pin].downstream + 1)
    hi = min(hi, lo + max_scan)
    recs = target.read(lo, hi)
    if not recs:
        return fallback("the target holds no records where the sync points")
    truncated = hi < target_bounds.end and (pin is None or hi <= syncs[pin].downstream)

    def proves(j: int) -> bool:
        """Is ``recs[j]`` the copy of R, preceded by the copy of P (past copies of ``skipped``)?"""
        if r is None or recs[j].digest != r.digest:
            return False
        return preceded_by(recs, j, p, skipped)  # False when P' lies before the window: unproven here

    aligned = _aligned_from_sync(syncs[i], r, p, source, recs, r.offset + 1 if r is not None else reach, max_scan)
    if aligned is not None:
        method = TranslationMethod.VERIFIED_DELTA if aligned == candidate else TranslationMethod.VERIFIED_SEARCH
        what = f"source {r.offset}" if r is not None else "the source end"
        return Translation(
            aligned,
            method,
            f"the records from sync {u}->{d} agree one by one on both sides up to {what}: target {aligned}"
            + _skipped_note(skipped),
            candidate,
        )
    if r is not None:
        at = _first_at_or_after(recs, candidate)
        if at is not None and proves(at):
            return Translation(
                recs[at].offset,
                TranslationMethod.VERIFIED_DELTA,
                f"record at source {r.offset} found at target {recs[at].offset} (downstream + delta)"
                + _skipped_note(skipped),
                candidate,
            )
        first = _first_at_or_after(recs, d) or 0
        for j in range(first, len(recs)):
            if proves(j):
                return Translation(
                    recs[j].offset,
                    TranslationMethod.VERIFIED_SEARCH,
                    f"record at source {r.offset} found at target {recs[j].offset} by search; "
                    f"downstream + delta ({candidate}) was wrong" + _skipped_note(skipped),
                    candidate,
                )
    # Caught up (no R), or R not replicated yet: just after P' (and any copies of the aborted records after
    # P), if that is the end of the target.
    if p is not None and not truncated and hi >= target_bounds.end and preceded_by(recs, len(recs), p, skipped):
        end = recs[-1].offset + 1
        method = TranslationMethod.VERIFIED_DELTA if end == candidate else TranslationMethod.VERIFIED_SEARCH
        what = "the source end" if r is None else f"source {r.offset}, not replicated yet"
        return Translation(
            end,
            method,
            f"last consumed record (source {p.offset}) ends the target ({recs[-1].offset}); position after it "
            f"({what})" + _skipped_note(skipped),
            candidate,
        )
    return fallback("no target record matched the source record at the committed offset")


def _skipped_note(skipped: Sequence[Digested]) -> str:
    return f"; {len(skipped)} aborted record(s) before it on the source" if skipped else ""


def _aligned_from_sync(
    sync: Sync,
    r: Digested | None,
    p: Digested | None,
    source: RecordSource,
    target_window: Sequence[Digested],
    stop: int,
    max_scan: int,
) -> int | None:
    """The target position by counting records from the sync: MM2 copies every record it reads in order, so
    the source records from the sync's upstream offset and the target records from its downstream offset pair
    up one by one (``align``: an aborted record may have no copy). Proven when every committed record on the
    way agrees (so runs of identical records cannot mislead a search); None when they do not, or the target
    does not hold them all yet (the caller's other proofs then apply). ``stop`` ends the source records read:
    just after R, or (no R) the end of what was read past the committed offset."""
    if stop - sync.upstream > max_scan:
        return None
    ours = source.read(sync.upstream, stop)
    if not ours or ours[0].offset != sync.upstream:
        return None
    last = next((x for x in reversed(ours) if not x.aborted), None)
    if r is not None and last != r:
        return None
    # No R: the records read end with P, or the sync names an aborted record after P (MM2 copied it).
    if r is None and (p is None or (last != p if last is not None else p.offset > sync.upstream)):
        return None
    start = bisect.bisect_left([x.offset for x in target_window], sync.downstream)
    theirs = target_window[start:]
    if not theirs or theirs[0].offset != sync.downstream:
        return None
    pairs = align(ours, theirs)
    if not pairs or pairs[0] != (0, 0):
        return None
    if r is not None:
        return next(theirs[j].offset for i, j in pairs if ours[i] == r)
    return theirs[pairs[-1][1]].offset + 1
