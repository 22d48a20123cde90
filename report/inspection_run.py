"""An inspection run for a report: the one place ``mm2ctl report`` calls the inspection engine.

``inspect_for_report`` runs the same inspection ``mm2ctl inspect`` runs (the same setup, ``InspectOptions``
and Spark place, opened the one way: ``inspector.opening``) and hands back the two row sets as Arrow tables
in the report's schemas (``report.inputs``). The rest of the report only ever sees those tables, whether they
come from here or from a saved inspection, so a change of engine changes this function and nothing else.
This module imports Spark; ``report``'s other modules do not, and the CLI imports this one only when it runs
an inspection.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from mm2ctl.connect_client import ConnectClient
from mm2ctl.core.config.mm2_config import MM2Config
from mm2ctl.core.progress import Progress
from mm2ctl.inspector.opening import SparkPlace, open_inspection
from mm2ctl.inspector.selection import InspectOptions
from mm2ctl.report.inputs import GROUP_ROW_SCHEMA, PARTITION_ROW_SCHEMA, InspectionTables, conform


def inspect_for_report(
    config: MM2Config,
    options: InspectOptions,
    place: SparkPlace,
    *,
    connect: ConnectClient | None,
    jvm_log: Path | None,
    progress: Progress,
) -> InspectionTables:
    """Run the inspection and return its group-partition and replicated-partition rows as Arrow tables."""
    inspected_at = dt.datetime.now(dt.UTC)
    where = "the inspection's rows"
    with open_inspection(config, options, place, connect=connect, progress=progress, jvm_log=jvm_log) as inspector:
        result = inspector.run(progress=progress)
        try:
            groups = conform(result.rows.to_arrow().select(list(GROUP_ROW_SCHEMA.names)), GROUP_ROW_SCHEMA, path=where)
            partitions = conform(
                result.partitions.select(list(PARTITION_ROW_SCHEMA.names)), PARTITION_ROW_SCHEMA, path=where
            )
        finally:
            result.close()
    return InspectionTables(groups, partitions, inspected_at, origin="run by this report")
