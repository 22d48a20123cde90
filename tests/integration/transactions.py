"""Transactional source data for the integration tests: committed and aborted transactions, the source log as
a consumer and as MirrorMaker 2 see it, and where a consumer resuming at an offset on either cluster reads."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from mm2ctl.core.kafka import records
from tests.integration.support import uniq

#: ``p<partition>-<c|a><n>``: a committed or an aborted record.
VALUE = re.compile(rb"^p(\d+)-([ca])(\d+)$")


def produce_transactions(conf: Mapping[str, str], topic: str, partitions: int, rounds: int) -> None:
    """Per round, a committed transaction then an aborted one, each of one or two records per partition; the
    log ends with an aborted transaction. Each transaction leaves its marker in every partition it wrote."""
    producer = Producer({**conf, "transactional.id": uniq("tx"), "linger.ms": 2, "logger": logging.getLogger("tests")})
    producer.init_transactions(30)
    n = 0
    for r in range(rounds):
        for aborted in (False, True):
            producer.begin_transaction()
            for p in range(partitions):
                for _ in range(1 + (r + p + aborted) % 2):
                    kind = b"a" if aborted else b"c"
                    producer.produce(topic, key=b"k%d" % n, value=b"p%d-%s%d" % (p, kind, n), partition=p)
                    n += 1
            producer.flush(30)  # an abort drops records still queued: these must reach the log first
            if aborted:
                producer.abort_transaction(30)
            else:
                producer.commit_transaction(30)


@dataclass(frozen=True)
class Entry:
    offset: int
    value: bytes
    aborted: bool


def source_log(conf: Mapping[str, str], topic: str, partition: int) -> list[Entry]:
    """Every data record of the partition (markers hold the offsets between), aborted ones marked."""
    committed = {r.offset for r in records.read_partitions(conf, topic, [partition])}
    return [
        Entry(r.offset, r.value or b"", r.offset not in committed)
        for r in records.read_partitions(conf, topic, [partition], isolation="read_uncommitted")
    ]


def next_committed(log: list[Entry], offset: int) -> bytes | None:
    """The value a ``read_committed`` consumer at ``offset`` reads next (None: nothing)."""
    return next((e.value for e in log if e.offset >= offset and not e.aborted), None)


def first_read(conf: Mapping[str, str], topic: str, partition: int, offset: int, timeout_s: float = 30) -> bytes | None:
    """What a ``read_committed`` consumer assigned at ``offset`` reads first (None: it is at the end)."""
    consumer = Consumer(
        {
            **conf,
            "group.id": uniq("first-read"),
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    return None
                raise AssertionError(f"reading {topic}/{partition} at {offset}: {err}")
            return msg.value()
        raise AssertionError(f"reading {topic}/{partition} at {offset}: nothing within {timeout_s:.0f}s")
    finally:
        consumer.close()


def commit_points(log: list[Entry], end: int) -> dict[str, int]:
    """Offsets a consumer of the partition can commit that make a copy of an aborted record the next record
    on a target where MM2 copied them: on the marker after a committed transaction that an aborted one
    follows, on an aborted record, on the abort marker, and at the end (after an aborted transaction)."""
    i = next(i for i in range(1, len(log)) if log[i].aborted and not log[i - 1].aborted and i > len(log) // 3)
    j = next(j for j in range(i, len(log)) if not log[j].aborted)
    return {
        "marker": log[i - 1].offset + 1,
        "aborted": log[i].offset,
        "abort-marker": log[j - 1].offset + 1,
        "end": end,
    }
