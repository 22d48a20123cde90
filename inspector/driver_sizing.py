"""The embedded driver JVM's heap and compiler, sized to the inspection it runs.

A live session (the exporter) knows the size of its work before its JVM starts: it reads the cluster state
first (``driver_memory_for``, ``driver_java_options_for``). A one-off ``inspect`` starts its JVM while it
reads that state, so it looks at two cheap figures first (``probe``): how many consumer groups each source
lists, and how many records each flow's internal topics span.

A live session's JVM also gets at most ``LIVE_MALLOC_ARENAS`` glibc malloc arenas (``live_driver_environment``).
glibc gives a thread that allocates while the others hold theirs an arena of its own, up to eight per core, and
keeps what a freed allocation leaves in it; the driver runs a few hundred threads (Spark's pools, Kafka
consumers), so what the JVM holds outside what its Native Memory Tracking counts grows run after run with
glibc's default and stays flat with two arenas (``bench/exporter_scale.py`` shows both).

A small live session holds its state on the Python driver and runs no Spark job once its first run is done
(``inspector.kept``), so its JVM keeps little: about 80 MiB of live heap at 5,000 group partitions. Its heap
therefore starts small and gives back what a full collection leaves free beyond 40 % (``_SHRINKING_HEAP``); the
JVM's default starts it at a 64th of the machine's memory, all of it soon touched. A heap kept tighter (at most
25 % free, growing only below 10 % free) saved 10 MiB more and cost a second of full collections in the first
run, where Spark's planning allocates most.

The Python driver of a live session allocates Arrow memory from the system allocator
(``live_python_memory``): Arrow's default, mimalloc, keeps the pages a run freed, 30 to 75 MiB more after a few
runs at 5,000 group partitions.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from mm2ctl.core.config.mm2_config import MM2Config, PairConfig
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.inspector.kept.driver_rows import DRIVER_MAX_ROWS
from mm2ctl.inspector.reads.internal_topics import TopicSnapshot
from mm2ctl.inspector.reads.kafka_read import DRIVER_ENGINE_MAX_OFFSETS
from mm2ctl.inspector.reads.run_reads import ClusterState

#: The driver heap a live session starts from, and what each kept or cached item adds to it.
BASE_HEAP_MIB = 512
HEAP_BYTES_PER_GROUP_PARTITION = 1_500
HEAP_BYTES_PER_TOPIC_RECORD = 120
MAX_HEAP_MIB = 16_384

#: Up to these sizes the driver JVM compiles with C1 only.
SMALL_GROUP_PARTITIONS = 100_000
SMALL_TOPIC_RECORDS = 1_000_000
#: ``probe``'s stand-in for the group partitions, which only the admin reads know.
SMALL_GROUPS = 1_000

#: ``MALLOC_ARENA_MAX`` for a live session's driver JVM (module docstring).
LIVE_MALLOC_ARENAS = "2"

_THROUGHPUT = "-XX:+UseParallelGC"
#: C1 only. A run over a few thousand rows is mostly Spark's planning code, which C2 would keep compiling (in a
#: live session, run after run) for code that is not hot enough to repay it; a large one is the tasks' code,
#: which C2 makes faster than C1 by more than it costs. The serial collector: a small heap's collections take
#: milliseconds on one thread, with no collector threads beside the tasks.
_SMALL = "-XX:+UseSerialGC -XX:TieredStopAtLevel=1"
#: A small live session's heap: it starts at 64 MiB, grows as Spark needs, and after a full collection keeps at
#: most 40 % of it free (module docstring). The serial collector resizes the heap by this ratio.
_SHRINKING_HEAP = "-Xms64m -XX:MaxHeapFreeRatio=40"


def _state_sizes(state: ClusterState) -> tuple[int, int]:
    rows = sum(p.state.group_partitions for p in state.pairs)
    records = sum(t.records_span for p in state.pairs for t in (p.syncs, p.checkpoints) if isinstance(t, TopicSnapshot))
    return rows, records


def driver_memory_for(state: ClusterState) -> str:
    """``spark.driver.memory`` for a live session over ``state``: a base for Spark itself, plus the cached
    rows of a run (per group partition) and what a full read of the internal topics sorts and keeps (per
    offset in their snapshots), in MiB. A one-off ``inspect`` keeps Spark's 4 GiB instead: it holds nothing
    between runs and stops in seconds."""
    rows, records = _state_sizes(state)
    extra = rows * HEAP_BYTES_PER_GROUP_PARTITION + records * HEAP_BYTES_PER_TOPIC_RECORD
    return f"{min(MAX_HEAP_MIB, BASE_HEAP_MIB + extra // 2**20)}m"


def driver_java_options_for(state: ClusterState) -> str:
    """``spark.driver.extraJavaOptions`` for a live session over ``state``: the throughput collector, or for a
    small inspection the C1 compiler only, on the serial collector, with a heap that shrinks to what it keeps."""
    rows, records = _state_sizes(state)
    if rows <= SMALL_GROUP_PARTITIONS and records <= SMALL_TOPIC_RECORDS:
        return f"{_SMALL} {_SHRINKING_HEAP}"
    return _THROUGHPUT


def live_driver_environment(environ: MutableMapping[str, str]) -> None:
    """Set ``MALLOC_ARENA_MAX`` in ``environ``, the environment the driver JVM inherits (PySpark starts it with
    this process's), unless it is set already. glibc reads it when a process starts, so this process keeps its
    own arenas; its later children (the JVM, the group-type listings' JVMs) take it."""
    environ.setdefault("MALLOC_ARENA_MAX", LIVE_MALLOC_ARENAS)


def live_python_memory() -> None:
    """Make this process allocate Arrow memory from the system allocator (module docstring), unless the
    environment chose a pool (``ARROW_DEFAULT_MEMORY_POOL``, which Arrow reads itself)."""
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        pa.set_memory_pool(pa.system_memory_pool())


@dataclass(frozen=True, slots=True)
class Probe:
    """What a one-off ``inspect`` knows of its size before its JVM starts."""

    groups: int
    topic_records: int

    @property
    def java_options(self) -> str:
        """The driver's Java options for this size (``driver_java_options_for``'s rule, the groups standing in
        for their partitions)."""
        small = self.groups <= SMALL_GROUPS and self.topic_records <= SMALL_TOPIC_RECORDS
        return _SMALL if small else _THROUGHPUT


def fits_on_driver(sizes: ClusterState | Probe) -> bool:
    """Whether an inspection of this size runs on the driver with no Spark session (the ``auto`` engine): its
    group partitions classify on the driver (``DRIVER_MAX_ROWS``; a probe's groups stand in for them), and its
    internal topics are read and folded there (``DRIVER_ENGINE_MAX_OFFSETS``)."""
    if isinstance(sizes, Probe):
        return sizes.groups <= SMALL_GROUPS and sizes.topic_records <= DRIVER_ENGINE_MAX_OFFSETS
    rows, records = _state_sizes(sizes)
    return rows <= DRIVER_MAX_ROWS and records <= DRIVER_ENGINE_MAX_OFFSETS


def probe(config: MM2Config, pairs: Sequence[PairConfig], *, timeout_s: float = 15.0) -> Probe:
    """Each source's consumer groups and the records each flow's internal topics span: a listing and one
    offsets lookup per cluster. A figure it cannot read counts as large: the JVM then keeps its default
    compilers, and the admin reads report the failure."""
    groups = records = 0
    for pair in pairs:
        try:
            source = KafkaAdmin.connect(pair.source_kafka_config, name=pair.source, timeout_s=timeout_s)
            groups += len(source.list_groups())
            for cluster, topic in (
                (pair.offset_syncs_cluster, pair.offset_syncs_topic),
                (pair.target, pair.checkpoints_topic),
            ):
                admin = KafkaAdmin.connect(config.kafka_config(cluster, pair.name), name=cluster, timeout_s=timeout_s)
                count = admin.list_topics().get(topic, 0)
                bounds = admin.partition_bounds([(topic, p) for p in range(count)]).values()
                records += sum((b.latest or 0) - (b.earliest or 0) for b in bounds)
        except Exception:  # anything unreadable: sized as large, and the run reports it
            return Probe(groups=SMALL_GROUPS + 1, topic_records=SMALL_TOPIC_RECORDS + 1)
    return Probe(groups=groups, topic_records=records)
