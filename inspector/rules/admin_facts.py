"""Everything the admin state says about a group partition, looked up beside its row: the join before classifying.

The driver reads both clusters' admin state, a row per source partition, per target partition, per group and per
MM2 position: small tables. ``partition_facts`` and ``group_facts`` fold them into one table per key, and
``joined_rows`` looks each group-partition row up in them, giving ``schemas.JOINED_SCHEMA``'s rows that
``inspector.rules.row_status`` classifies. Spark runs the lookup with the classification, in the same Python call
per partition, the two small tables travelling with the function (no broadcast job); a process that holds the
rows runs it as it is.

Target-side facts are looked up under the **remote** topic name the source partition carries, so
DefaultReplicationPolicy (``src.orders``) and IdentityReplicationPolicy (``orders``) both work (Aiven's tool looks
the target group up under the source name and so misses every prefixed topic). Every input's ``error`` is
carried into one ``error`` column, prefixed with where it came from, so one failed lookup marks its rows and
nothing else; a source partition the driver did not describe at all is an error rather than a guess.

Only pyarrow and numpy are imported when it runs, so Spark can ship it to a Python worker by value.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

PARTITION_KEY = ["cluster_pair", "topic", "partition"]
GROUP_KEY = ["cluster_pair", "group"]
#: Whether the source partition was described (its row exists), in the partition facts.
DESCRIBED = "_described"
UNDESCRIBED = "source partition: not described by the job"
#: Where each error of a row came from, as its ``error`` column names it, in the order it lists them.
_ERRORS = (
    ("_e_go", "source group offsets"),
    (DESCRIBED, ""),
    ("_e_sp", "source partition"),
    ("_e_tp", "target partition"),
    ("_e_tgo", "target group offsets"),
    ("_e_sg", "source group"),
    ("_e_tg", "target group"),
)


def _renamed(table: pa.Table, names: dict[str, str]) -> pa.Table:
    return table.select(list(names)).rename_columns(list(names.values()))


def with_remote_topics(group_offsets: pa.Table, source_partitions: pa.Table) -> pa.Table:
    """``group_offsets`` (``schemas.SOURCE_GROUP_OFFSETS_SCHEMA``) with each row's ``remote_topic``, as the source
    partition's description names it (null for a partition it does not describe): what the target's facts are
    looked up under."""
    remote = source_partitions.select([*PARTITION_KEY, "remote_topic"])
    joined = group_offsets.join(remote, keys=PARTITION_KEY, join_type="left outer")
    return joined.select([*group_offsets.column_names, "remote_topic"])


def partition_facts(source_partitions: pa.Table, target_partitions: pa.Table, mm2_positions: pa.Table) -> pa.Table:
    """A row per source partition known to the source's description or to MM2's position: its bounds and remote
    topic, its remote partition's bounds, MM2's position on it, and their errors."""
    sp = _renamed(
        source_partitions,
        {"cluster_pair": "cluster_pair", "topic": "topic", "partition": "partition",
         "earliest_offset": "source_earliest", "latest_offset": "source_latest", "remote_topic": "remote_topic",
         "error": "_e_sp"},
    )  # fmt: skip
    sp = sp.append_column(DESCRIBED, pa.array([True] * sp.num_rows, pa.bool_()))
    tp = _renamed(
        target_partitions,
        {"cluster_pair": "cluster_pair", "topic": "remote_topic", "partition": "partition",
         "earliest_offset": "target_earliest", "latest_offset": "target_latest", "error": "_e_tp"},
    )  # fmt: skip
    mp = _renamed(
        mm2_positions,
        {"cluster_pair": "cluster_pair", "topic": "topic", "partition": "partition",
         "position_known": "mm2_position_known", "mm2_next_offset": "mm2_next_offset"},
    )  # fmt: skip
    described = sp.join(tp, keys=["cluster_pair", "remote_topic", "partition"], join_type="left outer")
    return described.join(mp, keys=PARTITION_KEY, join_type="full outer")


def group_facts(source_groups: pa.Table, target_groups: pa.Table) -> pa.Table:
    """A row per group either cluster described: its state (and type) on the source, its state and members on
    the target, and their errors."""
    sg = _renamed(
        source_groups,
        {"cluster_pair": "cluster_pair", "group": "group", "state": "source_group_state", "group_type": "group_type",
         "error": "_e_sg"},
    )  # fmt: skip
    tg = _renamed(
        target_groups,
        {"cluster_pair": "cluster_pair", "group": "group", "state": "target_group_state",
         "member_count": "target_group_members", "error": "_e_tg"},
    )  # fmt: skip
    return sg.join(tg, keys=GROUP_KEY, join_type="full outer")


def joined_rows(rows: pa.Table, partitions: pa.Table, groups: pa.Table, columns: list[str]) -> pa.Table:
    """``rows`` (translated group offsets, with their remote topic, target offset and live checkpoint) with the
    facts of their partition and group: ``columns`` (``schemas.JOINED_SCHEMA``'s names), in that order."""
    facts = partitions.drop_columns(["remote_topic"])
    looked_up = rows.join(_keys_as(facts, rows, PARTITION_KEY), keys=PARTITION_KEY, join_type="left outer")
    looked_up = looked_up.join(_keys_as(groups, rows, GROUP_KEY), keys=GROUP_KEY, join_type="left outer")
    return looked_up.append_column("error", _errors(looked_up)).select(columns)


def _keys_as(table: pa.Table, like: pa.Table, keys: list[str]) -> pa.Table:
    """``table`` with its key columns of ``like``'s types (Spark may hand strings over as large strings)."""
    for name in keys:
        wanted = like.schema.field(name).type
        if table.schema.field(name).type != wanted:
            table = table.set_column(table.schema.get_field_index(name), name, pc.cast(table.column(name), wanted))
    return table


def _errors(table: pa.Table) -> pa.Array:
    """Every error of a row, each prefixed with where it came from, ``; ``-separated; null when there is none.
    Few rows have one: only theirs are joined, as Python strings."""
    parts = []
    for column, what in _ERRORS:
        values = table.column(column).combine_chunks()
        if column == DESCRIBED:
            parts.append(pc.if_else(pc.is_null(values), pa.scalar(UNDESCRIBED), pa.scalar(None, pa.string())))
        else:
            parts.append(pc.binary_join_element_wise(f"{what}: ", pc.cast(values, pa.string()), ""))
    valid = np.zeros(table.num_rows, bool)
    for part in parts:
        valid |= np.asarray(pc.is_valid(part), bool)
    at = np.flatnonzero(valid)
    errors: list[str | None] = [None] * table.num_rows
    picked = [part.take(pa.array(at)).to_pylist() for part in parts]
    for i, row in zip(at.tolist(), zip(*picked, strict=True), strict=True):
        errors[i] = "; ".join(e for e in row if e is not None)
    return pa.array(errors, pa.string())
