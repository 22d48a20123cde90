"""mm2ctl has one secret detector (``mm2ctl.core.security.redaction``); plans, journals and config display all use it.

It is the union of two rule sets, a key regex and key tokens: every key either catches is secret, and the keys
both keep stay readable.
"""

from __future__ import annotations

import pytest

from mm2ctl.core.security import redaction
from mm2ctl.plans.connector_config import ConnectorConfig

#: Caught by the key regex only, the key tokens only, or both.
SECRET_KEYS = [
    "ssl.key.pem",  # regex only
    "ssl.keystore.private.material",  # regex only ("private")
    "A.ssl.keystore.password",
    "sasl.jaas.config",
    "ssl.keystore.key",
    "basic.auth.user.info",
    "schema.registry.auth.info",  # tokens only ("auth.info")
    "api_token",
    "aws.credentials",
    "my-apikey",  # tokens only
    "ssl.key.passphrase",  # tokens only
    "db.pwd",  # tokens only
    "consumer.override.sasl.oauthbearer.client.secret",
    "ssl.truststore.key",  # tokens only (last token "key")
]
PLAIN_KEYS = [
    "key.converter",
    "key.converter.schemas.enable",
    "sasl.username",
    "ssl.keystore.location",
    "ssl.key.location",
    "ssl.certificate.pem",
    "ssl.ca.location",
    "bootstrap.servers",
    "topics",
    "replication.policy.separator",
]


@pytest.mark.parametrize("key", SECRET_KEYS)
def test_every_key_either_rule_set_caught_is_secret(key: str) -> None:
    assert redaction.is_secret_key(key)
    assert redaction.redact({key: "hunter2"})[key] != "hunter2"
    assert redaction.redact_json({key: "hunter2"}) == {key: redaction.REDACTED}


@pytest.mark.parametrize("key", PLAIN_KEYS)
def test_plain_keys_stay_readable(key: str) -> None:
    assert not redaction.is_secret_key(key)


def test_plans_use_the_same_detector() -> None:
    config = ConnectorConfig(values={key: "hunter2" for key in SECRET_KEYS + PLAIN_KEYS})
    assert config.redacted_keys == tuple(sorted(SECRET_KEYS))


@pytest.mark.parametrize(
    "value",
    [
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
        "password=hunter2",
        "http://user:hunter2@connect:8083/",
    ],
)
def test_secret_values_are_caught_whatever_the_key(value: str) -> None:
    assert redaction.looks_secret_value(value)
    assert redaction.redact_json({"harmless.name": value}) == {"harmless.name": redaction.REDACTED}
    assert "hunter2" not in redaction.redact_text(value) or "LoginModule" in value


def test_redact_text_uses_the_callers_marker() -> None:
    text = "auth failed: password=hunter2 at http://u:pw@h:8083/"
    assert redaction.redact_text(text) == "auth failed: password=****** at http://******@h:8083/"
    marker = redaction.REDACTED
    assert redaction.redact_text(text, marker) == f"auth failed: password={marker} at http://{marker}@h:8083/"
    assert not redaction.looks_secret_value(marker)


def test_values_the_caller_holds_are_replaced_wherever_they_appear() -> None:
    text = "GET http://connect:8083/ failed: 401 for user ops with s3cr3t-P@ss"
    assert redaction.redact_text(text, known=["s3cr3t-P@ss", ""]) == text.replace("s3cr3t-P@ss", "******")
