"""The session mm2ctl builds for the inspection (the shared fixture is built by ``build_session``)."""

from __future__ import annotations

from typing import Any

import pytest

from mm2ctl.inspector.spark.compat import spark_major

pytestmark = pytest.mark.spark


def test_kafka_is_read_through_spark_v2_source_and_other_v1_sources_stay(spark: Any) -> None:
    listed = [s.strip().lower() for s in spark.conf.get("spark.sql.sources.useV1SourceList").split(",")]
    assert "kafka" not in listed
    assert "parquet" in listed and "csv" in listed  # only Kafka is taken off Spark's list


def test_a_v1_source_list_the_user_gave_is_left_as_given(spark: Any) -> None:
    from mm2ctl.inspector.spark.session import _read_kafka_through_v2

    key = "spark.sql.sources.useV1SourceList"
    before = spark.conf.get(key)
    try:
        spark.conf.set(key, "kafka,parquet")
        _read_kafka_through_v2(spark, {key: "kafka,parquet"})  # as --spark-conf gives it to an existing context
        assert spark.conf.get(key) == "kafka,parquet"
    finally:
        spark.conf.set(key, before)


@pytest.mark.skipif(spark_major() < 4, reason="PySpark's DataFrame call-site capture came with Spark 4")
def test_pyspark_call_site_capture_is_off(spark: Any) -> None:
    from pyspark.errors.utils import is_debugging_enabled
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.python.sql.dataFrameDebugging.enabled") == "false"
    spark.range(1).select(F.col("id") + 1).collect()  # a DataFrame call: PySpark reads the setting by now
    assert not is_debugging_enabled()


def test_the_embedded_driver_runs_the_throughput_collector(spark: Any) -> None:
    # The JVM's own collectors, not the setting: a flag Spark dropped on the way to `java` would fail here.
    beans = spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()
    names = {bean.getName() for bean in beans}
    assert names == {"PS Scavenge", "PS MarkSweep"}, names
    assert "-XX:+UseParallelGC" in spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
