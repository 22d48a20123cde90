"""Run a rule written as an Arrow function over a frame: row by row (``by_batch``), or one call per partition of
rows clustered by a key (``by_key``).

A rule of ``inspector.rules`` takes an Arrow table and returns one. A rule that looks at each row alone (a
record's decode) runs over each Arrow batch Spark hands ``mapInArrow`` as it comes: no shuffle, and a
partition is never held whole. A rule that needs all the rows of each key it sees (a group's other partitions,
say) runs through ``by_key``, which clusters the frame by the key and hands the rule each Spark
partition whole, through ``mapInArrow``: one Python call per partition rather than per key, on every admitted
Spark release and through Spark Connect. Where the frame is already clustered by that key (the embedded
session joins on it), Spark drops the repartition and no row moves.

The rule's modules are shipped by value (``cloudpickle.register_pickle_by_value``): a Spark executor or a
Spark Connect server needs Python with pyarrow and numpy, not mm2ctl. Those modules must not reach mm2ctl's
other modules when they run; ``tests/unit/test_arrow_rules.py`` unpickles a rule where mm2ctl cannot be
imported.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import ModuleType

import pyarrow as pa
from pyspark import cloudpickle
from pyspark.sql import DataFrame
from pyspark.sql.types import StructType

Rule = Callable[[pa.Table], pa.Table]
#: What ``mapInArrow`` calls with a partition's batches.
Runner = Callable[[Iterable[pa.RecordBatch]], Iterable[pa.RecordBatch]]


def ship_by_value(*modules: ModuleType) -> None:
    """Pickle the functions and classes of ``modules`` by value from now on, so a Python worker without mm2ctl
    can run them."""
    for module in modules:
        cloudpickle.register_pickle_by_value(module)  # type: ignore[no-untyped-call]


def partition_runner(rule: Rule) -> Runner:
    """The ``mapInArrow`` function that applies ``rule`` to a partition's batches as one table."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held = list(batches)
        if not held or not any(b.num_rows for b in held):
            return
        out = rule(pa.Table.from_batches(held))
        yield from out.to_batches()

    return run


def batch_runner(rule: Rule) -> Runner:
    """The ``mapInArrow`` function that applies ``rule`` to each batch on its own."""

    def run(batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if batch.num_rows:
                yield from rule(pa.Table.from_batches([batch])).to_batches()

    return run


def by_batch(frame: DataFrame, rule: Rule, schema: StructType) -> DataFrame:
    """``rule`` over ``frame``, a batch of rows at a time where they lie; output rows of ``schema``."""
    ship_by_value(sys.modules[__name__])
    return frame.mapInArrow(batch_runner(rule), schema)


def by_key(
    frame: DataFrame, keys: Sequence[str], rule: Rule, schema: StructType, *, partitions: int | None = None
) -> DataFrame:
    """``rule`` over ``frame``, each call holding every row of the keys it sees; output rows of ``schema``.
    ``partitions``: that many calls rather than ``spark.sql.shuffle.partitions`` (a small frame's calls each
    cost a task and a Python worker's set-up more than their rows)."""
    ship_by_value(sys.modules[__name__])
    clustered = frame.repartition(*keys) if partitions is None else frame.repartition(partitions, *keys)
    return clustered.mapInArrow(partition_runner(rule), schema)
