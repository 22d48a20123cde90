"""An inspection run for a report: the one place ``mm2ctl report`` calls the inspection engine.

``inspect_for_report`` runs the same inspection ``mm2ctl inspect`` runs (the same setup, selection and Spark
options) and hands back the two row sets as Arrow tables in the report's schemas (``report.inputs``). The rest
of the report only ever sees those tables, whether they come from here or from a saved inspection, so a change
of engine changes this function and nothing else. This module imports Spark; ``report``'s other modules do
not, and the CLI imports this one only when it runs an inspection.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config import MM2Config
from mm2ctl.core.progress import Progress
from mm2ctl.inspector.cluster_state import read_cluster_state
from mm2ctl.inspector.inspection import InspectOptions, Inspector, preflight
from mm2ctl.inspector.selection import Selection
from mm2ctl.inspector.session import SHUFFLE_PARTITIONS, SessionStart
from mm2ctl.report.inputs import GROUP_ROW_SCHEMA, PARTITION_ROW_SCHEMA, InspectionTables, conform


@dataclass(frozen=True)
class InspectionRequest:
    """What to inspect and how, as ``inspect``'s options say it."""

    pairs: tuple[str, ...] = ()
    groups: str | None = None
    topics: str | None = None
    active_only: bool = False
    exact: bool = False
    lag_threshold: int = 10_000
    spark_master: str | None = None
    spark_conf: Mapping[str, str] = field(default_factory=dict)


def inspect_for_report(
    config: MM2Config,
    request: InspectionRequest,
    *,
    connect: ConnectClient | None,
    jvm_log: Path | None,
    progress: Progress,
) -> InspectionTables:
    """Run the inspection and return its group-partition and replicated-partition rows as Arrow tables."""
    options = InspectOptions(
        pairs=request.pairs,
        selection=Selection(groups=request.groups, topics=request.topics, active_only=request.active_only),
        exact=request.exact,
        lag_threshold=request.lag_threshold,
        size_shuffles=SHUFFLE_PARTITIONS not in request.spark_conf,
    )
    progress("reaching the clusters")
    checked = preflight(config, options)
    progress("starting Spark")
    session = SessionStart(request.spark_master, dict(request.spark_conf), jvm_log=jvm_log, share_classes=True)
    inspected_at = dt.datetime.now(dt.UTC)
    state = read_cluster_state(config, checked.pairs, options.selection, connect=connect, progress=progress)
    inspector = Inspector(session.result(), config, options, checked, connect=connect)
    result = inspector.run(progress=progress, cluster_state=state)
    where = "the inspection's rows"
    try:
        groups = conform(result.rows.to_arrow().select(list(GROUP_ROW_SCHEMA.names)), GROUP_ROW_SCHEMA, path=where)
        partitions = conform(
            result.partitions.select(list(PARTITION_ROW_SCHEMA.names)), PARTITION_ROW_SCHEMA, path=where
        )
    finally:
        result.close()
    session.finish(progress)  # the first embedded run: its JVM writes the class archive as it exits
    return InspectionTables(groups, partitions, inspected_at, origin="run by this report")
