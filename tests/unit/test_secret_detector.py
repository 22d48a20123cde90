"""mm2ctl has one secret detector (``mm2ctl.core.security``); plans, journals and config display all use it.

It is the union of two rule sets that used to live apart (a regex in ``mm2ctl.core.security`` and token rules in
``plans.model``): every key either caught is still caught, and the keys both kept are still kept.
"""

from __future__ import annotations

import pytest

from mm2ctl.core import security
from mm2ctl.plans import model

#: Caught by the old ``mm2ctl.core.security`` regex only, the old ``plans.model`` token rules only, or both.
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
    assert security.is_secret_key(key)
    assert security.redact({key: "hunter2"})[key] != "hunter2"
    assert model.redact_json({key: "hunter2"}) == {key: model.REDACTED}


@pytest.mark.parametrize("key", PLAIN_KEYS)
def test_plain_keys_stay_readable(key: str) -> None:
    assert not security.is_secret_key(key)


def test_plans_use_the_core_detector() -> None:
    assert model.is_secret_key is security.is_secret_key


@pytest.mark.parametrize(
    "value",
    [
        'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";',
        "password=hunter2",
        "http://user:hunter2@connect:8083/",
    ],
)
def test_secret_values_are_caught_whatever_the_key(value: str) -> None:
    assert security.looks_secret_value(value)
    assert model.redact_json({"harmless.name": value}) == {"harmless.name": model.REDACTED}
    assert "hunter2" not in security.redact_text(value) or "LoginModule" in value


def test_redact_text_uses_the_callers_marker() -> None:
    text = "auth failed: password=hunter2 at http://u:pw@h:8083/"
    assert security.redact_text(text) == "auth failed: password=****** at http://******@h:8083/"
    assert model.redact_text(text) == f"auth failed: password={model.REDACTED} at http://{model.REDACTED}@h:8083/"
    assert not model.looks_secret_value(model.REDACTED)
