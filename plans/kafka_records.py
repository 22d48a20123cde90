"""The planners' reads of a flow's offset syncs: every record of its offset-syncs topic in the order MM2 wrote them,
and each source partition's current mapping. (Reading records by offset or time, which ``inspect --exact``
does too, is ``core.translation.record_sources``'.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.core.errors import PlanError
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.kafka.records import RawRecord, read_partitions
from mm2ctl.core.translation.rule import Sync, normalize_syncs
from mm2ctl.plans.live_state import LiveState

__all__ = [
    "decoded_syncs",
    "normalize_each",
    "read_sync_histories",
    "read_syncs",
    "syncs_disabled_note",
]


def read_sync_histories(live: LiveState, flow: PairConfig) -> dict[TP, list[Sync | None]]:
    """Every record still in the flow's offset-syncs topic, per source partition, in the order MM2 wrote them
    (``core.translation.rule.SyncHistory``: a sync, or None for a tombstone; malformed records are skipped, and
    ``inspect`` counts them)."""
    cluster, topic = flow.offset_syncs_cluster, flow.offset_syncs_topic
    if topic not in live.admin(cluster).list_topics():
        raise PlanError(f"the offset-syncs topic {topic} does not exist on {cluster}: has MM2 run for this flow?")
    out: dict[TP, list[Sync | None]] = {}
    for decoded in decoded_syncs(read_partitions(live.kafka_config(cluster), topic, [0])):
        if decoded is not None:
            tp, sync = decoded
            out.setdefault(tp, []).append(sync)
    return out


def decoded_syncs(read: Iterable[RawRecord]) -> list[tuple[TP, Sync | None] | None]:
    """Each offset-sync record of ``read``, in order: its source partition and its sync (None: a tombstone), or
    None for a malformed record. Decoded by the inspection's rule (``inspector.rules.decoding``)."""
    # Arrow is imported here, not at the module's top: a planner that decodes no record starts without it.
    from mm2ctl.inspector.rules import decoding

    table = decoding.decode_offset_syncs_table(decoding.kafka_records(read, cluster_pair=""))
    names = ("topic", "partition", "upstream_offset", "downstream_offset", "is_tombstone", "malformed_reason")
    out: list[tuple[TP, Sync | None] | None] = []
    for topic, partition, up, down, tombstone, reason in zip(
        *(table.column(n).to_pylist() for n in names), strict=True
    ):
        if reason is not None:
            out.append(None)
        else:
            out.append(((topic, partition), None if tombstone else Sync(up, down)))
    return out


def normalize_each(histories: Mapping[TP, list[Sync | None]]) -> dict[TP, list[Sync]]:
    """``normalize_syncs`` of each source partition of ``read_sync_histories``'s result."""
    return {tp: normalize_syncs(v) for tp, v in histories.items()}


def read_syncs(live: LiveState, flow: PairConfig) -> dict[TP, list[Sync]]:
    """The syncs of each source partition's current mapping (``normalize_syncs``), sorted by upstream; none for
    a flow that disables offset syncs (``syncs_disabled_note``), whatever an older run of it left."""
    if not flow.emit_offset_syncs_enabled:
        return {}
    return normalize_each(read_sync_histories(live, flow))


def syncs_disabled_note(flow: PairConfig) -> str | None:
    """What a plan says about a flow that runs with ``emit.offset-syncs.enabled=false`` (KIP-1031): MM2 writes
    no offset syncs for it, so every position comes from the timestamp fallback, proven by content (or from
    the checkpoints MM2 wrote before, ``--from checkpoints``). None for a flow with offset syncs."""
    if flow.emit_offset_syncs_enabled:
        return None
    return (
        f"offset syncs are disabled on {flow.name} (emit.offset-syncs.enabled=false): positions come from the "
        "timestamp fallback, proven by content where the method says timestamp_verified, or from MM2's "
        "checkpoints with --from checkpoints"
    )
