"""Topic naming under both policies, both offset-syncs locations and custom separators (docs/design.md, "Topic
names")."""

from __future__ import annotations

import pytest

from mm2ctl.core.config import naming
from mm2ctl.core.config.naming import (
    DEFAULT_POLICY_CLASS,
    IDENTITY_POLICY_CLASS,
    OffsetSyncsLocation,
    replication_policy,
)

POLICIES = {"default": DEFAULT_POLICY_CLASS, "identity": IDENTITY_POLICY_CLASS}


@pytest.mark.parametrize("policy", ["default", "identity"])
@pytest.mark.parametrize(
    ("location", "separator", "offset_syncs", "lives_on", "checkpoints"),
    [
        ("source", None, "mm2-offset-syncs.B.internal", "A", "A.checkpoints.internal"),
        ("target", None, "mm2-offset-syncs.A.internal", "B", "A.checkpoints.internal"),
        ("source", "_", "mm2-offset-syncs_B_internal", "A", "A_checkpoints_internal"),
        ("target", "_", "mm2-offset-syncs_A_internal", "B", "A_checkpoints_internal"),
        ("source", "--", "mm2-offset-syncs--B--internal", "A", "A--checkpoints--internal"),
        ("target", "--", "mm2-offset-syncs--A--internal", "B", "A--checkpoints--internal"),
    ],
)
def test_internal_topic_names(
    policy: str, location: str, separator: str | None, offset_syncs: str, lives_on: str, checkpoints: str
) -> None:
    pol = replication_policy(POLICIES[policy], separator=separator)
    alias = naming.offset_syncs_alias("A", "B", location)
    assert pol.offset_syncs_topic(alias) == offset_syncs
    assert naming.offset_syncs_cluster("A", "B", location) == lives_on
    assert pol.checkpoints_topic("A") == checkpoints  # Identity inherits checkpointsTopic
    assert pol.heartbeats_topic() == "heartbeats"


@pytest.mark.parametrize(
    ("policy", "separator", "remote"),
    [
        ("default", None, "A.orders"),
        ("default", "_", "A_orders"),
        ("default", "--", "A--orders"),
        ("identity", None, "orders"),
        ("identity", "_", "orders"),
    ],
)
def test_remote_topic(policy: str, separator: str | None, remote: str) -> None:
    pol = replication_policy(POLICIES[policy], separator=separator, source_cluster_alias="A")
    assert pol.remote_topic("A", "orders") == remote
    assert pol.upstream_topic(remote) == "orders"
    assert pol.topic_source(remote) == "A"


def test_identity_still_prefixes_heartbeats() -> None:
    pol = replication_policy(IDENTITY_POLICY_CLASS, source_cluster_alias="A")
    assert pol.remote_topic("A", "heartbeats") == "A.heartbeats"
    assert pol.upstream_topic("A.heartbeats") == "heartbeats"
    assert pol.topic_source("A.heartbeats") == "A"
    assert pol.is_identity and pol.class_name == IDENTITY_POLICY_CLASS


def test_internal_separator_opt_out_only_applies_with_a_custom_separator() -> None:
    off = replication_policy(separator="_", internal_separator_enabled=False)
    assert off.offset_syncs_topic("B") == "mm2-offset-syncs.B.internal"
    assert off.checkpoints_topic("A") == "A.checkpoints.internal"
    assert off.remote_topic("A", "t") == "A_t"
    # Kafka reads the flag only when a separator is configured.
    assert replication_policy(internal_separator_enabled=False).internal_separator_enabled is True


@pytest.mark.parametrize(
    ("topic", "source", "upstream"),
    [
        ("orders", None, None),
        ("A.orders", "A", "orders"),
        ("B.A.orders", "B", "A.orders"),
        ("A.", None, None),  # Java's split drops trailing empty strings
        (".orders", "", "orders"),  # ... but keeps a leading one
        ("A..x", "A", ".x"),
    ],
)
def test_default_policy_parsing_matches_java_split(topic: str, source: str | None, upstream: str | None) -> None:
    pol = replication_policy()
    assert pol.topic_source(topic) == source
    assert pol.upstream_topic(topic) == upstream


def test_original_topic_follows_hops() -> None:
    assert replication_policy().original_topic("C.B.A.orders") == "orders"
    assert replication_policy(IDENTITY_POLICY_CLASS).original_topic("orders") == "orders"


@pytest.mark.parametrize(
    ("topic", "heartbeats", "checkpoints", "mm2_internal", "internal"),
    [
        ("heartbeats", True, False, False, False),
        ("A.heartbeats", True, False, False, False),
        ("B.A.heartbeats", True, False, False, False),
        ("A.checkpoints.internal", False, True, True, True),
        ("mm2-offset-syncs.B.internal", False, False, True, True),
        ("mm2-offsets.A.internal", False, False, True, True),
        ("connect-offsets-internal", False, False, False, True),
        ("__consumer_offsets", False, False, False, True),
        (".hidden", False, False, False, True),
        ("orders", False, False, False, False),
    ],
)
def test_topic_classification(
    topic: str, heartbeats: bool, checkpoints: bool, mm2_internal: bool, internal: bool
) -> None:
    pol = replication_policy()
    assert pol.is_heartbeats_topic(topic) is heartbeats
    assert pol.is_checkpoints_topic(topic) is checkpoints
    assert pol.is_mm2_internal_topic(topic) is mm2_internal
    assert pol.is_internal_topic(topic) is internal


def test_classification_with_custom_separator() -> None:
    pol = replication_policy(separator="_")
    assert pol.is_checkpoints_topic("A_checkpoints_internal")
    assert not pol.is_checkpoints_topic("A.checkpoints.internal")
    assert pol.is_mm2_internal_topic("mm2-offset-syncs_B_internal")
    assert pol.is_internal_topic("A.checkpoints.internal")  # Connect-style names stay internal


def test_renamed_heartbeats_topic() -> None:
    pol = replication_policy(heartbeats_topic_name="mm2-heartbeats")
    assert pol.heartbeats_topic() == "mm2-heartbeats"
    assert pol.is_heartbeats_topic("A.mm2-heartbeats")
    assert not pol.is_heartbeats_topic("heartbeats")


def test_unknown_policy_class() -> None:
    with pytest.raises(ValueError, match="unsupported replication policy"):
        replication_policy("com.example.MyPolicy")


def test_dedicated_mode_names_and_location_enum() -> None:
    assert naming.dedicated_offsets_topic("A") == "mm2-offsets.A.internal"
    assert naming.dedicated_group_id("A") == "A-mm2"
    assert naming.offset_syncs_alias("A", "B", OffsetSyncsLocation.TARGET) == "A"
    with pytest.raises(ValueError):
        naming.offset_syncs_alias("A", "B", "elsewhere")
