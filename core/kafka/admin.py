"""The Kafka admin facade: the few admin calls mm2ctl needs, batched, concurrent, with per-item errors as data.

It wraps confluent-kafka's ``AdminClient`` (passed in, or built from a confluent-kafka config by
``KafkaAdmin.connect``). Calls that fan out over many groups or partitions return one result per item, each
with its own ``ItemError`` (partial failure is data), so one missing topic or one coordinator error
never hides the other 999 999 answers. A failure of the whole call (no broker answers) raises ``KafkaClusterError``
with the confluent-kafka error code, cause chained.

confluent-kafka's group-offset calls accept one group per request; this facade keeps up to ``concurrency``
of them in flight at once, which is what makes a million group partitions a matter of seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
    OffsetSpec,
    ResourceType,
)

from mm2ctl.core.errors import KafkaClusterError
from mm2ctl.core.kafka.client_log import librdkafka_log

log = logging.getLogger("mm2ctl.kafka")

#: A partition of a topic, ``(topic, partition)``: how every call here (and every caller) keys per-partition data.
TP = tuple[str, int]
T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ConfigValue:
    """A topic config's effective value and where it comes from: ``topic``, ``broker`` or ``default``."""

    value: str
    source: str


@dataclass(frozen=True, slots=True)
class ItemError:
    """The error of one group, topic or partition; ``code`` is confluent-kafka's error code name."""

    code: str
    message: str
    retriable: bool = False


@dataclass(frozen=True, slots=True)
class GroupListing:
    group: str
    state: str
    #: ``classic`` or ``consumer`` (KIP-848) as the cluster lists it; "" when the client does not say.
    type: str = ""


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group: str
    state: str  # Stable, Empty, PreparingRebalance, CompletingRebalance, Dead, Unknown, or "" on error
    members: int
    error: ItemError | None = None


@dataclass(frozen=True, slots=True)
class GroupOffsets:
    group: str
    offsets: dict[TP, int]  # only partitions with a committed offset (>= 0)
    error: ItemError | None = None


@dataclass(frozen=True, slots=True)
class OffsetLists:
    """One group's committed offsets as librdkafka answered them, in three parallel lists (a partition without a
    committed offset has a negative offset); ``error`` is the group's, or its first partition's."""

    group: str
    topics: list[str]
    partitions: list[int]
    offsets: list[int]
    error: ItemError | None = None
    #: Each partition's commit metadata (None when the client gave none); empty: not read.
    metadata: list[str | None] = field(default_factory=list)

    def by_partition(self) -> dict[TP, int]:
        """Only the partitions with a committed offset (>= 0)."""
        return {(t, p): o for t, p, o in zip(self.topics, self.partitions, self.offsets, strict=True) if o >= 0}


@dataclass(frozen=True, slots=True)
class PartitionBounds:
    topic: str
    partition: int
    earliest: int | None
    latest: int | None
    error: ItemError | None = None


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    partitions: int
    error: ItemError | None = None


@dataclass(frozen=True, slots=True)
class TopicAccess:
    """A topic as this client may see it (KIP-430): its id, and the operations the broker says it may run
    (None when the broker did not say); or the error of the lookup (a missing topic, a denied DESCRIBE)."""

    topic_id: str | None
    operations: frozenset[str] | None
    error: ItemError | None = None


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """Outcome of a write to one partition (alter/delete offsets, delete records)."""

    topic: str
    partition: int
    offset: int | None = None
    error: ItemError | None = None


def item_error(exc: BaseException) -> ItemError:
    """Turn whatever a confluent-kafka future raised into data."""
    if isinstance(exc, KafkaException) and exc.args and isinstance(exc.args[0], KafkaError):
        err: KafkaError = exc.args[0]
        return ItemError(err.name(), err.str(), bool(err.retriable()))
    return ItemError(type(exc).__name__, str(exc))


def _raise_whole_call(what: str, exc: BaseException) -> KafkaClusterError:
    ie = item_error(exc)
    return KafkaClusterError(f"{what} failed: {ie.message}", code=ie.code, retriable=ie.retriable)


def _chunks(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _drain(
    requests_: Iterable[T],
    submit: Callable[[T], Future[Any]],
    collect: Callable[[T, Future[Any]], R],
    concurrency: int,
) -> list[R]:
    """Keep at most ``concurrency`` futures in flight; collect results in submission order."""
    results: list[R] = []
    window: list[tuple[T, Future[Any]]] = []
    for req in requests_:
        window.append((req, submit(req)))
        if len(window) >= concurrency:
            r, f = window.pop(0)
            results.append(collect(r, f))
    results.extend(collect(r, f) for r, f in window)
    return results


#: Group-coordinator errors a fresh cluster answers while ``__consumer_offsets`` is created or loaded.
#: librdkafka does not retry them inside the group-offset calls, so the facade does, a few times.
COORDINATOR_RETRY_CODES = frozenset({"NOT_COORDINATOR", "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS"})


def _retry_coordinator_errors(
    groups: Sequence[str],
    run: Callable[[Sequence[str]], dict[str, R]],
    failed: Callable[[R], bool],
    *,
    attempts: int = 8,
    backoff_s: float = 0.25,
    budget_s: float | None = None,
) -> dict[str, R]:
    """Run ``run`` over ``groups``; re-run the groups whose result ``failed`` with a coordinator error.

    ``budget_s``: no retry starts later than this after the first attempt. A coordinator that is loading
    answers at once; one that is gone makes each attempt wait out its request timeout, and eight of those
    would hold an apply for minutes before it could say so."""
    started = time.monotonic()
    results = run(groups)
    pending = [g for g in groups if failed(results[g])]
    for attempt in range(1, attempts):
        if not pending:
            break
        if budget_s is not None and time.monotonic() - started > budget_s:
            log.info("not retrying %d group(s): the coordinator errors outlasted %.0fs", len(pending), budget_s)
            break
        log.info("retrying %d group(s) after a coordinator error (attempt %d)", len(pending), attempt + 1)
        time.sleep(min(backoff_s * 2**attempt, 2.0))
        results.update(run(pending))
        pending = [g for g in pending if failed(results[g])]
    return results


class KafkaAdmin:
    """Admin calls against one cluster. Build with ``KafkaAdmin.connect(config)``; tests may pass a client."""

    def __init__(self, client: AdminClient, *, name: str = "cluster", timeout_s: float = 30.0) -> None:
        self._client = client
        self._name = name
        self._timeout = timeout_s

    @classmethod
    def connect(cls, config: Mapping[str, str], *, name: str = "cluster", timeout_s: float = 30.0) -> KafkaAdmin:
        """Build the real client from a confluent-kafka config; librdkafka's log goes to ``core.kafka.client_log``."""
        conf: dict[str, Any] = dict(config)
        conf.setdefault("logger", librdkafka_log)
        conf.setdefault("socket.timeout.ms", int(timeout_s * 1000))
        try:
            return cls(AdminClient(conf), name=name, timeout_s=timeout_s)
        except KafkaException as exc:
            raise _raise_whole_call(f"creating an admin client for {name}", exc) from exc

    @property
    def client(self) -> AdminClient:
        return self._client

    @property
    def name(self) -> str:
        return self._name

    @property
    def timeout_s(self) -> float:
        """How long a call waits for the cluster."""
        return self._timeout

    # --- cluster and topics ----------------------------------------------------------------------------

    def cluster_id(self) -> str:
        try:
            desc = self._client.describe_cluster(request_timeout=self._timeout).result()
        except Exception as exc:
            raise _raise_whole_call(f"reaching {self._name}", exc) from exc
        return str(desc.cluster_id)

    def list_topics(self) -> dict[str, int]:
        """Topic name → partition count, internal topics included."""
        try:
            md = self._client.list_topics(timeout=self._timeout)
        except Exception as exc:
            raise _raise_whole_call(f"listing topics on {self._name}", exc) from exc
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def describe_topics(self, names: Sequence[str], *, batch: int = 500) -> dict[str, TopicDescription]:
        out: dict[str, TopicDescription] = {}
        for chunk in _chunks(list(names), batch):
            try:
                futures = self._client.describe_topics(TopicCollection(list(chunk)), request_timeout=self._timeout)
            except Exception as exc:
                raise _raise_whole_call(f"describing topics on {self._name}", exc) from exc
            for name, fut in futures.items():
                try:
                    out[name] = TopicDescription(name, len(fut.result().partitions))
                except Exception as exc:
                    out[name] = TopicDescription(name, 0, item_error(exc))
        return out

    def authorized_operations(
        self, *, topics: Sequence[str] = (), groups: Sequence[str] = ()
    ) -> dict[tuple[str, str], frozenset[str] | ItemError | None]:
        """What this client may do on each topic and group, as the broker answers it (KIP-430): ``("topic",
        name)`` / ``("group", name)`` -> operation names (``READ``, ``DESCRIBE``…), None when the broker did not
        say, or the error of the lookup (a denied DESCRIBE comes back as ``TOPIC_AUTHORIZATION_FAILED`` /
        ``GROUP_AUTHORIZATION_FAILED``)."""
        out: dict[tuple[str, str], frozenset[str] | ItemError | None] = {}

        def operations(described: Any) -> frozenset[str] | None:
            ops = described.authorized_operations
            return None if ops is None else frozenset(getattr(op, "name", str(op)) for op in ops)

        for name, access in self.topic_access(topics).items():
            out[("topic", name)] = access.error or access.operations
        if groups:
            try:
                futures = self._client.describe_consumer_groups(
                    sorted(set(groups)), include_authorized_operations=True, request_timeout=self._timeout
                )
            except Exception as exc:
                raise _raise_whole_call(f"describing groups on {self._name}", exc) from exc
            for name, fut in futures.items():
                try:
                    out[("group", name)] = operations(fut.result())
                except Exception as exc:
                    out[("group", name)] = item_error(exc)
        return out

    def topic_access(self, topics: Sequence[str]) -> dict[str, TopicAccess]:
        """Each topic's id and what this client may do on it, in one describe (``TopicAccess``)."""
        if not topics:
            return {}
        try:
            futures = self._client.describe_topics(
                TopicCollection(sorted(set(topics))), include_authorized_operations=True, request_timeout=self._timeout
            )
        except Exception as exc:
            raise _raise_whole_call(f"describing topics on {self._name}", exc) from exc
        out: dict[str, TopicAccess] = {}
        for name, fut in futures.items():
            try:
                described = fut.result()
            except Exception as exc:
                out[name] = TopicAccess(None, None, item_error(exc))
                continue
            ops = described.authorized_operations
            operations = None if ops is None else frozenset(getattr(op, "name", str(op)) for op in ops)
            topic_id = None if described.topic_id is None else str(described.topic_id)
            out[name] = TopicAccess(topic_id, operations)
        return out

    def create_topics(self, topics: Mapping[str, int], *, config: Mapping[str, str] | None = None) -> None:
        """Create topics (name → partitions), replication factor from the broker default; used by lab tests."""
        new = [NewTopic(n, num_partitions=p, config=dict(config or {})) for n, p in topics.items()]
        futures = self._client.create_topics(new, request_timeout=self._timeout)
        for name, fut in futures.items():
            try:
                fut.result()
            except Exception as exc:
                raise _raise_whole_call(f"creating topic {name} on {self._name}", exc) from exc

    def partition_bounds(self, partitions: Iterable[TP], *, batch: int = 10_000) -> dict[TP, PartitionBounds]:
        """Earliest and latest offset of each partition, in batches of ``batch`` partitions per request."""
        tps = sorted(set(partitions))
        out: dict[TP, PartitionBounds] = {}
        for chunk in _chunks(tps, batch):
            earliest = self._list_offsets(chunk, OffsetSpec.earliest())
            latest = self._list_offsets(chunk, OffsetSpec.latest())
            for tp in chunk:
                e, le = earliest[tp], latest[tp]
                err = e if isinstance(e, ItemError) else le if isinstance(le, ItemError) else None
                out[tp] = PartitionBounds(
                    tp[0],
                    tp[1],
                    e if isinstance(e, int) else None,
                    le if isinstance(le, int) else None,
                    err,
                )
        return out

    def offsets_for_times(self, times: Mapping[TP, int]) -> dict[TP, int | ItemError | None]:
        """ListOffsets by timestamp: per partition, the earliest offset whose record timestamp is at or after
        ``times[tp]`` (epoch milliseconds); None when no record is that recent."""
        out: dict[TP, int | ItemError | None] = {}
        by_time: dict[int, list[TP]] = {}
        for tp, ts in times.items():
            by_time.setdefault(ts, []).append(tp)
        for ts, tps in by_time.items():
            for tp, got in self._list_offsets(sorted(tps), OffsetSpec.for_timestamp(ts)).items():
                out[tp] = None if isinstance(got, int) and got < 0 else got
        return out

    def stable_offsets(self, partitions: Sequence[TP]) -> dict[TP, int | ItemError]:
        """The last stable offset of each partition: its end for a ``read_committed`` consumer, below the
        latest offset while a transaction is open there."""
        if not partitions:
            return {}
        return self._list_offsets(partitions, OffsetSpec.latest(), isolation=IsolationLevel.READ_COMMITTED)

    def _list_offsets(
        self, tps: Sequence[TP], spec: OffsetSpec, *, isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED
    ) -> dict[TP, int | ItemError]:
        request = {TopicPartition(t, p): spec for t, p in tps}
        try:
            futures = self._client.list_offsets(request, isolation_level=isolation, request_timeout=self._timeout)
        except Exception as exc:
            raise _raise_whole_call(f"listing offsets on {self._name}", exc) from exc
        out: dict[TP, int | ItemError] = {}
        for tp, fut in futures.items():
            try:
                out[(tp.topic, tp.partition)] = int(fut.result().offset)
            except Exception as exc:
                out[(tp.topic, tp.partition)] = item_error(exc)
        return out

    def topic_config(self, topic: str) -> dict[str, str]:
        """The topic's effective configs (name -> value)."""
        res = ConfigResource(ResourceType.TOPIC, topic)
        try:
            entries = self._client.describe_configs([res], request_timeout=self._timeout)[res].result()
        except Exception as exc:
            raise _raise_whole_call(f"describing configs of {topic} on {self._name}", exc) from exc
        return {name: e.value for name, e in entries.items() if e.value is not None}

    def topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str] | ItemError]:
        """The effective configs of many topics in one request (name -> value), or each topic's error."""
        return {
            topic: got if isinstance(got, ItemError) else {name: c.value for name, c in got.items()}
            for topic, got in self.topic_config_sources(topics).items()
        }

    def topic_config_sources(self, topics: Sequence[str]) -> dict[str, dict[str, ConfigValue] | ItemError]:
        """The effective configs of many topics in one request, each value with where it comes from
        (``ConfigValue.source``: ``topic``, ``broker`` or ``default``), or each topic's error."""
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        if not resources:
            return {}
        try:
            futures = self._client.describe_configs(resources, request_timeout=self._timeout)
        except Exception as exc:
            raise _raise_whole_call(f"describing topic configs on {self._name}", exc) from exc
        out: dict[str, dict[str, ConfigValue] | ItemError] = {}
        for res, fut in futures.items():
            try:
                entries = fut.result().items()
                out[res.name] = {
                    n: ConfigValue(e.value, config_source(e.source)) for n, e in entries if e.value is not None
                }
            except Exception as exc:
                out[res.name] = item_error(exc)
        return out

    def set_topic_config(self, topic: str, name: str, value: str) -> None:
        """Incrementally SET one topic config, leaving the others as they are."""
        res = ConfigResource(
            ResourceType.TOPIC,
            topic,
            incremental_configs=[ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)],
        )
        try:
            self._client.incremental_alter_configs([res], request_timeout=self._timeout)[res].result()
        except Exception as exc:
            raise _raise_whole_call(f"setting {name} of {topic} on {self._name}", exc) from exc

    def delete_records(self, before: Mapping[TP, int]) -> list[PartitionResult]:
        """Delete every record below ``before[tp]`` (the new low watermark) in each partition."""
        if not before:
            return []
        request = [TopicPartition(t, p, off) for (t, p), off in sorted(before.items())]
        try:
            futures = self._client.delete_records(request, request_timeout=self._timeout)
        except Exception as exc:
            raise _raise_whole_call(f"deleting records on {self._name}", exc) from exc
        out = []
        for tp, fut in futures.items():
            try:
                out.append(PartitionResult(tp.topic, tp.partition, int(fut.result().low_watermark)))
            except Exception as exc:
                out.append(PartitionResult(tp.topic, tp.partition, None, item_error(exc)))
        return sorted(out, key=lambda r: (r.topic, r.partition))

    # --- consumer groups ---------------------------------------------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        """Every consumer group the cluster knows, with its state."""
        try:
            result = self._client.list_consumer_groups(request_timeout=self._timeout).result()
        except Exception as exc:
            raise _raise_whole_call(f"listing consumer groups on {self._name}", exc) from exc
        for err in result.errors or []:
            log.warning("listing groups on %s: partial error %s", self._name, err)
        return sorted(
            (GroupListing(g.group_id, _state_name(g.state), _type_name(g)) for g in result.valid),
            key=lambda g: g.group,
        )

    def describe_groups(self, groups: Sequence[str], *, batch: int = 100) -> dict[str, GroupDescription]:
        """State and member count of each group; a group that does not exist comes back as state Dead."""
        out: dict[str, GroupDescription] = {}
        for chunk in _chunks(sorted(set(groups)), batch):
            try:
                futures = self._client.describe_consumer_groups(list(chunk), request_timeout=self._timeout)
            except Exception as exc:
                raise _raise_whole_call(f"describing groups on {self._name}", exc) from exc
            for group, fut in futures.items():
                try:
                    d = fut.result()
                    out[group] = GroupDescription(group, _state_name(d.state), len(d.members or []))
                except Exception as exc:
                    out[group] = GroupDescription(group, "", 0, item_error(exc))
        return out

    def describe_worker_group(self, group: str) -> GroupDescription:
        """State and member count of a classic group of any protocol type.

        Connect workers, and so dedicated MirrorMaker 2 (``<source>-mm2``), form groups of protocol type
        ``connect``, which ``describe_consumer_groups`` refuses ("not a consumer group (connect)"). The older
        ListGroups/DescribeGroups call librdkafka still offers reports them; a group it does not know comes
        back as state Dead with no members, like ``describe_groups``.
        """
        import warnings

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                found = self._client.list_groups(group, timeout=self._timeout)
        except Exception as exc:
            raise _raise_whole_call(f"describing group {group} on {self._name}", exc) from exc
        for g in found:
            if g.id != group:
                continue
            if g.error is not None and g.error.code() != KafkaError.NO_ERROR:
                return GroupDescription(group, "", 0, ItemError(g.error.name(), g.error.str()))
            return GroupDescription(group, g.state or "Dead", len(g.members or []))
        return GroupDescription(group, "Dead", 0)

    def committed_offset_lists(self, groups: Sequence[str], *, concurrency: int = 64) -> dict[str, OffsetLists]:
        """Committed offsets of many groups as flat lists per group (``OffsetLists``), ``concurrency`` requests in
        flight (one group per request: confluent-kafka takes no more). ``inspector.reads.committed_offsets`` owns
        reading many groups' offsets; this is its librdkafka path, and the one ``inspector.reads.committed_offsets``
        shapes as dicts."""

        def submit(group: str) -> Future[Any]:
            try:
                futures = self._client.list_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group)], request_timeout=self._timeout
                )
            except Exception as exc:
                raise _raise_whole_call(f"fetching offsets of group {group} on {self._name}", exc) from exc
            return futures[group]

        def collect(group: str, fut: Future[Any]) -> OffsetLists:
            try:
                tps = fut.result().topic_partitions
            except Exception as exc:
                return OffsetLists(group, [], [], [], item_error(exc))
            # One pass per attribute: the list comprehensions are the cheapest way over confluent-kafka's objects.
            offsets = [tp.offset for tp in tps]
            errs = [tp.error for tp in tps if tp.error is not None]
            err = ItemError(errs[0].name(), errs[0].str()) if errs else None
            metadata = [_metadata(tp) for tp in tps]
            return OffsetLists(group, [tp.topic for tp in tps], [tp.partition for tp in tps], offsets, err, metadata)

        def run(batch: Sequence[str]) -> dict[str, OffsetLists]:
            return {r.group: r for r in _drain(batch, submit, collect, concurrency)}

        return _retry_coordinator_errors(
            sorted(set(groups)),
            run,
            lambda r: r.error is not None and r.error.code in COORDINATOR_RETRY_CODES,
            budget_s=self._timeout,
        )

    def committed_offsets(self, groups: Sequence[str], *, concurrency: int = 64) -> dict[str, GroupOffsets]:
        """Committed offsets of many groups as a dict per group (``committed_offset_lists``, shaped)."""
        got = self.committed_offset_lists(groups, concurrency=concurrency)
        return {g: GroupOffsets(g, r.by_partition(), r.error) for g, r in got.items()}

    def commit_metadata(self, group: str) -> dict[TP, str]:
        """The metadata of each of a group's committed offsets ("" when none): who wrote them
        (``plans.offset_metadata``). One group, one request: for rollback's checks, not for bulk reads."""
        try:
            fut = self._client.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=self._timeout
            )[group]
            res = fut.result()
        except Exception as exc:
            raise _raise_whole_call(f"reading the offsets of group {group} on {self._name}", exc) from exc
        return {(tp.topic, tp.partition): _metadata(tp) or "" for tp in res.topic_partitions if tp.offset >= 0}

    def alter_group_offsets(
        self,
        offsets: Mapping[str, Mapping[TP, int]],
        *,
        concurrency: int = 32,
        on_done: Callable[[str, list[PartitionResult]], None] | None = None,
        metadata: Mapping[str, Mapping[TP, str]] | None = None,
    ) -> dict[str, list[PartitionResult]]:
        """Set committed offsets: group → {(topic, partition): offset}; one request per group, concurrent.
        ``metadata`` gives a partition's commit metadata (none when absent); no leader epoch is sent.

        Kafka refuses (UNKNOWN_MEMBER_ID / group not empty) when the group has active members; that comes
        back per partition as data. ``on_done`` hears each group's answer as it is collected (progress), in
        the calling thread; a group retried after a coordinator error is heard again.
        """
        notes = metadata or {}

        def submit(group: str) -> Future[Any]:
            meta = notes.get(group, {})
            tps = [
                TopicPartition(t, p, off, metadata=meta[(t, p)]) if (t, p) in meta else TopicPartition(t, p, off)
                for (t, p), off in sorted(offsets[group].items())
            ]
            try:
                futures = self._client.alter_consumer_group_offsets(
                    [ConsumerGroupTopicPartitions(group, tps)], request_timeout=self._timeout
                )
            except Exception as exc:
                raise _raise_whole_call(f"altering offsets of group {group} on {self._name}", exc) from exc
            return futures[group]

        def collect(group: str, fut: Future[Any]) -> tuple[str, list[PartitionResult]]:
            try:
                res = fut.result()
            except Exception as exc:
                err = item_error(exc)
                got = [PartitionResult(t, p, o, err) for (t, p), o in sorted(offsets[group].items())]
            else:
                got = [
                    PartitionResult(
                        tp.topic,
                        tp.partition,
                        int(tp.offset),
                        ItemError(tp.error.name(), tp.error.str()) if tp.error is not None else None,
                    )
                    for tp in res.topic_partitions
                ]
            if on_done is not None:
                on_done(group, got)
            return group, got

        def run(batch: Sequence[str]) -> dict[str, list[PartitionResult]]:
            return dict(_drain(batch, submit, collect, concurrency))

        return _retry_coordinator_errors(
            sorted(offsets),
            run,
            lambda rs: any(r.error is not None and r.error.code in COORDINATOR_RETRY_CODES for r in rs),
            budget_s=self._timeout,
        )

    def delete_group_offsets(self, group: str, partitions: Sequence[TP]) -> list[PartitionResult]:
        """Delete a group's committed offsets for some partitions (Kafka's OffsetDelete).

        confluent-kafka has no OffsetDelete call, so this uses the one it has: delete the whole group when
        every committed partition is listed; otherwise the broker's answer is reported as an error per
        partition. Kafka refuses both while the group has members.
        """
        current = self.committed_offsets([group])[group]
        if current.error is not None:
            return [PartitionResult(t, p, None, current.error) for t, p in partitions]
        wanted = set(partitions)
        if set(current.offsets) - wanted:
            err = ItemError(
                "UNSUPPORTED",
                "deleting only some of a group's committed offsets needs OffsetDelete, "
                "which confluent-kafka does not expose; delete all of them or reset instead",
            )
            return [PartitionResult(t, p, None, err) for t, p in sorted(wanted)]
        try:
            futures = self._client.delete_consumer_groups([group], request_timeout=self._timeout)
            futures[group].result()
        except Exception as exc:
            err = item_error(exc)
            return [PartitionResult(t, p, None, err) for t, p in sorted(wanted)]
        return [PartitionResult(t, p, None, None) for t, p in sorted(wanted)]


def config_source(source: Any) -> str:
    """Where a topic config's value comes from: set on the topic, a broker setting, or Kafka's default.
    ``describe_configs`` gives librdkafka's number (``rd_kafka_ConfigSource_t``), not the enum."""
    try:
        name = ConfigSource(getattr(source, "value", source)).name
    except ValueError:
        name = "UNKNOWN_CONFIG"
    if name == "DYNAMIC_TOPIC_CONFIG":
        return "topic"
    return "default" if name in ("DEFAULT_CONFIG", "UNKNOWN_CONFIG") else "broker"


def _state_name(state: Any) -> str:
    """confluent-kafka's ConsumerGroupState enum → Kafka's own names (Stable, Empty, …)."""
    name = getattr(state, "name", str(state))
    mapping = {
        "STABLE": "Stable",
        "EMPTY": "Empty",
        "PREPARING_REBALANCING": "PreparingRebalance",
        "COMPLETING_REBALANCING": "CompletingRebalance",
        "DEAD": "Dead",
        "UNKNOWN": "Unknown",
        "ASSIGNING": "Assigning",
        "RECONCILING": "Reconciling",
    }
    return mapping.get(str(name).upper(), str(name))


def _metadata(tp: TopicPartition) -> str | None:
    """A committed offset's metadata as text; None when it is not UTF-8 (Kafka Streams commits binary metadata,
    which confluent-kafka fails to decode): such metadata is never mm2ctl's (``core.kafka.provenance``)."""
    try:
        return tp.metadata
    except UnicodeDecodeError:
        return None


def _type_name(listing: Any) -> str:
    """A listed group's type in lower case (``classic``, ``consumer``), "" when unknown."""
    kind = getattr(listing, "type", None)
    name = str(getattr(kind, "name", "") or "").lower()
    return "" if name in ("", "unknown") else name
