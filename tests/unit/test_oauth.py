"""SASL/OAUTHBEARER: MM2's Java OAuth settings in each of their forms become librdkafka's, GSSAPI is the one
mechanism refused, and no secret reaches a message."""

from __future__ import annotations

import pytest

from mm2ctl.core.config.mm2_config import mm2_config_from_text
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.client_settings import portable_java_client_settings, to_librdkafka

SECRET = "oauth-s3cret-9d2f"
BASE = {"bootstrap.servers": "b:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "OAUTHBEARER"}
MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
KAFKA_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
STRIMZI_HANDLER = "io.strimzi.kafka.oauth.client.JaasClientOauthLoginCallbackHandler"
JWT_BEARER = "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
OIDC = {
    "sasl.mechanism": "OAUTHBEARER",
    "sasl.oauthbearer.method": "oidc",
    "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
    "sasl.oauthbearer.client.id": "mm2",
    "sasl.oauthbearer.client.secret": SECRET,
    "sasl.oauthbearer.scope": "kafka",
}


def translate(settings: dict[str, str]) -> dict[str, str]:
    out = to_librdkafka({**BASE, **settings})
    return {k: v for k, v in out.items() if k.startswith("sasl.") or k.startswith("enable.sasl")}


@pytest.mark.parametrize(
    "settings",
    [
        pytest.param(
            {
                "sasl.login.callback.handler.class": KAFKA_HANDLER,
                "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
                "sasl.jaas.config": f'{MODULE} required clientId="mm2" clientSecret="{SECRET}" scope="kafka";',
            },
            id="kafka-jaas-options",
        ),
        pytest.param(
            {
                "sasl.login.callback.handler.class": KAFKA_HANDLER.replace(".oauthbearer.", ".oauthbearer.secured."),
                "sasl.oauthbearer.token.endpoint.url": "https://idp.example/oauth2/token",
                "sasl.oauthbearer.client.credentials.client.id": "mm2",
                "sasl.oauthbearer.client.credentials.client.secret": SECRET,
                "sasl.oauthbearer.scope": "kafka",
                "sasl.jaas.config": f"{MODULE} required;",
            },
            id="kafka-4.1-settings",
        ),
        pytest.param(
            {
                "sasl.login.callback.handler.class": STRIMZI_HANDLER,
                "sasl.jaas.config": f'{MODULE} required oauth.client.id="mm2" oauth.client.secret="{SECRET}" '
                'oauth.token.endpoint.uri="https://idp.example/oauth2/token" oauth.scope="kafka";',
            },
            id="strimzi-library",
        ),
    ],
)
def test_client_credentials_become_librdkafkas_oidc(settings: dict[str, str]) -> None:
    assert translate(settings) == OIDC


def test_the_jwt_bearer_grant() -> None:
    got = translate(
        {
            "sasl.login.callback.handler.class": KAFKA_HANDLER,
            "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
            "sasl.oauthbearer.jwt.retriever.class": JWT_BEARER,
            "sasl.oauthbearer.assertion.private.key.file": "/etc/mm2/key.pem",
            "sasl.oauthbearer.assertion.claim.sub": "mm2",
            "sasl.oauthbearer.assertion.template.file": "/etc/mm2/template.json",
            "sasl.jaas.config": f"{MODULE} required;",
        }
    )
    assert got == {
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example/token",
        "sasl.oauthbearer.grant.type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "sasl.oauthbearer.assertion.private.key.file": "/etc/mm2/key.pem",
        "sasl.oauthbearer.assertion.claim.sub": "mm2",
        "sasl.oauthbearer.assertion.jwt.template.file": "/etc/mm2/template.json",
    }


def test_unsecured_jwts() -> None:
    got = translate({"sasl.jaas.config": f'{MODULE} required unsecuredLoginStringClaim_sub="mm2ctl";'})
    assert got == {
        "sasl.mechanism": "OAUTHBEARER",
        "enable.sasl.oauthbearer.unsecure.jwt": "true",
        "sasl.oauthbearer.config": "principal=mm2ctl",
    }


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param(
            {"sasl.login.callback.handler.class": KAFKA_HANDLER, "sasl.jaas.config": f"{MODULE} required;"},
            "sasl.oauthbearer.token.endpoint.url: is required",
            id="no-endpoint",
        ),
        pytest.param(
            {
                "sasl.login.callback.handler.class": KAFKA_HANDLER,
                "sasl.oauthbearer.token.endpoint.url": "https://idp/token",
                "sasl.jaas.config": f'{MODULE} required clientSecret="{SECRET}";',
            },
            'sasl.jaas.config: has no clientId="..."',
            id="no-client-id",
        ),
        pytest.param(
            {
                "sasl.login.callback.handler.class": KAFKA_HANDLER,
                "sasl.oauthbearer.token.endpoint.url": "file:/var/run/token",
                "sasl.jaas.config": f"{MODULE} required;",
            },
            "sasl.oauthbearer.token.endpoint.url: names a token file",
            id="token-file",
        ),
        pytest.param(
            {"sasl.login.callback.handler.class": "com.example.Handler", "sasl.jaas.config": f"{MODULE} required;"},
            "sasl.login.callback.handler.class: com.example.Handler is custom code",
            id="custom-handler",
        ),
        pytest.param(
            {
                "sasl.login.callback.handler.class": STRIMZI_HANDLER,
                "sasl.jaas.config": f'{MODULE} required oauth.access.token="{SECRET}";',
            },
            "sasl.jaas.config: uses oauth.access.token",
            id="strimzi-static-token",
        ),
        pytest.param(
            {"sasl.jaas.config": f'{PLAIN_MODULE} required password="{SECRET}";'},
            "sasl.jaas.config: OAUTHBEARER needs org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule",
            id="wrong-module",
        ),
        pytest.param({"sasl.jaas.config": f"{MODULE} required;"}, "unsecuredLoginStringClaim_sub", id="no-principal"),
    ],
)
def test_oauth_errors_name_the_setting_and_hide_the_secret(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        to_librdkafka({**BASE, **settings})
    assert message in str(info.value)
    assert SECRET not in str(info.value)


def test_gssapi_is_the_one_refused_mechanism() -> None:
    text = (
        "clusters = a, b\na.bootstrap.servers = a:9092\nb.bootstrap.servers = b:9092\na->b.enabled = true\n"
        "a.security.protocol = SASL_PLAINTEXT\na.sasl.mechanism = GSSAPI\n"
    )
    with pytest.raises(ConfigError) as info:
        mm2_config_from_text(text, path="mm2.properties")
    assert str(info.value) == (
        "mm2.properties:6: a.sasl.mechanism: GSSAPI (Kerberos) is not supported by mm2ctl; "
        "connect with one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER"
    )


def test_strimzis_library_becomes_kafkas_own_for_java_clients() -> None:
    settings = {
        **BASE,
        "sasl.login.callback.handler.class": STRIMZI_HANDLER,
        "sasl.jaas.config": f'{MODULE} required oauth.client.id="mm2" oauth.client.secret="{SECRET}" '
        'oauth.token.endpoint.uri="https://idp.example/oauth2/token";',
    }
    java = portable_java_client_settings(settings)
    assert java["sasl.login.callback.handler.class"] == KAFKA_HANDLER
    assert java["sasl.oauthbearer.token.endpoint.url"] == "https://idp.example/oauth2/token"
    assert java["sasl.jaas.config"] == f'{MODULE} required clientId="mm2" clientSecret="{SECRET}";'
    assert to_librdkafka(java)["sasl.oauthbearer.client.secret"] == SECRET  # it still reads the same way
