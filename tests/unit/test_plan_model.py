"""The plan model: frozen, validated on construction, secrets redacted before anything can store them."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

import pytest

from mm2ctl.core.errors import PlanError, PreconditionError
from mm2ctl.core.security.redaction import REDACTED, is_secret_key, redact_json, redact_text, strip_url_credentials
from mm2ctl.plans.connect_target import ConnectTarget
from mm2ctl.plans.connector_config import ConnectorConfig, unredact_config
from mm2ctl.plans.document import SCHEMA_VERSION, PlanKind, new_plan
from mm2ctl.plans.fingerprint import fingerprint_of
from mm2ctl.plans.payloads import ConnectorStop
from mm2ctl.plans.preconditions import NoPrecondition
from mm2ctl.plans.steps import Step, StepKind
from mm2ctl.plans.targets import ConnectorTarget
from tests.unit.test_plan_samples import (
    SECRET_JAAS,
    SECRET_PASSWORD,
    connector_config,
    every_step,
    sample_plan,
)


def test_plan_and_steps_are_deeply_frozen() -> None:
    plan = sample_plan()
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.kind = PlanKind.FAILOVER  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.clusters["A"] = "other"  # type: ignore[index]
    step = plan.steps[0]
    assert isinstance(step.before, dict) is False
    with pytest.raises(TypeError):
        step.before["state"] = "x"  # type: ignore[index]
    assert SCHEMA_VERSION == plan.schema_version == 1


def test_step_payload_must_match_its_kind() -> None:
    with pytest.raises(PlanError, match="payload: a connector_pause step needs a ConnectorPause, got ConnectorStop"):
        Step(
            index=0,
            kind=StepKind.CONNECTOR_PAUSE,
            target=ConnectorTarget(connector="c"),
            payload=ConnectorStop(),
            precondition=NoPrecondition(),
            before=None,
            after=None,
            reversible=True,
        )


def test_unknown_step_kind_is_rejected_on_construction() -> None:
    with pytest.raises(PlanError, match="kind: unknown step kind 'explode'"):
        Step(
            index=0,
            kind="explode",
            target=ConnectorTarget(connector="c"),  # type: ignore[arg-type]
            payload=ConnectorStop(),
            precondition=NoPrecondition(),
            before=None,
            after=None,
            reversible=True,
        )


def test_step_indices_must_be_contiguous_from_zero() -> None:
    steps = every_step()[1:3]
    with pytest.raises(PlanError, match=r"steps\[0\]\.index: is 1"):
        sample_plan(steps=tuple(steps))


def test_connector_steps_need_a_connect_worker() -> None:
    with pytest.raises(PlanError, match="needs the plan's connect worker"):
        sample_plan(connect=None)


def test_new_plan_fills_id_time_and_version() -> None:
    plan = new_plan(
        kind="failover",
        pair="A->B",
        clusters={"A": "a", "B": "b"},
        connect=None,
        fingerprint=fingerprint_of({}),
        steps=(),
        now=datetime(2025, 5, 1, 12, 0, tzinfo=UTC),
    )
    assert plan.kind is PlanKind.FAILOVER
    assert plan.created_at == "2025-05-01T12:00:00+00:00"
    assert plan.source_alias == "A" and plan.target_alias == "B"
    assert plan.created_by_tool_version


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("sasl.jaas.config", True),
        ("source.cluster.sasl.jaas.config", True),
        ("ssl.truststore.password", True),
        ("ssl.key.password", True),
        ("ssl.keystore.key", True),
        ("consumer.override.sasl.oauthbearer.client.secret", True),
        ("basic.auth.user.info", True),
        ("api_token", True),
        ("aws.credentials", True),
        ("key.converter", False),
        ("key.converter.schemas.enable", False),
        ("topics", False),
        ("source.cluster.bootstrap.servers", False),
        ("replication.policy.separator", False),
    ],
)
def test_secret_keys(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_connector_config_redacts_on_construction() -> None:
    cfg = ConnectorConfig(values=connector_config())
    assert cfg.values["source.cluster.sasl.jaas.config"] == REDACTED
    assert cfg.values["source.cluster.ssl.truststore.password"] == REDACTED
    assert cfg.values["target.cluster.ssl.keystore.password"].startswith("${file:")  # a reference, kept
    assert cfg.values["key.converter"].endswith("ByteArrayConverter")
    assert cfg.redacted_keys == ("source.cluster.sasl.jaas.config", "source.cluster.ssl.truststore.password")
    assert SECRET_PASSWORD not in repr(cfg)
    # A JAAS line under an innocent key is caught by its value.
    assert ConnectorConfig(values={"x.y": SECRET_JAAS}).redacted_keys == ("x.y",)


def test_unredact_config_refills_secrets_or_names_what_is_missing() -> None:
    cfg = ConnectorConfig(values=connector_config())
    live = connector_config()
    assert unredact_config(cfg, live) == live
    with pytest.raises(PreconditionError) as info:
        unredact_config(cfg, {"source.cluster.sasl.jaas.config": SECRET_JAAS})
    assert "source.cluster.ssl.truststore.password" in str(info.value)
    assert SECRET_PASSWORD not in str(info.value)


def test_redact_json_is_deep_and_idempotent() -> None:
    value = {"config": connector_config(), "list": [{"password": "x"}], "url": "http://u:p@h/"}
    once = redact_json(value)
    assert redact_json(once) == once
    text = repr(once)
    assert SECRET_PASSWORD not in text and "u:p@" not in text
    assert once["list"][0]["password"] == REDACTED


def test_redact_text_keeps_the_message_readable() -> None:
    out = redact_text(f"login failed: password={SECRET_PASSWORD} for http://u:pw@host:8083/")
    assert SECRET_PASSWORD not in out and "u:pw@" not in out
    assert out.startswith("login failed: password=")
    assert redact_text("no secrets here") == "no secrets here"


def test_step_before_after_are_redacted() -> None:
    delete = next(s for s in sample_plan().steps if s.kind is StepKind.CONNECTOR_DELETE)
    assert SECRET_PASSWORD not in repr(delete)


def test_connect_urls_never_carry_credentials() -> None:
    assert strip_url_credentials("https://admin:pw@connect:8083/api?token=x#f") == "https://connect:8083/api"
    assert strip_url_credentials("http://[::1]:8083") == "http://[::1]:8083"
    with pytest.raises(PlanError, match="must not carry credentials"):
        ConnectTarget(urls=("http://admin:pw@connect:8083",), kafka_cluster_id="x", version="3.9.0")
    with pytest.raises(PlanError, match="not an http"):
        ConnectTarget(urls=("ftp://connect",), kafka_cluster_id="x", version="3.9.0")
