"""The ``startingOffsets`` JSON of Spark's Kafka source (``core.spark_checkpoints.starting_offsets``): the shape
``JsonUtils.partitionOffsets`` reads, every partition named, read back exactly; what Spark could not take refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mm2ctl.core.errors import PlanError, SparkCheckpointError
from mm2ctl.core.spark_checkpoints.starting_offsets import (
    EARLIEST,
    LATEST,
    read_starting_offsets,
    starting_offsets_json,
)


def test_the_shape_spark_reads() -> None:
    text = starting_offsets_json({"primary.orders": {1: 25, 0: 20}, "primary.audit": {0: EARLIEST}})
    assert text == '{"primary.audit":{"0":-2},"primary.orders":{"0":20,"1":25}}'
    assert json.loads(text)["primary.orders"] == {"0": 20, "1": 25}


def test_partitions_in_numeric_order() -> None:
    text = starting_offsets_json({"t": {10: 1, 2: 1, 1: 1}})
    assert list(json.loads(text)["t"]) == ["1", "2", "10"]


topics = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._-", min_size=1, max_size=20)
partitions = st.dictionaries(
    st.integers(0, 2**31 - 1),
    st.one_of(st.integers(0, 2**63 - 1), st.sampled_from([EARLIEST, LATEST])),
    min_size=1,
    max_size=8,
)


@given(st.dictionaries(topics, partitions, min_size=1, max_size=5))
def test_read_back_is_exact(offsets: dict[str, dict[int, int]]) -> None:
    assert read_starting_offsets(starting_offsets_json(offsets), where="f") == offsets


@pytest.mark.parametrize(
    ("offsets", "problem"),
    [
        ({}, "no topic"),
        ({"": {0: 1}}, "is not a topic name"),
        ({"t": {}}, "t: no partition"),
        ({"t": {-1: 1}}, "partition -1 is out of range"),
        ({"t": {2**31: 1}}, "is out of range"),
        ({"t": {0: -3}}, "t-0: offset -3 is negative"),
        ({"t": {0: 2**63}}, "is out of range"),
        ({"t": {0: True}}, "is not an integer"),
        ({"t": {0: 1.0}}, "is not an integer"),
    ],
)
def test_what_spark_could_not_take_is_refused(offsets: Any, problem: str) -> None:
    with pytest.raises(PlanError) as info:
        starting_offsets_json(offsets)
    assert problem in str(info.value)


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not JSON"),
        ("[]", "expected"),
        ("{}", "expected"),
        ('{"t":{}}', "expected an object of partitions"),
        ('{"t":{"x":1}}', "'x' is not a partition number"),
        ('{"t":{"0":1,"00":2}}', "'00' is not a partition number, or repeats one"),
        ('{"t":{"0":1},"t":{"1":1}}', "the key 't' is given twice"),
        ('{"t":{"0":-5}}', "t-0: offset -5 is negative"),
        ('{"t":{"0":"5"}}', "is not an integer"),
    ],
)
def test_reading_back_refuses_what_mm2ctl_never_writes(text: str, problem: str) -> None:
    with pytest.raises(SparkCheckpointError) as info:
        read_starting_offsets(text, where="/out/orders.json")
    assert str(info.value).startswith("/out/orders.json: ")
    assert problem in str(info.value)
