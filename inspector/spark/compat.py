"""The PySpark calls the inspector makes that differ between the Spark releases it admits (3.5 and 4.x).

Each helper takes the Spark 4 API where the installed pyspark has it, and otherwise does what Spark 4 does
with what Spark 3.5 offers, so the two give the same rows. The choice is made by the API's presence (a
function, a method), or by the release where nothing public tells.

| helper | Spark 4.0+ | Spark 3.5 |
|---|---|---|
| ``frame_from_arrow`` | ``createDataFrame(pyarrow.Table)`` | the same Arrow batches sent to the JVM as 4.0 does |
| ``to_arrow`` | ``DataFrame.toArrow`` | ``_collect_as_arrow`` batches cast to the frame's schema |
| ``error_condition`` | ``PySparkException.getCondition`` | ``getErrorClass`` (4.0 renamed it) |
| ``array_position`` | ``F.array_position`` of a column | the SQL function called by name (3.5's takes a literal) |

On Spark Connect (``SparkSession.builder.remote``) each helper takes the path that works there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.errors import PySparkException


def spark_major() -> int:
    """The installed pyspark's major release (3 or 4)."""
    import pyspark

    return int(pyspark.__version__.split(".", 1)[0])


def array_position(array: Column, value: Column) -> Column:
    """The 1-based position of ``value`` in ``array`` (0 when absent), ``value`` being a column.

    pyspark 3.5's ``F.array_position`` sends its value to the JVM as a literal and fails on a column; the SQL
    function itself takes a column on every release (``F.call_function``, 3.5+).
    """
    if spark_major() >= 4:
        return F.array_position(array, value)
    return F.call_function("array_position", array, value)


def frame_from_arrow(spark: SparkSession, table: pa.Table, schema: StructType) -> DataFrame:
    """``table`` as a DataFrame of ``schema``, its Arrow batches handed to Spark as they are (no row through
    Python): Spark 4's ``createDataFrame(pyarrow.Table)``.

    pyspark 3.5 takes only pandas there. Its pandas path would copy every column into pandas and turn an
    integer column with nulls into floats (an offset above 2^53 loses digits); instead the table is cast to
    the schema's Arrow types and sent to the JVM the way Spark 4 does it (``_create_from_arrow_table``):
    the same Arrow stream, read by the same ``PythonSQLUtils.toDataFrame``. A Spark Connect session takes
    a table on every release.

    The table's empty batches are left out first: pyspark's Arrow path stops reading at an empty batch, so a
    table concatenated from parts, one of them empty, would lose every row after it.
    """
    import pyarrow as pa

    table = pa.Table.from_batches([b for b in table.to_batches() if b.num_rows], schema=table.schema)
    if spark_major() >= 4:
        return spark.createDataFrame(table, schema)
    if not hasattr(spark, "_jsparkSession"):
        return _connect_frame_from_arrow_35(spark, table, schema)
    return _frame_from_arrow_35(spark, table, schema)


def _as_schema(spark: Any, table: pa.Table, schema: StructType) -> pa.Table:
    """``table`` cast to ``schema``'s Arrow types; as Spark 4 does, a naive timestamp bound for a
    ``TimestampType`` column is read as a time in the session's zone."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql.pandas.types import to_arrow_schema
    from pyspark.sql.types import TimestampType

    zone = str(spark.conf.get("spark.sql.session.timeZone"))
    columns = [
        pc.assume_timezone(column, zone)
        if pa.types.is_timestamp(column.type) and column.type.tz is None and isinstance(field.dataType, TimestampType)
        else column
        for column, field in zip(table.columns, schema.fields, strict=True)
    ]
    return pa.Table.from_arrays(columns, names=table.column_names).cast(to_arrow_schema(schema))


def _frame_from_arrow_35(spark: SparkSession, table: pa.Table, schema: StructType) -> DataFrame:
    from pyspark.sql.pandas.serializers import ArrowStreamSerializer

    table = _as_schema(spark, table, schema)
    jconf: Any = spark._jconf
    jvm: Any = spark._jvm
    batches = table.to_batches(max_chunksize=jconf.arrowMaxRecordsPerBatch())
    iterator = spark.sparkContext._serialize_to_jvm(
        batches,
        ArrowStreamSerializer(),
        lambda path: jvm.PythonSQLUtils.readArrowStreamFromFile(path),
        lambda: jvm.ArrowIteratorServer(),
    )
    frame = DataFrame(jvm.PythonSQLUtils.toDataFrame(iterator, schema.json(), spark._jsparkSession), spark)
    frame._schema = schema  # as pyspark's own path does: no JVM round trip
    return frame


def _connect_frame_from_arrow_35(spark: Any, table: pa.Table, schema: StructType) -> DataFrame:
    """A Spark Connect 3.5 session's ``createDataFrame`` takes pandas, not Arrow, though it sends Arrow: the
    same local relation (cached on the server past its size threshold), built from the table itself."""
    from pyspark.sql.connect.dataframe import DataFrame as ConnectDataFrame
    from pyspark.sql.connect.plan import CachedLocalRelation, LocalRelation

    table = _as_schema(spark, table, schema)
    plan: Any = LocalRelation(table, schema=schema.json())
    (threshold,) = spark._client.get_configs("spark.sql.session.localRelationCacheThreshold")
    if threshold is not None and int(threshold) <= table.nbytes:
        plan = CachedLocalRelation(spark._cache_local_relation(plan))
    remote: Any = ConnectDataFrame  # ``withPlan`` is 3.5's; 4.0 made it the constructor
    frame: DataFrame = remote.withPlan(plan, spark)
    return frame


def to_arrow(frame: DataFrame) -> pa.Table:
    """Every row of ``frame`` collected as one Arrow table of its schema: Spark 4's ``toArrow``.

    On 3.5 the same batches pyspark's ``toPandas`` collects (``_collect_as_arrow``; a Spark Connect frame's
    client receives them as a table), cast as 4.0 casts them (timestamps in UTC), and an empty table of the
    schema when there is no row.
    """
    if hasattr(frame, "toArrow"):
        return frame.toArrow()
    import pyarrow as pa
    from pyspark.sql.pandas.types import to_arrow_schema

    schema = to_arrow_schema(frame.schema)
    if not hasattr(frame, "_collect_as_arrow"):  # Spark Connect
        remote: Any = frame
        client = remote._session.client
        table, _ = client.to_table(remote._plan.to_proto(client))
        return table.cast(schema) if table.num_columns else schema.empty_table()
    batches = frame._collect_as_arrow()  # type: ignore[operator]
    return pa.Table.from_batches(batches).cast(schema) if batches else schema.empty_table()


def error_condition(error: PySparkException) -> str | None:
    """The error's condition (``JAVA_GATEWAY_EXITED``…): ``getCondition`` from 4.0, ``getErrorClass`` before."""
    get = getattr(error, "getCondition", None) or error.getErrorClass
    condition: str | None = get()
    return condition


__all__ = ["array_position", "error_condition", "frame_from_arrow", "spark_major", "to_arrow"]
