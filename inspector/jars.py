"""Spark's Kafka source (``spark-sql-kafka-0-10``) matched to the installed pyspark."""

from __future__ import annotations

import re
from pathlib import Path

from mm2ctl.core.maven import packaged_pom, resolve_jars

_VERSION_SUFFIX = re.compile(r"-\d[\w.\-]*\.jar$")


def _artifact(jar: Path) -> str:
    return _VERSION_SUFFIX.sub("", jar.name)


def spark_kafka_jars() -> list[Path]:
    """The connector and its dependencies, minus every artifact pyspark already ships.

    The connector's transitive jars (lz4, snappy, slf4j…) overlap pyspark's own; keeping pyspark's copy
    avoids two versions of one class on Spark's classpath.
    """
    import pyspark

    version = pyspark.__version__
    folder = resolve_jars(
        packaged_pom("mm2ctl.inspector", "spark-kafka.pom.xml"),
        f"spark-kafka-{version}",
        {"spark.version": version, "scala.binary.version": "2.13"},
    )
    shipped = {_artifact(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    return sorted(j for j in folder.glob("*.jar") if _artifact(j) not in shipped)
