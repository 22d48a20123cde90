"""Committed offsets of many consumer groups, read for an inspection: as columns, through the JVM or librdkafka.

An inspection reads every committed offset of every mirrored group, on both clusters: millions of them on a
large setup. It gets them as Arrow columns (``GroupOffsetColumns``), read one
of two ways:

- **The JVM's Kafka AdminClient**, when the process drives a JVM through py4j (``JvmAdmin``): Spark's driver
  JVM, which an inspection starts anyway. ``CommittedOffsets.java`` (shipped in ``core.java``, compiled when first
  needed by Janino, the compiler Spark ships for its generated code) asks ListConsumerGroupOffsets for many
  groups at once, which the AdminClient sends as one OffsetFetch request per coordinator (KIP-709, brokers
  3.3+), and writes the answer as columns to a file that becomes Arrow arrays here. Nothing is made per offset
  in Python, and py4j carries only the call: its own transfer of a byte array would cost more Python CPU
  than the whole read.
- **librdkafka** (``KafkaAdmin.committed_offset_lists``): one group per request (confluent-kafka takes no
  more), many in flight. Most of its time is librdkafka's own handling of the answers, on its main thread,
  and confluent-kafka makes a Python object per partition; this path keeps the rest lean (flat lists, one
  Arrow conversion, the per-topic decisions left to the caller). It serves wherever there is no JVM to ask:
  a Spark Connect session (no driver JVM in the Python process), a JVM that cannot load the Kafka client or
  Janino (the read falls back, and logs why), and the planners.

``bench/admin_reads.py`` compares the two ways.

The planners (``plans.live_state.LiveState.many_group_offsets``) read through ``KafkaAdmin.committed_offsets``
instead, the librdkafka path as a dict per group, without this module: a plan runs in a process with no JVM,
whose start (seconds) would cost more than its reads, a planner makes a row object per group partition
anyway, and a plan or apply process does not import NumPy and Arrow (a third of a second) for columns it
never builds.

Either way a group whose lookup failed is a group with an ``ItemError`` and no rows (partial failure is data).
The JVM's AdminClient leaves out a partition whose offset came back with an error (it logs it), where
librdkafka reports the first such error as the group's; with ``require_stable`` off, as here, brokers answer
no per-partition error in practice.
"""

from __future__ import annotations

import gc
import itertools
import logging
import os
import struct
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from mm2ctl.core.java.programs import source_text
from mm2ctl.core.kafka.admin import GroupOffsets, ItemError, KafkaAdmin
from mm2ctl.core.kafka.provenance import PREFIX_TEXT, written_by

log = logging.getLogger("mm2ctl.kafka")

#: ``GroupOffsetColumns.table``'s ``written_by``: the commit's metadata when mm2ctl wrote it
#: (``core.kafka.provenance``), else null; few distinct values, so dictionary-encoded.
WRITTEN_BY = pa.dictionary(pa.int32(), pa.string())

#: ``GroupOffsetColumns.table``: one row per (group, topic, partition) with a committed offset, sorted by
#: group (its number in ``groups``), topic and partition.
OFFSETS_SCHEMA = pa.schema(
    [
        pa.field("group_index", pa.int32(), nullable=False),
        pa.field("topic", pa.string(), nullable=False),
        pa.field("partition", pa.int32(), nullable=False),
        pa.field("committed_offset", pa.int64(), nullable=False),
        pa.field("written_by", WRITTEN_BY, nullable=True),
    ]
)

JVM = "jvm"
LIBRDKAFKA = "librdkafka"

#: Groups per ListConsumerGroupOffsets call of the JVM path: enough groups per request to keep round trips
#: few, while each response stays of a moderate size; one request for every group at once costs the broker
#: much more CPU.
GROUPS_PER_REQUEST = 100


@dataclass(frozen=True, slots=True)
class GroupOffsetColumns:
    """The committed offsets of ``groups`` as columns (``OFFSETS_SCHEMA``); ``errors[i]`` is the error of
    ``groups[i]``'s lookup. ``read_through`` says which client read them (``JVM`` or ``LIBRDKAFKA``)."""

    groups: tuple[str, ...]
    errors: tuple[ItemError | None, ...]
    table: pa.Table
    read_through: str

    def by_group(self) -> dict[str, GroupOffsets]:
        """As the admin facade's dicts, one per group (a Python object per offset: for small reads)."""
        out = {g: GroupOffsets(g, {}, e) for g, e in zip(self.groups, self.errors, strict=True)}
        columns = [self.table.column(c).to_pylist() for c in ("group_index", "topic", "partition", "committed_offset")]
        for i, topic, partition, offset in zip(*columns, strict=True):
            out[self.groups[i]].offsets[(topic, partition)] = offset
        return out


@dataclass(frozen=True, slots=True)
class JvmAdmin:
    """A cluster to read from a JVM this process drives through py4j: the gateway (PySpark's
    ``SparkContext._gateway``), the cluster's Java client settings (``MM2Config.client_settings``) and a name
    for the log."""

    gateway: Any
    settings: Mapping[str, str]
    name: str = "cluster"


def read_columns(
    admin: KafkaAdmin,
    groups: Sequence[str],
    *,
    jvm: JvmAdmin | None = None,
    groups_per_request: int = GROUPS_PER_REQUEST,
) -> GroupOffsetColumns:
    """The committed offsets of ``groups`` on ``admin``'s cluster, through ``jvm`` when given and usable,
    else through librdkafka."""
    wanted = tuple(dict.fromkeys(groups))
    if jvm is not None and wanted:
        try:
            return _read_in_jvm(jvm, wanted, groups_per_request, admin.timeout_s)
        except _JvmUnusable as exc:
            log.warning("reading committed offsets on %s through librdkafka: the JVM could not (%s)", jvm.name, exc)
    return _read_with_librdkafka(admin, wanted)


# --- librdkafka ----------------------------------------------------------------------------------------------


class _CollectorPause:
    """Python's cyclic garbage collector paused while confluent-kafka makes an object per partition. Those
    objects hold no cycles, so the collector's passes over a million of them would be CPU spent for nothing
    (``bench/admin_reads.py`` measures it). Reads may overlap: the last to end restores the collector as the first
    found it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reads = 0
        self._was_enabled = False

    @contextmanager
    def __call__(self) -> Iterator[None]:
        with self._lock:
            if self._reads == 0:
                self._was_enabled = gc.isenabled()
                gc.disable()
            self._reads += 1
        try:
            yield
        finally:
            with self._lock:
                self._reads -= 1
                if self._reads == 0 and self._was_enabled:
                    gc.enable()


_collector_paused = _CollectorPause()


def _read_with_librdkafka(admin: KafkaAdmin, groups: tuple[str, ...]) -> GroupOffsetColumns:
    with _collector_paused():
        got = admin.committed_offset_lists(groups) if groups else {}
    lists = [got[g] for g in groups]
    counts = np.fromiter((len(r.offsets) for r in lists), np.int64, len(lists))
    every_topic = itertools.chain.from_iterable(r.topics for r in lists)
    topics = pa.array(every_topic, pa.string(), size=int(counts.sum())).dictionary_encode()
    return _columns(
        groups,
        tuple(r.error for r in lists),
        counts,
        topic_names=topics.dictionary.to_pylist(),
        topic_of=topics.indices.to_numpy(zero_copy_only=False),
        partitions=np.fromiter(itertools.chain.from_iterable(r.partitions for r in lists), np.int32),
        offsets=np.fromiter(itertools.chain.from_iterable(r.offsets for r in lists), np.int64),
        read_through=LIBRDKAFKA,
        written_by=_written_by(
            itertools.chain.from_iterable(r.metadata or [None] * len(r.offsets) for r in lists), int(counts.sum())
        ),
    )


def _written_by(metadata: Any, size: int) -> tuple[list[str], np.ndarray[Any, Any]]:
    """Each row's metadata as a number into the distinct ones mm2ctl wrote (-1: not mm2ctl's)."""
    names: dict[str, int] = {}
    mine = (written_by(m) for m in metadata)
    numbers = np.fromiter((-1 if m is None else names.setdefault(m, len(names)) for m in mine), np.int32, size)
    return list(names), numbers


# --- the JVM -------------------------------------------------------------------------------------------------

_JAVA_SOURCE = "CommittedOffsets.java"
_JAVA_CLASS = "mm2ctl.core.CommittedOffsets"
#: The format version ``CommittedOffsets.java`` writes.
_FORMAT_VERSION = 2


class _JvmUnusable(Exception):
    """The JVM could not read: it has no Kafka client or Janino, its gateway is gone, or its file is unreadable.
    Never raised past ``read_columns``, which reads through librdkafka instead."""


_compile_lock = threading.Lock()
#: The compiled reader of each JVM (keyed by its gateway's identity; the gateway is kept so the key stays its).
_readers: dict[int, tuple[Any, Any]] = {}


def _reader(gateway: Any) -> Any:
    """An instance of ``CommittedOffsets`` in the gateway's JVM, compiled there the first time."""
    with _compile_lock:
        known = _readers.get(id(gateway))
        if known is not None and known[0] is gateway:
            return known[1]
        jvm = gateway.jvm
        source = source_text(_JAVA_SOURCE)
        compiler = jvm.org.codehaus.janino.SimpleCompiler()
        # The Kafka client is on the class path of spark-submit's loader (``--jars``/``--packages``), which py4j's
        # threads have as their context loader.
        compiler.setParentClassLoader(jvm.java.lang.Thread.currentThread().getContextClassLoader())
        compiler.setTargetVersion(8)
        compiler.cook(source)
        cls = compiler.getClassLoader().loadClass(_JAVA_CLASS)
        no_classes = gateway.new_array(jvm.java.lang.Class, 0)
        reader = cls.getDeclaredConstructor(no_classes).newInstance(gateway.new_array(jvm.java.lang.Object, 0))
        _readers[id(gateway)] = (gateway, reader)
        return reader


def _read_in_jvm(
    jvm: JvmAdmin, groups: tuple[str, ...], groups_per_request: int, timeout_s: float
) -> GroupOffsetColumns:
    from py4j.protocol import Py4JError

    fd, path = tempfile.mkstemp(prefix="mm2ctl-committed-offsets-")
    os.close(fd)
    try:
        try:
            reader = _reader(jvm.gateway)
            settings = [s for kv in sorted(jvm.settings.items()) for s in kv]
            timeout_ms = int(timeout_s * 1000)
            reader.dump(_strings(settings), _strings(groups), groups_per_request, timeout_ms, path, PREFIX_TEXT)
            with open(path, "rb") as f:
                data = f.read()
        except (Py4JError, OSError) as exc:
            raise _JvmUnusable(_first_line(exc)) from exc
    finally:
        os.unlink(path)
    return _decode(groups, data)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _strings(values: Sequence[str]) -> bytes:
    """A count and length-prefixed UTF-8 strings, big-endian: how ``CommittedOffsets.java`` reads its inputs."""
    parts = [struct.pack(">i", len(values))]
    for value in values:
        encoded = value.encode("utf-8")
        parts += [struct.pack(">i", len(encoded)), encoded]
    return b"".join(parts)


class _ColumnsReader:
    """Reads the header of ``CommittedOffsets.java``'s file (little-endian)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int32(self) -> int:
        (value,) = struct.unpack_from("<i", self.data, self.pos)
        self.pos += 4
        return int(value)

    def string(self) -> str:
        size = self.int32()
        value = self.data[self.pos : self.pos + size].decode("utf-8")
        self.pos += size
        return value


def _decode(groups: tuple[str, ...], data: bytes) -> GroupOffsetColumns:
    """The columns of ``CommittedOffsets.java``'s file; a file that is not one (empty, cut short: a JVM that
    wrote elsewhere) is ``_JvmUnusable``."""
    try:
        return _decode_file(groups, data)
    except (struct.error, UnicodeDecodeError, ValueError) as exc:
        raise _JvmUnusable(f"its file is unreadable ({exc})") from exc


def _decode_file(groups: tuple[str, ...], data: bytes) -> GroupOffsetColumns:
    head = _ColumnsReader(data)
    version, count = head.int32(), head.int32()
    if version != _FORMAT_VERSION or count != len(groups):
        wanted = f"{_FORMAT_VERSION} for {len(groups)}"
        raise _JvmUnusable(f"its file is of format {version} for {count} group(s), not {wanted}")
    counts = np.zeros(count, np.int64)
    errors: list[ItemError | None] = []
    for i in range(count):
        rows = head.int32()
        if rows < 0:
            errors.append(ItemError(head.string(), head.string()))
        else:
            counts[i] = rows
            errors.append(None)
    topic_names = [head.string() for _ in range(head.int32())]
    provenances = [written_by(head.string()) or "" for _ in range(head.int32())]
    start = (head.pos + 7) & ~7
    n = int(counts.sum())
    if len(data) != start + 20 * n:
        raise _JvmUnusable(f"its file holds {len(data)} bytes, not {start + 20 * n}")
    return _columns(
        groups,
        tuple(errors),
        counts,
        topic_names=topic_names,
        topic_of=np.frombuffer(data, "<i4", n, start + 12 * n),
        partitions=np.frombuffer(data, "<i4", n, start + 8 * n),
        offsets=np.frombuffer(data, "<i8", n, start),
        read_through=JVM,
        written_by=(provenances, np.frombuffer(data, "<i4", n, start + 16 * n)),
    )


# --- both ----------------------------------------------------------------------------------------------------


def _columns(
    groups: tuple[str, ...],
    errors: tuple[ItemError | None, ...],
    counts: np.ndarray[Any, np.dtype[np.int64]],
    *,
    topic_names: list[str],
    topic_of: np.ndarray[Any, Any],
    partitions: np.ndarray[Any, Any],
    offsets: np.ndarray[Any, Any],
    read_through: str,
    written_by: tuple[list[str], np.ndarray[Any, Any]],
) -> GroupOffsetColumns:
    """Rows in the order of ``groups`` (``counts[i]`` rows each, in whatever order the client gave them) as the
    sorted table of the offsets >= 0 (a client's ``-1`` is "no committed offset"). ``written_by`` is the distinct
    metadata mm2ctl wrote and each row's number into it (-1: none)."""
    provenances, provenance_of = written_by
    group_index = np.repeat(np.arange(len(groups), dtype=np.int32), counts)
    committed = offsets >= 0
    if not committed.all():
        group_index, topic_of = group_index[committed], topic_of[committed]
        partitions, offsets = partitions[committed], offsets[committed]
        provenance_of = provenance_of[committed]
    # Topic numbers are in the order the client met them; their rank sorts them by name.
    rank = np.empty(len(topic_names), np.int32)
    rank[sorted(range(len(topic_names)), key=topic_names.__getitem__)] = np.arange(len(topic_names), dtype=np.int32)
    order = np.lexsort((partitions, rank[topic_of], group_index)) if len(offsets) else np.arange(0)
    table = pa.table(
        [
            pa.array(group_index[order], pa.int32()),
            pa.array(topic_names, pa.string()).take(pa.array(topic_of[order], pa.int32())),
            pa.array(partitions[order], pa.int32()),
            pa.array(offsets[order], pa.int64()),
            written_by_column(provenances, provenance_of[order]),
        ],
        schema=OFFSETS_SCHEMA,
    )
    return GroupOffsetColumns(groups, errors, table, read_through)


def written_by_column(provenances: list[str], numbers: np.ndarray[Any, Any]) -> pa.DictionaryArray:
    """The ``written_by`` column of rows numbered into ``provenances`` (-1: null)."""
    indices = pa.array(numbers.astype(np.int32), pa.int32(), mask=numbers < 0)
    return pa.DictionaryArray.from_arrays(indices, pa.array(provenances, pa.string()))
