"""Translate MM2's Java client security settings into confluent-kafka (librdkafka) settings.

mm2ctl must reach the same clusters MM2 reaches, with the credentials already in the MM2 file; asking
users to restate them for librdkafka would be a second, drifting copy. The Java and librdkafka settings
overlap only partly, so each branch below is deliberate:

* ``security.protocol`` PLAINTEXT / SSL / SASL_PLAINTEXT / SASL_SSL (Java matches it case-insensitively).
  As in Java, ``ssl.*`` is only read when the protocol uses TLS and ``sasl.*`` only when it uses SASL.
* ``sasl.mechanism`` PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512, with the username and password taken from the
  single login module in ``sasl.jaas.config``.
* ``sasl.mechanism`` OAUTHBEARER (:mod:`mm2ctl.core.security.oauth`): Kafka's own OIDC client (client credentials or
  a JWT-bearer assertion, from the ``sasl.oauthbearer.*`` settings or the login module's ``clientId``,
  ``clientSecret`` and ``scope``), Strimzi's OAuth client library (``oauth.*`` login module options) and
  Kafka's unsecured JWTs, each as librdkafka's ``sasl.oauthbearer.*`` equivalent.
* GSSAPI (Kerberos) is the one mechanism mm2ctl refuses. Java's default mechanism is GSSAPI, so a SASL
  protocol with no mechanism set is refused too, naming the setting.
* Trust: ``ssl.truststore.type`` PEM (a file or inline ``ssl.truststore.certificates``) maps directly;
  PKCS12 and JKS truststores are converted to a private PEM file that lives as long as the process.
  Java's own default type is JKS, and since JDK 9 its JKS loader also opens PKCS12 files, so the file's
  magic bytes decide, exactly as they do for MM2.
* Identity: PKCS12 keystores are read natively by librdkafka; PEM keystores (a file, or inline
  ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``) map to ``ssl.key.*``/``ssl.certificate.*``.
  A JKS keystore (private key entries) is refused with the ``keytool`` command that converts it.
* ``ssl.endpoint.identification.algorithm``: Java's ``""`` is librdkafka's ``none``; ``https`` stays.

Secrets never reach a message, a repr or a log: errors name the *key*, never the value (to show a
translated config, pass it through :func:`mm2ctl.core.security.redaction.redact`). The JAAS parser lives in
:mod:`mm2ctl.core.security.jaas` and the keystore conversions in :mod:`mm2ctl.core.security.keystores`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.jaas import JaasSyntaxError, parse_jaas_config
from mm2ctl.core.security.keystores import (
    KeystoreError,
    jks_trusted_certs_to_pem,
    keytool_hint,
    normalize_pem,
    pem_file_for,
    pkcs12_certs_to_pem,
    sniff_store_type,
)
from mm2ctl.core.security.oauth import STRIMZI_LOGIN_HANDLER, OAuthError, oauth_to_librdkafka, portable_java_settings

# --- where a setting came from ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SettingOrigin:
    """The key as written in the MM2 file (``A.ssl.truststore.location``) and its line."""

    key: str
    line: int | None = None


class _Errors:
    """Builds ConfigErrors that point at the file line a Java setting came from."""

    def __init__(self, path: str | None, origins: Mapping[str, SettingOrigin] | None) -> None:
        self.path = path
        self.origins = origins or {}

    def __call__(self, name: str, message: str) -> ConfigError:
        origin = self.origins.get(name, SettingOrigin(name))
        return ConfigError(message, path=self.path, line=origin.line, key=origin.key)

    def key(self, name: str) -> str:
        return self.origins.get(name, SettingOrigin(name)).key


# --- translation ----------------------------------------------------------------------------------

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")


def _read(path: str, err: _Errors, name: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError as exc:
        raise err(name, f"file {path} does not exist") from exc
    except OSError as exc:
        raise err(name, f"cannot read {path}: {exc.strerror or exc}") from exc


def _translate_trust(s: Mapping[str, str], out: dict[str, str], err: _Errors, materialize: bool) -> None:
    location = s.get("ssl.truststore.location", "").strip()
    inline = s.get("ssl.truststore.certificates", "").strip()
    declared = s.get("ssl.truststore.type", "").strip().upper()
    store_type = declared or "JKS"  # Java's default
    password = s.get("ssl.truststore.password")
    if inline:
        if declared != "PEM":
            raise err("ssl.truststore.certificates", "is only supported with ssl.truststore.type=PEM")
        if location:
            raise err("ssl.truststore.certificates", "cannot be set together with ssl.truststore.location")
        try:
            out["ssl.ca.pem"] = normalize_pem(inline)
        except ValueError as exc:
            raise err("ssl.truststore.certificates", "holds no PEM certificate block") from exc
        return
    if not location:
        return  # Java trusts the JVM's default CAs; librdkafka the system's.
    if store_type == "PEM":
        if password:
            raise err("ssl.truststore.password", "cannot be set for a PEM truststore (Java rejects it too)")
        out["ssl.ca.location"] = location
        return
    if store_type not in ("JKS", "PKCS12"):
        raise err("ssl.truststore.type", f"unsupported truststore type {store_type} (use PEM, PKCS12 or JKS)")
    if not materialize:
        return
    data = _read(location, err, "ssl.truststore.location")
    actual = sniff_store_type(data)
    try:
        if actual == "PKCS12":
            pem = pkcs12_certs_to_pem(data, password)
        elif actual == "JKS":
            pem = jks_trusted_certs_to_pem(data, password)
        elif actual == "PEM" and store_type == "JKS" and not declared:
            raise err(
                "ssl.truststore.type",
                "is not set, so Java reads a JKS file, but the file is PEM: set ssl.truststore.type=PEM",
            )
        else:
            raise err(
                "ssl.truststore.location",
                f"{location} is a {actual} file, not a {store_type} truststore"
                + (
                    f"; {keytool_hint(location, err.key('ssl.truststore.password'), 'truststore')}"
                    if actual == "JCEKS"
                    else ""
                ),
            )
    except KeystoreError as exc:
        raise err("ssl.truststore.location", f"cannot use truststore {location}: {exc}") from exc
    out["ssl.ca.location"] = pem_file_for(location, password, pem)


def _translate_identity(s: Mapping[str, str], out: dict[str, str], err: _Errors, materialize: bool) -> None:
    location = s.get("ssl.keystore.location", "").strip()
    inline_key = s.get("ssl.keystore.key", "")
    inline_chain = s.get("ssl.keystore.certificate.chain", "")
    declared = s.get("ssl.keystore.type", "").strip().upper()
    store_type = declared or "JKS"
    key_password = s.get("ssl.key.password")
    if inline_key.strip() or inline_chain.strip():
        if declared != "PEM":
            raise err(
                "ssl.keystore.key" if inline_key.strip() else "ssl.keystore.certificate.chain",
                "inline keys are only supported with ssl.keystore.type=PEM",
            )
        if not (inline_key.strip() and inline_chain.strip()):
            missing = "ssl.keystore.certificate.chain" if inline_key.strip() else "ssl.keystore.key"
            raise err(missing, "must be set too: an inline PEM keystore needs both a key and a certificate chain")
        if location:
            raise err("ssl.keystore.key", "cannot be set together with ssl.keystore.location")
        try:
            out["ssl.key.pem"] = normalize_pem(inline_key)
        except ValueError as exc:
            raise err("ssl.keystore.key", "holds no PEM private key block") from exc
        try:
            out["ssl.certificate.pem"] = normalize_pem(inline_chain)
        except ValueError as exc:
            raise err("ssl.keystore.certificate.chain", "holds no PEM certificate block") from exc
        if key_password:
            out["ssl.key.password"] = key_password
        return
    if not location:
        return
    password = s.get("ssl.keystore.password")
    if store_type == "PEM":
        if password:
            raise err(
                "ssl.keystore.password",
                "cannot be set for a PEM keystore; only ssl.key.password may be (Java rejects it too)",
            )
        out["ssl.key.location"] = location
        out["ssl.certificate.location"] = location
        if key_password:
            out["ssl.key.password"] = key_password
        return
    if store_type not in ("JKS", "PKCS12"):
        raise err("ssl.keystore.type", f"unsupported keystore type {store_type} (use PEM, PKCS12 or JKS)")
    if store_type == "JKS":
        if not materialize:
            return
        actual = sniff_store_type(_read(location, err, "ssl.keystore.location"))
        if actual == "PEM" and not declared:
            raise err(
                "ssl.keystore.type",
                "is not set, so Java reads a JKS file, but the file is PEM: set ssl.keystore.type=PEM",
            )
        if actual != "PKCS12":  # JDK 9+ opens PKCS12 files declared as JKS; librdkafka reads those.
            raise err("ssl.keystore.location", keytool_hint(location, err.key("ssl.keystore.password"), "keystore"))
    out["ssl.keystore.location"] = location
    if password:
        out["ssl.keystore.password"] = password


def _translate_sasl(s: Mapping[str, str], out: dict[str, str], err: _Errors) -> None:
    mechanism = s.get("sasl.mechanism", "").strip().upper()
    if not mechanism:
        raise err(
            "sasl.mechanism",
            "is not set, and Java's default is GSSAPI (Kerberos), which mm2ctl "
            f"does not support; set one of {', '.join(SUPPORTED_MECHANISMS)}",
        )
    if mechanism == "GSSAPI":
        raise err(
            "sasl.mechanism",
            f"GSSAPI (Kerberos) is not supported by mm2ctl; connect with one of {', '.join(SUPPORTED_MECHANISMS)}",
        )
    if mechanism not in SUPPORTED_MECHANISMS:
        raise err(
            "sasl.mechanism",
            f"{mechanism} is not supported by mm2ctl (supported: {', '.join(SUPPORTED_MECHANISMS)})",
        )
    jaas = s.get("sasl.jaas.config", "")
    if not jaas.strip():
        raise err(
            "sasl.jaas.config",
            "is not set; mm2ctl cannot read a JVM-wide JAAS file "
            "(java.security.auth.login.config): put the login module in sasl.jaas.config",
        )
    try:
        entries = parse_jaas_config(jaas)
    except JaasSyntaxError as exc:
        raise err("sasl.jaas.config", f"cannot be parsed: {exc}") from exc
    if len(entries) != 1:
        raise err("sasl.jaas.config", f"contains {len(entries)} login modules, should be 1 module")
    if mechanism == "OAUTHBEARER":
        try:
            out.update(oauth_to_librdkafka(s, entries[0]))
        except OAuthError as exc:
            raise err(exc.setting, exc.reason) from exc
        return
    options = entries[0].options
    for option in ("username", "password"):
        if not options.get(option):
            raise err("sasl.jaas.config", f'has no {option}="..." option in its login module')
    out["sasl.mechanism"] = mechanism
    out["sasl.username"] = options["username"]
    out["sasl.password"] = options["password"]


def to_librdkafka(
    settings: Mapping[str, str],
    *,
    path: str | None = None,
    origins: Mapping[str, SettingOrigin] | None = None,
    materialize: bool = True,
) -> dict[str, str]:
    """librdkafka settings for the Java client ``settings`` (``bootstrap.servers``, security, ssl, sasl).

    ``origins`` maps each Java setting name to where it was written, so errors name the file, line and
    key. With ``materialize=False`` nothing is read from disk: the call only validates, and the
    keystore-derived entries are left out. Other Java client settings have no librdkafka meaning and are
    not carried over.
    """
    err = _Errors(path, origins)
    out: dict[str, str] = {}
    bootstrap = settings.get("bootstrap.servers", "")
    servers = [s for s in (p.strip() for p in bootstrap.split(",")) if s]
    if servers:
        out["bootstrap.servers"] = ",".join(servers)
    protocol = settings.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise err("security.protocol", f"{protocol or '(empty)'} is not one of {', '.join(PROTOCOLS)}")
    out["security.protocol"] = protocol
    if protocol in ("SSL", "SASL_SSL"):
        algorithm = settings.get("ssl.endpoint.identification.algorithm", "https").strip()
        if algorithm.lower() == "https":
            out["ssl.endpoint.identification.algorithm"] = "https"
        elif algorithm == "":
            out["ssl.endpoint.identification.algorithm"] = "none"
        else:
            raise err(
                "ssl.endpoint.identification.algorithm",
                f"{algorithm} is not supported (use https, or an empty value to turn hostname verification off)",
            )
        _translate_trust(settings, out, err, materialize)
        _translate_identity(settings, out, err, materialize)
    if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
        _translate_sasl(settings, out, err)
    return out


def portable_java_client_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """MM2's Java client ``settings`` as a Java client without MM2's plugins reads them (Spark's Kafka source):
    Strimzi's OAuth client library becomes Kafka's own OIDC client; everything else is kept."""
    handler = settings.get("sasl.login.callback.handler.class", "").strip()
    if handler != STRIMZI_LOGIN_HANDLER:
        return dict(settings)
    try:
        entries = parse_jaas_config(settings.get("sasl.jaas.config", ""))
    except JaasSyntaxError:
        return dict(settings)  # to_librdkafka reports it, naming the setting
    return portable_java_settings(settings, entries[0]) if len(entries) == 1 else dict(settings)
