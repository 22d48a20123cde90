"""What MM2 writes for a source with aborted transactions, with and without exactly-once source support.

On a running lab (``mm2ctl lab up``, or ``lab up --exactly-once``), three isolated flows copy the same load:
one as MM2 runs by default (its source consumer reads uncommitted records), one with
``source.consumer.isolation.level=read_committed``, and one with Connect's
``consumer.override.isolation.level=read_committed`` on the source connector instead. The load: per
partition, 12 committed and 12 aborted transactions of one or two records, alternating. For each flow the
script prints the source log, the target log (its end, the records a ``read_committed`` and a
``read_uncommitted`` consumer read there) and the offset syncs MM2 wrote, then the configurations MM2 refuses
(``PUT /connectors/…/config`` answers):

- a MirrorSourceConnector with ``emit.offset-syncs.enabled=false`` and an ``offset-syncs.topic.*`` setting;
- a MirrorCheckpointConnector with ``emit.offset-syncs.enabled=false``;
- a MirrorSourceConnector with ``exactly.once.support=required`` and a ``read_uncommitted`` source consumer.

    .venv/bin/python bench/transactional_flows.py --lab-dir .lab
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any

import requests
from bench_lab import say
from confluent_kafka import Producer

from mm2ctl.core.kafka import records
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab import control as lab_control
from mm2ctl.lab.control import LabInfo
from mm2ctl.plans.kafka_records import read_sync_histories
from mm2ctl.plans.live_state import open_live_state

PARTITIONS = 2
ROUNDS = 12


def produce(conf: dict[str, str], topic: str) -> None:
    producer = Producer({**conf, "transactional.id": f"bench-{uuid.uuid4().hex[:8]}", "log_level": 0})
    producer.init_transactions(30)
    n = 0
    for r in range(ROUNDS):
        for aborted in (False, True):
            producer.begin_transaction()
            for p in range(PARTITIONS):
                for _ in range(1 + (r + p + aborted) % 2):
                    kind = b"a" if aborted else b"c"
                    producer.produce(topic, key=b"k%d" % n, value=b"p%d-%s%d" % (p, kind, n), partition=p)
                    n += 1
            producer.flush(30)  # an abort drops what is still queued: the records must reach the log
            (producer.abort_transaction if aborted else producer.commit_transaction)(30)


def observe(info: LabInfo, label: str, settings: dict[str, str]) -> dict[str, Any]:
    name = "tf" + uuid.uuid4().hex[:6]
    flow = lab_control.add_flow(info, name, source_settings=settings)
    src, dst = info.client_config(lab_control.SOURCE_ALIAS), info.client_config(lab_control.TARGET_ALIAS)
    topic, remote = f"iso-{name}-tx", f"{flow.source_alias}.iso-{name}-tx"
    KafkaAdmin.connect(src).create_topics({topic: PARTITIONS})
    produce(src, topic)
    committed = {p: [r.offset for r in records.read_partitions(src, topic, [p])] for p in range(PARTITIONS)}
    everything = {
        p: [r.offset for r in records.read_partitions(src, topic, [p], isolation="read_uncommitted")]
        for p in range(PARTITIONS)
    }
    copies_aborted = settings.get("source.consumer.isolation.level") != "read_committed"  # what MM2 reads
    want = {p: len(everything[p] if copies_aborted else committed[p]) for p in range(PARTITIONS)}
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if all(len(list(records.read_partitions(dst, remote, [p]))) == want[p] for p in range(PARTITIONS)):
            break
        time.sleep(1)
    time.sleep(5)  # the offset syncs of the last transaction
    bounds = KafkaAdmin.connect(dst).partition_bounds([(remote, p) for p in range(PARTITIONS)])
    live = open_live_state(flow.mm2_config)
    syncs = read_sync_histories(live, live.mm2.pair(f"{flow.source_alias}->{flow.target_alias}"))
    out: dict[str, Any] = {"flow": label, "exactly_once_worker": info.exactly_once, "partitions": {}}
    for p in range(PARTITIONS):
        source_end = KafkaAdmin.connect(src).partition_bounds([(topic, p)])[(topic, p)].latest
        out["partitions"][p] = {
            "source": {
                "end": source_end,
                "records": len(everything[p]),
                "aborted": len(everything[p]) - len(committed[p]),
            },
            "target": {
                "end": bounds[(remote, p)].latest,
                "read_committed": len(list(records.read_partitions(dst, remote, [p]))),
                "read_uncommitted": len(list(records.read_partitions(dst, remote, [p], isolation="read_uncommitted"))),
            },
            "offset_syncs": [(s.upstream, s.downstream) for s in syncs.get((topic, p), []) if s is not None],
        }
    return out


def refusals(info: LabInfo) -> list[str]:
    cases = [
        ("source", {"emit.offset-syncs.enabled": "false", "offset-syncs.topic.location": "source"}),
        ("checkpoint", {"emit.offset-syncs.enabled": "false"}),
        ("source", {"exactly.once.support": "required"}),
    ]
    out = []
    for role, extra in cases:
        name = "tr" + uuid.uuid4().hex[:6]
        setup = lab_control.isolated_setup(info, name)
        connector, config = next((n, c) for n, c in setup.connector_configs().items() if n.endswith(role))
        resp = requests.put(f"{info.connect_url}/connectors/{connector}/config", json={**config, **extra}, timeout=30)
        lines = resp.json().get("message", "").splitlines() if resp.status_code >= 400 else ["", "accepted"]
        out.append(f"{role} connector with {extra}: HTTP {resp.status_code}: {lines[1] if len(lines) > 1 else lines}")
        requests.delete(f"{info.connect_url}/connectors/{connector}", timeout=30)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lab-dir", type=Path, default=Path(".lab"))
    args = parser.parse_args()
    info = lab_control.read_lab(args.lab_dir)
    flows: tuple[tuple[str, dict[str, str]], ...] = (
        ("default", {}),
        ("read_committed", {"source.consumer.isolation.level": "read_committed"}),
        ("consumer.override", {"consumer.override.isolation.level": "read_committed"}),
    )
    for label, settings in flows:
        say(f"flow {label}")
        print(json.dumps(observe(info, label, settings)))
    for line in refusals(info):
        print(line)


if __name__ == "__main__":
    main()
