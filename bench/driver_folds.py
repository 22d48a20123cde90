"""The driver's folds of MM2's internal topics, timed on their own: what a whole history costs in-process.

Run it as ``.venv/bin/python bench/driver_folds.py [--syncs N] [--partitions P] [--checkpoints M] [--json]``.
No lab and no Spark: the records are made in memory, already decoded, and each fold runs once, as the driver
engine runs it over a topic's whole history:

* the offset syncs, ``inspector.rules.sync_fold`` from no runs: ``N`` syncs over ``P`` source partitions, one
  per record as MM2 writes them while it catches up (each partition a single run), interleaved as MM2 writes
  them;
* the checkpoints, ``inspector.rules.checkpoint_fold`` into no checkpoints: ``M`` records of 1,000 groups, one in
  ten a tombstone.

It prints each fold's seconds and its output's rows, and the load average.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import time

import numpy as np
import pyarrow as pa
from bench_lab import loadavg

from mm2ctl.inspector import schemas
from mm2ctl.inspector.rules import checkpoint_fold, sync_fold


def _syncs(n: int, partitions: int) -> tuple[pa.Table, pa.Table]:
    """``n`` decoded sync records over ``partitions`` partitions of topic ``t``, and the partitions' numbering."""
    i = np.arange(n, dtype=np.int64)
    part = (i % partitions).astype(np.int32)
    upstream = i // partitions
    decoded = pa.table(
        {
            "cluster_pair": pa.array(["a->b"] * n),
            "topic": pa.array(["t"] * n),
            "partition": pa.array(part),
            "upstream_offset": pa.array(upstream),
            "downstream_offset": pa.array(upstream + 7),
            "is_tombstone": pa.array(np.zeros(n, bool)),
            "malformed_reason": pa.nulls(n, pa.string()),
            "record_partition": pa.array(np.zeros(n, np.int32)),
            "record_offset": pa.array(i),
            "record_timestamp": pa.array(i * 1000).cast(pa.timestamp("us", tz="UTC")),
        }
    )
    numbering = pa.table(
        {
            "cluster_pair": pa.array(["a->b"] * partitions),
            "topic": pa.array(["t"] * partitions),
            "partition": pa.array(np.arange(partitions, dtype=np.int32)),
            "_part": pa.array(np.arange(partitions, dtype=np.int32)),
        }
    )
    return decoded, numbering


def _checkpoints(n: int) -> pa.Table:
    i = np.arange(n, dtype=np.int64)
    tomb = i % 10 == 7
    return pa.table(
        {
            "cluster_pair": pa.array(["a->b"] * n),
            "group": pa.array([f"g{x:04d}" for x in (i * 7919) % 1000]),
            "topic": pa.array(["a.topic"] * n),
            "partition": pa.array(((i * 104_729) // 1000) % 1000, pa.int32()),
            "upstream_offset": pa.array(np.where(tomb, 0, i * 3)),
            "downstream_offset": pa.array(np.where(tomb, 0, i * 2)),
            "metadata": pa.array([""] * n),
            "is_tombstone": pa.array(tomb),
            "malformed_reason": pa.nulls(n, pa.string()),
            "record_partition": pa.array(np.zeros(n, np.int32)),
            "record_offset": pa.array(i),
            "record_timestamp": pa.array(i * 1000).cast(pa.timestamp("us", tz="UTC")),
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--syncs", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=1_000)
    ap.add_argument("--checkpoints", type=int, default=1_000_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out: dict[str, object] = {"load_start": loadavg(), "at": dt.datetime.now(dt.UTC).isoformat()}
    decoded, numbering = _syncs(args.syncs, args.partitions)
    start = time.perf_counter()
    found, malformed = sync_fold.records_of(decoded, numbering)
    folded = sync_fold.fold(sync_fold.RUNS_SCHEMA.empty_table(), found, malformed)
    out["syncs"] = {"records": args.syncs, "seconds": time.perf_counter() - start, "runs": folded.runs.num_rows}  # type: ignore[union-attr]
    empty = schemas.arrow_schema(schemas.CHECKPOINTS_SCHEMA).empty_table()
    records = _checkpoints(args.checkpoints)
    start = time.perf_counter()
    live = checkpoint_fold.fold_checkpoints(empty, records).live
    out["checkpoints"] = {"records": args.checkpoints, "seconds": time.perf_counter() - start, "live": live.num_rows}
    out["load_end"] = loadavg()
    print(json.dumps(out, indent=2) if args.json else out)


if __name__ == "__main__":
    main()
