"""Which groups a live session's run classifies again; every other group keeps the rows of the run before.

A group-partition row's status, message and figures are a function of (``inspector.transforms.classify``):

* its group's committed offsets and state on the source, and on the target (per group);
* its source partition's log bounds and MM2's position there, its remote partition's bounds on the target,
  and the partition's runs of offset syncs (per source partition);
* its live checkpoint (per group);
* the clock, through one rule only: a checkpoint younger than two of MM2's intervals proves MM2 is keeping up.

A group is classified again whole, because its rows' messages depend on its other partitions (whether any
is synced) and its checkpoint age is the newest over all of them. So a run re-classifies the groups whose own
rows changed, the groups with a row on a changed partition, and the groups with a checkpoint that was fresh
at the last run and no longer is (``inspector.kept.kept_rows`` finds those from the groups' kept figures); the rest
keep their rows. What the driver holds (the admin state, MM2's position) is compared here, table by table;
what Spark keeps (the runs, the checkpoints) says itself what it changed (``TopicChanges``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from mm2ctl.core.kafka.admin import TP
from mm2ctl.inspector.transforms import classify

#: A run classifies everything again once this share of the groups changed: merging the kept rows with the
#: new ones then costs more than it saves.
MERGE_AT_MOST = 0.5


@dataclass(slots=True)
class TopicChanges:
    """What a pair's kept internal topics changed since its rows were last classified: the source partitions
    whose runs of offset syncs changed, the groups with a new live checkpoint; ``everything`` after a full read
    (or before the first)."""

    everything: bool = True
    partitions: set[TP] = field(default_factory=set)
    groups: set[str] = field(default_factory=set)

    def all(self) -> None:
        """Everything changed (a topic read in full, or dropped)."""
        self.everything = True
        self.partitions.clear()
        self.groups.clear()

    def clear(self) -> None:
        """The rows were classified with every change so far."""
        self.everything = False
        self.partitions.clear()
        self.groups.clear()


@dataclass(frozen=True, slots=True)
class ClassifyInputs:
    """A pair's admin state and MM2's position as its classification read them, in ``inspector.schemas``' shapes:
    the source group offsets (``SOURCE_GROUP_OFFSETS_SCHEMA``, the run's errors applied), the source and target
    partitions, the target group offsets, the source and target groups, and MM2's position per partition
    (``MM2_POSITIONS_SCHEMA``)."""

    group_offsets: pa.Table
    source_partitions: pa.Table
    target_partitions: pa.Table
    target_group_offsets: pa.Table
    source_groups: pa.Table
    target_groups: pa.Table
    mm2_positions: pa.Table

    def admin_facts(self) -> classify.AdminFacts:
        """The admin state the rows are looked up in (``inspector.transforms.classify.AdminFacts``)."""
        return classify.AdminFacts.of(
            source_partitions=self.source_partitions,
            target_partitions=self.target_partitions,
            mm2_positions=self.mm2_positions,
            source_groups=self.source_groups,
            target_groups=self.target_groups,
        )

    def groups(self) -> set[str]:
        """The groups with a row."""
        return set(pc.unique(self.group_offsets.column("group")).to_pylist())

    def of_groups(self, groups: set[str]) -> ClassifyInputs:
        """These inputs with only ``groups``' rows of the tables with a row per group partition (the others are
        small, and looked up by the rows)."""
        wanted = pa.array(sorted(groups), pa.string())

        def rows_of(table: pa.Table) -> pa.Table:
            return table.filter(pc.is_in(table.column("group"), value_set=wanted))

        return dataclasses.replace(
            self, group_offsets=rows_of(self.group_offsets), target_group_offsets=rows_of(self.target_group_offsets)
        )


def changed_keys(before: pa.Table, now: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The ``keys`` of every row that is in one table and not the other (added, removed or changed), counting
    duplicates. Two tables whose key columns are equal, row by row (the admin state is read in the same order
    from one run to the next), are compared row by row; others by one group-by of both over all their columns."""
    if before.schema != now.schema:
        return pa.concat_tables([before.select(keys), now.select(keys)])
    if before.num_rows == now.num_rows and all(before.column(k).equals(now.column(k)) for k in keys):
        return now.filter(_rows_differ(before, now, [c for c in now.column_names if c not in keys])).select(keys)
    side = "_changed_side"
    both = pa.concat_tables(
        [
            before.append_column(side, pa.repeat(pa.scalar(0, pa.int8()), before.num_rows)),
            now.append_column(side, pa.repeat(pa.scalar(1, pa.int8()), now.num_rows)),
        ]
    )
    counted = both.group_by(before.column_names, use_threads=False).aggregate([(side, "sum"), (side, "count")])
    in_now, in_all = counted.column(f"{side}_sum"), counted.column(f"{side}_count")
    return counted.filter(pc.not_equal(pc.multiply(in_now, 2), in_all)).select(keys)


def _rows_differ(before: pa.Table, now: pa.Table, columns: Sequence[str]) -> pa.ChunkedArray | pa.Array:
    """Whether each row of ``now`` differs from ``before``'s at the same position in any of ``columns`` (a null
    equals a null only)."""
    differ: pa.ChunkedArray | pa.Array = pa.repeat(pa.scalar(False), now.num_rows)
    for name in columns:
        a, b = before.column(name), now.column(name)
        unequal = pc.fill_null(pc.not_equal(a, b), False)
        differ = pc.or_(differ, pc.or_(unequal, pc.xor(pc.is_null(a), pc.is_null(b))))
    return differ


def _tps(table: pa.Table) -> set[TP]:
    return set(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(), strict=True))


def _source_of_remote(inputs: Iterable[ClassifyInputs], remote: set[TP]) -> set[TP]:
    """The source partitions of ``remote`` (target-side) partitions, by the source partitions' remote names."""
    found: set[TP] = set()
    for i in inputs:
        table = i.source_partitions
        topics = zip(table.column("topic").to_pylist(), table.column("remote_topic").to_pylist(), strict=True)
        by_remote = {r: t for t, r in topics if r is not None}
        found |= {(by_remote[t], p) for t, p in remote if t in by_remote}
    return found


def _groups_on(group_offsets: pa.Table, partitions: set[TP]) -> set[str]:
    if not partitions:
        return set()
    wanted = pa.table(
        {
            "topic": pa.array([t for t, _ in partitions], pa.string()),
            "partition": pa.array([p for _, p in partitions], pa.int32()),
        }
    )
    on = group_offsets.select(["group", "topic", "partition"])
    found = on.join(wanted, keys=["topic", "partition"], join_type="left semi", use_threads=False)
    return set(pc.unique(found.column("group")).to_pylist())


def changed_groups(before: ClassifyInputs, now: ClassifyInputs, topics: TopicChanges) -> set[str] | None:
    """The groups whose rows may differ from ``before``'s (the clock's rule aside: the caller adds those);
    None when every group must be classified again."""
    if topics.everything:
        return None
    groups = set(topics.groups)
    for table in ("group_offsets", "target_group_offsets", "source_groups", "target_groups"):
        changed = changed_keys(getattr(before, table), getattr(now, table), ["group"])
        groups |= set(changed.column("group").to_pylist())
    partitions = set(topics.partitions)
    partitions |= _tps(changed_keys(before.source_partitions, now.source_partitions, ["topic", "partition"]))
    partitions |= _tps(changed_keys(before.mm2_positions, now.mm2_positions, ["topic", "partition"]))
    remote = _tps(changed_keys(before.target_partitions, now.target_partitions, ["topic", "partition"]))
    partitions |= _source_of_remote((before, now), remote)
    return groups | _groups_on(now.group_offsets, partitions)


def worth_merging(changed: set[str] | None, inputs: ClassifyInputs) -> bool:
    """Whether keeping the other groups' rows is cheaper than classifying every group again."""
    if changed is None:
        return False
    return len(changed) <= MERGE_AT_MOST * max(1, len(inputs.groups()))
