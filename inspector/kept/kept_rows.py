"""What a live session keeps of a pair's classified rows between runs, so that a run classifies again only the
groups that changed (``inspector.kept.changed_groups``).

It keeps the rows of the last run that classified every group (``base``, a local checkpoint), the rows of the
groups classified again since (``overlay``, a small local checkpoint), and the groups those replace in the
base. It keeps each group's figures of the final aggregation (``summary.group_figures``) on the driver too: a
group's figures come from its own rows alone, so a group not classified again keeps them, its checkpoint age
taken again at each run's time. A run therefore pays for the changed groups' rows only: no copy of the
others, and no aggregation of them. Once more than ``inspector.kept.changed_groups.MERGE_AT_MOST`` of the groups have
been classified again since the base, the run classifies every group and starts a new base.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from mm2ctl.inspector import schemas
from mm2ctl.inspector.kept import driver_rows
from mm2ctl.inspector.kept.changed_groups import ClassifyInputs
from mm2ctl.inspector.rules.partition_health import age_seconds_of
from mm2ctl.inspector.spark.compat import frame_from_arrow
from mm2ctl.inspector.spark.frames import release
from mm2ctl.inspector.transforms import classify, summary
from mm2ctl.inspector.transforms.replication_health import with_group_checkpoint_age

#: The columns that name a group.
GROUP_KEY = ["cluster_pair", "group"]
#: ``summary.group_figures``' rows, by group.
Figures = Mapping[str, tuple[dict[str, Any], ...]]


def group_keys(spark: SparkSession, pair: str, groups: Iterable[str]) -> DataFrame:
    """``groups`` of ``pair`` as a frame small enough to broadcast (``schemas.GROUP_KEYS_SCHEMA``)."""
    names = sorted(groups)
    table = pa.table({"cluster_pair": [pair] * len(names), "group": names})
    return F.broadcast(frame_from_arrow(spark, table, schemas.GROUP_KEYS_SCHEMA))


def figures_of(rows: DataFrame, as_of: dt.datetime) -> Figures:
    """The final aggregation of ``rows`` (``KEPT_ROWS_SCHEMA`` less the age), by group."""
    aged = with_group_checkpoint_age(rows, as_of=as_of)
    found: dict[str, list[dict[str, Any]]] = {}
    for row in summary.group_figures(aged).collect():
        figure = row.asDict(recursive=True)
        found.setdefault(figure["group"], []).append(figure)
    return {group: tuple(figures) for group, figures in found.items()}


@dataclass(frozen=True, slots=True)
class KeptRows:
    """A pair's classified rows as a live session keeps them (module docstring), and the inputs they were
    classified from."""

    #: None when the first run classified every group on the driver (``on_driver``).
    base: DataFrame | None
    overlay: DataFrame | None
    replaced: frozenset[str]
    inputs: ClassifyInputs
    figures: Figures
    #: The rows of the groups classified again on the driver since (``inspector.kept.driver_rows``), and those
    #: groups (some may have no row left): they replace those groups' rows in the base and the overlay.
    held: pa.Table | None = None
    held_groups: frozenset[str] = frozenset()

    @classmethod
    def classified(cls, rows: DataFrame, inputs: ClassifyInputs, as_of: dt.datetime) -> KeptRows:
        """Every group's ``rows``, freshly classified: materialized, and aggregated."""
        base = rows.localCheckpoint(eager=True)
        return cls(base, None, frozenset(), inputs, figures_of(base, as_of))

    @classmethod
    def on_driver(cls, rows: pa.Table, inputs: ClassifyInputs, as_of: dt.datetime) -> KeptRows:
        """Every group's ``rows``, freshly classified on the driver (``driver_rows.HELD_ROWS_SCHEMA``): held there,
        with no base in Spark."""
        groups = frozenset(str(g) for g in set(rows.column("group").to_pylist()))
        return cls(None, None, frozenset(), inputs, driver_rows.figures(rows, as_of), rows, groups)

    def again(
        self, pair: str, groups: set[str], rows: DataFrame, inputs: ClassifyInputs, as_of: dt.datetime
    ) -> KeptRows:
        """These rows with ``groups`` classified again as ``rows``: the overlay gains them (and loses their
        earlier rows), their figures are aggregated anew, and every other group keeps its own."""
        spark = rows.sparkSession
        keys = group_keys(spark, pair, groups)
        overlay = rows if self.overlay is None else self.overlay.join(keys, GROUP_KEY, "left_anti").unionByName(rows)
        overlay = overlay.localCheckpoint(eager=True)
        kept = {group: figures for group, figures in self.figures.items() if group not in groups}
        fresh = figures_of(overlay.join(keys, GROUP_KEY, "left_semi"), as_of)
        held = None if self.held is None else driver_rows.group_rows(self.held, groups)
        return KeptRows(
            self.base, overlay, self.replaced | groups, inputs, {**kept, **fresh}, held, self.held_groups - groups
        )

    def again_on_driver(self, groups: set[str], rows: pa.Table, inputs: ClassifyInputs, as_of: dt.datetime) -> KeptRows:
        """These rows with ``groups`` classified again on the driver as ``rows`` (``driver_rows.HELD_ROWS_SCHEMA``):
        held here, with their figures; no Spark job."""
        held = rows if self.held is None else pa.concat_tables([driver_rows.group_rows(self.held, groups), rows])
        kept = {group: figures for group, figures in self.figures.items() if group not in groups}
        fresh = driver_rows.figures(rows, as_of)
        held_groups = self.held_groups | groups
        return KeptRows(self.base, self.overlay, self.replaced | groups, inputs, {**kept, **fresh}, held, held_groups)

    def with_inputs(self, inputs: ClassifyInputs) -> KeptRows:
        return dataclasses.replace(self, inputs=inputs)

    def held_only(self) -> pa.Table | None:
        """Every group's rows when the driver holds them all (``driver_rows.HELD_ROWS_SCHEMA``), else None."""
        return self.held if self.base is None and self.overlay is None else None

    def rows(self, spark: SparkSession, pair: str) -> DataFrame:
        """Every group's rows (not materialized): the base's, less the replaced groups', the overlay, and the
        rows held on the driver."""
        if self.base is not None and self.overlay is None and self.held is None:
            return self.base
        parts = []
        if self.base is not None:
            parts.append(self.base.join(group_keys(spark, pair, self.replaced), GROUP_KEY, "left_anti"))
        if self.overlay is not None:
            overlay = self.overlay
            if self.held_groups:
                overlay = overlay.join(group_keys(spark, pair, self.held_groups), GROUP_KEY, "left_anti")
            parts.append(overlay)
        if self.held is not None:
            parts.append(frame_from_arrow(spark, self.held, driver_rows.HELD_ROWS_SCHEMA))
        return functools.reduce(DataFrame.unionByName, parts)

    def stale(self, as_of: dt.datetime, fresh_checkpoint_age: dt.timedelta) -> set[str]:
        """The groups with a row kept in by a checkpoint that is no longer fresh at ``as_of``
        (``classify.stale_at``)."""
        return {
            group
            for group, figures in self.figures.items()
            if any(
                classify.stale_at(f["fresh_until_micros"], as_of=as_of, fresh_checkpoint_age=fresh_checkpoint_age)
                for f in figures
            )
        }

    def figures_at(self, as_of: dt.datetime) -> list[dict[str, Any]]:
        """Every group's figures, their checkpoint age taken at ``as_of``."""
        return [
            {**f, "checkpoint_age": age_seconds_of(f["newest_checkpoint_micros"], as_of)}
            for figures in self.figures.values()
            for f in figures
        ]

    def release_unshared(self, now: KeptRows | None) -> None:
        """Release what these rows hold that ``now`` (what replaced them, if anything) does not."""
        if self.base is not None and (now is None or now.base is not self.base):
            release(self.base)
        if self.overlay is not None and (now is None or now.overlay is not self.overlay):
            release(self.overlay)
