"""The decoded internal topics saved between processes (``inspector.kept.topic_cache``,
``inspector.kept.saved_topics``): the files themselves, and a property test that a chain of processes each starting
from the last one's files keeps exactly what a process reading the topic in full keeps, over random histories of the
topic."""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import strategies as st

from mm2ctl.core.kafka import codecs
from mm2ctl.core.kafka.admin import TP
from mm2ctl.core.translation.rule import Sync
from mm2ctl.inspector.kept import pair_topics, topic_cache
from mm2ctl.inspector.kept.pair_topics import PairTopics
from mm2ctl.inspector.kept.saved_topics import SavedTopics
from mm2ctl.inspector.kept.topic_cache import SYNCS, SavedState, StateKey, Unusable
from mm2ctl.inspector.reads import kafka_read
from mm2ctl.inspector.reads.internal_topics import TopicSnapshot, plan_read
from mm2ctl.inspector.schemas import KAFKA_RECORD_SCHEMA, arrow_schema
from tests.property_examples import drawn

PAIR = "a->b"
T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
KEY = StateKey(SYNCS, PAIR, "cluster-1", "mm2-offset-syncs.b.internal")


def _state(rows: int = 3, key: StateKey = KEY) -> SavedState:
    table = pa.table({"_part": pa.array([1] * rows, pa.int32()), "_u0": pa.array(range(rows), pa.int64())})
    return SavedState(key, "topic-id-1", {0: (0, 10)}, table, {"malformed": {"short key": 2}})


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MM2CTL_CACHE", str(tmp_path))
    return topic_cache.cache_dir()


# --- the files ---


def test_a_saved_state_reads_back_whole(folder: Path) -> None:
    path = topic_cache.save(_state())
    got = topic_cache.load(KEY)
    assert isinstance(got, SavedState)
    assert got.table.equals(_state().table)
    assert (got.topic_id, dict(got.bounds), dict(got.extra)) == (
        "topic-id-1",
        {0: (0, 10)},
        {"malformed": {"short key": 2}},
    )
    assert path.parent == folder and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in folder.iterdir()] == [path.name]  # no temporary file left


def test_a_read_says_how_many_records_it_reads_and_from_where() -> None:
    kept = TopicSnapshot("b", "syncs", "id", {0: (0, 120), 1: (5, 40)})
    now = TopicSnapshot("b", "syncs", "id", {0: (0, 150), 1: (5, 40)})
    assert (
        plan_read(kept, now).describe("syncs")
        == "syncs: reading 30 record(s) past the kept ones (0: [120, 150), 1: [40, 40))"
    )
    assert plan_read(None, now).describe("syncs") == "syncs: reading 185 record(s) in full (0: [0, 150), 1: [5, 40))"


def test_no_file_is_no_state(folder: Path) -> None:
    assert topic_cache.load(KEY) is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),  # truncated
        lambda p: p.write_bytes(b"ARROW1" + os.urandom(200)),  # corrupt
        lambda p: p.write_bytes(b""),
    ],
    ids=["truncated", "corrupt", "empty"],
)
def test_a_damaged_file_is_thrown_away_with_the_reason(folder: Path, damage: Any) -> None:
    path = topic_cache.save(_state())
    damage(path)
    got = topic_cache.load(KEY)
    assert isinstance(got, Unusable) and "unreadable" in got.reason
    assert not path.exists()


def test_a_file_of_another_version_or_topic_is_thrown_away(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    topic_cache.save(_state())
    monkeypatch.setattr(topic_cache, "_version", lambda: "9.9.9")
    got = topic_cache.load(KEY)
    assert isinstance(got, Unusable) and "another version" in got.reason
    monkeypatch.undo()
    monkeypatch.setenv("MM2CTL_CACHE", str(folder.parent))
    other = StateKey(SYNCS, PAIR, "cluster-2", KEY.topic)
    path = topic_cache.save(_state())
    path.rename(folder / other.file_name())  # a file under another key's name
    got = topic_cache.load(other)
    assert isinstance(got, Unusable) and "does not describe" in got.reason


def test_the_folder_keeps_to_its_bound_least_recently_used_first(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    keys = [StateKey(SYNCS, f"p{i}", "c", "t") for i in range(4)]
    big = 20_000
    for i, key in enumerate(keys):
        path = topic_cache.save(_state(big, key))
        os.utime(path, (1_000 + i, 1_000 + i))
    size = (folder / keys[0].file_name()).stat().st_size
    assert isinstance(topic_cache.load(keys[0]), SavedState)  # used now: the most recent
    monkeypatch.setenv("MM2CTL_INSPECT_CACHE_MB", str(2.5 * size / (1 << 20)))
    newest = topic_cache.save(_state(big, StateKey(SYNCS, "p9", "c", "t")))
    left = {p.name for p in folder.iterdir()}
    assert left == {newest.name, keys[0].file_name()}


def test_a_dead_writers_temporary_file_goes(folder: Path) -> None:
    folder.mkdir(parents=True)
    stale, fresh = folder / ".tmp-dead.arrow", folder / ".tmp-writing.arrow"
    for p in (stale, fresh):
        p.write_bytes(b"half")
    os.utime(stale, (0, 0))
    topic_cache.save(_state())
    assert not stale.exists() and fresh.exists()


# --- a chain of processes against a full read ---

PARTS = 3


class FakeTopic:
    """An offset-syncs topic's history on one partition: records by offset, its log start and its id. Its
    records are the syncs of source partitions ``(topic, partition)``; an op names a partition of ``source``."""

    def __init__(self) -> None:
        self.topic_id = "id-0"
        self.records: list[tuple[int, TP, Sync | str | None]] = []  # (offset, source partition, record)
        self.start = 0
        self.end = 0

    def apply(self, op: tuple[Any, ...], source: str = "t") -> None:
        kind = op[0]
        if kind == "syncs":
            _, part, count, step_up, step_down = op
            tp = (source, part)
            last = next((r for _o, p, r in reversed(self.records) if p == tp and isinstance(r, Sync)), None)
            up, down = (last.upstream, last.downstream) if last else (0, 0)
            for _ in range(count):
                up, down = up + 1 + step_up, down + 1 + step_down
                self._append(tp, Sync(up, down))
        elif kind == "arbitrary":
            self._append((source, op[1]), Sync(op[2], op[3]))
        elif kind == "tombstone":
            self._append((source, op[1]), None)
        elif kind == "malformed":
            self._append((source, op[1]), "malformed")
        elif kind == "delete_below" and self.end > self.start:
            self.start = self.start + (op[1] % (self.end - self.start + 1))
            self.records = [r for r in self.records if r[0] >= self.start]
        elif kind == "recreate":
            self.topic_id = f"id-{int(self.topic_id[3:]) + 1}"
            self.records, self.start, self.end = [], 0, 0

    def _append(self, part: TP, record: Sync | str | None) -> None:
        self.records.append((self.end, part, record))
        self.end += 1

    def snapshot(self) -> TopicSnapshot:
        return TopicSnapshot("b", "syncs", self.topic_id, {0: (self.start, self.end)}, cluster_id="cluster-b")

    def read(self, spark: Any, ranges: Mapping[int, tuple[int, int]]) -> Any:
        return spark.createDataFrame(self._raw(ranges), KAFKA_RECORD_SCHEMA)

    def read_on_driver(self, ranges: Mapping[int, tuple[int, int]]) -> pa.Table:
        names = KAFKA_RECORD_SCHEMA.fieldNames()
        rows = [dict(zip(names, r, strict=True)) for r in self._raw(ranges)]
        return pa.Table.from_pylist(rows, schema=arrow_schema(KAFKA_RECORD_SCHEMA))

    def _raw(self, ranges: Mapping[int, tuple[int, int]]) -> list[tuple[Any, ...]]:
        start, end = ranges.get(0, (0, 0))
        raw = []
        for offset, part, x in self.records:
            if not start <= offset < end:
                continue
            key = codecs.encode_offset_sync_key(*part)
            if x == "malformed":
                raw.append((PAIR, key[:3], None, "syncs", 0, offset, T0, 0))
                continue
            value = None if x is None else codecs.encode_offset_sync_value(x.upstream, x.downstream)  # type: ignore[union-attr]
            raw.append((PAIR, key, value, "syncs", 0, offset, T0 + dt.timedelta(seconds=offset), 0))
        return raw


def _kept(spark: Any, kept: PairTopics) -> tuple[Any, ...]:
    """What a process keeps of the topic, as values: each partition's syncs expanded from its runs, the
    records they stand for, the newest record of each partition and the malformed counts."""
    assert kept.numbering is not None and (kept.runs is not None or kept.held_runs is not None)
    key_of = {n: tp for tp, n in kept.numbering.parts.items()}
    syncs: dict[Any, list[tuple[int, int]]] = {}
    records: dict[Any, int] = {}
    runs = kept.held_runs.to_pylist() if kept.held_runs is not None else [r.asDict() for r in kept.runs.collect()]
    for r in (SimpleNamespace(**run) for run in runs):
        syncs.setdefault(key_of[r._part], []).extend((r._u0 + i, r._d0 + i) for i in range(r._n))
        records[key_of[r._part]] = records.get(key_of[r._part], 0) + r._records
    return ({k: sorted(v) for k, v in syncs.items()}, records, dict(kept.newest), kept.malformed()[0])


def _process(
    spark: Any, topic: FakeTopic, wanted: list[TP], *, cached: bool, on_driver: bool = False
) -> tuple[tuple[Any, ...], str | None, list[Any]]:
    """One process's read of the topic for the source partitions ``wanted``: from the saved files (``cached``)
    or in full, in Spark or on the driver engine (``on_driver``: read and folded in Arrow unless the history holds
    more than one mapping); what it keeps, why it read in full, and the notes about the files."""
    kept, saved = PairTopics(PAIR), SavedTopics()
    kept.on_driver = on_driver
    now = topic.snapshot()
    notes = saved.restore(lambda: spark, kept, now, None) if cached else []
    reason = kept.refresh_syncs(lambda: spark, {}, now, wanted, lambda _m: None)
    if cached:
        with ThreadPoolExecutor(1) as pool:
            assert saved.save_soon(kept, pool).result() == []
    return _kept(spark, kept), reason, notes


OPS = st.one_of(
    st.tuples(st.just("syncs"), st.integers(0, PARTS - 1), st.integers(1, 6), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(st.just("arbitrary"), st.integers(0, PARTS - 1), st.integers(0, 40), st.integers(0, 40)),
    st.tuples(st.just("tombstone"), st.integers(0, PARTS - 1)),
    st.tuples(st.just("malformed"), st.integers(0, PARTS - 1)),
    st.tuples(st.just("delete_below"), st.integers(0, 50)),
    st.tuples(st.just("recreate")),
)


LONGEST = 3
HISTORIES = st.lists(st.lists(OPS, max_size=6), min_size=2, max_size=LONGEST)


def _path(ops: list[tuple[Any, ...]]) -> str:
    """What a process after the first meets in the records since the last one: a new topic or records deleted
    (``reset``: it reads in full and says why); records that disagree with each other, a tombstone or an
    arbitrary sync after another sync of its partition (``tangle``: the fold finds them, then reads in full);
    arbitrary syncs, each the first of its partition, which may contradict only what is kept (``arbitrary``:
    folded in, or read in full when they contradict); or syncs continuing their partitions and malformed records
    alone (``fold``)."""
    kinds = {op[0] for op in ops}
    if kinds & {"recreate", "delete_below"}:
        return "reset"
    synced: set[int] = set()
    for op in ops:
        if op[0] == "tombstone" or (op[0] == "arbitrary" and op[1] in synced):
            return "tangle"
        if op[0] in ("syncs", "arbitrary"):
            synced.add(op[1])
    return "arbitrary" if "arbitrary" in kinds else "fold"


@pytest.mark.spark
def test_property_a_chain_of_processes_keeps_what_a_full_read_keeps(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Between processes the topic gets syncs that continue their partition, arbitrary syncs (which may
    contradict), tombstones, malformed records, records deleted below an offset, or a new topic under the
    name. Each process after the first starts from the last one's files; what it keeps equals what a
    process reading the whole topic keeps, and when it could not use the files it says why.

    The histories are drawn first (``tests.property_examples``) and checked a few chains at a time: the
    histories of the same shape (what each process after the first meets, ``_path``; a shorter history's last
    process meets nothing) share one topic, each on source partitions of its own (topic ``t<i>``). A
    tombstone, a contradiction, a deletion or a new topic makes the next process read the whole topic, every
    history's partitions with it; sharing a topic by shape keeps each process on the path its histories take
    alone. 200 histories make at most 16 chains of three processes, each checked both ways."""
    examples = [steps + [[]] * (LONGEST - len(steps)) for steps in drawn(HISTORIES)]  # a last process meeting nothing
    shapes: dict[tuple[str, ...], list[int]] = {}
    for i, steps in enumerate(examples):
        shapes.setdefault(tuple(_path(ops) for ops in steps[1:]), []).append(i)
    folded = sum(_chain(spark, examples, members, tmp_path_factory) for _shape, members in sorted(shapes.items()))
    assert folded, "no process folded new records into the kept ones: the chains only read in full"


def _chain(
    spark: Any, examples: list[list[list[tuple[Any, ...]]]], members: list[int], tmp: pytest.TempPathFactory
) -> int:
    """The histories ``members`` (of one shape) on one topic, process after process; how many later processes
    folded new records into the kept ones."""
    topic, folded = FakeTopic(), 0
    alone = {i: FakeTopic() for i in members}  # each history on a topic of its own, for when it leaves it empty
    wanted = [(f"t{i}", p) for i in members for p in range(PARTS)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MM2CTL_CACHE", str(tmp.mktemp("cache")))
        mp.setattr(pair_topics, "read_ranges", lambda spark, _s, _t, ranges, **_k: topic.read(spark, ranges))
        mp.setattr(kafka_read, "read_on_driver", lambda _s, _t, ranges, **_k: topic.read_on_driver(ranges))
        for step in range(len(examples[members[0]])):
            before = topic.snapshot()
            for i in members:
                # A history that leaves its topic empty gets a sync, as it would on a topic of its own.
                filler = [("syncs", 0, 1, 0, 0)] if _empties(alone[i], examples[i][step]) else []
                for op in [*examples[i][step], *filler]:
                    topic.apply(op, f"t{i}")
            if topic.end == topic.start:
                topic.apply(("syncs", 0, 1, 0, 0), f"t{members[0]}")
            cold, _, _ = _process(spark, topic, wanted, cached=False)
            warm, reason, notes = _process(spark, topic, wanted, cached=True)
            assert warm == cold, _first_difference(warm, cold, examples, members, step)
            assert notes == []
            on_driver, _, _ = _process(spark, topic, wanted, cached=False, on_driver=True)
            assert on_driver == cold, _first_difference(on_driver, cold, examples, members, step)
            now = topic.snapshot()
            if step and now.topic_id != before.topic_id:
                assert reason is not None and "created again" in reason
            elif step and now.bounds[0][0] > before.bounds[0][0]:
                assert reason is not None and "deleted" in reason
            folded += int(step > 0 and reason is None and now.bounds != before.bounds)
    return folded


def _empties(topic: FakeTopic, ops: list[tuple[Any, ...]]) -> bool:
    """Apply ``ops`` to ``topic``, and a sync when they leave it empty; whether they did."""
    for op in ops:
        topic.apply(op)
    if topic.end > topic.start:
        return False
    topic.apply(("syncs", 0, 1, 0, 0))
    return True


def _first_difference(
    warm: tuple[Any, ...], cold: tuple[Any, ...], examples: list[Any], members: list[int], step: int
) -> tuple[Any, ...]:
    """The first history whose partitions a process starting from the files keeps otherwise than a full read."""
    for i in members:

        def mine(kept: tuple[Any, ...], source: str = f"t{i}") -> list[dict[Any, Any]]:
            return [{tp: v for tp, v in part.items() if tp[0] == source} for part in kept[:3]]

        if mine(warm) != mine(cold):
            return (
                f"process {step} of history {i}",
                examples[i],
                "from the files:",
                mine(warm),
                "in full:",
                mine(cold),
            )
    return (f"process {step}: malformed counts", warm[3], cold[3])


@pytest.mark.spark
def test_a_file_holding_something_else_is_thrown_away_with_a_note(spark: Any, folder: Path) -> None:
    now = TopicSnapshot("b", "syncs", "id-0", {0: (0, 10)}, cluster_id="cluster-b")
    key = pair_topics.state_key(SYNCS, PAIR, now)
    assert key is not None
    topic_cache.save(SavedState(key, "id-0", {0: (0, 10)}, _state().table, {"runs_at_full": 1}))
    kept = PairTopics(PAIR)
    notes = SavedTopics().restore(lambda: spark, kept, now, None)
    assert [n.message for n in notes] == [
        "read again in full: its saved state does not hold what mm2ctl saves (KeyError('numbering'))"
    ]
    assert kept.syncs_read is None and topic_cache.load(key) is None
