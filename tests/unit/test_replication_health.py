"""Replication health per source partition: every status and its precedence, lag and loss, the newest offset
sync of each partition from the one read of the topic (by record offset, tombstones, malformed and
foreign-partition records), freshness."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from mm2ctl.core.kafka.codecs import OffsetSync, encode_offset_sync
from mm2ctl.inspector import statuses
from mm2ctl.inspector.kept.pair_topics import Numbering
from mm2ctl.inspector.rules.partition_health import age_seconds_of, partition_health
from mm2ctl.inspector.schemas import (
    KAFKA_RECORD_SCHEMA,
    NEWEST_SYNCS_SCHEMA,
    PARTITION_HEALTH_SCHEMA,
    PARTITION_NUMBERS_SCHEMA,
    REPLAY_SECONDS_SCHEMA,
    REPLICATED_PARTITIONS_SCHEMA,
    arrow_schema,
)
from mm2ctl.inspector.selection import DEFAULT_LAG_SECONDS_THRESHOLD, DEFAULT_LAG_THRESHOLD
from mm2ctl.inspector.statuses import PartitionStatus
from mm2ctl.inspector.transforms import decode, replication_health, sync_runs
from mm2ctl.inspector.transforms.sql_text import micros

pytestmark = pytest.mark.spark

PAIR = "a->b"
NOW = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC)


def _df(spark: Any, schema: StructType, rows: list[dict[str, Any]]) -> Any:
    table = pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )
    return spark.createDataFrame(table, schema)


def partition(**overrides: Any) -> dict[str, Any]:
    """A source partition [100, 600) MM2 has copied up to 599: it resumes at 600, nothing waits."""
    row: dict[str, Any] = {
        "cluster_pair": PAIR,
        "topic": "orders",
        "partition": 0,
        "remote_topic": "a.orders",
        "source_earliest": 100,
        "source_latest": 600,
        "target_latest": 500,
        "position_known": True,
        "mm2_next_offset": 600,
        "error": None,
    }
    row.update(overrides)
    return row


def _table(schema: StructType, rows: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist(
        [{name: row.get(name) for name in schema.names} for row in rows], schema=to_arrow_schema(schema)
    )


class _Row(dict[str, Any]):
    """A row read by name or as an attribute, as a Spark row is."""

    def __getattr__(self, name: str) -> Any:
        return self[name]


def classify(
    spark: Any, rows: list[dict[str, Any]], syncs: list[dict[str, Any]] | None = None, **kw: Any
) -> list[_Row]:
    limits = {"lag_threshold": DEFAULT_LAG_THRESHOLD, "lag_seconds_threshold": DEFAULT_LAG_SECONDS_THRESHOLD, **kw}
    out = partition_health(
        _table(REPLICATED_PARTITIONS_SCHEMA, rows), _table(NEWEST_SYNCS_SCHEMA, syncs or []), as_of=NOW, **limits
    )
    assert out.schema == arrow_schema(PARTITION_HEALTH_SCHEMA)
    return [_Row(r) for r in out.to_pylist()]


@pytest.mark.parametrize(
    ("overrides", "status", "lag", "lost", "reset"),
    [
        ({}, PartitionStatus.REPLICATING, 0, 0, False),
        ({"mm2_next_offset": 100}, PartitionStatus.REPLICATING, 500, 0, False),  # below the default threshold
        ({"mm2_next_offset": 40}, PartitionStatus.LOST_RECORDS, 500, 60, False),  # 40..99 deleted before copy
        ({"mm2_next_offset": 700}, PartitionStatus.SOURCE_RESET, 0, 0, True),  # beyond the end: recreated
        ({"mm2_next_offset": None}, PartitionStatus.NOT_STARTED, 500, 0, False),  # it starts at the earliest
        ({"mm2_next_offset": None, "source_earliest": 600}, PartitionStatus.REPLICATING, 0, 0, False),  # empty
        ({"position_known": False, "mm2_next_offset": None}, PartitionStatus.POSITION_UNKNOWN, None, None, None),
        ({"error": "source partition: boom"}, PartitionStatus.ERROR, 0, 0, False),
        ({"source_latest": None}, PartitionStatus.ERROR, None, None, None),
    ],
)
def test_status_lag_loss_and_reset(
    spark: Any, overrides: dict[str, Any], status: PartitionStatus, lag: int | None, lost: int | None, reset: bool
) -> None:
    (row,) = classify(spark, [partition(**overrides)])
    assert row["status"] == status.value
    assert row["is_ok"] == (status in statuses.OK_PARTITION_STATUSES)
    assert row["message"] == statuses.PARTITION_MESSAGES[status]
    assert row["replication_lag_records"] == lag
    assert row["records_lost_to_retention"] == lost
    assert row["source_reset"] == reset


def test_lagging_above_the_threshold_only(spark: Any) -> None:
    rows = [partition(partition=0, mm2_next_offset=499), partition(partition=1, mm2_next_offset=500)]
    got = classify(spark, rows, lag_threshold=100)
    assert [(r["replication_lag_records"], r["status"]) for r in got] == [(101, "lagging"), (100, "replicating")]


def test_lagging_in_seconds_alone_and_the_message_names_both(spark: Any) -> None:
    """Five records waiting is under any record threshold; the oldest of them being 300 s old is not."""
    old = partition(partition=0, mm2_next_offset=595, replication_lag_seconds=300.0)
    young = partition(partition=1, mm2_next_offset=595, replication_lag_seconds=100.0)
    got = classify(spark, [old, young])
    assert [(r["status"], r["replication_lag_seconds"]) for r in got] == [("lagging", 300.0), ("replicating", 100.0)]
    assert got[0]["message"] == (
        "Lagging: 5 records wait to be copied, the oldest 300.0 s old (lagging above 10,000 records or 120 s)."
    )
    (tight,) = classify(spark, [young], lag_seconds_threshold=60)
    assert tight["status"] == "lagging" and "100.0 s old" in tight["message"] and "or 60 s" in tight["message"]


def test_a_lagging_partition_of_unknown_age_says_so(spark: Any) -> None:
    (row,) = classify(spark, [partition(mm2_next_offset=100)], lag_threshold=100)
    assert row["message"].startswith("Lagging: 500 records wait to be copied, the oldest of unknown age")


def test_the_lag_in_time_and_the_margin_pass_through(spark: Any) -> None:
    waiting_at = NOW - dt.timedelta(seconds=42)
    row = partition(
        mm2_next_offset=595,
        replication_lag_seconds=42.0,
        lag_timestamp_type="LogAppendTime",
        oldest_waiting_timestamp=waiting_at,
        retention_ms=600_000,
        retention_ms_source="topic",
        retention_margin_seconds=558.0,
        retention_margin_basis="retention.ms",
    )
    (got,) = classify(spark, [row])
    fields = ["replication_lag_seconds", "lag_timestamp_type", "retention_ms", "retention_ms_source"]
    assert [got[f] for f in fields] == [42.0, "LogAppendTime", 600_000, "topic"]
    assert (got["retention_margin_seconds"], got["retention_margin_basis"]) == (558.0, "retention.ms")
    assert got["oldest_waiting_timestamp"].timestamp() == waiting_at.timestamp()


def test_an_error_wins_over_every_other_status(spark: Any) -> None:
    (row,) = classify(spark, [partition(mm2_next_offset=700, error="MM2 position: Connect said 500")])
    assert row["status"] == "error" and row["error"] == "MM2 position: Connect said 500"


def test_newest_sync_and_its_age(spark: Any) -> None:
    sync = {
        "cluster_pair": PAIR,
        "topic": "orders",
        "partition": 0,
        "newest_sync_upstream": 590,
        "newest_sync_downstream": 490,
        "newest_sync_timestamp": NOW - dt.timedelta(seconds=90, milliseconds=500),
    }
    later = {**sync, "partition": 1, "newest_sync_timestamp": NOW + dt.timedelta(seconds=3)}
    got = classify(spark, [partition(), partition(partition=1), partition(partition=2)], [sync, later])
    assert (got[0]["newest_sync_upstream"], got[0]["newest_sync_downstream"]) == (590, 490)
    assert got[0]["offset_sync_age_seconds"] == pytest.approx(90.5)
    assert got[1]["offset_sync_age_seconds"] == 0.0  # written after the admin read: fresh, not negative
    assert got[2]["newest_sync_upstream"] is None and got[2]["offset_sync_age_seconds"] is None


def _records(spark: Any, records: list[tuple[bytes | None, bytes | None, int, int]]) -> Any:
    rows = [
        {
            "cluster_pair": PAIR,
            "key": key,
            "value": value,
            "topic": "mm2-offset-syncs.b.internal",
            "partition": record_partition,
            "offset": offset,
            "timestamp": NOW - dt.timedelta(seconds=1000 - offset),
            "timestampType": 0,
        }
        for offset, (key, value, record_partition, _) in enumerate(records)
    ]
    return _df(spark, KAFKA_RECORD_SCHEMA, rows)


def _sync(topic: str, partition: int, up: int, down: int) -> tuple[bytes, bytes]:
    return encode_offset_sync(OffsetSync(topic, partition, up, down))


def test_newest_sync_of_each_partition_by_record_offset(spark: Any) -> None:
    o0 = _sync("orders", 0, 10, 10)
    o0_later = _sync("orders", 0, 5, 4)  # out of order, but written last: the newest record wins
    o1 = _sync("orders", 1, 7, 7)
    o2 = _sync("orders", 2, 9, 9)
    records = [
        (*o0, 0, 0),
        (*o0_later, 0, 0),
        (*o1, 0, 0),
        (o1[0], b"\x00\x01", 0, 0),  # malformed value: passed over, the sync before it stands
        (*o2, 0, 0),
        (o2[0], None, 0, 0),  # orders/2: a tombstone after its sync deletes it
        (*_sync("orders", 3, 50, 50), 1, 0),  # partition 1 of the syncs topic: MM2 never writes there
        (b"\x00\x09orders", o0[1], 0, 0),  # a malformed key: no partition of anyone's
        (*_sync("audit", 0, 1, 1), 0, 0),  # not a partition asked about
    ]
    numbering = Numbering.of([("orders", p) for p in range(4)])
    known = spark.createDataFrame(numbering.table(PAIR), schema=PARTITION_NUMBERS_SCHEMA)
    decoded = sync_runs.records(decode.decode_offset_syncs(_records(spark, records), known=known))
    facts = sync_runs.partition_facts(sync_runs.sorted_records(decoded, 2)).collect()
    key_of = {n: tp for tp, n in numbering.parts.items()}
    got = {
        key_of[f._part][1]: (f.newest_upstream, f.newest_downstream, f.newest_timestamp)
        for f in facts
        if f._part is not None and f.newest_is_sync
    }
    assert set(got) == {0, 1}  # orders/2's newest record is a tombstone; orders/3 is on partition 1 only
    assert got[0][:2] == (5, 4)
    assert got[0][2] == (NOW - dt.timedelta(seconds=999)).replace(tzinfo=None)  # the session reads UTC naive
    assert got[1][:2] == (7, 7)


def test_group_checkpoint_age_is_the_groups_newest(spark: Any) -> None:
    rows = spark.createDataFrame(
        [
            (PAIR, "g1", NOW.replace(tzinfo=None) - dt.timedelta(seconds=30)),
            (PAIR, "g1", NOW.replace(tzinfo=None) - dt.timedelta(seconds=5)),
            (PAIR, "g2", None),
            ("c->d", "g1", NOW.replace(tzinfo=None) - dt.timedelta(seconds=60)),
        ],
        "cluster_pair string, group string, checkpoint_timestamp timestamp",
    )
    newest = replication_health.with_group_newest_checkpoint(rows)
    got = replication_health.with_group_checkpoint_age(newest, as_of=NOW).collect()
    ages = {(r["cluster_pair"], r["group"]): r["group_checkpoint_age_seconds"] for r in got}
    assert ages == {(PAIR, "g1"): pytest.approx(5.0), (PAIR, "g2"): None, ("c->d", "g1"): pytest.approx(60.0)}


def test_the_table_section_and_the_partition_csv(spark: Any) -> None:
    import io

    from mm2ctl.cli.render import replication_summary_lines
    from mm2ctl.inspector.output.inspection_result import PairTotals
    from mm2ctl.inspector.output.row_files import write_csv
    from mm2ctl.inspector.reads.mm2_position import Mm2Position
    from mm2ctl.inspector.selection import InspectOptions

    table = partition_health(
        _table(
            REPLICATED_PARTITIONS_SCHEMA,
            [
                partition(replication_lag_seconds=0.0),
                partition(
                    partition=1,
                    mm2_next_offset=40,
                    replication_lag_seconds=75.25,
                    retention_margin_seconds=30.5,
                    retention_margin_basis="retention.ms",
                ),
            ],
        ),
        _table(NEWEST_SYNCS_SCHEMA, []),
        as_of=NOW,
        lag_threshold=DEFAULT_LAG_THRESHOLD,
        lag_seconds_threshold=DEFAULT_LAG_SECONDS_THRESHOLD,
    )
    result = SimpleNamespace(
        partitions=table,
        positions=[Mm2Position(PAIR, {}, read_from="GET /connectors/s/offsets")],
        summary=SimpleNamespace(totals={PAIR: PairTotals(3, 0, 0, 2, 1, 5.0)}),
    )
    text = "\n".join(replication_summary_lines(result, InspectOptions()))  # type: ignore[arg-type]
    assert "lagging above 10000 records or 120 s" in text
    recovery = "recovery point: 500 record(s), the oldest 75.2s old; retention margin: 30.5s (retention.ms)"
    assert recovery in text
    assert "a->b: 2 replicated partition(s), 1 problem(s)" in text
    assert "MM2's position: GET /connectors/s/offsets" in text
    assert "checkpoints: 1 of 2 group(s) have one; the oldest group's newest is 5.0s old" in text
    assert "a->b  orders/1  40  [100, 600)  lost_records: Records lost" in text

    out = io.StringIO(newline="")
    assert write_csv(table, out) == 2
    header, first, _ = out.getvalue().split("\r\n", 2)
    assert header.split(",") == [f'"{c}"' for c in PARTITION_HEALTH_SCHEMA.fieldNames()]
    assert first.startswith('"a->b","orders","0","a.orders","100","600","500","600","0","0","false"')


@pytest.mark.spark
def test_the_driver_ages_a_checkpoint_as_spark_does(spark: Any) -> None:
    """A live session ages a kept group's figures on the driver (``age_seconds_of``): to the bit, Spark's age."""
    stamps = [NOW - dt.timedelta(seconds=s, microseconds=u) for s, u in ((0, 1), (5, 123_457), (86_400 * 40, 999_999))]
    stamps.append(NOW + dt.timedelta(seconds=3))  # written after the read: age 0
    rows = spark.createDataFrame(
        [(PAIR, f"g{i}", t.replace(tzinfo=None)) for i, t in enumerate(stamps)],
        "cluster_pair string, group string, checkpoint_timestamp timestamp",
    )
    newest = replication_health.with_group_newest_checkpoint(rows)
    got = replication_health.with_group_checkpoint_age(newest, as_of=NOW).collect()
    in_spark = {r["group"]: r["group_checkpoint_age_seconds"] for r in got}
    assert in_spark == {f"g{i}": age_seconds_of(micros(t), NOW) for i, t in enumerate(stamps)}
    assert age_seconds_of(None, NOW) is None


def test_checkpoint_lag_only_where_the_position_is_exact(spark: Any) -> None:
    """0 where the target offset is the translated position; the driver's reading where a failover would replay
    or skip; null where the position is not exact, or the driver read nothing. The driver reads only the rows a
    failover would replay or skip on."""
    schema = (
        "cluster_pair string, `group` string, topic string, `partition` int, replay_if_failover_now long, "
        "skip_if_failover_now long, source_offset long, source_latest long, target_offset long, target_latest long"
    )
    rows = spark.createDataFrame(
        [
            (PAIR, "g", "orders", 0, 0, 0, 10, 20, 10, 20),  # exact, nothing to replay
            (PAIR, "g", "orders", 1, 120, 0, 10, 200, 5, 200),  # exact, read: 42.5 s
            (PAIR, "g", "orders", 2, 0, 7, 10, 20, 17, 20),  # exact, the target ahead: read -3 s
            (PAIR, "g", "orders", 3, None, None, 10, 20, 8, 20),  # not exact
            (PAIR, "g", "orders", 4, 5, 0, 10, 20, 5, 20),  # exact, the driver found no record
        ],
        schema,
    )
    seconds = _df(
        spark,
        REPLAY_SECONDS_SCHEMA,
        [
            {"cluster_pair": PAIR, "group": "g", "topic": "orders", "partition": 1, "seconds": 42.5},
            {"cluster_pair": PAIR, "group": "g", "topic": "orders", "partition": 2, "seconds": -3.0},
            {"cluster_pair": PAIR, "group": "other", "topic": "orders", "partition": 3, "seconds": 9.0},
        ],
    )
    got = replication_health.with_checkpoint_lag(rows, seconds).orderBy("partition").collect()
    assert [r["checkpoint_lag_seconds"] for r in got] == [0.0, 42.5, -3.0, None, None]
    assert list(got[0].asDict()) == [*rows.columns, "checkpoint_lag_seconds"]
    probes = rows.where(replication_health.REPLAY_PROBES).collect()
    assert sorted(r["partition"] for r in probes) == [1, 2, 4]
    without = replication_health.without_checkpoint_lag(rows)
    assert without.schema == replication_health.with_checkpoint_lag(rows, seconds).schema  # one shape either way
    assert {r["checkpoint_lag_seconds"] for r in without.collect()} == {None}
