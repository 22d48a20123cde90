"""MM2's lag in time and the retention margin, from the record waiting at MM2's position: which offsets are
read, the record's age, and the margin by retention.ms, by retention.bytes (an estimate), or none."""

from __future__ import annotations

import datetime as dt

import pytest

from mm2ctl.core.kafka.admin import ConfigValue
from mm2ctl.core.kafka.records import RawRecord
from mm2ctl.inspector.reads import waiting_records as w

NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)
NOW_MS = int(NOW.timestamp() * 1000)


def record(age_s: float, size: int = 84) -> w.WaitingRecord:
    return w.WaitingRecord(
        offset=7, timestamp_ms=NOW_MS - int(age_s * 1000), timestamp_type="CreateTime", size_bytes=size
    )


def retention(ms: int | None = 600_000, size: int | None = None, compacted: bool = False) -> w.Retention:
    return w.Retention(retention_ms=ms, source="topic", retention_bytes=size, compacted=compacted)


def test_the_offsets_read_start_at_mm2s_position_never_below_the_earliest() -> None:
    bounds = {("t", 0): (100, 600), ("t", 1): (100, 600), ("t", 2): (100, 600), ("t", 3): (0, 5), ("t", 4): (None, 9)}
    got = w.waiting_ranges(bounds, {("t", 0): 590, ("t", 1): 40, ("t", 2): 600, ("t", 3): 2})
    assert got == {("t", 0): (590, 600), ("t", 1): (100, 116), ("t", 3): (2, 5)}


def test_no_stored_position_starts_at_the_earliest_as_mm2_does() -> None:
    assert w.waiting_ranges({("t", 0): (100, 600)}, {}) == {("t", 0): (100, 116)}


def test_the_record_read_says_its_timestamp_type_and_size() -> None:
    raw = RawRecord("t", 0, 9, NOW_MS, b"k", b"value", (("h", b"xy"),), timestamp_type=1)
    got = w.waiting_record(raw)
    assert (got.offset, got.timestamp_type, got.size_bytes) == (9, "LogAppendTime", 1 + 5 + 3 + w.RECORD_OVERHEAD_BYTES)
    assert w.waiting_record(RawRecord("t", 0, 9, NOW_MS, None, None, timestamp_type=-1)).timestamp_type is None


def test_lag_seconds_is_the_records_age_and_zero_when_caught_up() -> None:
    assert w.lag_seconds(12, record(43.5), NOW) == 43.5
    assert w.lag_seconds(0, None, NOW) == 0.0
    assert w.lag_seconds(12, None, NOW) is None  # records wait, but none could be read
    assert w.lag_seconds(None, record(43.5), NOW) is None
    assert w.lag_seconds(3, record(-2), NOW) == 0.0  # written after the read (clock skew): not negative


def test_the_margin_by_retention_ms() -> None:
    assert w.retention_margin(12, record(100), retention(), NOW) == (500.0, w.BY_TIME)
    assert w.retention_margin(12, record(700), retention(), NOW) == (0.0, w.BY_TIME)  # past due, not yet deleted


@pytest.mark.parametrize(
    ("lag", "waiting", "kept"),
    [
        (0, None, retention()),  # nothing waits
        (12, record(100), retention(compacted=True)),
        (12, record(100), None),  # the topic's configs unknown
        (12, None, retention()),  # the record unread
        (12, record(100), retention(ms=None)),  # unlimited
    ],
)
def test_no_margin(lag: int, waiting: w.WaitingRecord | None, kept: w.Retention | None) -> None:
    assert w.retention_margin(lag, waiting, kept, NOW) == (None, None)


def test_retention_bytes_binds_as_an_estimate_from_the_recent_growth() -> None:
    """100 records of 100 bytes arrived in the 10 s since the one waiting: 1,000 bytes a second. 20,000 bytes
    are retained, so 10,000 more bytes, 10 s, before it is deleted; retention.ms would give 590 s."""
    got = w.retention_margin(100, record(10, size=100), retention(size=20_000), NOW)
    assert got == (pytest.approx(10.0), w.BY_BYTES)
    roomy = w.retention_margin(100, record(10, size=100), retention(size=10**9), NOW)
    assert roomy == (590.0, w.BY_TIME)


def test_retention_of_reads_the_effective_values_and_their_source() -> None:
    configs = {
        "retention.ms": ConfigValue("600000", "topic"),
        "retention.bytes": ConfigValue("-1", "default"),
        "cleanup.policy": ConfigValue("delete", "default"),
    }
    assert w.retention_of(configs) == w.Retention(600_000, "topic", None, False)
    compact = {**configs, "cleanup.policy": ConfigValue("compact", "topic")}
    assert w.retention_of(compact).compacted
    both = {**configs, "cleanup.policy": ConfigValue("compact,delete", "topic")}
    assert not w.retention_of(both).compacted  # retention still deletes
    forever = {"retention.ms": ConfigValue("-1", "broker")}
    assert w.retention_of(forever) == w.Retention(None, "broker", None, False)


def test_the_driver_rows_lag_in_time_with_the_records_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """``replicated_partitions._lag_in_time``: what it asks the source for, and each partition's columns."""
    from types import SimpleNamespace

    from mm2ctl.core.errors import KafkaClusterError
    from mm2ctl.core.kafka.admin import PartitionBounds
    from mm2ctl.inspector.reads import replicated_partitions as rp

    asked: list[dict[tuple[str, int], tuple[int, int]]] = []

    def read(config: object, ranges: dict[tuple[str, int], tuple[int, int]], **_: object) -> dict[object, object]:
        asked.append(dict(ranges))
        return {("t", 0): w.WaitingRecord(590, NOW_MS - 42_500, "LogAppendTime", 84)}

    monkeypatch.setattr(w, "read_waiting_records", read)
    pair = SimpleNamespace(source_kafka_config={}, source="src")
    bounds = {("t", 0): PartitionBounds("t", 0, 100, 600), ("t", 1): PartitionBounds("t", 1, 0, 40)}
    kept = {"t": retention()}
    got, note = rp._lag_in_time(pair, bounds, {("t", 0): 590, ("t", 1): 40}, kept, NOW, 5.0)  # type: ignore[arg-type]
    assert asked == [{("t", 0): (590, 600)}] and note is None  # only the partition with records waiting
    assert got[("t", 0)]["replication_lag_seconds"] == 42.5
    assert got[("t", 0)]["lag_timestamp_type"] == "LogAppendTime"
    assert got[("t", 0)]["oldest_waiting_timestamp"] == NOW - dt.timedelta(milliseconds=42_500)
    assert (got[("t", 0)]["retention_margin_seconds"], got[("t", 0)]["retention_ms_source"]) == (557.5, "topic")
    assert got[("t", 1)]["replication_lag_seconds"] == 0.0 and got[("t", 1)]["retention_margin_seconds"] is None

    unknown, _ = rp._lag_in_time(pair, bounds, None, kept, NOW, 5.0)  # type: ignore[arg-type]
    assert all(v["replication_lag_seconds"] is None for v in unknown.values()) and len(asked) == 1

    def fail(*_a: object, **_k: object) -> None:
        raise KafkaClusterError("TOPIC_AUTHORIZATION_FAILED")

    monkeypatch.setattr(w, "read_waiting_records", fail)
    denied, why = rp._lag_in_time(pair, bounds, {("t", 0): 590, ("t", 1): 40}, kept, NOW, 5.0)  # type: ignore[arg-type]
    assert why is not None and "could not be read" in why and "TOPIC_AUTHORIZATION_FAILED" in why
    assert denied[("t", 0)]["replication_lag_seconds"] is None and denied[("t", 1)]["replication_lag_seconds"] == 0.0


def test_replay_time_reads_each_position_in_rounds_and_subtracts_the_targets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two groups on one partition are two rounds of one consumer each; a position at the end is never read."""
    from mm2ctl.inspector.reads import replay_time as rt

    stamps = {("s", 0, 100): 10_000, ("s", 0, 300): 70_000, ("s.r", 0, 90): 5_000, ("s.r", 0, 290): 62_500}
    calls: list[dict[tuple[str, int], tuple[int, int]]] = []

    def read(config: dict[str, str], ranges: dict[tuple[str, int], tuple[int, int]], **_: object) -> object:
        assert config["max.partition.fetch.bytes"] == str(rt.FETCH_BYTES_PER_PARTITION)
        calls.append(dict(ranges))
        for (topic, p), (start, _end) in sorted(ranges.items()):
            yield RawRecord(topic, p, start, stamps[(topic, p, start)], None, b"v", timestamp_type=0)

    monkeypatch.setattr(rt, "read_ranges", read)
    probes = [
        rt.ReplayProbe("g1", "s", 0, "s.r", 100, 400, 90, 400),
        rt.ReplayProbe("g2", "s", 0, "s.r", 300, 400, 290, 400),
        rt.ReplayProbe("g3", "s", 0, "s.r", 400, 400, 290, 400),  # caught up on the source: no record at c
    ]
    got = rt.replay_seconds({}, {}, probes)
    assert got == {("g1", "s", 0): 5.0, ("g2", "s", 0): 7.5}
    assert calls == [{("s", 0): (100, 116)}, {("s", 0): (300, 316)}, {("s.r", 0): (90, 106)}, {("s.r", 0): (290, 306)}]


def test_a_config_source_reads_as_librdkafka_gives_it_or_as_the_enum() -> None:
    from confluent_kafka.admin import ConfigSource

    from mm2ctl.core.kafka.admin import config_source

    assert [config_source(n) for n in (1, 2, 3, 4, 5, 0, 99)] == [
        "topic", "broker", "broker", "broker", "default", "default", "default"
    ]  # fmt: skip
    assert config_source(ConfigSource.DYNAMIC_TOPIC_CONFIG) == "topic"
    assert config_source(ConfigSource.DEFAULT_CONFIG) == "default"
