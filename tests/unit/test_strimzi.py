"""A Strimzi KafkaMirrorMaker2 resource as the MM2 setup: both layouts of v1beta2, v1, Secrets from either
form of ``--secrets``, the shipped examples, and one-line errors naming the field for malformed resources."""

from __future__ import annotations

import base64
import datetime as dt
import textwrap
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mm2ctl.cli.main import main
from mm2ctl.core.config.k8s_secrets import load_secrets
from mm2ctl.core.config.mm2_config import MM2Config
from mm2ctl.core.config.naming import OffsetSyncsLocation
from mm2ctl.core.config.sources import ConfigSource, resolve_config
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "strimzi"
EXAMPLE_SECRETS = EXAMPLES / "strimzi-secrets.yaml"
PASSWORD = "pw-3f9a1c-not-in-output"


def resolve(path: Path, secrets: Path | None = None, naming: str | None = None) -> MM2Config:
    return resolve_config(
        ConfigSource(mm2_config=str(path), secrets=None if secrets is None else str(secrets), policy_naming=naming)
    )


def write(tmp_path: Path, text: str, name: str = "kmm2.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def pem_pair() -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mm2")])
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(7)
        .not_valid_before(dt.datetime(2026, 1, 1))
        .not_valid_after(dt.datetime(2036, 1, 1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return cert.public_bytes(serialization.Encoding.PEM).decode(), key_pem


def secrets_folder(tmp_path: Path, secrets: dict[str, dict[str, str]]) -> Path:
    root = tmp_path / "secrets"
    for name, keys in secrets.items():
        (root / name).mkdir(parents=True)
        for key, value in keys.items():
            (root / name / key).write_text(value)
    return root


# --- the shipped examples ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", sorted(p.name for p in EXAMPLES.glob("kafka-mirror-maker-2*.yaml")), ids=lambda n: n.removesuffix(".yaml")
)
def test_every_shipped_example_parses(name: str) -> None:
    config = resolve(EXAMPLES / name, EXAMPLE_SECRETS)
    assert config.clusters == ("cluster-a", "cluster-b")
    pair = config.pair("cluster-a->cluster-b")
    assert pair.offset_syncs_topic == "mm2-offset-syncs.cluster-b.internal"
    assert pair.offset_syncs_cluster == "cluster-a"
    assert pair.checkpoints_topic == "cluster-a.checkpoints.internal"
    assert config.warnings == ()
    for kafka in (pair.source_kafka_config, pair.target_kafka_config):  # every credential translates
        assert kafka["bootstrap.servers"].endswith((":9092", ":9093"))


def test_plain_example_is_plaintext_and_keeps_connector_settings() -> None:
    config = resolve(EXAMPLES / "kafka-mirror-maker-2.yaml")
    pair = config.pair("cluster-a->cluster-b")
    assert pair.source_kafka_config == {
        "bootstrap.servers": "cluster-a-kafka-bootstrap:9092",
        "security.protocol": "PLAINTEXT",
    }
    assert pair.remote_topic("orders") == "cluster-a.orders"
    assert pair.sync_group_offsets_enabled is False
    assert pair.heartbeats_enabled is False  # no heartbeatConnector: Strimzi creates none


def test_scram_example_reads_the_secrets() -> None:
    config = resolve(EXAMPLES / "kafka-mirror-maker-2-scram.yaml", EXAMPLE_SECRETS)
    pair = config.pair("cluster-a->cluster-b")
    source = pair.source_kafka_config
    assert source["security.protocol"] == "SASL_SSL"
    assert source["sasl.mechanism"] == "SCRAM-SHA-512"
    assert (source["sasl.username"], source["sasl.password"]) == ("cluster-a-user", "change-me-cluster-a")
    assert source["ssl.ca.pem"].startswith("-----BEGIN CERTIFICATE-----")
    assert pair.target_kafka_config["sasl.password"] == "change-me-cluster-b"
    assert pair.sync_group_offsets_enabled is True and pair.offset_lag_max == 100


def test_v1_example_is_the_new_layout_with_the_identity_policy() -> None:
    config = resolve(EXAMPLES / "kafka-mirror-maker-2-v1.yaml", EXAMPLE_SECRETS)
    pair = config.pair("cluster-a->cluster-b")
    assert pair.remote_topic("orders") == "orders"
    assert pair.replication_policy.is_identity


# --- layouts and Secrets --------------------------------------------------------------------------

V1BETA2_NEW_LAYOUT = """\
apiVersion: kafka.strimzi.io/v1beta2
kind: KafkaMirrorMaker2
metadata: {name: m}
spec:
  target:
    alias: dst
    bootstrapServers: dst:9093
    tls: {trustedCertificates: [{secretName: dst-ca, certificate: ca.crt}]}
    authentication:
      type: tls
      certificateAndKey: {secretName: mm2-user, certificate: user.crt, key: user.key}
  mirrors:
  - source:
      alias: src
      bootstrapServers: src:9092
      authentication:
        type: plain
        username: mm2
        passwordSecret: {secretName: src-user, password: password}
      config:
        ssl.endpoint.identification.algorithm: ""
    sourceConnector:
      config:
        replication.policy.separator: _
        offset-syncs.topic.location: target
    checkpointConnector:
      config:
        replication.policy.separator: _
        offset-syncs.topic.location: target
        emit.checkpoints.interval.seconds: 5
    heartbeatConnector: {config: {}}
    topicsPattern: "orders.*"
    topicsExcludePattern: "orders-tmp"
    groupsPattern: "billing|shipping"
    groupsExcludePattern: "billing-test"
"""


def test_the_v1beta2_target_and_source_layout_with_tls_and_plain_auth(tmp_path: Path) -> None:
    cert, key = pem_pair()
    folder = secrets_folder(
        tmp_path,
        {
            "dst-ca": {"ca.crt": cert},
            "mm2-user": {"user.crt": cert, "user.key": key},
            "src-user": {"password": PASSWORD},
        },
    )
    config = resolve(write(tmp_path, V1BETA2_NEW_LAYOUT), folder)
    pair = config.pair("src->dst")
    assert pair.offset_syncs_location is OffsetSyncsLocation.TARGET
    assert pair.offset_syncs_topic == "mm2-offset-syncs_src_internal"
    assert pair.checkpoints_topic == "src_checkpoints_internal"
    assert pair.remote_topic("orders") == "src_orders"
    assert pair.topic_filter.matches("orders-eu") and not pair.topic_filter.matches("orders-tmp")
    assert pair.group_filter.matches("shipping") and not pair.group_filter.matches("billing-test")
    assert pair.emit_checkpoints_interval_seconds == 5 and pair.heartbeats_enabled
    target = pair.target_kafka_config
    assert target["security.protocol"] == "SSL"
    assert target["ssl.certificate.pem"].startswith("-----BEGIN CERTIFICATE-----")
    assert target["ssl.key.pem"].startswith("-----BEGIN PRIVATE KEY-----")
    source = pair.source_kafka_config
    assert (source["security.protocol"], source["sasl.mechanism"], source["sasl.password"]) == (
        "SASL_PLAINTEXT",
        "PLAIN",
        PASSWORD,
    )


def test_secrets_as_kubectl_prints_them(tmp_path: Path) -> None:
    encoded = base64.b64encode(PASSWORD.encode()).decode()
    manifests = write(
        tmp_path,
        f"""\
        apiVersion: v1
        kind: List
        items:
        - apiVersion: v1
          kind: Secret
          metadata: {{name: src-user}}
          data: {{password: {encoded}}}
        - apiVersion: v1
          kind: Secret
          metadata: {{name: other}}
          stringData: {{token: plain-text}}
        """,
        "secrets.yaml",
    )
    store = load_secrets(manifests)
    assert store.get("src-user", "password") == PASSWORD
    assert store.get("other", "token") == "plain-text"
    assert PASSWORD not in repr(store)


def test_oauth_becomes_kafkas_own_oidc_client(tmp_path: Path) -> None:
    resource = write(
        tmp_path,
        """\
        apiVersion: kafka.strimzi.io/v1beta2
        kind: KafkaMirrorMaker2
        spec:
          connectCluster: b
          clusters:
          - alias: a
            bootstrapServers: a:9093
            tls: {}
            authentication:
              type: oauth
              clientId: mm2
              clientSecret: {secretName: oauth, key: secret}
              tokenEndpointUri: https://idp.example/token
              scope: kafka
          - {alias: b, bootstrapServers: b:9092}
          mirrors:
          - {sourceCluster: a, targetCluster: b, sourceConnector: {}}
        """,
    )
    config = resolve(resource, secrets_folder(tmp_path, {"oauth": {"secret": PASSWORD}}))
    kafka = config.pair("a->b").source_kafka_config
    assert kafka == {
        "bootstrap.servers": "a:9093",
        "security.protocol": "SASL_SSL",
        "ssl.endpoint.identification.algorithm": "https",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.client.id": "mm2",
        "sasl.oauthbearer.client.secret": PASSWORD,
        "sasl.oauthbearer.scope": "kafka",
    }
    java = config.client_settings("a", "a->b")
    assert java["sasl.login.callback.handler.class"].endswith("oauthbearer.OAuthBearerLoginCallbackHandler")


def test_strimzi_identity_policy_is_recognised(tmp_path: Path) -> None:
    text = (EXAMPLES / "kafka-mirror-maker-2.yaml").read_text()
    text = text.replace(
        "        sync.topic.acls.enabled",
        "        replication.policy.class: io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy\n"
        "        sync.topic.acls.enabled",
    )
    text = text.replace(
        "        checkpoints.topic.replication.factor",
        "        replication.policy.class: io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy\n"
        "        checkpoints.topic.replication.factor",
    )
    pair = resolve(write(tmp_path, text)).pair("cluster-a->cluster-b")
    assert pair.replication_policy.is_identity
    assert pair.replication_policy.class_name == "io.strimzi.kafka.connect.mirror.IdentityReplicationPolicy"
    assert pair.remote_topic("orders") == "orders"


def test_a_custom_policy_with_declared_naming(tmp_path: Path) -> None:
    text = (EXAMPLES / "kafka-mirror-maker-2.yaml").read_text()
    for anchor in ("        sync.topic.acls.enabled", "        checkpoints.topic.replication.factor"):
        text = text.replace(anchor, "        replication.policy.class: com.example.KeepNamesPolicy\n" + anchor)
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=r"declare how it names topics: mm2ctl.replication.policy.naming"):
        resolve(path)
    assert resolve(path, naming="identity").pair("cluster-a->cluster-b").remote_topic("orders") == "orders"
    declared = text.replace(
        "        sync.topic.acls.enabled",
        "        mm2ctl.replication.policy.naming: identity\n        sync.topic.acls.enabled",
    ).replace(
        "        checkpoints.topic.replication.factor",
        "        mm2ctl.replication.policy.naming: identity\n        checkpoints.topic.replication.factor",
    )
    pair = resolve(write(tmp_path, declared, "declared.yaml")).pair("cluster-a->cluster-b")
    assert pair.remote_topic("orders") == "orders"
    assert pair.replication_policy.class_name == "com.example.KeepNamesPolicy"


def test_connectors_that_disagree_on_the_policy_are_refused(tmp_path: Path) -> None:
    text = (
        (EXAMPLES / "kafka-mirror-maker-2.yaml")
        .read_text()
        .replace(
            "        sync.topic.acls.enabled",
            "        replication.policy.separator: _\n        sync.topic.acls.enabled",
        )
    )
    with pytest.raises(ConfigError) as info:
        resolve(write(tmp_path, text))
    assert "spec.mirrors[0].sourceConnector.config.replication.policy.separator" in str(info.value)
    assert "disagree" in str(info.value)


# --- malformed resources: one line naming the field, exit 3 ------------------------------------------

GOOD = (EXAMPLES / "kafka-mirror-maker-2-scram.yaml").read_text()

MALFORMED = [
    pytest.param(
        GOOD.replace("kind: KafkaMirrorMaker2", "kind: KafkaConnect"),
        "kind: 'KafkaConnect' is not KafkaMirrorMaker2",
        id="wrong-kind",
    ),
    pytest.param(
        GOOD.replace("kafka.strimzi.io/v1beta2", "kafka.strimzi.io/v1alpha1"),
        "apiVersion: 'kafka.strimzi.io/v1alpha1' is not one of kafka.strimzi.io/v1beta2, kafka.strimzi.io/v1",
        id="wrong-api-version",
    ),
    pytest.param(
        GOOD.replace('    - alias: "cluster-a" # Source cluster\n', "    - \n"),
        "spec.clusters[0].alias: is required",
        id="missing-alias",
    ),
    pytest.param(
        GOOD.replace("type: scram-sha-512\n        username: cluster-a-user", "type: kerberos\n        username: x", 1),
        "spec.clusters[0].authentication.type: 'kerberos' is not one of tls, scram-sha-256, scram-sha-512, plain, "
        "oauth, custom",
        id="unknown-authentication-type",
    ),
    pytest.param(
        GOOD.replace(
            "          secretName: cluster-b-user\n          password: password",
            "          secretName: cluster-b-user\n          password: passwd",
        ),
        "spec.clusters[1].authentication.passwordSecret: Secret 'cluster-b-user' has no key 'passwd' in --secrets",
        id="missing-secret-key",
    ),
    pytest.param(
        GOOD.replace("secretName: cluster-a-user", "secretName: nobody"),
        "spec.clusters[0].authentication.passwordSecret: Secret 'nobody' is not in --secrets",
        id="missing-secret",
    ),
    pytest.param(
        GOOD.replace('sourceCluster: "cluster-a"', 'sourceCluster: "cluster-c"'),
        "spec.mirrors[0].sourceCluster: 'cluster-c' is not in spec.clusters",
        id="unknown-source-alias",
    ),
    pytest.param(
        GOOD.replace('connectCluster: "cluster-b"', 'connectCluster: "cluster-x"'),
        "spec.connectCluster: 'cluster-x' is not in spec.clusters",
        id="unknown-connect-cluster",
    ),
    pytest.param(
        GOOD.replace("apiVersion: kafka.strimzi.io/v1beta2", "apiVersion: kafka.strimzi.io/v1"),
        "spec.clusters: is not part of kafka.strimzi.io/v1: use spec.target and spec.mirrors[].source",
        id="v1-with-clusters",
    ),
    pytest.param(
        GOOD.replace("bootstrapServers: cluster-a-kafka-bootstrap:9093", "bootstrapServers:"),
        "spec.clusters[0].bootstrapServers: is required",
        id="missing-bootstrap",
    ),
    pytest.param(
        GOOD.replace('- alias: "cluster-a"', '- alias: "cluster a"'),
        "spec.clusters[0].alias: 'cluster a' is not a valid alias",
        id="bad-alias",
    ),
    pytest.param(GOOD.split("  mirrors:")[0], "spec.mirrors: is required", id="no-mirrors"),
    pytest.param(
        GOOD.replace('pattern: "*.crt"', 'pattern: "*.pem"', 1),
        "spec.clusters[0].tls.trustedCertificates[0].pattern: no key of Secret 'cluster-a-cluster-ca-cert' "
        "matches '*.pem'",
        id="pattern-matches-nothing",
    ),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_resources(text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(SystemExit) as exited:
        main(["config", "show", "--mm2-config", str(path), "--secrets", str(EXAMPLE_SECRETS)])
    out = capsys.readouterr()
    assert exited.value.code == ExitCode.CONFIG
    assert out.out == ""
    assert out.err.count("\n") == 1, out.err
    assert out.err.startswith(f"mm2ctl: error: {path}:")
    assert message in out.err
    assert "change-me" not in out.err


def test_a_resource_with_secrets_but_no_secrets_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"spec.target.tls.trustedCertificates\[0\]: refers to Secret 'cluster-b-"):
        resolve(EXAMPLES / "kafka-mirror-maker-2-v1.yaml")


def test_secrets_with_a_properties_file_is_refused(tmp_path: Path) -> None:
    props = write(tmp_path, "clusters = a, b\na.bootstrap.servers = a:9092\n", "mm2.properties")
    with pytest.raises(ConfigError, match="--secrets is for a KafkaMirrorMaker2 resource"):
        resolve(props, EXAMPLE_SECRETS)


def test_the_examples_readme_lists_every_resource() -> None:
    readme = (EXAMPLES.parent / "README.md").read_text()
    for path in EXAMPLES.glob("*.yaml"):
        assert f"`strimzi/{path.name}`" in readme


# --- settings on one connector only: compared as each connector uses them -----------------------------

ONE_CONNECTOR = pytest.mark.parametrize(
    ("key", "default", "other"),
    [
        ("replication.policy.class", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy", None),
        ("replication.policy.separator", ".", "_"),
        ("offset-syncs.topic.location", "source", "target"),
    ],
)


def _on_source_connector(key: str, value: str) -> str:
    return (
        (EXAMPLES / "kafka-mirror-maker-2.yaml")
        .read_text()
        .replace("        sync.topic.acls.enabled", f"        {key}: {value}\n        sync.topic.acls.enabled")
    )


@ONE_CONNECTOR
def test_a_setting_at_kafkas_default_on_one_connector_only_is_accepted(
    tmp_path: Path, key: str, default: str, other: str | None
) -> None:
    pair = resolve(write(tmp_path, _on_source_connector(key, default))).pair("cluster-a->cluster-b")
    assert pair.offset_syncs_topic == "mm2-offset-syncs.cluster-b.internal"
    assert pair.remote_topic("orders") == "cluster-a.orders"


@ONE_CONNECTOR
def test_another_value_on_one_connector_only_is_refused_naming_both(
    tmp_path: Path, key: str, default: str, other: str | None
) -> None:
    if other is None:
        other = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
    with pytest.raises(ConfigError) as info:
        resolve(write(tmp_path, _on_source_connector(key, other)))
    message = str(info.value)
    assert f"spec.mirrors[0].sourceConnector.config.{key}" in message
    assert repr(other) in message and repr(default) in message
    # The resource runs Kafka 4.1.0 (spec.version): the default is named as that release's.
    assert "not set on connector cluster-a->cluster-b.MirrorCheckpointConnector: Kafka 4.1.0's default" in message


def test_a_refused_one_connector_setting_exits_3_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, _on_source_connector("offset-syncs.topic.location", "target"))
    with pytest.raises(SystemExit) as exit_info:
        main(["config", "show", "--mm2-config", str(path)])
    assert exit_info.value.code == ExitCode.CONFIG
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "'target'" in err[0] and "'source'" in err[0], err
