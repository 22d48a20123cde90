"""Live state as planners and apply read it: one reader, so a fingerprint part means the same thing twice.

A plan's fingerprint is a set of named *parts* (``plans.fingerprint``). The name of each part says what to
read (``connector-state:mm2-x-source``, ``topic-bounds:xsrc:mm2-offset-syncs.xdst.internal:0``), and
``LiveState.read_part`` is the only code that turns a name into a value. The planner computes its parts
through it; apply re-reads exactly the part names the plan recorded through it. A change in how state is
read therefore cannot make a fresh plan look stale, or a stale one look fresh.

Part names are ``<kind>:<field>:<field>...`` with every field percent-encoded, so a connector or topic name
containing ``:`` cannot be mistaken for two fields.

Everything a part holds is redacted before it is hashed (connector configs carry secrets).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NoReturn
from urllib.parse import quote, unquote

from mm2ctl.connect_client import ConnectClient, ConnectorStatus, ServerInfo, build_connect_client
from mm2ctl.core.config.mm2_config import MM2Config, load_mm2_config
from mm2ctl.core.errors import ConfigError, ConnectNotFoundError, Mm2ctlError, UnhostedGroupTypeError
from mm2ctl.core.kafka.admin import TP, GroupDescription, GroupOffsets, KafkaAdmin, PartitionResult
from mm2ctl.core.kafka.connect_offsets_topic import StoredOffset, latest_offsets, live_offsets
from mm2ctl.core.kafka.group_admin import UNMIRRORED_TYPES, GroupAdmin, TypedGroup
from mm2ctl.core.kafka.share_state_topic import SHARE_STATE_TOPIC, SharePositions, ShareStateLog, share_positions
from mm2ctl.core.security.authorization import principal_of, raise_for
from mm2ctl.core.security.redaction import redact_json
from mm2ctl.plans.fingerprint import Fingerprint, JSONable, canonical_json, fingerprint_of

# ------------------------------------------------------------------------------------------- part names


def _name(kind: str, *fields: str | int) -> str:
    return ":".join([kind, *(quote(str(f), safe="") for f in fields)])


def part_connector_state(connector: str) -> str:
    return _name("connector-state", connector)


def part_connector_offsets(connector: str) -> str:
    return _name("connector-offsets", connector)


def part_connector_config(connector: str) -> str:
    return _name("connector-config", connector)


def part_stored_offsets(cluster: str, topic: str, connector: str) -> str:
    return _name("stored-offsets", cluster, topic, connector)


def part_topic_bounds(cluster: str, topic: str, partition: int) -> str:
    return _name("topic-bounds", cluster, topic, partition)


def part_group_members(cluster: str, group: str) -> str:
    return _name("group-members", cluster, group)


def part_group_offsets(cluster: str, group: str) -> str:
    return _name("group-offsets", cluster, group)


def part_share_offsets(cluster: str, group: str) -> str:
    """A share group's start offsets (read through ``core.kafka.group_admin``)."""
    return _name("share-offsets", cluster, group)


def part_positions(cluster: str, group: str, group_type: str) -> str:
    """The part holding a group's positions: its start offsets for a share group, else its committed offsets."""
    return part_share_offsets(cluster, group) if group_type == "share" else part_group_offsets(cluster, group)


def parse_part(name: str) -> tuple[str, list[str]]:
    kind, _, rest = name.partition(":")
    return kind, [unquote(f) for f in rest.split(":")] if rest else []


# ------------------------------------------------------------------------------------------- values


def offsets_json(offsets: Iterable[Any]) -> list[dict[str, Any]]:
    """KIP-875 offsets as sorted plain JSON, so two reads of the same offsets compare equal."""
    out = [o.to_json() if hasattr(o, "to_json") else dict(o) for o in offsets]
    return sorted(out, key=lambda o: canonical_json(o["partition"]))


def stored_json(stored: Iterable[StoredOffset]) -> list[dict[str, Any]]:
    """Offsets-topic records as JSON: partition, exact key bytes, exact value bytes (base64)."""
    return [
        {
            "partition": s.partition,
            "key_b64": base64.b64encode(s.key).decode("ascii"),
            "value_b64": None if s.value is None else base64.b64encode(s.value).decode("ascii"),
        }
        for s in stored
    ]


@dataclass(frozen=True, slots=True)
class TopicBounds:
    start: int
    end: int


# ------------------------------------------------------------------------------------------- reader


@dataclass
class LiveState:
    """Reads clusters (by MM2 alias) and the Connect worker. Clients are passed in or built lazily.

    ``connect`` is None for dedicated-mode MM2, which has no REST API.
    """

    mm2: MM2Config
    connect: ConnectClient | None
    admin_factory: Callable[[Mapping[str, str], str], KafkaAdmin] = field(
        default=lambda conf, name: KafkaAdmin.connect(conf, name=name)
    )
    _admins: dict[str, KafkaAdmin] = field(default_factory=dict, repr=False)
    #: The share and streams groups met so far, by cluster alias: ``core.kafka.group_admin`` reads and writes them
    #: (librdkafka knows neither type). A group not named here is a classic or consumer group. Filled by
    #: ``inspector.reads.typed_groups`` (a planner's listing), ``note_group_type`` (apply, from each
    #: ``GroupTarget.group_type``) and the ``share-offsets`` fingerprint parts.
    group_types: dict[str, dict[str, str]] = field(default_factory=dict, repr=False)
    _group_admins: dict[str, GroupAdmin] = field(default_factory=dict, repr=False)
    _listings: dict[str, Future[list[TypedGroup]]] = field(default_factory=dict, repr=False)
    #: The share groups' positions of the last read on each cluster (``share_group_positions``), and why a
    #: cluster's share-partition state could not be read.
    share_reads: dict[str, SharePositions] = field(default_factory=dict, repr=False)
    share_state_notes: dict[str, str] = field(default_factory=dict, repr=False)

    # -- clients
    def kafka_config(self, alias: str) -> dict[str, str]:
        """confluent-kafka settings for cluster ``alias`` (may hold secrets: never log or store them)."""
        if alias not in self.mm2.clusters:
            where = self.mm2.source.describe() if self.mm2.source is not None else self.mm2.path
            raise ConfigError(f"cluster alias {alias!r} is not in {where} (clusters: {', '.join(self.mm2.clusters)})")
        return self.mm2.kafka_config(alias)

    def admin(self, alias: str) -> KafkaAdmin:
        if alias not in self._admins:
            self._admins[alias] = self.admin_factory(self.kafka_config(alias), alias)
        return self._admins[alias]

    def group_admin(self, alias: str) -> GroupAdmin:
        """The Java AdminClient's group calls on cluster ``alias`` (``core.kafka.group_admin``)."""
        if alias not in self._group_admins:
            self.kafka_config(alias)  # the alias check
            self._group_admins[alias] = GroupAdmin(self.mm2.client_settings(alias), alias)
        return self._group_admins[alias]

    def start_listing(self, alias: str) -> None:
        """Start listing every group type on ``alias`` in the background (a JVM's start, about half a second),
        for the ``inspector.reads.typed_groups`` call a planner makes later; the planner reads other state meanwhile."""
        if alias not in self._listings:
            admin = self.group_admin(alias)
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"groups-{alias}")
            self._listings[alias] = pool.submit(admin.list_groups)
            pool.shutdown(wait=False)

    def typed_groups(self, alias: str) -> list[TypedGroup]:
        """Every group of every type on ``alias``; its share and streams groups are noted (``group_types``)."""
        started = self._listings.pop(alias, None)
        listed = started.result() if started is not None else self.group_admin(alias).list_groups()
        for g in listed:
            self.note_group_type(alias, g.group, g.type)
        return listed

    def all_groups(self, alias: str) -> tuple[list[TypedGroup], str | None]:
        """Every group on ``alias`` with its type: classic and consumer groups as librdkafka lists them, share
        and streams groups from the Java AdminClient. When that client fails (no JDK, no Maven or no reach to
        Maven Central on its first run, settings only librdkafka takes), the second item says so and those
        groups are missing."""
        listed = [TypedGroup(g.group, "unknown", g.state) for g in self.admin(alias).list_groups()]
        try:
            typed = self.typed_groups(alias)
        except Mm2ctlError as exc:  # the classic and consumer groups are still right: say what is missing
            return listed, f"share and streams groups on {alias} were not looked for: {exc}"
        known = {g.group for g in listed}
        by_name = {g.group: g for g in typed}
        out = [by_name.get(g.group, g) for g in listed]
        out += [g for g in typed if g.group not in known and g.type in UNMIRRORED_TYPES]
        return sorted(out, key=lambda g: g.group), None

    def require_hosted(self, cluster: str, groups: Iterable[str]) -> None:
        """Refuse (``UnhostedGroupTypeError``) when a share or streams group of ``groups`` (as noted on
        ``cluster``) would move to ``cluster`` and ``cluster`` is too old for its type."""
        types = {g: self.group_type(cluster, g) for g in groups if self.group_type(cluster, g)}
        if not types:
            return
        hosted = self.group_admin(cluster).hosts(types.values())
        unhosted = sorted(g for g, t in types.items() if t not in hosted)
        if unhosted:
            kinds = ", ".join(sorted({types[g] for g in unhosted}))
            raise UnhostedGroupTypeError(
                f"{cluster} cannot host the {kinds} group(s) {', '.join(unhosted)}: share and streams groups need "
                "Kafka 4.2 or later there"
            )

    def note_group_type(self, cluster: str, group: str, group_type: str) -> None:
        if group_type in UNMIRRORED_TYPES:
            self.group_types.setdefault(cluster, {})[group] = group_type

    def group_type(self, cluster: str, group: str) -> str:
        """``share`` or ``streams`` for a group noted as one, else ``""`` (classic or consumer)."""
        return self.group_types.get(cluster, {}).get(group, "")

    def require_connect(self) -> ConnectClient:
        if self.connect is None:
            raise ConfigError("this needs the Connect REST API: pass --connect-url (or set MM2CTL_CONNECT_URL)")
        return self.connect

    # -- clusters
    def cluster_ids(self, aliases: Iterable[str]) -> dict[str, str]:
        return {a: self.admin(a).cluster_id() for a in sorted(set(aliases))}

    def server_info(self) -> ServerInfo:
        return self.require_connect().server_info()

    # -- connectors
    def connector_status(self, name: str) -> ConnectorStatus | None:
        """The status, or None when no such connector exists."""
        try:
            return self.require_connect().status(name)
        except ConnectNotFoundError:
            return None

    def connector_state(self, name: str) -> str | None:
        status = self.connector_status(name)
        return None if status is None else status.state

    def connector_config(self, name: str) -> dict[str, str] | None:
        """The live config with secrets in clear: for apply's in-memory use only, never stored."""
        try:
            return self.require_connect().config(name)
        except ConnectNotFoundError:
            return None

    def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        """``GET /connectors/{c}/offsets`` as sorted JSON ([] for an unknown connector).

        A partition listed with a null offset has none: right after ``DELETE …/offsets`` a worker can still
        list the deleted partitions that way for a moment, so they are dropped here, where every reader
        (planners, preconditions, fingerprints) sees them the same way."""
        try:
            got = offsets_json(self.require_connect().get_offsets(name))
        except ConnectNotFoundError:
            return []
        return [o for o in got if o.get("offset") is not None]

    def stored_offsets(self, cluster: str, topic: str, connector: str) -> list[StoredOffset]:
        """The live (non-tombstoned) records of ``connector`` in an offsets topic, exact bytes."""
        return live_offsets(latest_offsets(self.kafka_config(cluster), topic, connector))

    def all_stored_offsets(self, cluster: str, topic: str, connector: str) -> list[StoredOffset]:
        """Like ``stored_offsets`` but keeps keys whose newest record is a tombstone."""
        return latest_offsets(self.kafka_config(cluster), topic, connector)

    # -- topics and groups
    def _failed(self, cluster: str, code: str | None, message: str, resource: str, name: str) -> NoReturn:
        """A failed read: the one-line denial when the broker refused this principal, else ``message``."""
        principal = principal_of(self.kafka_config(cluster))
        raise_for(
            code, message, principal=principal, operation="DESCRIBE", resource_type=resource, name=name, cluster=cluster
        )

    def topic_bounds(self, cluster: str, topic: str, partition: int) -> TopicBounds:
        bounds = self.admin(cluster).partition_bounds([(topic, partition)])[(topic, partition)]
        if bounds.error is not None or bounds.earliest is None or bounds.latest is None:
            err = bounds.error
            self._failed(
                cluster,
                err.code if err else None,
                f"cannot read the offsets of {cluster}:{topic}/{partition}: {err.message if err else '?'}",
                "topic",
                topic,
            )
        return TopicBounds(bounds.earliest, bounds.latest)

    def describe_groups(self, cluster: str, groups: Sequence[str]) -> dict[str, GroupDescription]:
        """State and member count of ``groups``, each through the client that knows its type. A share or
        streams group that does not exist (or a cluster older than its type) has no members."""
        typed = {g: self.group_type(cluster, g) for g in groups if self.group_type(cluster, g)}
        rest = [g for g in groups if g not in typed]
        out = self.admin(cluster).describe_groups(rest) if rest else {}
        shapes = self.group_admin(cluster).describe(typed) if typed else {}
        for g in typed:
            shape = shapes.get(g)
            if shape is None or (shape.error is not None and shape.error.code == "GROUP_ID_NOT_FOUND"):
                out[g] = GroupDescription(g, "Dead", 0)
            else:
                out[g] = GroupDescription(g, shape.state, shape.members, shape.error)
        return out

    def group_members(self, cluster: str, group: str) -> int:
        desc = self.describe_groups(cluster, [group])[group]
        if desc.error is not None and "not a consumer group" in desc.error.message:
            desc = self.admin(cluster).describe_worker_group(group)  # Connect / dedicated MM2 workers
        if desc.error is not None:
            self._failed(
                cluster,
                desc.error.code,
                f"cannot describe group {group} on {cluster}: {desc.error.message}",
                "group",
                group,
            )
        return desc.members

    def group_offsets(self, cluster: str, group: str) -> dict[tuple[str, int], int]:
        """The group's committed offsets ({} for a group that has none or does not exist)."""
        return self.many_group_offsets(cluster, [group])[group]

    def many_group_offsets(
        self, cluster: str, groups: Iterable[str], *, concurrency: int | None = None
    ) -> dict[str, dict[tuple[str, int], int]]:
        """``group_offsets`` of many groups, read concurrently (a failover plan names thousands) through
        librdkafka (``KafkaAdmin.committed_offsets``); at most ``concurrency`` requests in flight (the admin
        facade's default when None)."""
        wanted = list(dict.fromkeys(groups))
        shares = {g: "share" for g in wanted if self.group_type(cluster, g) == "share"}
        rest = [g for g in wanted if g not in shares]
        got: dict[str, GroupOffsets] = {}
        if rest:
            admin = self.admin(cluster)
            got = (
                admin.committed_offsets(rest)
                if concurrency is None
                else admin.committed_offsets(rest, concurrency=concurrency)
            )
        if shares:
            typed = self.group_admin(cluster).positions(shares)
            resumed = self.share_group_positions(cluster, {g: p.offsets for g, p in typed.items() if p.error is None})
            for g, p in typed.items():
                got[g] = GroupOffsets(g, resumed.get(g, p.offsets), p.error)
        out = {}
        for group in wanted:
            r = got[group]
            if r.error is not None and r.error.code not in ("GROUP_ID_NOT_FOUND",):
                self._failed(
                    cluster,
                    r.error.code,
                    f"cannot read the offsets of group {group} on {cluster}: {r.error.message}",
                    "group",
                    group,
                )
            out[group] = dict(r.offsets)
        return out

    def share_group_positions(
        self, cluster: str, start_offsets: Mapping[str, Mapping[TP, int]]
    ) -> dict[str, dict[TP, int]]:
        """Where share groups resume on ``cluster``, from their start offsets and the share-partition state read
        now (``core.kafka.share_state``): the first offset their acknowledgements leave undone. The read is kept
        in ``share_reads`` (the records acknowledged past each position). Where the state cannot be read, the
        start offsets stay and ``share_state_notes`` says why."""
        if not start_offsets:
            return {}
        try:
            log = ShareStateLog()
            log.extend(self.kafka_config(cluster), self.admin(cluster))
            read = share_positions(log, self.admin(cluster), start_offsets)
        except Mm2ctlError as exc:
            self.share_reads.pop(cluster, None)
            self.share_state_notes[cluster] = (
                f"the share-partition state on {cluster} could not be read ({exc}): share groups resume there "
                f"at their start offsets; reading it needs READ and DESCRIBE on topic {SHARE_STATE_TOPIC}"
            )
            return {g: dict(p) for g, p in start_offsets.items()}
        if not log.read_to:  # share groups with offsets have written their state: the topic is hidden
            self.share_state_notes[cluster] = (
                f"topic {SHARE_STATE_TOPIC} is not visible on {cluster}: share groups resume there at their start "
                f"offsets; reading their state needs READ and DESCRIBE on topic {SHARE_STATE_TOPIC}"
            )
            return {g: dict(p) for g, p in start_offsets.items()}
        self.share_state_notes.pop(cluster, None)
        self.share_reads[cluster] = read
        return read.positions

    def write_group_offsets(
        self,
        cluster: str,
        offsets: Mapping[str, Mapping[TP, int]],
        *,
        concurrency: int = 32,
        on_done: Callable[[str, list[PartitionResult]], None] | None = None,
        metadata: Mapping[str, Mapping[TP, str]] | None = None,
    ) -> dict[str, list[PartitionResult]]:
        """Write each group's offsets through its type's call: a share group's start offsets with
        ``alterShareGroupOffsets`` (which keeps no metadata), every other group's committed offsets, with their
        ``metadata`` (``plans.offset_metadata``), in one concurrent batch (Kafka refuses a group with members; that
        comes back per partition as data)."""
        shares = [g for g in offsets if self.group_type(cluster, g) == "share"]
        rest = {g: o for g, o in offsets.items() if g not in shares}
        out = (
            self.admin(cluster).alter_group_offsets(rest, concurrency=concurrency, on_done=on_done, metadata=metadata)
            if rest
            else {}
        )
        for g in shares:
            written = self.group_admin(cluster).write(g, "share", offsets[g])
            out[g] = [
                PartitionResult(w.topic, w.partition, offsets[g][(w.topic, w.partition)], w.error) for w in written
            ]
            if on_done is not None:
                on_done(g, out[g])
        return out

    def delete_group_offsets(self, cluster: str, group: str, partitions: Sequence[TP]) -> list[PartitionResult]:
        """Remove a group's offsets (a share group: the whole group, which rollback deletes only when the apply
        made it)."""
        if self.group_type(cluster, group) != "share":
            return self.admin(cluster).delete_group_offsets(group, partitions)
        error = self.group_admin(cluster).delete_share_group(group)
        return [PartitionResult(t, p, None, error) for t, p in partitions]

    # -- fingerprint parts
    def read_part(self, name: str) -> JSONable:
        """The value of one fingerprint part, read live. Unknown part kinds are a bug in the plan file."""
        kind, f = parse_part(name)
        if kind == "connector-state" and len(f) == 1:
            state = self.connector_state(f[0])
            return {"exists": state is not None, "state": state}
        if kind == "connector-offsets" and len(f) == 1:
            return self.connector_offsets(f[0])
        if kind == "connector-config" and len(f) == 1:
            config = self.connector_config(f[0])
            return None if config is None else redact_json(config)
        if kind == "stored-offsets" and len(f) == 3:
            return stored_json(self.stored_offsets(f[0], f[1], f[2]))
        if kind == "topic-bounds" and len(f) == 3:
            b = self.topic_bounds(f[0], f[1], int(f[2]))
            return {"start": b.start, "end": b.end}
        if kind == "group-members" and len(f) == 2:
            return {"members": self.group_members(f[0], f[1])}
        if kind == "group-offsets" and len(f) == 2:
            return [[t, p, o] for (t, p), o in sorted(self.group_offsets(f[0], f[1]).items())]
        if kind == "share-offsets" and len(f) == 2:
            self.note_group_type(f[0], f[1], "share")
            return [[t, p, o] for (t, p), o in sorted(self.group_offsets(f[0], f[1]).items())]
        from mm2ctl.core.errors import PlanError

        raise PlanError(f"fingerprint part {name!r} is not one this mm2ctl can read")

    def read_parts(self, names: Iterable[str]) -> dict[str, JSONable]:
        """``read_part`` of each name; the group-offsets parts of a cluster are read in one concurrent batch."""
        ordered = sorted(set(names))
        batches: dict[str, list[str]] = {}
        for name in ordered:
            kind, f = parse_part(name)
            if kind in ("group-offsets", "share-offsets") and len(f) == 2:
                batches.setdefault(f[0], []).append(f[1])
                if kind == "share-offsets":
                    self.note_group_type(f[0], f[1], "share")
        got: dict[str, JSONable] = {}
        for cluster, groups in batches.items():
            for group, offsets in self.many_group_offsets(cluster, groups).items():
                name = part_positions(cluster, group, self.group_type(cluster, group))
                got[name] = [[t, p, o] for (t, p), o in sorted(offsets.items())]
        return {n: got[n] if n in got else self.read_part(n) for n in ordered}

    def fingerprint(self, names: Iterable[str]) -> Fingerprint:
        return fingerprint_of(self.read_parts(names))


def open_live_state(
    mm2_config: str | MM2Config,
    *,
    connect_urls: Sequence[str] = (),
    username: str | None = None,
    password: str | None = None,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
) -> LiveState:
    """Build the real reader: the MM2 setup (resolved, or a properties file's path) plus (unless dedicated
    mode) a Connect client.

    The CLI calls this so it never touches ``requests`` or ``confluent_kafka`` itself.
    """
    mm2 = load_mm2_config(mm2_config) if isinstance(mm2_config, str) else mm2_config
    connect = None
    if connect_urls:
        connect = build_connect_client(
            list(connect_urls),
            username=username,
            password=password,
            ca_file=ca_file,
            cert_file=cert_file,
            key_file=key_file,
        )
    return LiveState(mm2=mm2, connect=connect)
