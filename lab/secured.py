"""The secured lab (``mm2ctl lab up --security sasl-ssl``): TLS, SASL users, an OAuth identity provider and ACLs.

Each cluster gets three listeners on loopback:

* ``SASL_SSL`` (SCRAM-SHA-512), the brokers' own and everyone's default. Users are put in the cluster
  metadata when the storage is formatted, as salted credentials, so no clear password is on a command line.
* ``OAUTH``, a SASL_SSL listener for OAUTHBEARER that validates JWTs itself: their RS256 signature against the
  lab's JWKS, their issuer, audience and expiry (Kafka's ``OAuthBearerValidatorCallbackHandler``). The lab
  serves a real token endpoint and JWKS on loopback (``lab.token_endpoint``), so clients use the OIDC
  client-credentials grant exactly as against a production identity provider; Kafka's unsecured-JWT mode is
  not used.
* ``CONTROLLER`` (SASL_PLAINTEXT, PLAIN): KRaft controllers cannot authenticate SCRAM users, whose
  credentials live in the metadata they serve.

TLS certificates (a CA, and a broker certificate for ``127.0.0.1``/``localhost``) are generated at each boot
with ``cryptography``. KRaft's ``StandardAuthorizer`` enforces ACLs; the principals are:

* ``User:mm2-admin``, a super user: MirrorMaker 2 (the Connect worker and its connectors) and the lab itself;
* ``User:mm2ctl``, least privilege: the ACLs of README's table, nothing more. It authenticates with SCRAM
  (``mm2.properties``) or as OAuth client ``mm2ctl`` (``mm2-oauth.properties``), whose tokens carry
  ``sub=mm2ctl``: the same principal either way.

Secrets live in the lab folder's ``secrets/`` in the layout Kubernetes mounts Secrets (``<secret>/<key>``,
files 0600): the folder the lab's KafkaMirrorMaker2 resource is read with.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import ipaddress
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType
from confluent_kafka.admin import ResourceType as KafkaResource
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SECURITY_MODES = ("none", "sasl-ssl")

ADMIN = "mm2-admin"
MM2CTL = "mm2ctl"
CONTROLLER = "controller"
#: Kubernetes-style Secret names in ``secrets/``.
CA_SECRET = "lab-cluster-ca-cert"
OAUTH_CLIENT_SECRET = "mm2ctl-oauth"
AUDIENCE = "kafka"
SCRAM_ITERATIONS = 4096

SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH_LOGIN = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTH_LOGIN_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
OAUTH_VALIDATOR = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def _write_private(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data.encode() if isinstance(data, str) else data)
    return path


@dataclass(frozen=True)
class LabSecurity:
    """Where a secured lab keeps its material, and what clients need to reach it. Secrets are read from the
    files when asked for, never kept in ``lab.json``."""

    folder: str  # the lab folder

    @property
    def secrets_dir(self) -> Path:
        return Path(self.folder) / "secrets"

    @property
    def tls_dir(self) -> Path:
        return Path(self.folder) / "tls"

    @property
    def ca_file(self) -> Path:
        return self.secrets_dir / CA_SECRET / "ca.crt"

    @property
    def broker_keystore(self) -> Path:
        return self.tls_dir / "broker.pem"

    @property
    def signing_key(self) -> Path:
        return Path(self.folder) / "oauth" / "signing-key.pem"

    @property
    def issued_tokens(self) -> Path:
        """Every access token the lab's identity provider issued, one per line: what must never leak."""
        return Path(self.folder) / "oauth" / "issued-tokens"

    def password(self, user: str) -> str:
        return (self.secrets_dir / user / "password").read_text()

    def oauth_client_secret(self) -> str:
        return (self.secrets_dir / OAUTH_CLIENT_SECRET / "client-secret").read_text()

    def every_secret(self) -> list[str]:
        """Every password, client secret and private key the lab made (for tests proving none leaked)."""
        found = [p.read_text() for p in self.secrets_dir.rglob("*") if p.is_file() and p.parent.name != CA_SECRET]
        for key in (self.broker_keystore, self.signing_key):
            text = key.read_text()
            body = text.split("-----BEGIN PRIVATE KEY-----")[1].split("-----END")[0]
            found.append("".join(body.split())[:64])  # a key's base64, as it would appear in a leak
        if self.issued_tokens.exists():
            found += [t for t in self.issued_tokens.read_text().split() if t]
        return found


# --- material -------------------------------------------------------------------------------------


def _certificate(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey, signer: ec.EllipticCurvePrivateKey
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
    )


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def generate(folder: Path) -> LabSecurity:
    """A fresh CA, broker certificate, user passwords, OAuth client secret and token-signing key."""
    security = LabSecurity(str(folder))
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mm2ctl lab CA")])
    ca = (
        _certificate(ca_name, ca_name, ca_key.public_key(), ca_key)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
        .sign(ca_key, hashes.SHA256())
    )
    broker_key = ec.generate_private_key(ec.SECP256R1())
    broker_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mm2ctl lab broker")])
    broker = (
        _certificate(broker_name, ca_name, broker_key.public_key(), ca_key)
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    _write_private(security.ca_file, ca_pem)
    security.ca_file.chmod(0o644)
    _write_private(
        security.broker_keystore, _pem_key(broker_key) + broker.public_bytes(serialization.Encoding.PEM) + ca_pem
    )
    for user in (ADMIN, MM2CTL, CONTROLLER):
        _write_private(security.secrets_dir / user / "password", secrets.token_hex(16))
    _write_private(security.secrets_dir / OAUTH_CLIENT_SECRET / "client-secret", secrets.token_hex(20))
    _write_private(security.signing_key, _pem_key(rsa.generate_private_key(public_exponent=65537, key_size=2048)))
    _write_private(security.issued_tokens, b"")
    return security


def scram_credential(user: str, password: str) -> str:
    """``kafka-storage format --add-scram`` argument for a user, salted here so the password stays off the
    command line (RFC 5802: SaltedPassword = PBKDF2-HMAC-SHA-512(password, salt, iterations))."""
    salt = secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, SCRAM_ITERATIONS)
    b64 = base64.b64encode
    return (
        f"SCRAM-SHA-512=[name={user},iterations={SCRAM_ITERATIONS},"
        f'salt="{b64(salt).decode()}",saltedpassword="{b64(salted).decode()}"]'
    )


# --- brokers --------------------------------------------------------------------------------------


def _jaas(module: str, **options: str) -> str:
    return f"{module} required " + " ".join(f'{k}="{v}"' for k, v in options.items()) + ";"


def broker_settings(
    security: LabSecurity, *, scram_port: int, oauth_port: int, controller_port: int, jwks_url: str, issuer: str
) -> dict[str, str]:
    """The server.properties entries of a secured broker (combined KRaft broker and controller)."""
    admin_pw, controller_pw = security.password(ADMIN), security.password(CONTROLLER)
    return {
        "listeners": f"SASL_SSL://127.0.0.1:{scram_port},OAUTH://127.0.0.1:{oauth_port},"
        f"CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"SASL_SSL://127.0.0.1:{scram_port},OAUTH://127.0.0.1:{oauth_port}",
        "listener.security.protocol.map": "SASL_SSL:SASL_SSL,OAUTH:SASL_SSL,CONTROLLER:SASL_PLAINTEXT",
        "inter.broker.listener.name": "SASL_SSL",
        "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.sasl_ssl.sasl.enabled.mechanisms": "SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": _jaas(SCRAM_LOGIN, username=ADMIN, password=admin_pw),
        "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": _jaas(
            PLAIN_LOGIN, username=CONTROLLER, password=controller_pw, **{f"user_{CONTROLLER}": controller_pw}
        ),
        "listener.name.oauth.sasl.enabled.mechanisms": "OAUTHBEARER",
        "listener.name.oauth.oauthbearer.sasl.jaas.config": f"{OAUTH_LOGIN} required;",
        "listener.name.oauth.oauthbearer.sasl.server.callback.handler.class": OAUTH_VALIDATOR,
        "sasl.oauthbearer.jwks.endpoint.url": jwks_url,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": issuer,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(security.broker_keystore),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(security.ca_file),
        "ssl.client.auth": "none",
        "authorizer.class.name": AUTHORIZER,
        "super.users": f"User:{ADMIN};User:{CONTROLLER}",
        "allow.everyone.if.no.acl.found": "false",
    }


# --- clients --------------------------------------------------------------------------------------


def java_client_settings(security: LabSecurity, user: str, *, token_url: str | None = None) -> dict[str, str]:
    """Java client settings (MM2's format) for ``user``: SCRAM, or with ``token_url`` OAuth client credentials."""
    common = {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(security.ca_file),
    }
    if token_url is None:
        return {
            **common,
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": _jaas(SCRAM_LOGIN, username=user, password=security.password(user)),
        }
    return {
        **common,
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.login.callback.handler.class": OAUTH_LOGIN_HANDLER,
        "sasl.oauthbearer.token.endpoint.url": token_url,
        "sasl.jaas.config": _jaas(OAUTH_LOGIN, clientId=user, clientSecret=security.oauth_client_secret()),
    }


def client_config(security: LabSecurity, bootstrap: str, user: str = ADMIN) -> dict[str, str]:
    """A confluent-kafka config for ``user`` over SCRAM (the lab's own clients and tests)."""
    return {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(security.ca_file),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": user,
        "sasl.password": security.password(user),
    }


def prefixed(prefix: str, settings: Mapping[str, str]) -> dict[str, str]:
    return {f"{prefix}{k}": v for k, v in settings.items()}


# --- ACLs -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabAcl:
    """ALLOW ``operations`` on a resource to ``User:mm2ctl``: one row of README's ACL table, on every cluster."""

    resource: str  # topic | group
    name: str
    pattern: str  # literal | prefixed
    operations: tuple[str, ...]


#: What mm2ctl's principal may do in the secured lab: what inspect, plan, apply and rollback need (README's ACL
#: table), granted on both clusters since either can be a flow's source or target.
MM2CTL_ACLS = (
    LabAcl("topic", "*", "literal", ("DESCRIBE", "READ")),
    LabAcl("group", "*", "literal", ("DESCRIBE", "READ", "DELETE")),
    LabAcl("topic", "mm2-offset-syncs", "prefixed", ("DELETE", "WRITE")),
    LabAcl("topic", "connect-offsets", "literal", ("WRITE",)),
)


def acl_bindings(acl: LabAcl, principal: str = f"User:{MM2CTL}") -> list[AclBinding]:
    """confluent-kafka ``AclBinding``s for one row (one per operation)."""

    return [
        AclBinding(
            KafkaResource[acl.resource.upper()],
            acl.name,
            ResourcePatternType[acl.pattern.upper()],
            principal,
            "*",
            AclOperation[op],
            AclPermissionType.ALLOW,
        )
        for op in acl.operations
    ]


def grant_acls(admin_config: Mapping[str, str], acls: tuple[LabAcl, ...] = MM2CTL_ACLS) -> None:
    """Create the ACLs on the cluster ``admin_config`` reaches (as the super user)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({**admin_config, "log_level": 0})
    bindings = [b for acl in acls for b in acl_bindings(acl)]
    for future in admin.create_acls(bindings, request_timeout=30).values():
        future.result()
