"""Spark SQL statements for the inspection's per-run steps, with their values passed as named parameters.

The steps a run repeats (translation, the joins, the classification, the final aggregation) are written as SQL
text and handed to Spark in one call each: building the same plan from PySpark's Column objects took thousands
of round trips to the driver JVM per run, each one re-analysing the growing plan, which cost more than the
jobs themselves on small inputs. A value (a message, a threshold, a time) goes in as a SQL literal written by
``Statement.value`` alone (a string escaped as Spark's parser reads it back, a time as its microseconds);
frames go in as ``{name}`` references, which PySpark registers as temporary views for the one statement.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType, TimestampType

from mm2ctl.inspector.rules.columns import micros
from mm2ctl.inspector.spark.compat import frame_from_arrow

Value = str | int | float | bool | dt.datetime


def literal(v: Value) -> str:
    """``v`` as a Spark SQL literal. Strings escape the backslash and the quote, the two characters Spark's
    parser unescapes (``spark.sql.parser.escapedStringLiterals`` off, its default), and double the braces
    PySpark's formatting of the text reads; a time is its UTC microseconds, so the session's time zone cannot
    shift it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return f"CAST({v!r} AS DOUBLE)"
    if isinstance(v, dt.datetime):
        return f"timestamp_micros({micros(v)})"
    escaped = v.replace("\\", "\\\\").replace("'", "\\'")
    # PySpark formats the statement's text (``{name}`` references to frames): braces in a value are doubled.
    return "'" + escaped.replace("{", "{{").replace("}", "}}") + "'"


class Statement:
    """One SQL statement being written, and the frames it reads."""

    def value(self, v: Value) -> str:
        """``v`` as a literal of the statement."""
        return literal(v)

    def values(self, vs: Iterable[Value]) -> str:
        """Literals for ``vs``, comma-separated (for ``IN (…)`` and ``map(…)``)."""
        return ", ".join(self.value(v) for v in vs)

    def map_of(self, table: Mapping[str, str]) -> str:
        """A SQL ``map`` from ``table``'s keys to its values."""
        return f"map({self.values([x for item in sorted(table.items()) for x in item])})"

    def run(self, spark: SparkSession, text: str, **frames: DataFrame) -> DataFrame:
        return spark.sql(text, None, **frames)


def moment(spark: SparkSession, when: dt.datetime) -> DataFrame:
    """A one-row frame holding ``when`` (column ``at``), for a statement to cross-join rather than write as a
    literal. Spark writes a literal's value into the code it generates for a stage, so a time that changes every
    run would make new code to compile every run; a value read from a row leaves the code, and the compiled
    classes Spark caches by it, the same from one run to the next."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
    table = pa.table({"at": pa.array([aware], pa.timestamp("us", tz="UTC"))})
    return frame_from_arrow(spark, table, StructType([StructField("at", TimestampType())]))


def quoted(name: str) -> str:
    """A column name as a SQL identifier."""
    return "`" + name.replace("`", "``") + "`"
