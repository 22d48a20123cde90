"""Spark SQL's null and overflow semantics over Arrow columns, for the rules written once as Arrow functions.

A rule in ``inspector.rules`` runs in two places: in-process over a live session's small inputs, and inside
Spark over large ones (``inspector.spark.arrow_rules`` hands it each partition as Arrow). Both must give the
rows Spark SQL gave before, so these helpers keep SQL's semantics where Arrow's differ:

* arithmetic is ``try_add``/``try_subtract``: an overflow is null, not an error or a wrapped value;
* ``greatest`` skips nulls and is null only when every argument is;
* ``AND``/``OR`` are three-valued (Kleene); a comparison with null is null;
* ``IN`` is null for a null operand; ``CASE WHEN`` takes a branch only where its condition is true;
* ``concat`` is null when any part is.

Only pyarrow and numpy are imported, so the module can be shipped to Spark's Python workers by value
(``inspector.spark.arrow_rules``): an executor needs pyarrow, not mm2ctl.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

Col: TypeAlias = pa.Array | pa.ChunkedArray
Operand: TypeAlias = pa.Array | pa.ChunkedArray | int | str | bool | None


def _array(x: Col) -> pa.Array:
    return x.combine_chunks() if isinstance(x, pa.ChunkedArray) else x


def _long(x: Operand, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``x`` as int64 values and a validity mask of length ``n``."""
    if x is None:
        return np.zeros(n, np.int64), np.zeros(n, bool)
    if isinstance(x, int):
        return np.full(n, x, np.int64), np.ones(n, bool)
    a = _array(x)
    valid = np.ones(n, bool) if a.null_count == 0 else ~np.asarray(a.is_null(), bool)
    return np.asarray(a.fill_null(0), np.int64), valid


def _length(*xs: Operand) -> int:
    for x in xs:
        if isinstance(x, pa.Array | pa.ChunkedArray):
            return len(x)
    raise ValueError("at least one operand must be a column")


def try_add(a: Operand, b: Operand) -> pa.Array:
    """``try_add(a, b)`` over int64: null where either is null or the sum overflows."""
    n = _length(a, b)
    (x, vx), (y, vy) = _long(a, n), _long(b, n)
    with np.errstate(over="ignore"):
        r = x + y
    overflow = ((x ^ r) & (y ^ r)) < 0
    return pa.array(r, pa.int64(), mask=~(vx & vy & ~overflow))


def try_subtract(a: Operand, b: Operand) -> pa.Array:
    """``try_subtract(a, b)`` over int64: null where either is null or the difference overflows."""
    n = _length(a, b)
    (x, vx), (y, vy) = _long(a, n), _long(b, n)
    with np.errstate(over="ignore"):
        r = x - y
    overflow = ((x ^ y) & (x ^ r)) < 0
    return pa.array(r, pa.int64(), mask=~(vx & vy & ~overflow))


def greatest(*xs: Operand) -> pa.Array:
    """``greatest(...)``: the largest non-null argument, null when all are null."""
    n = _length(*xs)
    cols = [pa.array(np.full(n, x, np.int64)) if isinstance(x, int) else _array(x) for x in xs if x is not None]
    return _array(pc.max_element_wise(*cols, skip_nulls=True))


def scalar(value: Operand, n: int, type_: pa.DataType) -> pa.Array:
    """A column of ``n`` copies of ``value`` (null for None)."""
    return pa.nulls(n, type_) if value is None else pa.nulls(n, type_).fill_null(pa.scalar(value, type_))


def true(x: Col) -> pa.Array:
    """Where the condition ``x`` is true: null counts as false (``coalesce(x, false)``)."""
    return _array(pc.fill_null(x, False))


def and_(*xs: Col) -> pa.Array:
    out = xs[0]
    for x in xs[1:]:
        out = pc.and_kleene(out, x)
    return _array(out)


def or_(*xs: Col) -> pa.Array:
    out = xs[0]
    for x in xs[1:]:
        out = pc.or_kleene(out, x)
    return _array(out)


def isin(x: Col, values: Iterable[str]) -> pa.Array:
    """``x IN (values)``: null where ``x`` is null."""
    found = pc.is_in(x, value_set=pa.array(sorted(values), pa.string()))
    return _array(pc.if_else(pc.is_null(x), pa.scalar(None, pa.bool_()), found))


def case(branches: Sequence[tuple[Col, Col]], default: Col) -> pa.Array:
    """``CASE WHEN c1 THEN v1 WHEN c2 THEN v2 … ELSE default END``: the first branch whose condition is true."""
    out = default
    for cond, value in reversed(branches):
        out = pc.if_else(true(cond), value, out)
    return _array(out)


def text(x: Col) -> pa.Array:
    """``cast(x AS STRING)`` of an integer column."""
    return _array(pc.cast(x, pa.string()))


def concat(*parts: Col | str) -> pa.Array:
    """``concat(...)``: null where any part is null."""
    n = _length(*parts)
    cols = [scalar(p, n, pa.string()) if isinstance(p, str) else p for p in parts]
    return _array(pc.binary_join_element_wise(*cols, "", null_handling="emit_null"))


def lookup(keys: Col, table: dict[str, str]) -> pa.Array:
    """``map(table)[keys]``: the value of each key, null for a key the table does not hold."""
    names = sorted(table)
    index = pc.index_in(keys, value_set=pa.array(names, pa.string()))
    return _array(pc.take(pa.array([table[k] for k in names], pa.string()), index))


def micros(when: dt.datetime) -> int:
    """``when`` in microseconds since the epoch, as Spark's ``unix_micros`` gives a timestamp (a naive one is
    UTC)."""
    aware = when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)
    return (aware - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
