"""A Spark Connect client's side of ``test_spark_connect.py``, run as a process of its own.

A remote session turns PySpark's functions into their Spark Connect versions for the whole process, so the
client runs apart from the test run's classic session. It reads a topic through the server with the
inspector's own reader, once by the server's Kafka source and once on this process (a small read: librdkafka,
sent to the server as a local relation), round-trips an Arrow table through ``inspector.spark.compat``, checks that no
driver JVM started here, and prints what it read as JSON.

    python connect_client_read.py sc://127.0.0.1:PORT BOOTSTRAP TOPIC
"""

from __future__ import annotations

import json
import sys

import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from mm2ctl.inspector.reads.kafka_read import read_ranges, read_topic
from mm2ctl.inspector.spark import compat


def main(url: str, bootstrap: str, topic: str) -> None:
    spark = SparkSession.builder.remote(url).getOrCreate()
    try:
        settings = {"bootstrap.servers": bootstrap}
        frame = read_topic(spark, settings, topic, cluster_pair="p", min_partitions=3)
        records = [
            {"partition": r.partition, "offset": r.offset, "key": bytes(r.key).hex(), "value": bytes(r.value).hex()}
            for r in frame.collect()
        ]
        ends = {r["partition"]: r["offset"] + 1 for r in sorted(records, key=lambda r: r["offset"])}
        ranges = {p: (0, e) for p, e in ends.items()}
        small = read_ranges(spark, settings, topic, ranges, cluster_pair="p", min_partitions=1)
        driver_records = [
            {"partition": r.partition, "offset": r.offset, "key": bytes(r.key).hex(), "value": bytes(r.value).hex()}
            for r in small.collect()
        ]
        schema = StructType([StructField("name", StringType()), StructField("offset", LongType())])
        table = pa.table({"name": ["a", None], "offset": [2**63 - 1, None]})
        back = compat.to_arrow(compat.frame_from_arrow(spark, table, schema).orderBy("offset"))
        from pyspark import SparkContext

        print(
            json.dumps(
                {
                    "session": type(spark).__module__,
                    "records": records,
                    "driver_records": driver_records,
                    "arrow": back.to_pylist(),
                    "driver_jvm_here": SparkContext._gateway is not None,
                }
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:4])
