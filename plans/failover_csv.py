"""``plan failover --export-csv``: the translated positions as the file ``kafka-consumer-groups
--reset-offsets --from-file`` reads, for operators who reset offsets with Kafka's own tool.

Written atomically (a temporary file, fsynced, then renamed), so a half-written file never passes for a
complete one.
"""

from __future__ import annotations

import csv
from pathlib import Path

from mm2ctl.core.atomic_file import replaced
from mm2ctl.plans.planners.failover.planner import FailoverReport


def write_failover_csv(report: FailoverReport, path: Path) -> int:
    """Write ``group,topic,partition,offset`` rows (no header: ``kafka-consumer-groups --reset-offsets
    --from-file`` reads every line as data); returns the number of rows."""
    rows = report.csv_rows()
    with replaced(path, encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        for row in rows:
            writer.writerow(row)
    return len(rows)
