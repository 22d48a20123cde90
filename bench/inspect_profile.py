"""Where does ``mm2ctl inspect``'s time go? Run the job's steps one at a time against a loaded bench lab.

Run it as ``.venv/bin/python bench/inspect_profile.py --reuse-lab DIR`` on a lab that
``bench/inspect_scale.py --keep-lab`` loaded. Each step of ``inspector.job`` is materialized
on its own (cached, then counted) and timed, so the time of a step excludes the steps before it; the
physical plans (``explain``) of the heavy steps go to ``--explain FILE``. Materializing every step adds
caches the real job does not have, so the step times add up to more than the end-to-end time; they show
which step dominates, not the job's exact figure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_lab import say
from inspect_scale import MM2_FILE, PAIR  # the sibling script (bench/ is on sys.path when run)

from mm2ctl.core.config import load_mm2_config
from mm2ctl.inspector import decode, schemas, transforms
from mm2ctl.inspector.admin_state import collect_pair_state
from mm2ctl.inspector.job import InspectOptions, fresh_checkpoint_age
from mm2ctl.inspector.kafka_read import read_topic
from mm2ctl.inspector.selection import Selection
from mm2ctl.inspector.session import build_session
from mm2ctl.lab import lab


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/inspect_profile.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reuse-lab", metavar="DIR", required=True)
    parser.add_argument("--explain", metavar="FILE", default="/tmp/mm2ctl-bench-explain.txt")
    parser.add_argument("--spark-conf", action="append", default=[], metavar="K=V")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)

    info = lab.read_lab(Path(args.reuse_lab))
    config = load_mm2_config(Path(info.dir) / MM2_FILE)
    pair = config.pair(PAIR)
    spark = build_session(None, dict(kv.split("=", 1) for kv in args.spark_conf))
    spark.range(1).count()
    tasks = InspectOptions().read_tasks
    steps: dict[str, float] = {}
    plans: list[str] = []

    def step(name: str, fn: Callable[[], Any]) -> Any:
        t0 = time.monotonic()
        value = fn()
        steps[name] = round(time.monotonic() - t0, 2)
        say(f"{name}: {steps[name]:.1f}s")
        return value

    def materialize(name: str, frame: Any) -> Any:
        cached = frame.cache()
        step(name, cached.count)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            frame.explain(mode="formatted")
        plans.append(f"===== {name} =====\n{buf.getvalue()}")
        return cached

    state = step("admin state (collect_pair_state)", lambda: collect_pair_state(config, pair, Selection()))
    syncs_settings = config.client_settings(pair.offset_syncs_cluster, pair.name)
    target_settings = config.client_settings(pair.target, pair.name)
    raw_syncs = read_topic(spark, syncs_settings, pair.offset_syncs_topic, cluster_pair=pair.name, min_partitions=tasks)
    raw_cps = read_topic(spark, target_settings, pair.checkpoints_topic, cluster_pair=pair.name, min_partitions=tasks)
    step("read offset syncs (count only)", raw_syncs.count)
    decoded_syncs = materialize("read + decode offset syncs (cached)", decode.decode_offset_syncs(raw_syncs))
    step("malformed counts, offset syncs", lambda: decode.malformed_counts(decoded_syncs).collect())
    decoded_cps = materialize("read + decode checkpoints (cached)", decode.decode_checkpoints(raw_cps))
    step("malformed counts, checkpoints", lambda: decode.malformed_counts(decoded_cps).collect())

    def frames() -> dict[str, Any]:
        made = {
            "group_offsets": (state.source_group_offsets, schemas.SOURCE_GROUP_OFFSETS_SCHEMA),
            "source_partitions": (state.source_partitions, schemas.SOURCE_PARTITIONS_SCHEMA),
            "target_partitions": (state.target_partitions, schemas.TARGET_PARTITIONS_SCHEMA),
            "target_group_offsets": (state.target_group_offsets, schemas.TARGET_GROUP_OFFSETS_SCHEMA),
            "source_groups": (state.source_groups, schemas.GROUP_STATES_SCHEMA),
            "target_groups": (state.target_groups, schemas.GROUP_STATES_SCHEMA),
        }
        out = {k: spark.createDataFrame(t, schema=s).cache() for k, (t, s) in made.items()}
        for frame in out.values():
            frame.count()
        return out

    admin = step("admin state -> DataFrames (Arrow, cached)", frames)
    translated = materialize(
        "translate (chain check + as-of join, one sort)", transforms.translate(admin["group_offsets"], decoded_syncs)
    )
    checkpoints = materialize("latest_checkpoints", transforms.latest_checkpoints(decoded_cps))
    joined = materialize(
        "join_target_state",
        transforms.join_target_state(
            translated,
            source_partitions=admin["source_partitions"],
            target_partitions=admin["target_partitions"],
            target_group_offsets=admin["target_group_offsets"],
            source_groups=admin["source_groups"],
            target_groups=admin["target_groups"],
            checkpoints=checkpoints,
        ),
    )
    classified = materialize(
        "classify",
        transforms.classify(
            joined,
            sync_group_offsets_enabled=pair.sync_group_offsets_enabled,
            offset_lag_max=pair.offset_lag_max,
            as_of=state.read_at,
            fresh_checkpoint_age=fresh_checkpoint_age(pair),
        ),
    )
    rows = classified
    step("summary", lambda: transforms.summarize(rows).collect())
    out = Path("/tmp/mm2ctl-bench-profile.parquet")
    step("write Parquet", lambda: rows.write.mode("overwrite").parquet(str(out)))
    spark.stop()

    Path(args.explain).write_text("\n".join(plans))
    total = round(sum(steps.values()), 1)
    if args.json:
        print(json.dumps({"steps_seconds": steps, "total_seconds": total, "explain": args.explain}))
    else:
        width = max(len(k) for k in steps)
        for name, seconds in steps.items():
            print(f"  {name:<{width}}  {seconds:>7.1f} s  {100 * seconds / total:>5.1f} %")
        print(f"  {'sum':<{width}}  {total:>7.1f} s   (plans in {args.explain})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
