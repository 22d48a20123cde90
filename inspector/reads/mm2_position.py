"""MM2's replication position per source partition: the next upstream offset MirrorSourceConnector copies.

MirrorSourceConnector stores, per source partition, the last upstream offset it copied (docs/design.md, "MM2's
position"); the next one it copies is that plus one. Where the position is read from, in order:

1. a Connect worker (``--connect-url``) with ``GET /connectors/{c}/offsets`` (Kafka 3.5+): the flow's
   MirrorSourceConnector, found by class and cluster aliases, read over REST;
2. an older worker: the same connector's records in the worker's offsets topic (``connect-offsets``), on
   the cluster whose id the worker reports, read as the reset planners read it (``core.kafka.connect_offsets_topic``);
3. no worker: dedicated-mode MM2 (``connect-mirror-maker.sh``), whose offsets topic is
   ``mm2-offsets.<source>.internal`` on the target and whose connector is named ``MirrorSourceConnector``.

A position that cannot be read says why (``Mm2Position.reason``): no way to reach it is not a failure of
the inspection (``unknown``), a way that failed is (``failed``), and the rows say so.

The worker's stored position trails what MM2 has copied by up to one offset flush
(``offset.flush.interval.ms``): it is what MM2 resumes from after a restart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config.connector_names import DEDICATED_NAMES, connectors_by_role, next_offsets_to_copy
from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.core.kafka.connect_offsets_topic import latest_offsets, live_offsets
from mm2ctl.core.security.redaction import redact_text

#: The offsets topic a Connect worker uses unless its ``offset.storage.topic`` says otherwise (not readable
#: over REST): the reset planners' default too.
WORKER_OFFSETS_TOPIC = "connect-offsets"


@dataclass(frozen=True, slots=True)
class Mm2Position:
    """MM2's next offset to copy per (source topic, partition), and where it was read, or why not.

    ``next_offsets`` is None when the position is not known. A partition absent from a known position has no
    stored offset: MM2 has copied nothing of it yet.
    """

    pair: str
    next_offsets: Mapping[tuple[str, int], int] | None = field(default=None)
    read_from: str | None = None
    #: Why the position is not known (None when it is).
    reason: str | None = None
    #: True when a way to read it was given and failed (a problem); False when there was no way at all.
    failed: bool = False

    @property
    def known(self) -> bool:
        return self.next_offsets is not None


def _unknown(pair: PairConfig, reason: str, *, failed: bool) -> Mm2Position:
    return Mm2Position(pair=pair.name, reason=reason, failed=failed)


def _from_topic(
    pair: PairConfig, kafka_config: Mapping[str, str], cluster: str, topic: str, connector: str, *, timeout_s: float
) -> Mm2Position:
    stored = live_offsets(latest_offsets(kafka_config, topic, connector, timeout_s=timeout_s))
    entries = [(s.source_partition, s.source_offset) for s in stored]
    return Mm2Position(
        pair=pair.name,
        next_offsets=next_offsets_to_copy(entries, pair.source),
        read_from=f"{connector}'s records in {topic} on {cluster}",
    )


def _worker_offsets_cluster(config: MM2Config, worker_cluster_id: str | None, *, timeout_s: float) -> str | None:
    """The alias of the MM2 file's cluster the worker keeps its offsets on (the one with its cluster id)."""
    if not worker_cluster_id:
        return None
    for alias in sorted(config.clusters):
        admin = KafkaAdmin.connect(config.kafka_config(alias), name=alias, timeout_s=timeout_s)
        if admin.cluster_id() == worker_cluster_id:
            return alias
    return None


def _from_worker(config: MM2Config, pair: PairConfig, connect: ConnectClient, *, timeout_s: float) -> Mm2Position:
    configs = {
        name: overview.info.config if overview.info is not None else {}
        for name, overview in connect.list_connectors().items()
    }
    names = connectors_by_role(configs, pair.source, pair.target, ["source"]).get("source", [])
    if not names:
        return _unknown(pair, f"no MirrorSourceConnector for {pair.name} on the Connect worker", failed=True)
    if len(names) > 1:
        return _unknown(pair, f"more than one MirrorSourceConnector for {pair.name}: {names}", failed=True)
    name = names[0]
    if connect.supports_offsets_read():
        got = connect.get_offsets(name)
        entries = [(o.partition, o.offset) for o in got.offsets]
        return Mm2Position(
            pair=pair.name,
            next_offsets=next_offsets_to_copy(entries, pair.source),
            read_from=f"GET /connectors/{name}/offsets",
        )
    info = connect.server_info()
    cluster = _worker_offsets_cluster(config, info.kafka_cluster_id, timeout_s=timeout_s)
    if cluster is None:
        return _unknown(
            pair,
            f"the Connect worker (Kafka {info.version}) has no offsets API, and no cluster of the MM2 file is its "
            f"Kafka cluster ({info.kafka_cluster_id}), where its {WORKER_OFFSETS_TOPIC} topic is",
            failed=True,
        )
    kafka_config = config.kafka_config(cluster)
    existing = KafkaAdmin.connect(kafka_config, name=cluster, timeout_s=timeout_s).list_topics()
    if WORKER_OFFSETS_TOPIC not in existing:
        return _unknown(
            pair,
            f"the Connect worker (Kafka {info.version}) has no offsets API, and {cluster} has no "
            f"{WORKER_OFFSETS_TOPIC} topic",
            failed=True,
        )
    return _from_topic(pair, kafka_config, cluster, WORKER_OFFSETS_TOPIC, name, timeout_s=timeout_s)


def read_position(
    config: MM2Config,
    pair: PairConfig,
    connect: ConnectClient | None,
    *,
    target_topics: frozenset[str] | None = None,
    timeout_s: float = 60.0,
) -> Mm2Position:
    """MM2's position for ``pair``: from the Connect worker when given, else from dedicated MM2's offsets topic.

    ``target_topics`` (the target's topic names, when the caller has them) saves a listing. Never raises for
    a position it cannot read: a Connect or Kafka error becomes the position's ``reason``.
    """
    try:
        if connect is not None:
            return _from_worker(config, pair, connect, timeout_s=timeout_s)
        topic = pair.dedicated_offsets_topic
        if target_topics is None:
            admin = KafkaAdmin.connect(pair.target_kafka_config, name=pair.target, timeout_s=timeout_s)
            target_topics = frozenset(admin.list_topics())
        if topic not in target_topics:
            return _unknown(
                pair,
                f"no --connect-url to read MirrorSourceConnector's offsets from, and no dedicated-mode MM2 offsets "
                f"topic {topic} on {pair.target}",
                failed=False,
            )
        return _from_topic(
            pair, pair.target_kafka_config, pair.target, topic, DEDICATED_NAMES["source"], timeout_s=timeout_s
        )
    except Mm2ctlError as exc:
        return _unknown(pair, f"reading MM2's position failed: {redact_text(str(exc))}", failed=True)
