"""The translation rule written once as an Arrow function (``inspector.rules.translation``): its edge cases, the
one rule of ``core.translation.rule`` as its oracle, and Spark's ``translate`` giving the rows it gives
in-process."""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from mm2ctl.core.translation.methods import TranslationMethod
from mm2ctl.core.translation.rule import Sync, conservative, newest_sync_at_or_below
from mm2ctl.inspector.kept.pair_topics import RUNS_SCHEMA, Numbering
from mm2ctl.inspector.rules import translation
from mm2ctl.inspector.rules.translation import translate_numbered, translate_rows
from mm2ctl.inspector.schemas import PARTITION_NUMBERS_SCHEMA, SOURCE_GROUP_OFFSETS_SCHEMA, TRANSLATION_FIELDS
from mm2ctl.inspector.spark.compat import frame_from_arrow, to_arrow
from mm2ctl.inspector.transforms.translated_offsets import translate
from tests.property_examples import drawn

PAIR = "a->b"
LONG_MAX = 2**63 - 1
Run = tuple[int, int, int, int]  # (_u0, _d0, _n, _records)


def _runs(by_part: dict[int, list[Run]]) -> pa.Table:
    rows = [
        {"_part": p, "_u0": u0, "_d0": d0, "_n": n, "_records": r}
        for p, runs in by_part.items()
        for u0, d0, n, r in runs
    ]
    return pa.Table.from_pylist(rows, schema=to_arrow_schema(RUNS_SCHEMA))


def _offsets(rows: list[tuple[str, str, int, int | None]]) -> pa.Table:
    return pa.Table.from_pylist(
        [{"cluster_pair": PAIR, "group": g, "topic": t, "partition": p, "committed_offset": c} for g, t, p, c in rows],
        schema=to_arrow_schema(SOURCE_GROUP_OFFSETS_SCHEMA),
    )


def _translated(runs: dict[int, list[Run]], committed: list[int | None], part: int = 1) -> list[dict[str, Any]]:
    """Each committed offset of source partition ``part`` translated through ``runs``, as rows."""
    offsets = _offsets([(f"g{i}", "t", 0, c) for i, c in enumerate(committed)])
    parts = pa.array([part] * len(committed), pa.int32())
    return translate_rows(offsets, parts, _runs(runs)).to_pylist()


def _answer(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["translated_offset"], row["translation_method"], row["sync_upstream"], row["sync_downstream"]


EXACT, NEXT = TranslationMethod.OFFSET_SYNC_EXACT.value, TranslationMethod.OFFSET_SYNC_NEXT.value
#: Two runs of partition 1: 100..104 -> 50..54 (5 records) and 200 -> 300 (written twice).
TWO_RUNS = {1: [(200, 300, 1, 2), (100, 50, 5, 5)]}


# --- the rule's cases ---


def test_the_method_names_are_the_translation_methods() -> None:
    assert (translation.METHOD_SYNC_EXACT, translation.METHOD_SYNC_NEXT) == (EXACT, NEXT)


def test_the_appended_columns_are_the_schema_translation_fields() -> None:
    assert to_arrow_schema(StructType(TRANSLATION_FIELDS)) == translation.TRANSLATION_COLUMNS


def test_an_offset_inside_a_run_is_its_sync_exactly() -> None:
    start, end, middle = _translated(TWO_RUNS, [100, 104, 102])
    assert _answer(start) == (50, EXACT, 100, 50)
    assert _answer(end) == (54, EXACT, 104, 54)
    assert _answer(middle) == (52, EXACT, 102, 52)


def test_an_offset_between_runs_or_past_the_last_is_the_newest_sync_below_plus_one() -> None:
    just_after, between, at_next, past = _translated(TWO_RUNS, [105, 150, 200, 10_000])
    assert _answer(just_after) == (55, NEXT, 104, 54)
    assert _answer(between) == (55, NEXT, 104, 54)
    assert _answer(at_next) == (300, EXACT, 200, 300)
    assert _answer(past) == (301, NEXT, 200, 300)


def test_below_the_first_run_or_null_translates_nothing_but_keeps_the_partition_facts() -> None:
    for row in _translated(TWO_RUNS, [99, None, -1]):
        assert _answer(row) == (None, None, None, None)
        assert (row["oldest_sync_upstream"], row["oldest_sync_downstream"]) == (100, 50)
        assert (row["latest_sync_upstream"], row["latest_sync_downstream"]) == (200, 300)
        assert row["sync_count"] == 7


def test_a_partition_without_runs_has_no_facts_and_no_sync_records() -> None:
    (row,) = _translated(TWO_RUNS, [150], part=2)
    assert _answer(row) == (None, None, None, None)
    assert [row[c] for c in ("latest_sync_upstream", "oldest_sync_upstream", "sync_count")] == [None, None, 0]
    (alone,) = _translated({}, [150])
    assert (_answer(alone), alone["sync_count"]) == ((None, None, None, None), 0)


def test_runs_of_other_partitions_are_never_used() -> None:
    runs = {1: [(10, 10, 1, 1)], 2: [(0, 500, 1, 1)], 3: [(20, 1000, 1, 1)]}
    offsets = _offsets([("a", "t", 0, 15), ("b", "t", 1, 15), ("c", "t", 2, 15), ("d", "t", 3, 15)])
    rows = translate_rows(offsets, pa.array([1, 2, 3, 4], pa.int32()), _runs(runs)).to_pylist()
    assert [r["translated_offset"] for r in rows] == [11, 501, None, None]
    assert [r["sync_count"] for r in rows] == [1, 1, 1, 0]


def test_the_rows_keep_their_columns_and_order() -> None:
    offsets = _offsets([("z", "t", 0, 101), ("a", "t", 0, 5)])
    got = translate_rows(offsets, pa.array([1, 1], pa.int32()), _runs(TWO_RUNS))
    assert got.column_names == [*offsets.column_names, *translation.TRANSLATION_COLUMNS.names]
    assert got.schema.field("partition").type == pa.int32()
    assert [r["group"] for r in got.to_pylist()] == ["z", "a"]


def test_a_downstream_past_long_max_is_null_and_so_is_its_method() -> None:
    last = {1: [(1, LONG_MAX - 2, 3, 3)]}  # 1..3 -> MAX-2..MAX
    at_end, past = _translated(last, [3, 10])
    assert _answer(at_end) == (LONG_MAX, EXACT, 3, LONG_MAX)
    assert _answer(past) == (None, None, 3, LONG_MAX)
    (far,) = _translated({1: [(1, LONG_MAX, 1, 1)]}, [LONG_MAX])
    assert _answer(far) == (None, None, 1, LONG_MAX)


def test_an_offset_at_long_max_translates_through_a_run_ending_there() -> None:
    runs = {1: [(LONG_MAX - 4, 10, 5, 5)]}
    (row,) = _translated(runs, [LONG_MAX])
    assert _answer(row) == (14, EXACT, LONG_MAX, 14)
    assert row["latest_sync_upstream"] == LONG_MAX


def test_an_offset_too_far_from_its_run_to_subtract_is_not_inside_it() -> None:
    """``c - _u0`` overflowing is null, as ``try_subtract`` gives it: not inside the run, so its last sync."""
    (row,) = _translated({1: [(-10, 5, 3, 3)]}, [LONG_MAX])
    assert _answer(row) == (8, NEXT, -8, 7)


def test_translate_numbered_leaves_out_rows_of_partitions_not_numbered() -> None:
    numbers = Numbering.of([("t", 0), ("u", 0)]).table(PAIR)
    offsets = _offsets([("a", "u", 0, 5), ("b", "x", 0, 5), ("c", "t", 0, 5)])
    runs = {Numbering.of([("t", 0), ("u", 0)]).parts[("t", 0)]: [(5, 7, 1, 1)]}
    got = translate_numbered(offsets, _runs(runs), numbers).to_pylist()
    assert [(r["group"], r["translated_offset"]) for r in got] == [("a", None), ("c", 7)]


# --- the one rule (core.translation.rule) as the oracle ---


@st.composite
def partition_runs(draw: st.DrawFn, low: int = 0) -> list[Run]:
    """A partition's runs: disjoint, increasing on both sides, as ``sync_runs`` keeps them; from ``low`` on both
    sides, none past Long.MAX (a run near it is cut to end there)."""
    runs: list[Run] = []
    up, down = low + draw(st.integers(0, 20)), low + draw(st.integers(0, 20))
    for _ in range(draw(st.integers(0, 4))):
        n = min(draw(st.integers(1, 5)), LONG_MAX - max(up, down) + 1)
        if n < 1:
            break
        runs.append((up, down, n, n + draw(st.integers(0, 2))))
        up, down = up + n + draw(st.integers(0, 10)), down + n + draw(st.integers(0, 10))
    return runs


def _oracle(runs: list[Run], c: int | None) -> tuple[Any, ...]:
    """``core.translation.rule.conservative`` over the runs' syncs: (offset, method, sync used)."""
    syncs = [Sync(u0 + i, d0 + i) for u0, d0, n, _ in runs for i in range(n)]
    syncs.sort()
    rule = None if c is None else conservative(syncs, c)
    if rule is None or c is None:
        return None, None, None, None
    used = syncs[newest_sync_at_or_below(syncs, c) or 0]
    return rule.offset, rule.method.value, used.upstream, used.downstream


@settings(max_examples=500, deadline=None)
@given(
    st.lists(partition_runs(), min_size=1, max_size=4),
    st.lists(st.tuples(st.integers(0, 4), st.one_of(st.none(), st.integers(-2, 80))), max_size=30),
)
def test_property_the_rule_is_core_translations_conservative_rule(
    by_part: list[list[Run]], probes: list[tuple[int, int | None]]
) -> None:
    """Every translation is ``conservative``'s over the syncs the runs hold, in partitions with and without
    runs (part 0 and any part past the drawn ones have none)."""
    runs = {p: r for p, r in enumerate(by_part, start=1)}
    offsets = _offsets([(f"g{i}", "t", p, c) for i, (p, c) in enumerate(probes)])
    got = translate_rows(offsets, pa.array([p for p, _ in probes], pa.int32()), _runs(runs)).to_pylist()
    for (p, c), row in zip(probes, got, strict=True):
        mine = runs.get(p, [])
        assert _answer(row) == _oracle(mine, c), (mine, c)
        syncs = sorted(Sync(u0 + i, d0 + i) for u0, d0, n, _ in mine for i in range(n))
        first, last = (syncs[0], syncs[-1]) if syncs else (Sync(None, None), Sync(None, None))  # type: ignore[arg-type]
        assert (row["oldest_sync_upstream"], row["oldest_sync_downstream"]) == (first.upstream, first.downstream)
        assert (row["latest_sync_upstream"], row["latest_sync_downstream"]) == (last.upstream, last.downstream)
        assert row["sync_count"] == sum(r for *_, r in mine)


# --- Spark runs the same rule ---

#: An example: source partitions (their runs, near 0 or near Long.MAX; None: a partition with no runs) and the
#: committed offsets of each, and the committed offsets of a partition the numbering does not know.
HIGH = LONG_MAX - 30
SPARK_EXAMPLE = st.tuples(
    st.lists(
        st.tuples(
            st.one_of(st.none(), partition_runs(), partition_runs(low=HIGH)),
            st.lists(st.one_of(st.none(), st.integers(-2, 80), st.integers(HIGH - 2, LONG_MAX)), max_size=6),
        ),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.integers(0, 80), max_size=2),
)


#: An example every run checks: a run ending at Long.MAX downstream, an offset inside it and one past it.
AT_LONG_MAX = ([([(1, LONG_MAX - 2, 3, 3)], [3, 10, None])], [5])


def _spark_inputs(examples: list[Any]) -> tuple[pa.Table, pa.Table, pa.Table]:
    """All the examples as one group-offsets table, one numbering and one runs table: a topic per example."""
    partitions = [(f"t{e}", p) for e, (parts, _) in enumerate(examples) for p in range(len(parts))]
    numbering = Numbering.of(partitions)
    offsets: list[tuple[str, str, int, int | None]] = []
    runs: dict[int, list[Run]] = {}
    for e, (parts, unknown) in enumerate(examples):
        for p, (mine, committed) in enumerate(parts):
            if mine is not None:
                runs[numbering.parts[(f"t{e}", p)]] = mine
            offsets += [(f"g{e}-{p}-{i}", f"t{e}", p, c) for i, c in enumerate(committed)]
        offsets += [(f"g{e}-x-{i}", f"t{e}", len(parts), c) for i, c in enumerate(unknown)]
    return _offsets(offsets), _runs(runs), numbering.table(PAIR)


@pytest.mark.spark
def test_property_spark_translate_gives_the_rows_translated_in_process(spark: Any) -> None:
    """Spark's ``translate`` (the rule shipped to its Python workers, the rows shuffled by source partition)
    and ``translate_numbered`` in this process give the same rows, on runs near 0 and near Long.MAX, null
    offsets, partitions without runs and partitions the numbering does not know."""
    offsets, runs, numbers = _spark_inputs([*drawn(SPARK_EXAMPLE, at_least=300), AT_LONG_MAX])
    frames = (
        frame_from_arrow(spark, offsets, SOURCE_GROUP_OFFSETS_SCHEMA),
        frame_from_arrow(spark, runs, RUNS_SCHEMA),
        frame_from_arrow(spark, numbers, PARTITION_NUMBERS_SCHEMA),
    )
    remote = to_arrow(translate(*frames))
    local = translate_numbered(offsets, runs, numbers)
    assert remote.column_names == local.column_names
    assert sorted(remote.to_pylist(), key=lambda r: r["group"]) == sorted(local.to_pylist(), key=lambda r: r["group"])
    assert any(r["translation_method"] == EXACT for r in local.to_pylist())
    assert any(r["translated_offset"] is None and r["sync_downstream"] == LONG_MAX for r in local.to_pylist())


@pytest.mark.spark
def test_translate_shuffles_once_by_source_partition(spark: Any) -> None:
    offsets, runs, numbers = _spark_inputs([([([(5, 7, 1, 1)], [5, 6])], [3])])
    translated = translate(
        frame_from_arrow(spark, offsets, SOURCE_GROUP_OFFSETS_SCHEMA),
        frame_from_arrow(spark, runs, RUNS_SCHEMA),
        frame_from_arrow(spark, numbers, PARTITION_NUMBERS_SCHEMA),
    )
    plan = str(translated._jdf.queryExecution().executedPlan().toString())
    shuffles = re.findall(r"\bExchange (hashpartitioning|roundrobinpartitioning|rangepartitioning)\((\w+)", plan)
    assert [(kind, column) for kind, column in shuffles] == [("hashpartitioning", "_part")], plan
    assert sorted((r.group, r.translated_offset) for r in translated.collect()) == [("g0-0-0", 7), ("g0-0-1", 8)]
