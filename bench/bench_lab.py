"""What the benchmark scripts share: timestamped progress on stderr, the load average, their lab, and the stock
Kafka tool they compare with."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_control
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.jars import kafka_classpath

#: Kafka's ``kafka-consumer-groups`` tool (``bin/kafka-consumer-groups.sh`` runs this class).
STOCK_MAIN = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
#: What ``kafka-run-class.sh`` gives every tool by default, so a stock run costs what an operator's does.
STOCK_JVM_OPTS = [
    "-Xmx256M",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
]


def stock_command(kafka_version: str, args: list[str]) -> list[str]:
    """``kafka-consumer-groups.sh ARGS`` from the lab's jars of that Kafka release: one JVM."""
    return ["java", *STOCK_JVM_OPTS, "-cp", kafka_classpath(kafka_version), STOCK_MAIN, *args]


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def print_figures(figures: dict[str, Any], as_json: bool, report: Callable[[dict[str, Any]], list[str]]) -> None:
    """The figures on stdout: one JSON line (``--json``), or the script's report of them."""
    print(json.dumps(figures, sort_keys=True) if as_json else "\n".join(report(figures)))


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def open_lab(args: argparse.Namespace) -> tuple[LabInfo, Path | None]:
    """The lab of ``--reuse-lab DIR``, or a new one in ``--lab-dir``; also returns the folder of a lab this
    call started (the caller stops it unless ``--keep-lab``), or None for a reused one."""
    if args.reuse_lab:
        info = lab_control.read_lab(Path(args.reuse_lab))
        say(f"reusing the lab in {info.dir}")
        return info, None
    lab_dir = Path(args.lab_dir)
    say(f"starting a lab in {lab_dir}")
    kwargs = {"kafka_version": args.kafka_version} if args.kafka_version else {}
    return lab_control.up(lab_dir, progress=lambda m: say(f"lab: {m}"), **kwargs), lab_dir


class CommitTrickle:
    """New committed offsets for a bench pair's source groups, as their consumers commit between two inspections:
    each moves one group partition's committed offset one record on (never past the partition's end), round robin
    over the groups ``group_regex`` matches in full (every group of the pair without one). The committed offsets
    and the partitions' ends are read once."""

    def __init__(self, mm2_file: Path, group_regex: str | None) -> None:
        import re

        from mm2ctl.core.config.mm2_config import load_mm2_config

        config = load_mm2_config(mm2_file)
        pair = config.pairs()[0]
        self.admin = KafkaAdmin.connect(dict(config.kafka_config(pair.source, pair.name)), name=pair.source)
        groups = sorted(
            g.group
            for g in self.admin.list_groups()
            if pair.group_filter.matches(g.group) and (group_regex is None or re.fullmatch(group_regex, g.group))
        )
        committed = self.admin.committed_offsets(groups)
        self.positions = {(g, tp): off for g in groups for tp, off in sorted(committed[g].offsets.items())}
        partitions = {tp for _g, tp in self.positions}
        self.ends = {tp: int(b.latest or 0) for tp, b in self.admin.partition_bounds(partitions).items()}
        self._order = sorted(self.positions)
        self._turn = 0

    def write(self, count: int) -> None:
        offsets: dict[str, dict[tuple[str, int], int]] = {}
        for i in range(count):
            group, tp = self._order[(self._turn + i) % len(self._order)]
            self.positions[(group, tp)] = min(self.positions[(group, tp)] + 1, self.ends[tp])
            offsets.setdefault(group, {})[tp] = self.positions[(group, tp)]
        self._turn += count
        for results in self.admin.alter_group_offsets(offsets, concurrency=16).values():
            failed = [r for r in results if r.error is not None]
            if failed:
                raise SystemExit(f"committing bench offsets failed: {failed[0]}")


class SyncTrickle:
    """New offset syncs for a bench pair whose MM2 does not run: each continues its partition's newest sync by
    one record on both sides, as MM2 writes them while it copies. The newest syncs are read once, from the
    tail of the offset-syncs topic."""

    def __init__(self, mm2_file: Path, *, tail: int = 200_000) -> None:
        from mm2ctl.core.config.mm2_config import load_mm2_config
        from mm2ctl.core.kafka import records
        from mm2ctl.plans.kafka_records import decoded_syncs

        config = load_mm2_config(mm2_file)
        self.pair = config.pairs()[0]
        self.kafka = dict(config.kafka_config(self.pair.offset_syncs_cluster, self.pair.name))
        topic = self.pair.offset_syncs_topic
        admin = KafkaAdmin.connect(self.kafka, name=self.pair.offset_syncs_cluster)
        end = int(admin.partition_bounds([(topic, 0)])[(topic, 0)].latest or 0)
        self.newest: dict[tuple[str, int], tuple[int, int]] = {}
        for decoded in decoded_syncs(records.read_partitions(self.kafka, topic, [0], start={0: max(0, end - tail)})):
            if decoded is not None and decoded[1] is not None:
                self.newest[decoded[0]] = (decoded[1].upstream, decoded[1].downstream)
        self._turn = 0

    def write(self, count: int) -> None:
        from mm2ctl.core.kafka import records
        from mm2ctl.core.kafka.codecs import encode_offset_sync_key, encode_offset_sync_value

        partitions = sorted(self.newest)
        rows = []
        for i in range(count):
            tp = partitions[(self._turn + i) % len(partitions)]
            up, down = self.newest[tp]
            self.newest[tp] = (up + 1, down + 1)
            rows.append((encode_offset_sync_key(*tp), encode_offset_sync_value(up + 1, down + 1), 0))
        self._turn += count
        records.produce(self.kafka, self.pair.offset_syncs_topic, rows)
