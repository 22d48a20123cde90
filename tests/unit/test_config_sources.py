"""The three ways to give the MM2 setup resolve to the same model: a properties file, a KafkaMirrorMaker2
resource, and live Connect connectors (here a fake reader of their configs). ``config show`` says where each
value came from; ``config diff`` finds each kind of difference; ``--policy-naming`` declares custom policies."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from pathlib import Path

import pytest

from mm2ctl.cli.main import main
from mm2ctl.core.config.describe import describe_setup, diff_setups
from mm2ctl.core.config.mm2_config import MM2Config, mm2_config_from_text
from mm2ctl.core.config.sources import ConfigSource, resolve_config
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.exit_codes import ExitCode

PASSWORD = "conn-s3cret-71aa"
URL = "http://connect.example:8083"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


def connector(role: str, source: str = "primary", target: str = "backup", **extra: str) -> dict[str, str]:
    classes = {
        "source": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
        "checkpoint": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
        "heartbeat": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
    }
    return {
        "connector.class": classes[role],
        "source.cluster.alias": source,
        "target.cluster.alias": target,
        "source.cluster.bootstrap.servers": "p1:9092,p2:9092",
        "target.cluster.bootstrap.servers": "b1:9092",
        "target.cluster.security.protocol": "SASL_PLAINTEXT",
        "target.cluster.sasl.mechanism": "SCRAM-SHA-512",
        "target.cluster.sasl.jaas.config": f'{SCRAM} required username="mm2" password="{PASSWORD}";',
        "replication.policy.separator": "_",
        "tasks.max": "1",
        **extra,
    }


LIVE = {
    "mm2-source": connector("source", topics="orders.*", **{"offset.lag.max": "50"}),
    "mm2-checkpoint": connector(
        "checkpoint", groups="billing.*", **{"sync.group.offsets.enabled": "true", "topics": "ignored-here"}
    ),
    "mm2-heartbeat": connector("heartbeat"),
    "unrelated-sink": {"connector.class": "io.example.Sink", "topics": "x"},
}

FILE = f"""\
clusters = primary, backup
primary.bootstrap.servers = p2:9092, p1:9092
backup.bootstrap.servers = b1:9092
backup.security.protocol = SASL_PLAINTEXT
backup.sasl.mechanism = SCRAM-SHA-512
backup.sasl.jaas.config = {SCRAM} required username="mm2ctl" password="another-{PASSWORD}";
primary->backup.enabled = true
replication.policy.separator = _
primary->backup.topics = orders.*
primary->backup.groups = billing.*
offset.lag.max = 50
sync.group.offsets.enabled = true
"""


def from_connect(configs: Mapping[str, Mapping[str, str]], **options: str) -> MM2Config:
    return resolve_config(ConfigSource(from_connect=URL, **options), read_connectors=lambda _url: configs)


def test_live_connectors_become_the_flow() -> None:
    config = from_connect(LIVE)
    assert config.clusters == ("primary", "backup")
    pair = config.pair("primary->backup")
    assert pair.separator == "_" and pair.offset_syncs_topic == "mm2-offset-syncs_backup_internal"
    assert pair.topic_filter.include == ("orders.*",)  # the source connector's, not the checkpoint's
    assert pair.group_filter.include == ("billing.*",)
    assert pair.offset_lag_max == 50 and pair.sync_group_offsets_enabled
    assert pair.target_kafka_config["sasl.password"] == PASSWORD
    assert pair.source_kafka_config["bootstrap.servers"] == "p1:9092,p2:9092"


def test_a_flow_without_a_checkpoint_or_heartbeat_connector() -> None:
    pair = from_connect({"s": connector("source")}).pair("primary->backup")
    assert not pair.emit_checkpoints_enabled and not pair.heartbeats_enabled and not pair.sync_group_offsets_enabled


def test_a_value_behind_a_config_provider_is_asked_for(tmp_path: Path) -> None:
    hidden = dict(
        LIVE, **{"mm2-source": connector("source", **{"target.cluster.sasl.jaas.config": "${file:/opt/s:j}"})}
    )
    with pytest.raises(ConfigError) as info:
        from_connect(hidden)
    assert str(info.value) == (
        f"Connect {URL}: connector mm2-source: target.cluster.sasl.jaas.config: is hidden behind a config provider "
        "(${file:/opt/s:j}), which only the Connect worker can read; give its value as backup.sasl.jaas.config in "
        "a properties file passed with --secrets FILE"
    )
    given = tmp_path / "given.properties"
    given.write_text(f'backup.sasl.jaas.config = {SCRAM} required username="u" password="{PASSWORD}";\n')
    pair = from_connect(hidden, secrets=str(given)).pair("primary->backup")
    assert pair.target_kafka_config["sasl.username"] == "u"


def test_strimzi_references_in_live_connectors_resolve_from_the_secrets_folder(tmp_path: Path) -> None:
    (tmp_path / "mm2-user").mkdir()
    (tmp_path / "mm2-user" / "password").write_text(PASSWORD)
    jaas = f'{SCRAM} required username="mm2" password="${{strimzisecrets:kafka/mm2-user:password}}";'
    live = {"s": connector("source", **{"target.cluster.sasl.jaas.config": jaas})}
    pair = from_connect(live, secrets=str(tmp_path)).pair("primary->backup")
    assert pair.target_kafka_config["sasl.password"] == PASSWORD


def test_two_flows_that_disagree_on_a_clusters_address_are_refused() -> None:
    other = connector("source", source="backup", target="primary")
    other["target.cluster.bootstrap.servers"] = "elsewhere:9092"
    with pytest.raises(ConfigError, match=r"cluster backup has bootstrap\.servers 'b1:9092' in connector a"):
        from_connect({"a": connector("source"), "b": other})


def test_no_mm2_connector_is_an_error() -> None:
    with pytest.raises(ConfigError, match="runs no MirrorMaker 2 connector"):
        from_connect({"x": {"connector.class": "io.example.Sink"}})


# --- config show and diff --------------------------------------------------------------------------


def test_show_names_where_each_value_came_from(tmp_path: Path) -> None:
    report = describe_setup(from_connect(LIVE))
    flow = report.flows[0]
    settings = {s.name: s for s in flow.settings}
    assert (
        settings["replication.policy.separator"].origin
        == f"Connect {URL} connector mm2-source: replication.policy.separator"
    )
    assert settings["groups"].origin.endswith("connector mm2-checkpoint: groups")
    assert settings["offset-syncs.topic.location"].origin == "default"
    assert flow.topics["checkpoints"] == "primary_checkpoints_internal on backup"
    assert flow.topics["remote_topic_rule"] == "<topic> on primary is primary_<topic> on backup"
    backup = {s.name: s for s in flow.clusters["backup"]}
    assert backup["sasl.jaas.config"].value == "******"
    assert PASSWORD not in repr(report.to_json())


def test_the_file_and_the_live_connectors_agree() -> None:
    assert diff_setups(mm2_config_from_text(FILE), from_connect(LIVE)) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(("primary", "main"), {"flow main->backup", "flow primary->backup"}, id="alias"),
        pytest.param(("separator = _", "separator = -"), {"primary->backup: replication.policy.separator"}, id="sep"),
        pytest.param(
            (
                "separator = _",
                "separator = _\nreplication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
            ),
            {"primary->backup: replication.policy.class"},
            id="policy",
        ),
        pytest.param(("topics = orders.*", "topics = orders-eu"), {"primary->backup: topics"}, id="topic-filter"),
    ],
)
def test_diff_finds_each_change(change: tuple[str, str], expected: set[str]) -> None:
    differences = diff_setups(mm2_config_from_text(FILE.replace(*change)), from_connect(LIVE))
    found = {d.what for d in differences}
    assert expected <= found, found


def test_config_diff_exits_18_on_a_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import mm2ctl.connect_client.factory as factory

    monkeypatch.setattr(factory, "connector_config_reader", lambda **_auth: lambda _url: LIVE)
    path = tmp_path / "mm2.properties"
    path.write_text(FILE.replace("topics = orders.*", "topics = orders-eu"))
    with pytest.raises(SystemExit) as exited:
        main(["config", "diff", "--mm2-config", str(path), "--connect-url", URL])
    out = capsys.readouterr().out
    assert exited.value.code == ExitCode.CONFIG_DIFFERS
    assert "primary->backup: topics: file 'orders-eu', live 'orders.*'" in out
    assert PASSWORD not in out


# --- replication policies in a properties file -------------------------------------------------------

CUSTOM = textwrap.dedent(
    """\
    clusters = a, b
    a.bootstrap.servers = a:9092
    b.bootstrap.servers = b:9092
    a->b.enabled = true
    replication.policy.class = com.example.PrefixInternalOnlyPolicy
    """
)


def test_a_custom_policy_needs_its_naming_declared() -> None:
    with pytest.raises(ConfigError) as info:
        mm2_config_from_text(CUSTOM, path="mm2.properties")
    assert "mm2.properties:5: replication.policy.class: unsupported replication policy" in str(info.value)
    assert "mm2ctl.replication.policy.naming = default|identity" in str(info.value)
    assert "--policy-naming default|identity" in str(info.value)


def test_declared_naming_in_the_file_and_on_the_command_line() -> None:
    declared = mm2_config_from_text(CUSTOM + "mm2ctl.replication.policy.naming = identity\n").pair("a->b")
    assert declared.remote_topic("orders") == "orders" and declared.checkpoints_topic == "a.checkpoints.internal"
    assert declared.replication_policy.class_name == "com.example.PrefixInternalOnlyPolicy"
    option = mm2_config_from_text(CUSTOM, policy_naming="default").pair("a->b")
    assert option.remote_topic("orders") == "a.orders"


def test_a_declaration_that_contradicts_a_known_class() -> None:
    text = CUSTOM.replace(
        "com.example.PrefixInternalOnlyPolicy", "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
    )
    with pytest.raises(ConfigError, match="names topics the default way, not the identity way"):
        mm2_config_from_text(text + "mm2ctl.replication.policy.naming = identity\n")


def test_a_resolved_setup_written_as_a_properties_file_reads_back_the_same(tmp_path: Path) -> None:
    from mm2ctl.core.config.mm2_config import load_mm2_config
    from mm2ctl.core.config.sources import write_properties_file

    resolved = from_connect(LIVE, policy_naming="default")
    path = write_properties_file(resolved, tmp_path / "mm2.properties")
    assert path.stat().st_mode & 0o777 == 0o600  # it holds the credentials
    again = load_mm2_config(path)
    assert describe_setup(again).flows[0].topics == describe_setup(resolved).flows[0].topics
    assert again.pair("primary->backup").target_kafka_config == resolved.pair("primary->backup").target_kafka_config
