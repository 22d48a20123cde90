"""Reading an MM2 properties file: flows, precedence, policies, and clear errors for bad files.

The topic and group filters the file sets are tested in ``test_mm2_filters``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mm2ctl.core.config.mm2_config import (
    MM2Config,
    is_client_setting,
    load_mm2_config,
    mm2_config_from_text,
    parse_list,
)
from mm2ctl.core.config.naming import OffsetSyncsLocation
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode

BASE = """\
clusters = A, B
A.bootstrap.servers = a:9092
B.bootstrap.servers = b:9092
A->B.enabled = true
"""
SECRET = "hunter2-Secret"


def cfg(extra: str = "", base: str = BASE) -> MM2Config:
    return mm2_config_from_text(base + extra, path="mm2.properties")


# --- clusters and flows ---------------------------------------------------------------------------


def test_minimal_config() -> None:
    config = cfg()
    assert config.path == "mm2.properties"
    assert config.clusters == ("A", "B")
    (pair,) = config.pairs()
    assert (pair.name, pair.source, pair.target, pair.enabled) == ("A->B", "A", "B", True)
    assert config.warnings == ()


def test_flows_are_disabled_unless_enabled_is_true() -> None:
    config = cfg(
        base="clusters = A, B, C\nA.bootstrap.servers=a\nB.bootstrap.servers=b\n"
        "A->B.enabled = TRUE\nB->A.enabled = false\n"
    )
    assert [p.name for p in config.pairs()] == ["A->B"]
    assert [(p.name, p.enabled) for p in config.pairs(enabled_only=False)] == [
        ("A->B", True),
        ("A->C", False),
        ("B->A", False),
        ("B->C", False),
        ("C->A", False),
        ("C->B", False),
    ]
    # MM2 still runs a heartbeats-only herder for disabled pairs unless heartbeats are off.
    assert all(p.heartbeats_enabled for p in config.pairs(enabled_only=False))


def test_clusters_list_is_trimmed_and_deduplicated() -> None:
    config = cfg(base="clusters =  A ,B,  A\nA.bootstrap.servers=a\nB.bootstrap.servers=b\n")
    assert config.clusters == ("A", "B")
    assert config.pairs() == []


def test_no_enabled_flow_needs_no_bootstrap() -> None:
    assert cfg(base="clusters = A, B\n").pairs() == []


def test_top_level_bootstrap_is_inherited() -> None:
    config = cfg(base="clusters = A, B\nbootstrap.servers = shared:9092\nA->B.enabled = true\n")
    assert config.client_settings("B") == {"bootstrap.servers": "shared:9092"}


def test_pair_lookup_errors() -> None:
    config = cfg()
    assert config.pair(" A -> B ").name == "A->B"
    with pytest.raises(ConfigError) as info:
        config.pair("A->C")
    assert str(info.value) == "mm2.properties:1: clusters: cluster 'C' is not in clusters (A, B)"
    with pytest.raises(ConfigError) as info:
        config.pair("B->A")
    assert str(info.value) == (
        "mm2.properties: B->A.enabled: this flow is not enabled (MM2 only replicates a flow whose enabled is true)"
    )
    assert config.pair("B->A", enabled_only=False).enabled is False
    with pytest.raises(ConfigError, match="is not a flow name"):
        config.pair("A-B")
    with pytest.raises(ConfigError, match="same cluster"):
        config.pair("A->A")


# --- client settings precedence -----------------------------------------------------------------

PAIR_LAYERS = [
    "A->B.source.consumer.ssl.truststore.location",  # flow, side and role: the real override
    "A.consumer.ssl.truststore.location",
    "A.ssl.truststore.location",  # cluster
    "ssl.truststore.location",  # top level
    "A->B.consumer.ssl.truststore.location",  # shadowed by any of the above (clusterProps copies)
    "A->B.source.cluster.ssl.truststore.location",
]


@pytest.mark.parametrize("winner", range(len(PAIR_LAYERS)))
def test_pair_precedence(winner: int) -> None:
    """pair > cluster > top level, with MM2's real shadowing of the weaker flow-level prefixes."""
    config = cfg("".join(f"{key} = /t{i}.pem\n" for i, key in enumerate(PAIR_LAYERS) if i >= winner))
    assert config.client_settings("A", pair="A->B")["ssl.truststore.location"] == f"/t{winner}.pem"
    # The top level and the side-less flow prefix reach the target side too; source.* does not.
    target_side = {0: "/t3.pem", 1: "/t3.pem", 2: "/t3.pem", 3: "/t3.pem", 4: "/t4.pem", 5: None}[winner]
    assert config.client_settings("B", pair="A->B").get("ssl.truststore.location") == target_side


def test_pair_precedence_without_a_pair() -> None:
    layers = [
        "A.admin.ssl.truststore.location",
        "A.ssl.truststore.location",
        "ssl.truststore.location",
        "admin.ssl.truststore.location",
    ]
    for winner in range(len(layers)):
        text = "".join(f"{k} = /t{i}.pem\n" for i, k in enumerate(layers) if i >= winner)
        config = cfg(text, base="clusters = A, B\nA.bootstrap.servers = a:9092\n")
        assert config.client_settings("A", role="admin")["ssl.truststore.location"] == f"/t{winner}.pem"


def test_role_and_side_are_independent() -> None:
    config = cfg(
        "A.security.protocol = SSL\n"
        "B.security.protocol = SSL\n"
        "A->B.source.admin.security.protocol = PLAINTEXT\n"
        "A->B.target.consumer.security.protocol = PLAINTEXT\n"
    )
    assert config.client_settings("A", pair="A->B", role="admin")["security.protocol"] == "PLAINTEXT"
    assert config.client_settings("A", pair="A->B", role="consumer")["security.protocol"] == "SSL"
    assert config.client_settings("B", pair="A->B", role="consumer")["security.protocol"] == "PLAINTEXT"
    assert config.client_settings("B", pair="A->B", role="admin")["security.protocol"] == "SSL"
    assert config.client_settings("B", pair="B->A", role="consumer")["security.protocol"] == "SSL"


def test_only_client_settings_are_inherited_from_the_top_level() -> None:
    config = cfg(
        "request.timeout.ms = 1\n"  # top level, not a client setting: not inherited
        "A.max.poll.records = 2\n"  # cluster level, not a client setting: not passed to clients
        "A.consumer.max.poll.records = 3\n"
        "A->B.consumer.fetch.max.bytes = 4\n"
        "A->B.source.consumer.client.rack = r1\n"
    )
    assert config.client_settings("A", pair="A->B") == {
        "bootstrap.servers": "a:9092",
        "max.poll.records": "3",
        "fetch.max.bytes": "4",
        "client.rack": "r1",
    }
    assert config.client_settings("A") == {"bootstrap.servers": "a:9092"}  # MirrorClientConfig view


def test_client_settings_errors() -> None:
    config = cfg()
    with pytest.raises(ConfigError, match="cluster 'C' is not in clusters"):
        config.client_settings("C")
    with pytest.raises(ConfigError, match="cluster 'A' is not part of flow B->C"):
        cfg(base="clusters=A,B,C\n").client_settings("A", pair="B->C")


def test_kafka_config_follows_precedence_and_names_the_winning_key() -> None:
    config = cfg("security.protocol = SSL\nA->B.source.admin.security.protocol = BOGUS\n")
    assert config.kafka_config("A", pair="A->B")["security.protocol"] == "SSL"
    with pytest.raises(ConfigError) as info:
        config.kafka_config("A", pair="A->B", role="admin")
    assert str(info.value) == (
        "mm2.properties:6: A->B.source.admin.security.protocol: BOGUS is not one of "
        "PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
    )


def test_pair_kafka_configs() -> None:
    config = cfg(
        "B.security.protocol = SASL_SSL\nB.sasl.mechanism = PLAIN\n"
        "B.sasl.jaas.config = org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="u" password="{SECRET}";\n'
    )
    pair = config.pair("A->B")
    assert pair.source_kafka_config == {"bootstrap.servers": "a:9092", "security.protocol": "PLAINTEXT"}
    assert pair.target_kafka_config["sasl.password"] == SECRET
    assert SECRET not in repr(pair) + repr(config)


def test_flow_level_client_setting_warns() -> None:
    config = cfg("A->B.security.protocol = SSL\n")
    (warning,) = config.warnings
    assert warning.startswith("mm2.properties:5: A->B.security.protocol: MM2 does not pass flow-level client")
    assert config.kafka_config("A", pair="A->B")["security.protocol"] == "PLAINTEXT"


# --- flow settings ------------------------------------------------------------------------------


def test_defaults() -> None:
    pair = cfg().pair("A->B")
    assert pair.replication_policy.is_identity is False
    assert pair.separator == "."
    assert pair.offset_syncs_location is OffsetSyncsLocation.SOURCE
    assert pair.offset_lag_max == 100
    assert pair.sync_group_offsets_enabled is False
    assert pair.sync_group_offsets_interval_seconds == 60
    assert pair.emit_checkpoints_enabled is True
    assert pair.emit_checkpoints_interval_seconds == 60
    assert pair.emit_offset_syncs_enabled is True
    assert pair.offset_syncs_topic == "mm2-offset-syncs.B.internal"
    assert pair.offset_syncs_cluster == "A"
    assert pair.checkpoints_topic == "A.checkpoints.internal"
    assert pair.heartbeats_topic == "heartbeats"
    assert pair.remote_heartbeats_topic == "A.heartbeats"
    assert pair.remote_topic("orders") == "A.orders"
    assert pair.upstream_topic("A.orders") == "orders"
    assert pair.dedicated_offsets_topic == "mm2-offsets.A.internal"
    assert pair.dedicated_group_id == "A-mm2"


def test_flow_settings_pair_over_top_level_and_cluster_level_ignored() -> None:
    pair = cfg(
        "offset.lag.max = 10\nA->B.offset.lag.max = 20\n"
        "A.sync.group.offsets.enabled = true\n"  # cluster level: MM2's connectors never see it
        "emit.checkpoints.enabled = false\n"
        "A->B.emit.checkpoints.interval.seconds = 5\n"
        "sync.group.offsets.interval.seconds = 7\n"
    ).pair("A->B")
    assert pair.offset_lag_max == 20
    assert pair.sync_group_offsets_enabled is False
    assert pair.emit_checkpoints_enabled is False
    assert pair.emit_checkpoints_interval_seconds == 5
    assert pair.sync_group_offsets_interval_seconds == 7


@pytest.mark.parametrize(
    ("extra", "offset_syncs", "lives_on", "checkpoints", "remote"),
    [
        ("", "mm2-offset-syncs.B.internal", "A", "A.checkpoints.internal", "A.orders"),
        (
            "offset-syncs.topic.location = target\n",
            "mm2-offset-syncs.A.internal",
            "B",
            "A.checkpoints.internal",
            "A.orders",
        ),
        (
            "replication.policy.separator = _\n",
            "mm2-offset-syncs_B_internal",
            "A",
            "A_checkpoints_internal",
            "A_orders",
        ),
        (
            "replication.policy.separator = _\nA->B.offset-syncs.topic.location = target\n",
            "mm2-offset-syncs_A_internal",
            "B",
            "A_checkpoints_internal",
            "A_orders",
        ),
        (
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n",
            "mm2-offset-syncs.B.internal",
            "A",
            "A.checkpoints.internal",
            "orders",
        ),
        (
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
            "offset-syncs.topic.location = target\n",
            "mm2-offset-syncs.A.internal",
            "B",
            "A.checkpoints.internal",
            "orders",
        ),
        (
            "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy\n"
            "replication.policy.separator = __\noffset-syncs.topic.location = target\n",
            "mm2-offset-syncs__A__internal",
            "B",
            "A__checkpoints__internal",
            "orders",
        ),
        (
            "replication.policy.separator = _\nreplication.policy.internal.topic.separator.enabled = false\n",
            "mm2-offset-syncs.B.internal",
            "A",
            "A.checkpoints.internal",
            "A_orders",
        ),
    ],
)
def test_topic_names_from_config(extra: str, offset_syncs: str, lives_on: str, checkpoints: str, remote: str) -> None:
    pair = cfg(extra).pair("A->B")
    assert pair.offset_syncs_topic == offset_syncs
    assert pair.offset_syncs_cluster == lives_on
    assert pair.checkpoints_topic == checkpoints
    assert pair.remote_topic("orders") == remote


def test_dedicated_mode_overrides() -> None:
    pair = cfg("B.offset.storage.topic = b-offsets\nB.group.id = my-mm2\n").pair("A->B")
    assert (pair.dedicated_offsets_topic, pair.dedicated_group_id) == ("b-offsets", "my-mm2")
    pair = cfg("B.offset.storage.topic = b-offsets\noffset.storage.topic = top-offsets\n").pair("A->B")
    assert pair.dedicated_offsets_topic == "top-offsets"  # MirrorMakerConfig.workerConfig: top level wins


def test_heartbeats_can_be_switched_off_per_flow() -> None:
    config = cfg("emit.heartbeats.enabled = false\nB->A.emit.heartbeats.enabled = true\n")
    assert config.pair("A->B").heartbeats_enabled is False
    assert config.pair("B->A", enabled_only=False).heartbeats_enabled is True


def test_parse_list_and_client_setting_names() -> None:
    assert parse_list("  a ,b,  c ") == ["a", "b", "c"]
    assert parse_list("   ") == []
    assert is_client_setting("ssl.truststore.location") and is_client_setting("sasl.jaas.config")
    assert is_client_setting("bootstrap.servers") and not is_client_setting("client.id")


# --- malformed files: each error names file, line and key, and never a secret -------------------

MALFORMED = [
    pytest.param(
        "x = 1\n",
        "",
        "mm2.properties: clusters: is required: list the cluster aliases, e.g. clusters = primary, backup",
        id="no-clusters",
    ),
    pytest.param(
        "clusters =\n",
        "",
        "mm2.properties:1: clusters: is empty: list at least two cluster aliases",
        id="empty-clusters",
    ),
    pytest.param(
        "clusters = A,,B\n",
        "",
        "mm2.properties:1: clusters: has an empty alias (two commas in a row?)",
        id="empty-alias",
    ),
    pytest.param(
        "clusters = A, B->C\n",
        "",
        "mm2.properties:1: clusters: alias 'B->C' cannot contain '->' or whitespace",
        id="arrow-in-alias",
    ),
    pytest.param(
        "clusters = A, B\nA.bootstrap.servers = a:9092\nA->B.enabled = true\n",
        "",
        "mm2.properties:3: B.bootstrap.servers: is required: cluster B is used by the enabled flow A->B",
        id="missing-bootstrap",
    ),
    pytest.param(
        BASE.replace("= true", "= yes"),
        "",
        "mm2.properties:4: A->B.enabled: expected true or false, not 'yes'",
        id="bad-enabled",
    ),
    pytest.param(
        BASE,
        "A->B.sync.group.offsets.enabled = maybe\n",
        "mm2.properties:5: A->B.sync.group.offsets.enabled: expected true or false, not 'maybe'",
        id="bad-flow-boolean",
    ),
    pytest.param(
        BASE,
        "offset.lag.max = lots\n",
        "mm2.properties:5: offset.lag.max: expected a whole number, not 'lots'",
        id="bad-number",
    ),
    pytest.param(
        BASE,
        "replication.policy.class = com.example.MyPolicy\n",
        "mm2.properties:5: replication.policy.class: unsupported replication policy "
        "'com.example.MyPolicy': mm2ctl knows org.apache.kafka.connect.mirror.DefaultReplicationPolicy, "
        "org.apache.kafka.connect.mirror.IdentityReplicationPolicy and "
        "io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy. For a custom class, declare how it names "
        "topics: mm2ctl.replication.policy.naming = default|identity in the MM2 config, "
        "or --policy-naming default|identity",
        id="unknown-policy",
    ),
    pytest.param(
        BASE,
        "replication.policy.separator = _ \n",
        "mm2.properties:5: replication.policy.separator: '_ ' cannot be part of a topic name "
        "(use letters, digits, '.', '_' or '-'; check for trailing spaces)",
        id="bad-separator",
    ),
    pytest.param(
        BASE,
        "offset-syncs.topic.location = both\n",
        "mm2.properties:5: offset-syncs.topic.location: must be source or target, not 'both'",
        id="bad-location",
    ),
    pytest.param(
        BASE,
        "A->B.topics = orders, [abc\n",
        "mm2.properties:5: A->B.topics: pattern '[abc' is not a valid regular expression: unterminated character set",
        id="bad-regex",
    ),
    pytest.param(
        BASE,
        "groups.exclude = \\\\p{InGreek}\n",
        "mm2.properties:5: groups.exclude: pattern '\\\\p{InGreek}' is not a valid regular expression: "
        "\\p{InGreek} is not supported",
        id="unsupported-java-regex",
    ),
    pytest.param(
        BASE,
        "A.security.protocol = SASL_SSL\n",
        "mm2.properties: sasl.mechanism: is not set, and Java's default is GSSAPI (Kerberos), which "
        "mm2ctl does not support; set one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER",
        id="gssapi-default",
    ),
    pytest.param(
        BASE,
        "security.protocol = SASL_SSL\nsasl.mechanism = GSSAPI\n",
        "mm2.properties:6: sasl.mechanism: GSSAPI (Kerberos) is not supported by mm2ctl; "
        "connect with one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER",
        id="gssapi",
    ),
    pytest.param(
        BASE,
        "B.security.protocol = SASL_PLAINTEXT\nB.sasl.mechanism = PLAIN\nB.sasl.jaas.config = "
        f'org.apache.kafka.common.security.plain.PlainLoginModule required password="{SECRET}";\n',
        'mm2.properties:7: B.sasl.jaas.config: has no username="..." option in its login module',
        id="jaas-without-username",
    ),
    pytest.param(
        BASE,
        f"sasl.jaas.config = ${{file:/etc/kafka/{SECRET}.properties:jaas}}\n",
        "mm2.properties:5: sasl.jaas.config: uses a config provider reference (${provider:path:key}); "
        "mm2ctl does not resolve config providers, so put the resolved value in the file mm2ctl reads",
        id="config-provider",
    ),
    pytest.param(
        BASE,
        "A.ssl.truststore.type = PEM\nA.security.protocol = SSL\n"
        "A.ssl.truststore.location = /a.pem\nA.ssl.truststore.password = " + SECRET + "\n",
        "mm2.properties:8: A.ssl.truststore.password: cannot be set for a PEM truststore (Java rejects it too)",
        id="pem-truststore-password",
    ),
    pytest.param(
        BASE,
        "A.bootstrap.servers = a\\u00G0\n",
        "mm2.properties:5: A.bootstrap.servers: malformed \\uXXXX escape (Java's Properties.load rejects it too)",
        id="bad-unicode-escape",
    ),
]


@pytest.mark.parametrize(("base", "extra", "message"), MALFORMED)
def test_malformed_inputs(base: str, extra: str, message: str, tmp_path: Path) -> None:
    path = tmp_path / "mm2.properties"
    path.write_text(base + extra)
    with pytest.raises(ConfigError) as info:
        load_mm2_config(path)
    assert str(info.value) == message.replace("mm2.properties", str(path), 1)
    assert info.value.exit_code is ExitCode.CONFIG
    assert SECRET not in str(info.value)
    assert info.value.path == str(path)


def test_config_provider_only_fails_when_the_value_is_needed() -> None:
    config = cfg("config.providers = file\nA.consumer.client.id = ${file:/x:y}\nsome.worker.key = ${env:X}\n")
    assert config.pair("A->B").source_kafka_config["bootstrap.servers"] == "a:9092"
    with pytest.raises(ConfigError, match=r"A\.consumer\.client\.id: uses a config provider reference"):
        config.client_settings("A", pair="A->B")


def test_warning_for_flow_naming_an_unknown_cluster() -> None:
    config = cfg("A->C.enabled = true\n")
    assert config.warnings == ("mm2.properties:5: A->C.enabled: names a cluster not in clusters; MM2 ignores it",)


def test_setting_reads_raw_values() -> None:
    config = cfg("refresh.topics.interval.seconds = 1\n")
    assert config.setting("refresh.topics.interval.seconds") == "1"
    assert config.setting("nope") is None


def test_real_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "connect-mirror-maker.properties"
    path.write_text(BASE + "A->B.topics = orders\\\n  , payments\n")
    config = load_mm2_config(path)
    assert config.path == str(path)
    assert config.pair("A->B").topic_filter.include == ("orders", "payments")


# --- the flow's source consumer: does MM2 copy the records of aborted transactions? ---------------------


@pytest.mark.parametrize(
    ("extra", "level", "origin"),
    [
        ("", "read_uncommitted", "default"),
        (
            "A.consumer.isolation.level = read_committed\n",
            "read_committed",
            "mm2.properties:5 A.consumer.isolation.level",
        ),
        ("A->B.consumer.isolation.level = read_committed\n", "read_committed", "mm2.properties:5 A->B.consumer."),
        (
            "A->B.consumer.isolation.level = read_committed\nA->B.source.consumer.isolation.level = read_uncommitted\n",
            "read_uncommitted",
            "mm2.properties:6 A->B.source.consumer.isolation.level",
        ),
        (
            "A.consumer.isolation.level = read_committed\nA->B.consumer.isolation.level = read_uncommitted\n",
            "read_committed",
            "mm2.properties:5 A.consumer.isolation.level",
        ),
        # The target's consumers and the top level do not reach MirrorSourceTask's consumer.
        (
            "B.consumer.isolation.level = read_committed\nconsumer.isolation.level = read_committed\n",
            "read_uncommitted",
            "default",
        ),
    ],
)
def test_source_isolation_follows_mm2s_source_consumer_precedence(extra: str, level: str, origin: str) -> None:
    pair = cfg(extra).pair("A->B")
    assert pair.source_isolation[0] == level
    assert pair.source_isolation[1].startswith(origin)
    assert pair.copies_aborted_records is (level == "read_uncommitted")


def test_a_source_isolation_kafka_refuses_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        cfg("A.consumer.isolation.level = committed\n")
    assert "mm2.properties:5: A.consumer.isolation.level: must be read_committed or read_uncommitted" in str(info.value)


def test_offset_syncs_topic_settings_of_a_flow_without_offset_syncs_are_warned_about() -> None:
    config = cfg("A->B.emit.offset-syncs.enabled = false\noffset-syncs.topic.location = target\n")
    assert not config.pair("A->B").emit_offset_syncs_enabled
    (warning,) = [w for w in config.warnings if "offset-syncs.topic" in w]
    assert warning.startswith("mm2.properties:6: offset-syncs.topic.location: MirrorSourceConnector refuses")
    assert not [w for w in cfg("offset-syncs.topic.location = target\n").warnings if "offset-syncs.topic" in w]
