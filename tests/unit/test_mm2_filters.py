"""MM2's topic and group filters: whole names, Java regexes, include then exclude, as MM2 matches them."""

from __future__ import annotations

import re

import pytest

from mm2ctl.core.config.filters import IncludeExcludeFilter, compile_patterns, is_cycle, java_regex_to_python
from mm2ctl.core.config.mm2_config import MM2Config, mm2_config_from_text
from mm2ctl.core.config.naming import replication_policy
from mm2ctl.core.errors import ConfigError

BASE = """\
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""


def cfg(extra: str = "") -> MM2Config:
    return mm2_config_from_text(BASE + extra, path="mm2.properties")


# --- the filters an MM2 file sets ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("topic", "replicated"),
    [
        ("orders", True),
        ("mm2-offset-syncs.B.internal", False),
        ("mm2-offsets.A.internal", False),
        ("orders.replica", False),
        ("__consumer_offsets", False),
        ("_schemas", True),
        ("app.internal", True),
    ],
)
def test_default_topic_filter(topic: str, replicated: bool) -> None:
    assert cfg().pair("A->B").topic_filter.matches(topic) is replicated


@pytest.mark.parametrize(
    ("group", "replicated"),
    [("app", True), ("console-consumer-123", False), ("connect-mm2", False), ("__internal", False)],
)
def test_default_group_filter(group: str, replicated: bool) -> None:
    assert cfg().pair("A->B").group_filter.matches(group) is replicated


@pytest.mark.parametrize(
    ("extra", "topic", "replicated"),
    [
        ("topics = ord\n", "orders", False),  # full match, as Java's Pattern.matches
        ("topics = ord.*\n", "orders", True),
        ("topics = orders, payments\n", "payments", True),
        ("topics =\n", "orders", False),  # an empty include list matches nothing
        ("topics.exclude =\n", "__consumer_offsets", True),  # an empty exclude list excludes nothing
        ("topics.exclude = orders\n", "orders", False),
        ("topics.blacklist = orders\n", "orders", False),  # legacy alias still honoured
        ("topics.blacklist = orders\ntopics.exclude = x\n", "orders", True),  # new key wins
        ("A->B.topics = pay.*\ntopics = ord.*\n", "orders", False),  # flow over top level
        ("A.topics = pay.*\n", "orders", True),  # cluster level is ignored by MM2
        ("topics = (?i)ORDERS\n", "orders", True),
        ("topics = \\\\Qa.b\\\\E\n", "a.b", True),
        ("topics = \\\\Qa.b\\\\E\n", "axb", False),
        ("topics = (?<name>o)rders\n", "orders", True),
        ("topics = \\\\p{Lower}+\n", "orders", True),
        ("topics = [\\\\p{Lower}-]+\n", "my-orders", True),
        ("topics = \\\\P{Digit}+\n", "orders", True),
        ("topics = ord(?>e)rs, x++\n", "orders", True),
        ("topics = orders\\\\z\n", "orders", True),
        ("topics = a\\.b\n", "axb", True),  # a single backslash is a properties escape: the regex is a.b
        ("topics = a\\\\.b\n", "axb", False),
    ],
)
def test_topic_filter_rules(extra: str, topic: str, replicated: bool) -> None:
    assert cfg(extra).pair("A->B").topic_filter.matches(topic) is replicated


def test_group_filter_legacy_and_keys() -> None:
    pair = cfg("groups = app-.*\ngroups.blacklist = app-test-.*\n").pair("A->B")
    assert pair.group_filter.matches("app-prod")
    assert not pair.group_filter.matches("app-test-1")
    assert pair.group_filter.exclude_key == "groups.blacklist"
    assert any("groups.blacklist: deprecated: use groups.exclude" in w for w in cfg("groups.blacklist=x\n").warnings)


def test_replicates_topic_like_mirror_source_connector() -> None:
    pair = cfg("topics = orders\n").pair("A->B")
    assert pair.replicates_topic("orders")
    assert not pair.replicates_topic("payments")
    assert pair.replicates_topic("heartbeats")  # heartbeats always flow
    assert pair.replicates_topic("C.heartbeats")
    assert not pair.replicates_topic("B.heartbeats")  # came from the target: a cycle
    assert not pair.replicates_topic("mm2-offset-syncs.B.internal")


@pytest.mark.parametrize(
    ("java", "python"),
    [
        ("a\\Q.*\\Eb", "a\\.\\*b"),
        ("(?<g>x)\\k<g>", "(?P<g>x)(?P=g)"),
        ("(?<=a)b", "(?<=a)b"),
        ("[]a]", "[\\]a]"),
        ("(?i)x", "(?i:x)"),
        ("x\\Z", "x(?=\\n?\\Z)"),
    ],
)
def test_java_regex_translation(java: str, python: str) -> None:
    assert java_regex_to_python(java) == python


# --- the filter itself ----------------------------------------------------------------------------


def _filter(include: tuple[str, ...], exclude: tuple[str, ...]) -> IncludeExcludeFilter:
    return IncludeExcludeFilter(
        "topics", include, "topics.exclude", exclude, compile_patterns(include), compile_patterns(exclude)
    )


def test_a_name_filter_matches_whole_names_included_and_not_excluded() -> None:
    name_filter = _filter(("ord.*", "pay"), ("ord-tmp",))
    assert name_filter.matches("orders") and name_filter.matches("pay")
    assert not name_filter.matches("payments")  # "pay" must match the whole name
    assert not name_filter.matches("ord-tmp")
    assert not _filter((), ()).matches("orders")  # an empty include list matches nothing


def test_compile_patterns_names_the_key_of_a_bad_pattern() -> None:
    assert compile_patterns([]) is None
    message = r"mm2.properties:3: topics: pattern '\\p{InGreek}' is not a valid regular expression"
    with pytest.raises(ConfigError, match=re.escape(message)):
        compile_patterns(["\\p{InGreek}"], path="mm2.properties", line=3, key="topics")


def test_a_topic_that_came_from_the_target_at_any_hop_is_a_cycle() -> None:
    policy = replication_policy()
    assert is_cycle(policy, "B", "C.B.orders")
    assert not is_cycle(policy, "B", "C.orders")
    assert not is_cycle(policy, "B", "orders")
