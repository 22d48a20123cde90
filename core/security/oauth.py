"""SASL/OAUTHBEARER: the Java OAuth settings MM2 uses, as librdkafka's, and as Java clients other than MM2's read them.

MM2 authenticates with OAUTHBEARER in one of three ways, told apart by ``sasl.login.callback.handler.class``:

* **Kafka's own OIDC client** (``org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler``,
  or its older ``…oauthbearer.secured.`` alias). The token endpoint is ``sasl.oauthbearer.token.endpoint.url``.
  The client id, secret and scope come from ``sasl.oauthbearer.client.credentials.client.id``,
  ``…client.secret`` and ``sasl.oauthbearer.scope`` (Kafka 4.1+), else from the login module's ``clientId``,
  ``clientSecret`` and ``scope`` options (what every release reads; ``ConfigOrJaas`` prefers the former).
  Kafka 4.1's ``JwtBearerJwtRetriever`` (``sasl.oauthbearer.jwt.retriever.class``) signs an assertion
  instead of sending a secret; librdkafka implements the same grant under the same ``assertion.*`` names.
  A ``file:`` token endpoint (a token someone else writes to a file) has no librdkafka equivalent.
* **Strimzi's OAuth client library** (``io.strimzi.kafka.oauth.client.JaasClientOauthLoginCallbackHandler``),
  which Strimzi configures for ``authentication.type: oauth``: the login module's ``oauth.token.endpoint.uri``,
  ``oauth.client.id``, ``oauth.client.secret`` and ``oauth.scope``. Its other grants (a fixed access or
  refresh token, a password grant, a client assertion) have no librdkafka equivalent.
* **Kafka's unsecured JWTs** (no handler class): the login module's ``unsecuredLoginStringClaim_sub`` names
  the principal; librdkafka makes the same unsigned token with ``enable.sasl.oauthbearer.unsecure.jwt``.

Each translation gives librdkafka ``sasl.oauthbearer.method=oidc`` with the client id and secret, the token
endpoint and the scope, which librdkafka uses to fetch and refresh tokens itself. Values are secrets: errors
name the setting, never its value.
"""

from __future__ import annotations

from collections.abc import Mapping

from mm2ctl.core.security.jaas import JaasEntry

KAFKA_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
KAFKA_LOGIN_HANDLER_OLD = "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerLoginCallbackHandler"
STRIMZI_LOGIN_HANDLER = "io.strimzi.kafka.oauth.client.JaasClientOauthLoginCallbackHandler"
LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
JWT_BEARER_RETRIEVER = "org.apache.kafka.common.security.oauthbearer.JwtBearerJwtRetriever"
_CLIENT_CREDENTIALS_RETRIEVERS = (
    "org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever",
    "org.apache.kafka.common.security.oauthbearer.ClientCredentialsJwtRetriever",
)

#: Kafka 4.1's jwt-bearer settings and librdkafka's names for the same thing.
_ASSERTION_KEYS = {
    "sasl.oauthbearer.assertion.algorithm": "sasl.oauthbearer.assertion.algorithm",
    "sasl.oauthbearer.assertion.claim.aud": "sasl.oauthbearer.assertion.claim.aud",
    "sasl.oauthbearer.assertion.claim.exp.seconds": "sasl.oauthbearer.assertion.claim.exp.seconds",
    "sasl.oauthbearer.assertion.claim.iss": "sasl.oauthbearer.assertion.claim.iss",
    "sasl.oauthbearer.assertion.claim.jti.include": "sasl.oauthbearer.assertion.claim.jti.include",
    "sasl.oauthbearer.assertion.claim.nbf.seconds": "sasl.oauthbearer.assertion.claim.nbf.seconds",
    "sasl.oauthbearer.assertion.claim.sub": "sasl.oauthbearer.assertion.claim.sub",
    "sasl.oauthbearer.assertion.file": "sasl.oauthbearer.assertion.file",
    "sasl.oauthbearer.assertion.private.key.file": "sasl.oauthbearer.assertion.private.key.file",
    "sasl.oauthbearer.assertion.private.key.passphrase": "sasl.oauthbearer.assertion.private.key.passphrase",
    "sasl.oauthbearer.assertion.template.file": "sasl.oauthbearer.assertion.jwt.template.file",
}
#: Strimzi OAuth options for grants librdkafka cannot make.
_STRIMZI_UNSUPPORTED = (
    "oauth.access.token",
    "oauth.access.token.location",
    "oauth.refresh.token",
    "oauth.refresh.token.location",
    "oauth.password.grant.username",
    "oauth.password.grant.password",
    "oauth.client.assertion",
    "oauth.client.assertion.location",
)


class OAuthError(ValueError):
    """An OAUTHBEARER setup librdkafka cannot follow. ``setting`` names the Java setting (or login-module
    option, as ``sasl.jaas.config``) at fault; ``reason`` never holds a value."""

    def __init__(self, setting: str, reason: str) -> None:
        super().__init__(f"{setting}: {reason}")
        self.setting = setting
        self.reason = reason


def _check_module(entry: JaasEntry) -> None:
    if entry.module != LOGIN_MODULE:
        raise OAuthError("sasl.jaas.config", f"OAUTHBEARER needs {LOGIN_MODULE}, not {entry.module}")


def _first(settings: Mapping[str, str], key: str, options: Mapping[str, str], option: str) -> str:
    return (settings.get(key) or "").strip() or (options.get(option) or "").strip()


def _kafka_oidc(settings: Mapping[str, str], options: Mapping[str, str]) -> dict[str, str]:
    endpoint = settings.get("sasl.oauthbearer.token.endpoint.url", "").strip()
    if not endpoint:
        raise OAuthError("sasl.oauthbearer.token.endpoint.url", "is required by Kafka's OAuth login handler")
    if endpoint.lower().startswith("file:"):
        raise OAuthError(
            "sasl.oauthbearer.token.endpoint.url",
            "names a token file; librdkafka fetches its own tokens, so give the identity provider's token endpoint",
        )
    out = {"sasl.oauthbearer.method": "oidc", "sasl.oauthbearer.token.endpoint.url": endpoint}
    retriever = settings.get("sasl.oauthbearer.jwt.retriever.class", "").strip()
    if retriever == JWT_BEARER_RETRIEVER:
        out["sasl.oauthbearer.grant.type"] = "urn:ietf:params:oauth:grant-type:jwt-bearer"
        for java, rd in _ASSERTION_KEYS.items():
            if settings.get(java, "").strip():
                out[rd] = settings[java].strip()
    elif retriever and retriever not in _CLIENT_CREDENTIALS_RETRIEVERS:
        raise OAuthError("sasl.oauthbearer.jwt.retriever.class", f"{retriever} has no librdkafka equivalent")
    else:
        client_id = _first(settings, "sasl.oauthbearer.client.credentials.client.id", options, "clientId")
        secret = _first(settings, "sasl.oauthbearer.client.credentials.client.secret", options, "clientSecret")
        if not client_id:
            raise OAuthError(
                "sasl.jaas.config", 'has no clientId="..." (nor sasl.oauthbearer.client.credentials.client.id)'
            )
        if not secret:
            raise OAuthError(
                "sasl.jaas.config", 'has no clientSecret="..." (nor sasl.oauthbearer.client.credentials.client.secret)'
            )
        out["sasl.oauthbearer.client.id"] = client_id
        out["sasl.oauthbearer.client.secret"] = secret
    scope = _first(settings, "sasl.oauthbearer.scope", options, "scope")
    if scope:
        out["sasl.oauthbearer.scope"] = scope
    return out


def _strimzi_oidc(options: Mapping[str, str]) -> dict[str, str]:
    for option in _STRIMZI_UNSUPPORTED:
        if options.get(option):
            raise OAuthError(
                "sasl.jaas.config",
                f"uses {option}: this Strimzi OAuth grant has no librdkafka equivalent; "
                "use a client id and secret (oauth.client.id, oauth.client.secret)",
            )
    endpoint = (options.get("oauth.token.endpoint.uri") or "").strip()
    client_id = (options.get("oauth.client.id") or "").strip()
    secret = (options.get("oauth.client.secret") or "").strip()
    for name, value in (("oauth.token.endpoint.uri", endpoint), ("oauth.client.id", client_id)):
        if not value:
            raise OAuthError("sasl.jaas.config", f'has no {name}="..." option in its login module')
    if not secret:
        raise OAuthError("sasl.jaas.config", 'has no oauth.client.secret="..." option in its login module')
    out = {
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": endpoint,
        "sasl.oauthbearer.client.id": client_id,
        "sasl.oauthbearer.client.secret": secret,
    }
    scope = (options.get("oauth.scope") or "").strip()
    if scope:
        out["sasl.oauthbearer.scope"] = scope
    return out


def _unsecured(options: Mapping[str, str]) -> dict[str, str]:
    principal = (options.get("unsecuredLoginStringClaim_sub") or "").strip()
    if not principal:
        raise OAuthError(
            "sasl.login.callback.handler.class",
            "is not set, so Java makes unsecured JWTs, and the login module has no "
            'unsecuredLoginStringClaim_sub="..." to name the principal; for OIDC set it to ' + KAFKA_LOGIN_HANDLER,
        )
    config = [f"principal={principal}"]
    scope = (options.get("unsecuredLoginListClaim_scope") or "").strip()
    if scope:
        # Java splits a list claim on its first character; librdkafka takes a comma-separated list.
        items = [s for s in scope[1:].split(scope[0])] if not scope[0].isalnum() else [scope]
        config.append("scope=" + ",".join(i for i in items if i))
    life = (options.get("unsecuredLoginLifetimeSeconds") or "").strip()
    if life:
        config.append(f"lifeSeconds={life}")
    return {"enable.sasl.oauthbearer.unsecure.jwt": "true", "sasl.oauthbearer.config": " ".join(config)}


def oauth_to_librdkafka(settings: Mapping[str, str], entry: JaasEntry) -> dict[str, str]:
    """librdkafka's settings for MM2's OAUTHBEARER client ``settings`` and its one login module ``entry``."""
    _check_module(entry)
    handler = settings.get("sasl.login.callback.handler.class", "").strip()
    if handler in (KAFKA_LOGIN_HANDLER, KAFKA_LOGIN_HANDLER_OLD):
        translated = _kafka_oidc(settings, entry.options)
    elif handler == STRIMZI_LOGIN_HANDLER:
        translated = _strimzi_oidc(entry.options)
    elif not handler:
        translated = _unsecured(entry.options)
    else:
        raise OAuthError(
            "sasl.login.callback.handler.class",
            f"{handler} is custom code mm2ctl cannot run; use {KAFKA_LOGIN_HANDLER} or {STRIMZI_LOGIN_HANDLER}",
        )
    return {"sasl.mechanism": "OAUTHBEARER", **translated}


def _jaas_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def portable_java_settings(settings: Mapping[str, str], entry: JaasEntry) -> dict[str, str]:
    """``settings`` with Strimzi's OAuth client library replaced by Kafka's own OIDC client.

    mm2ctl's own Java clients (Spark's Kafka source) do not carry Strimzi's library, and read the client id,
    secret and scope from the login module, which every Kafka release does.
    """
    out = dict(settings)
    options = entry.options
    out["sasl.login.callback.handler.class"] = KAFKA_LOGIN_HANDLER
    out["sasl.oauthbearer.token.endpoint.url"] = (options.get("oauth.token.endpoint.uri") or "").strip()
    module = [LOGIN_MODULE, "required"]
    renamed = (("clientId", "oauth.client.id"), ("clientSecret", "oauth.client.secret"), ("scope", "oauth.scope"))
    for java, option in renamed:
        value = (options.get(option) or "").strip()
        if value:
            module.append(f"{java}={_jaas_quote(value)}")
    out["sasl.jaas.config"] = " ".join(module) + ";"
    return out
