"""Conditions of a flow that are configuration, not faults, and what they change: pure functions over a
flow's settings and, for ``inspect``, what its source topics hold.

- **Offset syncs disabled** (KIP-1031, Kafka 3.9+): ``emit.offset-syncs.enabled=false`` on the source
  connector. MM2 writes no offset syncs; its checkpoint connector refuses to run without them (Kafka 4.3
  refuses ``emit.offset-syncs.enabled=false`` outright: "MirrorCheckpointConnector can't run without offset
  syncs"), so no checkpoints and no group-offset sync either. ``inspect`` reports the flow's rows as
  ``offset_syncs_disabled``, not as missing syncs, and ``plan failover`` translates by record timestamps,
  proven by content, or from checkpoints written before the change.
- **MM2 copies aborted transactions**: its source consumer reads uncommitted records (Kafka's default
  ``isolation.level``), so the records of aborted transactions on the source reach the target as ordinary
  records, which a ``read_committed`` consumer there reads and no consumer of the source ever saw.
  ``config show`` names the setting that fixes it; ``inspect`` reports it when a sample of the source
  topics shows transactions (``core.kafka.transactional_data``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from mm2ctl.core.config.mm2_config import READ_COMMITTED, MM2Config, PairConfig
from mm2ctl.core.kafka.transactional_data import TransactionSample


class Condition(StrEnum):
    OFFSET_SYNCS_DISABLED = "offset_syncs_disabled"
    #: The source consumer reads uncommitted records: aborted records would be copied (``config show``).
    READS_UNCOMMITTED = "reads_uncommitted"
    #: The same, and the source topics hold transactions (``inspect``).
    COPIES_ABORTED_RECORDS = "copies_aborted_records"
    #: The same, and the source topics could not be sampled (``inspect``: a denied read, an unreachable broker).
    NOT_SAMPLED = "not_sampled"


@dataclass(frozen=True, slots=True)
class FlowCondition:
    """One condition of one flow: what it is, in words a user can act on, and what it concerns (the topics
    and the cluster, as ``inspect``'s note lines name them)."""

    flow: str
    condition: Condition
    message: str
    topic: str
    cluster: str


def isolation_fix(config: MM2Config, pair: PairConfig) -> str:
    """The setting that makes MM2 copy committed records only, spelled for the shape the setup was given in."""
    key = "source.consumer.isolation.level"
    if config.shape == "connect":
        where = f"set {key}={READ_COMMITTED} in the config of {pair.name}'s MirrorSourceConnector"
    elif config.shape == "resource":
        where = f"set {key}: {READ_COMMITTED} in the sourceConnector.config of the {pair.name} mirror"
    else:
        where = f"set {pair.name}.{key} = {READ_COMMITTED} (or {pair.source}.consumer.isolation.level)"
    level, origin = pair.source_isolation
    now = f"its isolation.level is {level} ({origin})"
    override, override_origin = config.flow_setting(pair.name, "consumer.override.isolation.level")
    if override is not None:
        # Tried on the lab (Kafka 4.3.1): MM2 still copied aborted records with it set to read_committed.
        now += (
            f"; consumer.override.isolation.level ({override_origin}) does not reach it: Connect gives it to the "
            "worker's own consumers"
        )
    return f"{now}; {where}"


def _offset_syncs_disabled(config: MM2Config, pair: PairConfig) -> FlowCondition:
    _value, origin = config.flow_setting(pair.name, "emit.offset-syncs.enabled")
    return FlowCondition(
        pair.name,
        Condition.OFFSET_SYNCS_DISABLED,
        f"offset syncs disabled: emit.offset-syncs.enabled = false ({origin}). MM2 writes no offset syncs and "
        "its checkpoint connector cannot run without them (no checkpoints, no group-offset sync); plan failover "
        "translates this flow by record timestamps, proven by content, or --from checkpoints written before",
        pair.offset_syncs_topic,
        pair.offset_syncs_cluster,
    )


def configured_conditions(config: MM2Config, pair: PairConfig) -> list[FlowCondition]:
    """What the flow's settings alone say (``config show``)."""
    out = []
    if not pair.emit_offset_syncs_enabled:
        out.append(_offset_syncs_disabled(config, pair))
    if pair.copies_aborted_records:
        out.append(
            FlowCondition(
                pair.name,
                Condition.READS_UNCOMMITTED,
                f"MM2's source consumer reads uncommitted records: if topics on {pair.source} hold transactions, "
                f"it copies the records of aborted ones to {pair.target} as ordinary records (mm2ctl inspect "
                f"checks the topics); {isolation_fix(config, pair)}",
                "(every replicated topic)",
                pair.source,
            )
        )
    return out


def needs_sample(pair: PairConfig) -> bool:
    """Whether ``inspect`` should sample the flow's source topics for transactions."""
    return pair.copies_aborted_records


def observed_conditions(
    config: MM2Config, pair: PairConfig, samples: Sequence[TransactionSample], *, sample_error: str | None = None
) -> list[FlowCondition]:
    """What ``inspect`` reports about the flow: its settings, and whether MM2 copies aborted transactions of
    topics a sample showed to be transactional (``samples``: the flow's source partitions; ``sample_error``:
    why they could not be sampled)."""
    out = []
    if not pair.emit_offset_syncs_enabled:
        out.append(_offset_syncs_disabled(config, pair))
    if pair.copies_aborted_records and sample_error is not None:
        out.append(
            FlowCondition(
                pair.name,
                Condition.NOT_SAMPLED,
                f"MM2's source consumer reads uncommitted records, and whether the topics hold transactions could "
                f"not be checked ({sample_error}): if they do, MM2 copies the records of aborted ones to "
                f"{pair.target}; {isolation_fix(config, pair)}",
                "(every replicated topic)",
                pair.source,
            )
        )
    transactional = [s for s in samples if s.transactional]
    if pair.copies_aborted_records and transactional:
        topics = sorted({s.topic for s in transactional})
        aborted = sum(s.aborted_records for s in transactional)
        seen = (
            f"{aborted} record(s) of aborted transactions in the last offsets of {len(transactional)} partition(s)"
            if aborted
            else f"transaction markers in the last offsets of {len(transactional)} partition(s)"
        )
        out.append(
            FlowCondition(
                pair.name,
                Condition.COPIES_ABORTED_RECORDS,
                f"holds transactions ({seen}), and MM2 copies the records of aborted transactions to "
                f"{pair.target} as ordinary records, which a read_committed consumer there reads; "
                f"{isolation_fix(config, pair)}",
                ", ".join(topics),
                pair.source,
            )
        )
    return out


__all__ = [
    "Condition",
    "FlowCondition",
    "configured_conditions",
    "isolation_fix",
    "needs_sample",
    "observed_conditions",
]
