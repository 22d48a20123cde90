"""Every shipped example parses, and mm2ctl derives the facts its comments promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2ctl.core.config.mm2_config import MM2Config, load_mm2_config
from mm2ctl.core.config.naming import OffsetSyncsLocation
from mm2ctl.core.security.redaction import redact

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load(name: str) -> MM2Config:
    return load_mm2_config(EXAMPLES / name)


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.properties")), ids=lambda p: p.name)
def test_every_example_loads_cleanly(path: Path) -> None:
    config = load_mm2_config(path)
    assert config.pairs(), "an example should enable at least one flow"
    assert config.warnings == ()


def test_ssl_example() -> None:
    config = load("ssl.properties")
    pair = config.pair("dc1->dc2")
    assert [p.name for p in config.pairs()] == ["dc1->dc2"]
    assert pair.offset_syncs_topic == "mm2-offset-syncs.dc2.internal"
    assert pair.offset_syncs_cluster == "dc1"
    assert pair.checkpoints_topic == "dc1.checkpoints.internal"
    assert pair.remote_topic("orders") == "dc1.orders"
    assert pair.sync_group_offsets_enabled is True
    assert pair.topic_filter.matches("inventory-eu") and not pair.topic_filter.matches("audit")
    for kafka in (pair.source_kafka_config, pair.target_kafka_config):
        assert kafka == {
            "bootstrap.servers": kafka["bootstrap.servers"],
            "security.protocol": "SSL",
            "ssl.endpoint.identification.algorithm": "https",
            "ssl.ca.location": "/etc/kafka/secrets/ca-bundle.pem",
            "ssl.keystore.location": "/etc/kafka/secrets/mirror-maker.p12",
            "ssl.keystore.password": "changeit-keystore",
        }
    assert pair.source_kafka_config["bootstrap.servers"].startswith("kafka-dc1-0.example.com:9093,")
    assert "changeit-keystore" not in repr(redact(pair.source_kafka_config))


def test_sasl_scram_example() -> None:
    config = load("sasl-scram.properties")
    pair = config.pair("onprem->cloud")
    assert pair.offset_syncs_location is OffsetSyncsLocation.SOURCE
    assert pair.offset_syncs_topic == "mm2-offset-syncs.cloud.internal"
    assert pair.offset_syncs_cluster == "onprem"
    assert pair.checkpoints_topic == "onprem.checkpoints.internal"
    assert pair.sync_group_offsets_interval_seconds == 30
    assert not pair.topic_filter.matches("tmp-load-test")
    assert not pair.topic_filter.matches("mm2-offsets.onprem.internal")
    assert pair.topic_filter.matches("orders")
    assert not pair.group_filter.matches("tmp-x") and pair.group_filter.matches("billing")
    source, target = pair.source_kafka_config, pair.target_kafka_config
    assert source == {
        "bootstrap.servers": "broker1.corp.local:9094,broker2.corp.local:9094,broker3.corp.local:9094",
        "security.protocol": "SASL_SSL",
        "ssl.endpoint.identification.algorithm": "https",
        "ssl.ca.location": "/etc/mm2/corp-root-ca.pem",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "mm2-onprem",
        "sasl.password": "onprem-s3cr3t",
    }
    assert target["sasl.username"] == "mm2-cloud"
    assert target["sasl.password"] == "cloud-s3cr3t"
    assert "ssl.ca.location" not in target  # public CA: system trust store
    assert "s3cr3t" not in repr(config) + repr(pair) + repr(redact(source)) + repr(redact(target))


def test_identity_example() -> None:
    config = load("identity.properties")
    pair = config.pair("legacy->newdc")
    assert pair.replication_policy.is_identity
    assert pair.offset_syncs_location is OffsetSyncsLocation.TARGET
    assert pair.offset_syncs_topic == "mm2-offset-syncs.legacy.internal"
    assert pair.offset_syncs_cluster == "newdc"
    assert pair.checkpoints_topic == "legacy.checkpoints.internal"
    assert pair.remote_topic("orders") == "orders"
    assert pair.upstream_topic("orders") == "orders"
    assert pair.remote_heartbeats_topic == "legacy.heartbeats"
    assert pair.sync_group_offsets_interval_seconds == 10
    assert config.pair("newdc->legacy", enabled_only=False).enabled is False


def test_lab_example() -> None:
    config = load("lab.properties")
    assert config.clusters == ("primary", "backup")
    (pair,) = config.pairs()
    assert pair.name == "primary->backup"
    assert pair.offset_syncs_topic == "mm2-offset-syncs.backup.internal"
    assert pair.offset_syncs_cluster == "primary"
    assert pair.checkpoints_topic == "primary.checkpoints.internal"
    assert pair.remote_topic("orders") == "primary.orders"
    assert pair.sync_group_offsets_enabled is True
    assert pair.emit_checkpoints_interval_seconds == 1
    assert pair.sync_group_offsets_interval_seconds == 1
    assert pair.dedicated_offsets_topic == "mm2-offsets.primary.internal"
    assert pair.dedicated_group_id == "primary-mm2"
    assert pair.source_kafka_config == {
        "bootstrap.servers": "127.0.0.1:19092",
        "security.protocol": "PLAINTEXT",
    }
    assert pair.target_kafka_config == {
        "bootstrap.servers": "127.0.0.1:29092",
        "security.protocol": "PLAINTEXT",
    }
    for key in (
        "replication.factor",
        "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "offset-syncs.topic.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
    ):
        assert config.setting(key) == "1", key
    assert config.setting("refresh.topics.interval.seconds") == "1"
    assert config.setting("refresh.groups.interval.seconds") == "1"


def test_readme_lists_every_example() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    for path in EXAMPLES.glob("*.properties"):
        assert f"`{path.name}`" in readme
