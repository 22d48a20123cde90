"""Every group type of a pair's two clusters, for an inspection: the types of all groups, and the share and
streams groups' positions as the committed offsets' columns.

librdkafka lists only classic and consumer groups, and MirrorMaker 2 never checkpoints share or streams groups
(Kafka 4.2+), so an inspection that stopped at librdkafka would not show them at all. The Java AdminClient
(``core.kafka.group_admin``) lists every type on both clusters in the background while the rest of the admin state is
read, and reads the share groups' start offsets and the streams groups' committed offsets in one batch per
cluster. A share group's position becomes its row's ``committed_offset``: the classification then translates it
like any group's and gives it the ``not_checkpointed`` status (``inspector.statuses``).

A live session (the exporter, ``inspect --watch``) keeps a ``GroupListings``: each cluster's Java client, one
long-lived JVM that answers every run's calls while the cluster hosts share or streams groups, so no run starts
a process; and each cluster's listing, which it reuses for ``LISTING_TTL_S`` when it held no share or streams
group: the listing is then off the run's critical path, and the cluster's JVM is ended until the listing is
read again, on that slower clock. Only the share and streams groups' names, types and states come from the
listing alone; the classic and consumer groups' types come from librdkafka's own listing, read every run,
wherever it names them. So a reused listing changes no row of theirs, and a share or streams group created
since shows up at most ``LISTING_TTL_S`` (plus one interval) later. A listing that held a share or streams group
is never reused, as their rows take their state from it.

When that client cannot run (no JDK, no Maven or no reach to Maven Central on its first run) the inspection
goes on without share and streams groups and says so (``note``); on a cluster too old for a type the type is
simply absent.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import pyarrow as pa

from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.kafka.admin import TP, GroupDescription, ItemError, KafkaAdmin
from mm2ctl.core.kafka.group_admin import UNMIRRORED_TYPES, GroupAdmin, TypedGroup
from mm2ctl.core.kafka.share_state_topic import SHARE_STATE_TOPIC, ShareStateLog, share_positions
from mm2ctl.inspector.reads.committed_offsets import OFFSETS_SCHEMA, WRITTEN_BY, GroupOffsetColumns

#: ``GroupOffsetColumns.read_through`` of the share and streams groups' positions.
JAVA_ADMIN = "java-admin"
#: How long a live session reuses a cluster's listing that held no share or streams group (module docstring).
LISTING_TTL_S = 60.0


class GroupListings:
    """What a live session keeps of the Java client between runs, per cluster (its alias and client settings):
    the client itself, one long-lived JVM that answers every run's calls (``admin``; ``close`` ends them), and
    each listing, reused for ``ttl_s`` from when it was read if it held no share or streams group."""

    def __init__(self, ttl_s: float = LISTING_TTL_S, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl_s = ttl_s
        self._clock = clock
        self._kept: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[float, list[TypedGroup]]] = {}
        self._admins: dict[tuple[str, tuple[tuple[str, str], ...]], GroupAdmin] = {}
        self._share_logs: dict[tuple[str, tuple[tuple[str, str], ...]], ShareStateLog] = {}
        self._lock = threading.Lock()

    def share_log(self, alias: str, settings: Mapping[str, str]) -> ShareStateLog:
        """The cluster's ``__share_group_state`` as read so far: each run extends it with what is new."""
        key = self._key(alias, settings)
        with self._lock:
            return self._share_logs.setdefault(key, ShareStateLog())

    def admin(self, alias: str, settings: Mapping[str, str], timeout_s: float) -> GroupAdmin:
        """The cluster's long-lived client, made on first use."""
        key = self._key(alias, settings)
        with self._lock:
            if key not in self._admins:
                self._admins[key] = GroupAdmin(settings, alias, timeout_s=timeout_s, keep_alive=True)
            return self._admins[key]

    def jvm_starts(self) -> int:
        """How many JVMs the kept clients started, all clusters together."""
        with self._lock:
            return sum(a.jvm_starts for a in self._admins.values())

    def close(self) -> None:
        """End the kept clients' JVMs."""
        with self._lock:
            admins, self._admins = list(self._admins.values()), {}
        for admin in admins:
            admin.close()

    @staticmethod
    def _key(alias: str, settings: Mapping[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
        return alias, tuple(sorted(settings.items()))

    def now(self) -> float:
        return self._clock()

    def fresh(self, alias: str, settings: Mapping[str, str]) -> list[TypedGroup] | None:
        """The kept listing of the cluster while it is younger than the TTL, else None."""
        with self._lock:
            kept = self._kept.get(self._key(alias, settings))
        if kept is None or self._clock() - kept[0] >= self._ttl_s:
            return None
        return kept[1]

    def keep(self, alias: str, settings: Mapping[str, str], read_at: float, listing: list[TypedGroup]) -> None:
        """Keep ``listing``, read at ``read_at`` (the clock's), unless it holds a share or streams group. A
        cluster without either needs its client only when the listing is read again: its JVM is ended until
        then, so the session holds no idle JVM for it."""
        if any(g.type in UNMIRRORED_TYPES for g in listing):
            return
        key = self._key(alias, settings)
        with self._lock:
            self._kept[key] = (read_at, listing)
            idle = self._admins.get(key)
        if idle is not None:
            idle.close()

    def jvms_running(self) -> int:
        """How many of the kept clients' JVMs are up."""
        with self._lock:
            return sum(a.jvm_running for a in self._admins.values())


class TypedGroups:
    """The group types of one pair's clusters: the source's listed in the background from construction on, the
    target's only when asked for (an inspection needs it only when the source has share or streams groups)."""

    def __init__(
        self,
        config: MM2Config,
        pair: PairConfig,
        pool: ThreadPoolExecutor,
        *,
        timeout_s: float = 60.0,
        listings: GroupListings | None = None,
    ) -> None:
        self._settings = {alias: config.client_settings(alias, pair.name) for alias in (pair.source, pair.target)}
        self._admins = {
            alias: listings.admin(alias, settings, timeout_s)
            if listings is not None
            else GroupAdmin(settings, alias, timeout_s=timeout_s)
            for alias, settings in self._settings.items()
        }
        self._pool = pool
        self._pair = pair
        self._listings = listings
        self._listed: dict[str, Future[list[TypedGroup]]] = {pair.source: self._list(pair.source)}
        self._notes: list[str] = []
        self._share_details: dict[str, dict[tuple[str, str, int], tuple[int, int]]] = {}

    def _list(self, alias: str) -> Future[list[TypedGroup]]:
        """The listing of ``alias``: the kept one while it is fresh, else read in the background (and kept)."""
        kept = self._listings.fresh(alias, self._settings[alias]) if self._listings is not None else None
        if kept is not None:
            done: Future[list[TypedGroup]] = Future()
            done.set_result(kept)
            return done
        return self._pool.submit(self._read_listing, alias)

    def _read_listing(self, alias: str) -> list[TypedGroup]:
        read_at = self._listings.now() if self._listings is not None else 0.0
        listing = self._admins[alias].list_groups()
        if self._listings is not None:
            self._listings.keep(alias, self._settings[alias], read_at, listing)
        return listing

    def listed(self, alias: str) -> dict[str, TypedGroup]:
        """Every group on ``alias`` by name, with its type and state (empty when the listing failed)."""
        if alias not in self._listed:
            self._listed[alias] = self._list(alias)
        try:
            return {g.group: g for g in self._listed[alias].result()}
        except Mm2ctlError as exc:
            note = f"share and streams groups on {alias} were not looked for: {exc}"
            if note not in self._notes:
                self._notes.append(note)
            return {}

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self._notes)

    def unmirrored(self, alias: str, wanted: Callable[[str], bool]) -> dict[str, str]:
        """The share and streams groups on ``alias`` that ``wanted`` keeps, name -> type."""
        return {name: g.type for name, g in self.listed(alias).items() if g.type in UNMIRRORED_TYPES and wanted(name)}

    def positions(
        self, alias: str, groups: Mapping[str, str], kafka_admin: KafkaAdmin | None = None
    ) -> GroupOffsetColumns:
        """The positions of ``groups`` (name -> type) on ``alias`` as committed-offset columns, in ``groups``'
        order: a share group's position in its share-partition state (``share_positions``; its start offsets
        where the state cannot be read, or without ``kafka_admin``), a streams group's committed offsets. A
        failed read is every group's error."""
        names = tuple(groups)
        if not names:
            return columns_of(names, {}, {})
        try:
            read = self._admins[alias].positions(groups)
        except Mm2ctlError as exc:
            failed = ItemError("UNKNOWN", str(exc))
            return columns_of(names, {}, {g: failed for g in names})
        offsets = {g: read[g].offsets for g in names}
        starts = {g: offsets[g] for g in names if groups[g] == "share" and read[g].error is None}
        if starts and kafka_admin is not None:
            offsets.update(self.share_positions(alias, starts, kafka_admin))
        return columns_of(names, offsets, {g: read[g].error for g in names}, {g: read[g].written_by for g in names})

    def share_positions(
        self, alias: str, start_offsets: Mapping[str, Mapping[TP, int]], kafka_admin: KafkaAdmin
    ) -> dict[str, dict[TP, int]]:
        """Share groups' positions on ``alias`` from their state (kept by a live session, extended each run);
        their start offsets, with a note naming the permission, where the state cannot be read."""
        log = self._listings.share_log(alias, self._settings[alias]) if self._listings is not None else ShareStateLog()
        config = self._pair.source_kafka_config if alias == self._pair.source else self._pair.target_kafka_config
        missing = f"share groups on {alias} are shown at their start offsets; reading their state needs READ and "
        missing += f"DESCRIBE on topic {SHARE_STATE_TOPIC}"
        try:
            log.extend(config, kafka_admin)
        except Mm2ctlError as exc:
            self._note(f"the share-partition state on {alias} could not be read ({exc}): {missing}")
            return {g: dict(p) for g, p in start_offsets.items()}
        if not log.read_to:
            self._note(f"topic {SHARE_STATE_TOPIC} is not visible on {alias}: {missing}")
            return {g: dict(p) for g, p in start_offsets.items()}
        read = share_positions(log, kafka_admin, start_offsets)
        details = self._share_details.setdefault(alias, {})
        for g, parts in read.acknowledged_past.items():
            for (t, p), past in parts.items():
                details[(g, t, p)] = (read.start_offsets[g][(t, p)], past)
        return read.positions

    def share_details(self, alias: str) -> dict[tuple[str, str, int], tuple[int, int]]:
        """(group, topic, partition) -> (start offset, records acknowledged past the position) of the share
        groups whose state ``positions`` read on ``alias``."""
        return dict(self._share_details.get(alias, {}))

    def _note(self, note: str) -> None:
        if note not in self._notes:
            self._notes.append(note)

    def describe(self, alias: str, groups: Sequence[str]) -> dict[str, GroupDescription]:
        """The listed state of ``groups`` on ``alias`` (members unknown: the listing does not count them); a
        group the cluster does not list is ``Dead``, as a described absent group is."""
        listed = self.listed(alias) if groups else {}
        return {g: GroupDescription(g, listed[g].state if g in listed else "Dead", 0) for g in groups}


def columns_of(
    groups: tuple[str, ...],
    offsets: Mapping[str, Mapping[TP, int]],
    errors: Mapping[str, ItemError | None],
    written_by: Mapping[str, Mapping[TP, str]] | None = None,
) -> GroupOffsetColumns:
    """Per-group offsets as ``GroupOffsetColumns`` (``OFFSETS_SCHEMA``, sorted by group, topic, partition), with
    the metadata of the offsets mm2ctl wrote (``written_by``)."""
    index: list[int] = []
    topics: list[str] = []
    partitions: list[int] = []
    values: list[int] = []
    metadata: list[str | None] = []
    for i, g in enumerate(groups):
        mine = (written_by or {}).get(g, {})
        for (topic, partition), offset in sorted(offsets.get(g, {}).items()):
            index.append(i)
            topics.append(topic)
            partitions.append(partition)
            values.append(offset)
            metadata.append(mine.get((topic, partition)))
    table = pa.table(
        [
            pa.array(index, pa.int32()),
            pa.array(topics, pa.string()),
            pa.array(partitions, pa.int32()),
            pa.array(values, pa.int64()),
            pa.array(metadata, pa.string()).dictionary_encode().cast(WRITTEN_BY),
        ],
        schema=OFFSETS_SCHEMA,
    )
    return GroupOffsetColumns(groups, tuple(errors.get(g) for g in groups), table, JAVA_ADMIN)


def appended(first: GroupOffsetColumns, second: GroupOffsetColumns) -> GroupOffsetColumns:
    """``second``'s groups after ``first``'s, renumbered; ``first``'s ``read_through``."""
    if not second.groups:
        return first
    shifted = second.table.set_column(
        0,
        OFFSETS_SCHEMA.field("group_index"),
        pa.array((second.table.column("group_index").to_numpy() + len(first.groups)).astype("int32"), pa.int32()),
    )
    table = pa.concat_tables([first.table.cast(OFFSETS_SCHEMA), shifted])
    return GroupOffsetColumns(first.groups + second.groups, first.errors + second.errors, table, first.read_through)
