"""A live cycle's changed groups classified on the driver, with no Spark job.

A live session holds a pair's runs of offset syncs and its live checkpoints on the driver while they are small
(``inspector.kept.pair_topics.HELD_MAX_ROWS``), and its admin state is there already. The few groups a cycle
classifies again then go through the same rules Spark runs over every group, called directly:

1. each row's remote topic (``inspector.rules.admin_facts.with_remote_topics``);
2. the translation through its partition's runs (``inspector.rules.translation``);
3. the target group's committed offset and the live checkpoint, both under the remote topic name;
4. the admin state's facts and the status (``inspector.rules.row_status``);
5. the group's newest checkpoint over its rows.

The output has the columns Spark's classification gives the kept rows (``HELD_ROWS_SCHEMA``).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.types import DoubleType, StructField, StructType, TimestampType

from mm2ctl.core.config.mm2_config import PairConfig
from mm2ctl.inspector import schemas
from mm2ctl.inspector.kept.changed_groups import ClassifyInputs
from mm2ctl.inspector.rules import admin_facts, row_status, translation
from mm2ctl.inspector.rules.partition_health import age_seconds_column
from mm2ctl.inspector.transforms import classify
from mm2ctl.inspector.transforms.summary import rule as figures_rule

#: The kept rows as classification gives them: its columns, then the group's newest checkpoint.
HELD_ROWS_SCHEMA = StructType(
    [*classify.CLASSIFIED_ROWS_SCHEMA.fields, StructField(schemas.GROUP_NEWEST_CHECKPOINT, TimestampType())]
)
#: The rows as a run reports them (``final_rows``): the kept rows, the group's checkpoint age at the run's time,
#: and the replay in time (null: read only by ``--exact``, which is Spark's).
FINAL_ROWS_SCHEMA = StructType(
    [
        *HELD_ROWS_SCHEMA.fields,
        StructField(schemas.GROUP_CHECKPOINT_AGE, DoubleType()),
        StructField(schemas.CHECKPOINT_LAG, DoubleType()),
    ]
)
#: The most group-partition rows a cycle classifies on the driver; more go to Spark.
DRIVER_MAX_ROWS = 50_000

_TARGET = {"committed_offset": "target_offset", "error": "_e_tgo", "written_by": "target_written_by"}
_CHECKPOINT = {
    "upstream_offset": "checkpoint_upstream",
    "downstream_offset": "checkpoint_offset",
    "record_timestamp": "checkpoint_timestamp",
}
_TARGET_KEY = ["cluster_pair", "group", "topic", "partition"]
_ROW_KEY = ["cluster_pair", "group", "remote_topic", "partition"]


def _looked_up(rows: pa.Table, table: pa.Table, names: dict[str, str]) -> pa.Table:
    """``rows`` with ``names`` of ``table`` (renamed), matched on the remote topic's key."""
    right = table.select([*_TARGET_KEY, *names]).rename_columns([*_ROW_KEY, *names.values()])
    joined = rows.join(right, keys=_ROW_KEY, join_type="left outer", use_threads=False)
    return joined.select([*rows.column_names, *names.values()])


def join_target_state(translated: pa.Table, target_group_offsets: pa.Table, checkpoints: pa.Table) -> pa.Table:
    """Each translated row with the target group's committed offset and the live checkpoint, both under the
    row's remote topic (``inspector.transforms.classify.join_target_state``'s columns)."""
    rows = translated.rename_columns(["_e_go" if c == "error" else c for c in translated.column_names])
    return _looked_up(_looked_up(rows, target_group_offsets, _TARGET), checkpoints, _CHECKPOINT)


def with_group_newest_checkpoint(classified: pa.Table) -> pa.Table:
    """``classified`` with its group's newest checkpoint over its rows (null when MM2 checkpointed none)."""
    newest = classified.group_by(["cluster_pair", "group"], use_threads=False).aggregate(
        [("checkpoint_timestamp", "max")]
    )
    named = newest.rename_columns(["cluster_pair", "group", schemas.GROUP_NEWEST_CHECKPOINT])
    return classified.join(named, keys=["cluster_pair", "group"], join_type="left outer", use_threads=False).select(
        HELD_ROWS_SCHEMA.names
    )


def classified(
    pair: PairConfig,
    inputs: ClassifyInputs,
    *,
    numbering: pa.Table,
    runs: pa.Table,
    checkpoints: pa.Table,
    as_of: dt.datetime,
) -> pa.Table:
    """The rows of ``inputs``' groups, classified here (module docstring): ``HELD_ROWS_SCHEMA``."""
    with_remote = admin_facts.with_remote_topics(inputs.group_offsets, inputs.source_partitions)
    translated = translation.translate_numbered(with_remote, runs, numbering)
    joined = join_target_state(translated, inputs.target_group_offsets, checkpoints)
    admin = inputs.admin_facts()
    settings = classify.settings(
        sync_group_offsets_enabled=pair.sync_group_offsets_enabled,
        offset_lag_max=pair.offset_lag_max,
        as_of=as_of,
        fresh_checkpoint_age=classify.fresh_checkpoint_age(pair),
    )
    rows = row_status.look_up_and_classify(
        joined, admin.partitions, admin.groups, schemas.JOINED_SCHEMA.names, settings, classify.vocabulary()
    )
    return with_group_newest_checkpoint(rows)


def figures(rows: pa.Table, as_of: dt.datetime) -> dict[str, tuple[dict[str, object], ...]]:
    """The final aggregation of ``rows`` (``HELD_ROWS_SCHEMA``), by group, the checkpoint age taken at ``as_of``."""
    found: dict[str, list[dict[str, object]]] = {}
    for figure in figures_rule()(_aged(rows, as_of)).to_pylist():
        found.setdefault(str(figure["group"]), []).append(figure)
    return {group: tuple(fs) for group, fs in found.items()}


def _aged(rows: pa.Table, as_of: dt.datetime) -> pa.Table:
    """``rows`` with their group's checkpoint age at ``as_of`` (``replication_health.with_group_checkpoint_age``)."""
    age = age_seconds_column(rows.column(schemas.GROUP_NEWEST_CHECKPOINT), as_of)
    return rows.append_column(schemas.GROUP_CHECKPOINT_AGE, age)


def final_rows(rows: pa.Table, as_of: dt.datetime) -> pa.Table:
    """``rows`` (``HELD_ROWS_SCHEMA``) as a run reports them (``FINAL_ROWS_SCHEMA``): what
    ``replication_health.with_group_checkpoint_age`` and ``without_checkpoint_lag`` add in Spark."""
    lag = pa.nulls(rows.num_rows, pa.float64())
    return _aged(rows, as_of).append_column(schemas.CHECKPOINT_LAG, lag).cast(schemas.arrow_schema(FINAL_ROWS_SCHEMA))


def group_rows(rows: pa.Table, groups: set[str]) -> pa.Table:
    """``rows`` less those of ``groups``."""
    return rows.filter(pc.invert(pc.is_in(rows.column("group"), value_set=pa.array(sorted(groups), pa.string()))))
