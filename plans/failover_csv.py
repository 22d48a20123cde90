"""``plan failover --export-csv``: the translated positions as the file ``kafka-consumer-groups
--reset-offsets --from-file`` reads, for operators who reset offsets with Kafka's own tool.

Written atomically (a temporary file, fsynced, then renamed), so a half-written file never passes for a
complete one.
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

from mm2ctl.plans.planners.failover import FailoverReport


def write_failover_csv(report: FailoverReport, path: Path) -> int:
    """Write ``group,topic,partition,offset`` rows (no header: ``kafka-consumer-groups --reset-offsets
    --from-file`` reads every line as data); returns the number of rows."""
    rows = report.csv_rows()
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        for row in rows:
            writer.writerow(row)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return len(rows)
