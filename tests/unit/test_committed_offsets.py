"""The pure parts of ``inspector.reads.committed_offsets``: the columns both clients' answers become, the JVM's file
format, and the fall-back to librdkafka when the JVM cannot read; and the admin state's per-group and per-topic
filtering of those columns (``inspector.reads.group_offset_tables``)."""

from __future__ import annotations

import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from py4j.protocol import Py4JError

from mm2ctl.core.kafka.admin import GroupOffsets, ItemError, OffsetLists
from mm2ctl.inspector.reads import committed_offsets as co
from mm2ctl.inspector.reads import group_offset_tables as tables


def _columns(
    groups: tuple[str, ...],
    rows: list[list[tuple[str, int, int]]],
    errors: tuple[Any, ...] = (),
    metadata: list[str | None] | None = None,
) -> Any:
    """``_columns`` of per-group (topic, partition, offset) rows, topics numbered in the order met, each with its
    commit ``metadata`` (default: none)."""
    topics: list[str] = []
    flat = [r for group_rows in rows for r in group_rows]
    for topic, _, _ in flat:
        if topic not in topics:
            topics.append(topic)
    return co._columns(
        groups,
        errors or (None,) * len(groups),
        np.array([len(r) for r in rows], np.int64),
        topic_names=topics,
        topic_of=np.array([topics.index(t) for t, _, _ in flat], np.int32),
        partitions=np.array([p for _, p, _ in flat], np.int32),
        offsets=np.array([o for _, _, o in flat], np.int64),
        read_through=co.LIBRDKAFKA,
        written_by=co._written_by(metadata or [None] * len(flat), len(flat)),
    )


def test_columns_drop_partitions_without_an_offset_and_sort_by_group_topic_partition() -> None:
    mine = "mm2ctl:p1:verified_delta"
    got = _columns(
        ("g1", "g0"),
        [[("b", 1, 7), ("a", 2, -1), ("a", 0, 5), ("b", 0, 3)], [("c", 0, 9), ("a", 4, 1)]],
        metadata=[mine + "\x00", mine, "app's own", None, "", "mm2ctl:p2:rollback"],
    )
    assert got.table.schema == co.OFFSETS_SCHEMA
    assert got.table.to_pylist() == [
        {"group_index": 0, "topic": "a", "partition": 0, "committed_offset": 5, "written_by": None},
        {"group_index": 0, "topic": "b", "partition": 0, "committed_offset": 3, "written_by": None},
        {"group_index": 0, "topic": "b", "partition": 1, "committed_offset": 7, "written_by": mine},
        {"group_index": 1, "topic": "a", "partition": 4, "committed_offset": 1, "written_by": "mm2ctl:p2:rollback"},
        {"group_index": 1, "topic": "c", "partition": 0, "committed_offset": 9, "written_by": None},
    ]


def test_no_rows_at_all() -> None:
    got = _columns(("g",), [[]])
    assert got.table.num_rows == 0 and got.table.schema == co.OFFSETS_SCHEMA
    assert got.by_group() == {"g": GroupOffsets("g", {}, None)}


def test_by_group_gives_the_facades_dicts_with_each_groups_error() -> None:
    err = ItemError("GROUP_AUTHORIZATION_FAILED", "denied")
    got = _columns(("g0", "g1", "g2"), [[("t", 1, 4), ("t", 0, 2)], [], [("u", 0, 8)]], (None, err, None))
    assert got.by_group() == {
        "g0": GroupOffsets("g0", {("t", 0): 2, ("t", 1): 4}),
        "g1": GroupOffsets("g1", {}, err),
        "g2": GroupOffsets("g2", {("u", 0): 8}),
    }


def _file(
    groups: list[tuple[int, tuple[str, str] | None]],
    topics: list[str],
    rows: list[tuple[int, int, int]],
    provenances: tuple[list[str], list[int]] = ([], []),
) -> bytes:
    """A file as ``CommittedOffsets.java`` writes it: per group its row count or its error; rows are
    (offset, partition, topic number); ``provenances``: the distinct metadata mm2ctl wrote and each row's
    number into it (-1: none; default: every row none)."""

    def string(s: str) -> bytes:
        b = s.encode()
        return struct.pack("<i", len(b)) + b

    head = struct.pack("<ii", 2, len(groups))
    for count, error in groups:
        head += struct.pack("<i", count) + (string(error[0]) + string(error[1]) if error else b"")
    head += struct.pack("<i", len(topics)) + b"".join(string(t) for t in topics)
    names, numbers = provenances
    head += struct.pack("<i", len(names)) + b"".join(string(v) for v in names)
    head += b"\0" * (-len(head) % 8)
    n = len(rows)
    return (
        head
        + struct.pack(f"<{n}q", *(r[0] for r in rows))
        + struct.pack(f"<{n}i", *(r[1] for r in rows))
        + struct.pack(f"<{n}i", *(r[2] for r in rows))
        + struct.pack(f"<{n}i", *(numbers or [-1] * n))
    )


def test_the_jvms_file_becomes_the_same_columns() -> None:
    data = _file(
        [(2, None), (-1, ("GROUP_AUTHORIZATION_FAILED", "Not authorized to access group: g1")), (1, None)],
        ["zeta", "älpha"],
        [(10, 1, 0), (11, 0, 1), (12, 3, 0)],
        (["mm2ctl:p1:log_end"], [-1, 0, 0]),
    )
    got = co._decode(("g0", "g1", "g2"), data)
    assert got.read_through == co.JVM
    assert got.errors == (None, ItemError("GROUP_AUTHORIZATION_FAILED", "Not authorized to access group: g1"), None)
    assert got.table.to_pylist() == [
        {"group_index": 0, "topic": "zeta", "partition": 1, "committed_offset": 10, "written_by": None},
        {"group_index": 0, "topic": "älpha", "partition": 0, "committed_offset": 11, "written_by": "mm2ctl:p1:log_end"},
        {"group_index": 2, "topic": "zeta", "partition": 3, "committed_offset": 12, "written_by": "mm2ctl:p1:log_end"},
    ]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (struct.pack("<ii", 1, 1) + struct.pack("<ii", 0, 0), "format 1"),
        (_file([(0, None), (0, None)], [], []), "for 2 group"),
        (_file([(1, None)], ["t"], [(1, 0, 0)])[:-4], "bytes"),
        (b"", "unreadable"),
        (_file([(-1, ("CODE", "message"))], [], [])[:14], "unreadable"),
    ],
)
def test_a_file_of_another_format_or_size_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(co._JvmUnusable, match=why):
        co._decode(("g",), data)


def test_strings_are_counted_and_length_prefixed_big_endian() -> None:
    assert co._strings(["a", "é"]) == b"\0\0\0\x02" + b"\0\0\0\x01a" + b"\0\0\0\x02\xc3\xa9"


class _Librdkafka:
    """A stand-in for the admin facade: the librdkafka path's answers."""

    timeout_s = 5.0

    def __init__(self, lists: dict[str, OffsetLists]) -> None:
        self.lists = lists
        self.asked: list[tuple[str, ...]] = []

    def committed_offset_lists(self, groups: Any) -> dict[str, OffsetLists]:
        self.asked.append(tuple(groups))
        return {g: self.lists.get(g, OffsetLists(g, [], [], [])) for g in groups}


class _GoneGateway:
    """A py4j gateway whose JVM is gone: every use raises py4j's error."""

    @property
    def jvm(self) -> Any:
        raise Py4JError("An error occurred while trying to connect to the Java server")


def test_a_jvm_that_cannot_read_falls_back_to_librdkafka(caplog: pytest.LogCaptureFixture) -> None:
    admin = _Librdkafka({"g": OffsetLists("g", ["t", "t"], [1, 0], [5, -1])})
    got = co.read_columns(admin, ["g", "g", "h"], jvm=co.JvmAdmin(_GoneGateway(), {}, "backup"))  # type: ignore[arg-type]
    assert got.read_through == co.LIBRDKAFKA
    assert admin.asked == [("g", "h")]
    assert got.groups == ("g", "h")
    assert got.table.to_pylist() == [
        {"group_index": 0, "topic": "t", "partition": 1, "committed_offset": 5, "written_by": None}
    ]
    assert "reading committed offsets on backup through librdkafka" in caplog.text


def test_librdkafka_keeps_a_groups_error_beside_its_offsets() -> None:
    err = ItemError("UNSTABLE_OFFSET_COMMIT", "pending")
    admin = _Librdkafka({"g": OffsetLists("g", ["t", "t"], [0, 1], [3, -1], err)})
    got = co.read_columns(admin, ["g"])  # type: ignore[arg-type]
    assert got.by_group() == {"g": GroupOffsets("g", {("t", 0): 3}, err)}
    assert OffsetLists("g", ["t", "t"], [0, 1], [3, -1]).by_partition() == {("t", 0): 3}


def test_no_groups_asks_nothing() -> None:
    admin = _Librdkafka({})
    got = co.read_columns(admin, [], jvm=co.JvmAdmin(_GoneGateway(), {}))  # type: ignore[arg-type]
    assert got.groups == () and got.table.num_rows == 0 and admin.asked == []


def test_the_collector_is_paused_while_reads_overlap_and_restored_as_found() -> None:
    import gc

    pause = co._CollectorPause()
    assert gc.isenabled()
    with pause():
        assert not gc.isenabled()
        with pause():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with pause():
            pass
        assert not gc.isenabled()  # the caller's choice stands
    finally:
        gc.enable()


# --- the admin state's filtering of the columns -------------------------------------------------------------


def _offsets(rows: list[tuple[int, str, int, int]]) -> pa.Table:
    return pa.table(
        {
            "group_index": pa.array([r[0] for r in rows], pa.int32()),
            "topic": pa.array([r[1] for r in rows], pa.string()),
            "partition": pa.array([r[2] for r in rows], pa.int32()),
            "committed_offset": pa.array([r[3] for r in rows], pa.int64()),
            "written_by": pa.nulls(len(rows), co.WRITTEN_BY),
        },
        schema=co.OFFSETS_SCHEMA,
    )


def test_kept_asks_once_per_topic_and_keeps_wanted_groups_on_kept_topics() -> None:
    asked: list[str] = []

    def topic_ok(topic: str) -> bool:
        asked.append(topic)
        return topic != "internal"

    table = _offsets([(0, "a", 0, 1), (0, "internal", 0, 2), (1, "a", 1, 3), (2, "a", 0, 4), (2, "b", 0, 5)])
    kept = tables.kept_rows(table, [True, False, True], topic_ok)
    assert sorted(asked) == ["a", "b", "internal"]
    assert [(r["group_index"], r["topic"]) for r in kept.to_pylist()] == [(0, "a"), (2, "a"), (2, "b")]
    assert sorted(tables.partitions_of(kept)) == [("a", 0), ("b", 0)]


def test_offsets_table_names_each_rows_group_and_its_error() -> None:
    table = tables.offsets_table("s->t", _offsets([(0, "a", 0, 1), (1, "a", 2, 3)]), ["g0", "g1"], [None, "boom"])
    assert table.to_pylist() == [
        {"cluster_pair": "s->t", "group": "g0", "topic": "a", "partition": 0, "committed_offset": 1, "error": None},
        {"cluster_pair": "s->t", "group": "g1", "topic": "a", "partition": 2, "committed_offset": 3, "error": "boom"},
    ]


def test_offsets_table_carries_a_share_groups_start_offset_and_what_it_acknowledged_past_its_position() -> None:
    rows = _offsets([(0, "a", 0, 50), (1, "a", 0, 7)])
    share = {("g0", "a", 0): (0, 49)}
    table = tables.offsets_table("s->t", rows, ["g0", "g1"], [None, None], share=share)
    got = [
        (r["group"], r["committed_offset"], r["share_start_offset"], r["share_acknowledged_past"])
        for r in table.to_pylist()
    ]
    assert got == [("g0", 50, 0, 49), ("g1", 7, None, None)]
    none = tables.offsets_table("s->t", rows, ["g0", "g1"], [None, None], share={})
    assert none.column("share_start_offset").null_count == 2


def test_target_rows_of_a_failed_group_are_its_source_partitions_under_the_remote_names() -> None:
    # Source candidates 0..3; the target was asked for candidates 1 and 3 (target groups 0 and 1).
    source_rows = _offsets([(1, "a", 0, 10), (1, "b", 1, 11), (3, "a", 0, 12), (3, "b", 0, 13), (3, "b", 2, 14)])
    failed_error = ItemError("GROUP_AUTHORIZATION_FAILED", "denied")
    read = co.GroupOffsetColumns(
        groups=("g1", "g3"),
        errors=(ItemError("UNKNOWN", "partial"), failed_error),
        # Target group 0 answered (one offset off the remote topics, which is left out); target group 1 failed.
        table=_offsets([(0, "src.a", 0, 7), (0, "local", 0, 1), (0, "src.b", 1, 8)]),
        read_through=co.JVM,
    )
    rows, failed = tables.target_rows(read, source_rows, [1, 3], {"a": "src.a", "b": "src.b"})
    assert failed == [1]
    assert rows.drop_columns(["written_by"]).to_pylist() == [
        {"group_index": 0, "topic": "src.a", "partition": 0, "committed_offset": 7},
        {"group_index": 0, "topic": "src.b", "partition": 1, "committed_offset": 8},
        {"group_index": 1, "topic": "src.a", "partition": 0, "committed_offset": None},
        {"group_index": 1, "topic": "src.b", "partition": 0, "committed_offset": None},
        {"group_index": 1, "topic": "src.b", "partition": 2, "committed_offset": None},
    ]
    assert rows.column("written_by").null_count == rows.num_rows
