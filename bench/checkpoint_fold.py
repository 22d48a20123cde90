"""MM2's live checkpoints in Spark: the rule ``inspector.transforms.live_checkpoints`` runs, timed on its own.

Run it as ``.venv/bin/python bench/checkpoint_fold.py [--records N] [--new K] [--rounds R]
[--baseline-python PY] [--json]``. Each measurement is a new process that builds an embedded session (as
``mm2ctl inspect`` does, ``local[*]``), makes ``N`` decoded checkpoint records (1,000 groups, each a share of the
keys, about one record in ten a tombstone; cached, so the records' own making is not timed), then times:

* the **full read**: ``live_checkpoints(decoded)``, made a local checkpoint as the inspection keeps it;
* the **later read**: ``merged_checkpoints(kept, new)``, ``K`` new records (half of them for kept keys) folded
  into what the full read kept, made a local checkpoint too.

With ``--baseline-python``, the same script runs under that interpreter too (a checkout of other code with
its own virtualenv), the two alternating for ``R`` rounds, the order swapping each round; it prints the median
of each and the ratio. A fresh process per run: the first job of a session pays Spark's start, as a one-off
``inspect`` does, so the figures are of the second and third time each step runs in the process.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_lab import loadavg, say

GROUPS = 1_000


def _decoded(spark: Any, n: int, first_offset: int, tombstones: bool) -> Any:
    """``n`` decoded checkpoint records of ``GROUPS`` groups over 1,000 partitions of a topic, offsets from
    ``first_offset``: ``schemas.DECODED_CHECKPOINT_SCHEMA``."""
    from pyspark.sql import functions as F

    from mm2ctl.inspector.schemas import DECODED_CHECKPOINT_SCHEMA

    i = F.col("id")
    tomb = (i % 10 == 7) if tombstones else F.lit(False)
    return (
        spark.range(first_offset, first_offset + n)
        .select(
            F.lit("a->b").alias("cluster_pair"),
            F.format_string("g%04d", (i * 7919) % GROUPS).alias("group"),
            F.lit("a.topic").alias("topic"),
            (F.floor(i * 104_729 / GROUPS) % 1000).cast("int").alias("partition"),
            F.when(tomb, None).otherwise(i * 3).alias("upstream_offset"),
            F.when(tomb, None).otherwise(i * 2).alias("downstream_offset"),
            F.when(tomb, None).otherwise(F.lit("")).alias("metadata"),
            tomb.alias("is_tombstone"),
            F.lit(None).cast("string").alias("malformed_reason"),
            F.lit(0).alias("record_partition"),
            i.alias("record_offset"),
            F.timestamp_seconds(i % 100_000 + 1_700_000_000).alias("record_timestamp"),
        )
        .select(*DECODED_CHECKPOINT_SCHEMA.names)
        .cache()
    )


def _merged(merge: Any, kept: Any, later: Any, new: int) -> Any:
    """``merge`` as the code under test takes it: earlier code took no record count."""
    if len(inspect.signature(merge).parameters) == 3:
        return merge(kept, later, new)
    return merge(kept, later)


def _child(records: int, new: int) -> dict[str, Any]:
    """One process's timings, seconds: each step run three times, the first apart."""
    from mm2ctl.inspector.spark.session import build_session
    from mm2ctl.inspector.transforms import live_checkpoints

    spark = build_session(None, {"spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    decoded = _decoded(spark, records, 0, tombstones=True)
    later = _decoded(spark, new, records, tombstones=True)
    decoded.count(), later.count()
    full, merge, rows = [], [], 0
    for _ in range(3):
        start = time.perf_counter()
        kept = live_checkpoints.live_checkpoints(decoded).localCheckpoint(eager=True)
        full.append(time.perf_counter() - start)
        start = time.perf_counter()
        merged = _merged(live_checkpoints.merged_checkpoints, kept, later, new).localCheckpoint(eager=True)
        merge.append(time.perf_counter() - start)
        rows = merged.count()
    spark.stop()
    return {"full_first": full[0], "full": statistics.median(full[1:]), "merge_first": merge[0],
            "merge": statistics.median(merge[1:]), "live_rows": rows}  # fmt: skip


def _run(python: str, records: int, new: int) -> dict[str, Any]:
    out = subprocess.run(
        [python, str(Path(__file__).resolve()), "--child", "--records", str(records), "--new", str(new)],
        check=True, capture_output=True, text=True, cwd=Path(__file__).parent,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent)},
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--new", type=int, default=2_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-python", help="the interpreter of the code to compare with")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.records, args.new)))
        return
    sides = {"this": sys.executable, **({"baseline": args.baseline_python} if args.baseline_python else {})}
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in sides}
    load = [loadavg()]
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for name in order:
            got = _run(sides[name], args.records, args.new)
            runs[name].append(got)
            say(f"round {r + 1} {name}: full read {got['full']:.2f} s, later read {got['merge']:.2f} s")
    load.append(loadavg())
    summary: dict[str, Any] = {"records": args.records, "new": args.new, "load": load}
    for name, got in runs.items():
        summary[name] = {
            k: statistics.median(g[k] for g in got) for k in ("full_first", "full", "merge_first", "merge")
        }
        summary[name]["live_rows"] = got[-1]["live_rows"]
        summary[name]["runs"] = got
    if "baseline" in runs:
        summary["ratio"] = {k: summary["this"][k] / summary["baseline"][k] for k in ("full", "merge")}
    print(json.dumps(summary, indent=2) if args.json else summary)


if __name__ == "__main__":
    main()
