"""Java client security settings -> confluent-kafka settings, every branch, with a throwaway PKI."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import NameOID

from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.client_settings import SettingOrigin, to_librdkafka
from mm2ctl.core.security.jaas import parse_jaas_config
from mm2ctl.core.security.keystores import normalize_pem, sniff_store_type
from mm2ctl.core.security.redaction import is_secret_key, redact

SECRET = "s3cr3t-Value"  # every secret in this module; never allowed in a message


@dataclass(frozen=True)
class Pki:
    ca_pem: str
    ca_pem_path: Path
    client_pem_path: Path  # key + chain in one file
    key_pem: str
    chain_pem: str
    p12_keystore: Path
    p12_truststore: Path
    jks_truststore: Path
    jks_keystore: Path


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer_key: ec.EllipticCurvePrivateKey,
    issuer: str,
    ca: bool,
) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
        .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        .sign(issuer_key, hashes.SHA256())
    )


def _jks(entries: list[tuple[int, bytes]], password: str) -> bytes:
    """A JKS v2 file: tag 2 entries hold a certificate, tag 1 a (fake) sealed private key."""
    body = struct.pack(">III", 0xFEEDFEED, 2, len(entries))
    for n, (tag, der) in enumerate(entries):
        alias = f"entry{n}".encode()
        body += struct.pack(">IH", tag, len(alias)) + alias + struct.pack(">Q", 0)
        if tag == 1:
            body += struct.pack(">I", 8) + b"\x00" * 8 + struct.pack(">I", 1)
        body += struct.pack(">H", 5) + b"X.509" + struct.pack(">I", len(der)) + der
    return body + hashlib.sha1(password.encode("utf-16-be") + b"Mighty Aphrodite" + body).digest()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    d = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = _cert("mm2ctl test CA", ca_key, ca_key, "mm2ctl test CA", True)
    key = ec.generate_private_key(ec.SECP256R1())
    cert = _cert("mirror-maker", key, ca_key, "mm2ctl test CA", False)
    pem = serialization.Encoding.PEM
    ca_pem = ca.public_bytes(pem).decode()
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    chain_pem = cert.public_bytes(pem).decode() + ca_pem
    (d / "ca.pem").write_text(ca_pem)
    (d / "client.pem").write_text(key_pem + chain_pem)
    enc = serialization.BestAvailableEncryption(SECRET.encode())
    (d / "client.p12").write_bytes(pkcs12.serialize_key_and_certificates(b"client", key, cert, [ca], enc))
    (d / "trust.p12").write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca], enc))
    der = ca.public_bytes(serialization.Encoding.DER)
    (d / "trust.jks").write_bytes(_jks([(2, der)], SECRET))
    (d / "client.jks").write_bytes(_jks([(1, der)], SECRET))
    return Pki(
        ca_pem,
        d / "ca.pem",
        d / "client.pem",
        key_pem,
        chain_pem,
        d / "client.p12",
        d / "trust.p12",
        d / "trust.jks",
        d / "client.jks",
    )


def _assert_safe(exc: ConfigError) -> None:
    assert SECRET not in str(exc)
    assert "Traceback" not in str(exc)


# --- protocol and basics --------------------------------------------------------------------------


def test_plaintext_defaults() -> None:
    assert to_librdkafka({"bootstrap.servers": " a:9092 , b:9092 "}) == {
        "bootstrap.servers": "a:9092,b:9092",
        "security.protocol": "PLAINTEXT",
    }


def test_protocol_is_case_insensitive_and_ssl_ignored_without_tls() -> None:
    out = to_librdkafka({"security.protocol": "plaintext", "ssl.truststore.location": "/nope.jks"})
    assert out == {"security.protocol": "PLAINTEXT"}


def test_unknown_protocol_names_file_line_and_key() -> None:
    origins = {"security.protocol": SettingOrigin("A.security.protocol", 7)}
    with pytest.raises(ConfigError) as info:
        to_librdkafka({"security.protocol": "TLS"}, path="mm2.properties", origins=origins)
    assert str(info.value) == (
        "mm2.properties:7: A.security.protocol: TLS is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
    )


@pytest.mark.parametrize(
    ("java", "librdkafka"), [(None, "https"), ("https", "https"), ("HTTPS", "https"), ("", "none")]
)
def test_endpoint_identification(java: str | None, librdkafka: str) -> None:
    settings = {"security.protocol": "SSL"}
    if java is not None:
        settings["ssl.endpoint.identification.algorithm"] = java
    assert to_librdkafka(settings)["ssl.endpoint.identification.algorithm"] == librdkafka


def test_endpoint_identification_unknown() -> None:
    with pytest.raises(ConfigError, match="ldap is not supported"):
        to_librdkafka({"security.protocol": "SSL", "ssl.endpoint.identification.algorithm": "ldap"})


# --- SASL -----------------------------------------------------------------------------------------

PLAIN_JAAS = f'org.apache.kafka.common.security.plain.PlainLoginModule required username="alice" password="{SECRET}";'


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "scram-sha-512"])
def test_sasl_mechanisms(mechanism: str) -> None:
    jaas = (
        PLAIN_JAAS if mechanism == "PLAIN" else PLAIN_JAAS.replace("plain.PlainLoginModule", "scram.ScramLoginModule")
    )
    out = to_librdkafka({"security.protocol": "SASL_SSL", "sasl.mechanism": mechanism, "sasl.jaas.config": jaas})
    assert out["sasl.mechanism"] == mechanism.upper()
    assert out["sasl.username"] == "alice"
    assert out["sasl.password"] == SECRET
    assert out["security.protocol"] == "SASL_SSL"


def test_sasl_plaintext_has_no_ssl_settings() -> None:
    out = to_librdkafka(
        {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS}
    )
    assert not any(k.startswith("ssl.") for k in out)


@pytest.mark.parametrize(
    ("jaas", "username", "password"),
    [
        pytest.param('M required username="a b" password="p;q";', "a b", "p;q", id="spaces-and-semicolon-in-quotes"),
        pytest.param('M required username="a\\"b" password="x\\\\y";', 'a"b', "x\\y", id="escaped-quotes"),
        pytest.param("M required username='sq' password='x';", "sq", "x", id="single-quotes"),
        pytest.param("M required username=bare password=word_1-2;", "bare", "word_1-2", id="unquoted"),
        pytest.param('M REQUIRED\n  username="u"\n  password="p"\n;', "u", "p", id="newlines-and-upper-flag"),
        pytest.param('M required /* c */ username="u" // x\n password="p";', "u", "p", id="comments"),
    ],
)
def test_jaas_parsing(jaas: str, username: str, password: str) -> None:
    (entry,) = parse_jaas_config(jaas)
    assert entry.module == "M"
    assert entry.options == {"username": username, "password": password}
    assert password not in repr(entry)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        pytest.param({}, "sasl.mechanism: is not set, and Java's default is GSSAPI", id="default-gssapi"),
        pytest.param({"sasl.mechanism": "GSSAPI"}, "GSSAPI (Kerberos) is not supported", id="gssapi"),
        pytest.param({"sasl.mechanism": "OAUTHBEARER"}, "sasl.jaas.config: is not set", id="oauthbearer-no-jaas"),
        pytest.param({"sasl.mechanism": "PLAIN"}, "sasl.jaas.config: is not set", id="no-jaas"),
        pytest.param(
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'M required password="{SECRET}";'},
            'has no username="..." option',
            id="no-username",
        ),
        pytest.param(
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": 'M required username="alice";'},
            'has no password="..." option',
            id="no-password",
        ),
        pytest.param(
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'M required username="a" password="{SECRET}"'},
            "must end with ';'",
            id="no-semicolon",
        ),
        pytest.param(
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'M required username="a" password="{SECRET};'},
            "a quoted value is not closed",
            id="unclosed-quote",
        ),
        pytest.param(
            {"sasl.mechanism": "PLAIN", "sasl.jaas.config": f'M username="a" password="{SECRET}";'},
            "needs a control flag",
            id="no-flag",
        ),
        pytest.param(
            {
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": f'M required username="a" password="{SECRET}"; N required;',
            },
            "contains 2 login modules, should be 1 module",
            id="two-modules",
        ),
    ],
)
def test_sasl_errors_name_the_key_and_hide_the_secret(settings: dict[str, str], message: str) -> None:
    origins = {k: SettingOrigin(f"B.{k}", 12) for k in settings}
    with pytest.raises(ConfigError) as info:
        to_librdkafka({"security.protocol": "SASL_SSL", **settings}, path="mm2.properties", origins=origins)
    assert message in str(info.value)
    assert str(info.value).startswith("mm2.properties:")
    _assert_safe(info.value)


# --- truststores ----------------------------------------------------------------------------------


def test_pem_truststore_file(pki: Pki) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(pki.ca_pem_path),
        }
    )
    assert out["ssl.ca.location"] == str(pki.ca_pem_path)


def test_pem_truststore_inline_is_rewrapped(pki: Pki) -> None:
    one_line = pki.ca_pem.replace("\n", "")  # what a continued properties value looks like
    out = to_librdkafka(
        {"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.certificates": one_line}
    )
    assert out["ssl.ca.pem"] == pki.ca_pem
    x509.load_pem_x509_certificate(out["ssl.ca.pem"].encode())


@pytest.mark.parametrize("store", ["p12_truststore", "jks_truststore"])
@pytest.mark.parametrize("declared", ["PKCS12", "JKS", None])
def test_pkcs12_and_jks_truststores_become_a_private_pem(pki: Pki, store: str, declared: str | None) -> None:
    settings = {
        "security.protocol": "SSL",
        "ssl.truststore.location": str(getattr(pki, store)),
        "ssl.truststore.password": SECRET,
    }
    if declared:
        settings["ssl.truststore.type"] = declared
    # The JDK's dual-format keystores open either format under either type name; so do we.
    out = to_librdkafka(settings)
    ca_file = Path(out["ssl.ca.location"])
    assert stat.S_IMODE(os.stat(ca_file).st_mode) == 0o600
    (cert,) = x509.load_pem_x509_certificates(ca_file.read_bytes())
    assert cert.subject.rfc4514_string() == "CN=mm2ctl test CA"
    assert to_librdkafka(settings)["ssl.ca.location"] == str(ca_file)  # converted once per process


def test_jks_truststore_without_password_skips_the_integrity_check(pki: Pki) -> None:
    out = to_librdkafka({"security.protocol": "SSL", "ssl.truststore.location": str(pki.jks_truststore)})
    assert Path(out["ssl.ca.location"]).read_text().startswith("-----BEGIN CERTIFICATE-----")


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("jks_truststore", "the keystore password is wrong or the file was tampered with"),
        ("p12_truststore", "wrong or missing password"),
    ],
)
def test_truststore_wrong_password(pki: Pki, store: str, message: str) -> None:
    settings = {
        "security.protocol": "SSL",
        "ssl.truststore.location": str(getattr(pki, store)),
        "ssl.truststore.password": "not-" + SECRET,
    }
    with pytest.raises(ConfigError, match=message) as info:
        to_librdkafka(settings, path="mm2.properties")
    assert info.value.key == "ssl.truststore.location"
    assert "not-" + SECRET not in str(info.value)


def test_truststore_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.p12"
    origins = {"ssl.truststore.location": SettingOrigin("ssl.truststore.location", 4)}
    with pytest.raises(ConfigError) as info:
        to_librdkafka(
            {
                "security.protocol": "SSL",
                "ssl.truststore.type": "PKCS12",
                "ssl.truststore.location": str(missing),
            },
            path="f",
            origins=origins,
        )
    assert str(info.value) == f"f:4: ssl.truststore.location: file {missing} does not exist"


def test_truststore_validation_without_materializing_reads_nothing(tmp_path: Path) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(tmp_path / "absent.p12"),
        },
        materialize=False,
    )
    assert "ssl.ca.location" not in out


@pytest.mark.parametrize(
    ("settings", "key", "message"),
    [
        (
            {"ssl.truststore.type": "JKS", "ssl.truststore.certificates": "x"},
            "ssl.truststore.certificates",
            "only supported with ssl.truststore.type=PEM",
        ),
        (
            {
                "ssl.truststore.type": "PEM",
                "ssl.truststore.certificates": "x",
                "ssl.truststore.location": "/a",
            },
            "ssl.truststore.certificates",
            "cannot be set together",
        ),
        (
            {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": "not pem"},
            "ssl.truststore.certificates",
            "holds no PEM certificate block",
        ),
        (
            {
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": "/a",
                "ssl.truststore.password": SECRET,
            },
            "ssl.truststore.password",
            "cannot be set for a PEM truststore",
        ),
        (
            {"ssl.truststore.type": "BKS", "ssl.truststore.location": "/a"},
            "ssl.truststore.type",
            "unsupported truststore type BKS",
        ),
    ],
)
def test_truststore_config_errors(settings: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        to_librdkafka({"security.protocol": "SSL", **settings}, materialize=False)
    assert info.value.key == key
    _assert_safe(info.value)


# --- keystores ------------------------------------------------------------------------------------


def test_pkcs12_keystore_is_passed_through(pki: Pki) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SSL",
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(pki.p12_keystore),
            "ssl.keystore.password": SECRET,
        }
    )
    assert out["ssl.keystore.location"] == str(pki.p12_keystore)
    assert out["ssl.keystore.password"] == SECRET


def test_pkcs12_file_declared_as_default_jks_is_read_like_jdk9(pki: Pki) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SSL",
            "ssl.keystore.location": str(pki.p12_keystore),
            "ssl.keystore.password": SECRET,
        }
    )
    assert out["ssl.keystore.location"] == str(pki.p12_keystore)


def test_pem_keystore_file(pki: Pki) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SSL",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pki.client_pem_path),
            "ssl.key.password": SECRET,
        }
    )
    assert out["ssl.key.location"] == out["ssl.certificate.location"] == str(pki.client_pem_path)
    assert out["ssl.key.password"] == SECRET


def test_pem_keystore_inline(pki: Pki) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": pki.key_pem.replace("\n", " "),
            "ssl.keystore.certificate.chain": pki.chain_pem,
        }
    )
    assert out["ssl.key.pem"] == pki.key_pem
    assert out["ssl.certificate.pem"] == pki.chain_pem
    assert len(x509.load_pem_x509_certificates(out["ssl.certificate.pem"].encode())) == 2


def test_jks_keystore_explains_the_keytool_conversion(pki: Pki) -> None:
    origins = {
        "ssl.keystore.location": SettingOrigin("A.ssl.keystore.location", 9),
        "ssl.keystore.password": SettingOrigin("A.ssl.keystore.password", 10),
    }
    with pytest.raises(ConfigError) as info:
        to_librdkafka(
            {
                "security.protocol": "SSL",
                "ssl.keystore.type": "JKS",
                "ssl.keystore.location": str(pki.jks_keystore),
                "ssl.keystore.password": SECRET,
            },
            path="mm2.properties",
            origins=origins,
        )
    text = str(info.value)
    assert text.startswith("mm2.properties:9: A.ssl.keystore.location: ")
    target = str(pki.jks_keystore)[: -len(".jks")] + ".p12"
    assert (
        f"keytool -importkeystore -srckeystore {pki.jks_keystore} -srcstoretype JKS "
        f"-destkeystore {target} -deststoretype PKCS12"
    ) in text
    assert "A.ssl.keystore.password" in text
    _assert_safe(info.value)


def test_jks_truststore_holding_a_private_key_is_refused(pki: Pki) -> None:
    with pytest.raises(ConfigError, match="holds a private key entry"):
        to_librdkafka({"security.protocol": "SSL", "ssl.truststore.location": str(pki.jks_keystore)})


@pytest.mark.parametrize(
    ("settings", "key", "message"),
    [
        (
            {"ssl.keystore.type": "PKCS12", "ssl.keystore.key": "k"},
            "ssl.keystore.key",
            "only supported with ssl.keystore.type=PEM",
        ),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.key": SECRET},
            "ssl.keystore.certificate.chain",
            "must be set too",
        ),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.key": SECRET, "ssl.keystore.certificate.chain": "c"},
            "ssl.keystore.key",
            "holds no PEM private key block",
        ),
        (
            {"ssl.keystore.type": "PEM", "ssl.keystore.location": "/k.pem", "ssl.keystore.password": SECRET},
            "ssl.keystore.password",
            "cannot be set for a PEM keystore",
        ),
        (
            {"ssl.keystore.type": "BCFKS", "ssl.keystore.location": "/k"},
            "ssl.keystore.type",
            "unsupported keystore type BCFKS",
        ),
    ],
)
def test_keystore_config_errors(settings: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        to_librdkafka({"security.protocol": "SSL", **settings}, materialize=False)
    assert info.value.key == key
    _assert_safe(info.value)


def test_pem_file_declared_as_default_jks(pki: Pki) -> None:
    with pytest.raises(ConfigError, match=r"set ssl\.truststore\.type=PEM"):
        to_librdkafka({"security.protocol": "SSL", "ssl.truststore.location": str(pki.ca_pem_path)})


# --- helpers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "kind"),
    [
        (b"\xfe\xed\xfe\xed\x00", "JKS"),
        (b"\xce\xce\xce\xce", "JCEKS"),
        (b"\x30\x82", "PKCS12"),
        (b"-----BEGIN CERTIFICATE-----", "PEM"),
        (b"hello", "UNKNOWN"),
    ],
)
def test_sniff_store_type(data: bytes, kind: str) -> None:
    assert sniff_store_type(data) == kind


def test_normalize_pem_rejects_text_without_blocks() -> None:
    with pytest.raises(ValueError):
        normalize_pem("nothing here")


@pytest.mark.parametrize(
    ("key", "secret"),
    [
        ("ssl.keystore.password", True),
        ("ssl.key.password", True),
        ("ssl.truststore.password", True),
        ("sasl.jaas.config", True),
        ("sasl.password", True),
        ("ssl.key.pem", True),
        ("ssl.keystore.key", True),
        ("A.ssl.keystore.password", True),
        ("sasl.oauthbearer.client.secret", True),
        ("sasl.username", False),
        ("ssl.keystore.location", False),
        ("ssl.key.location", False),
        ("ssl.certificate.pem", False),
        ("bootstrap.servers", False),
        ("ssl.ca.location", False),
    ],
)
def test_is_secret_key(key: str, secret: bool) -> None:
    assert is_secret_key(key) is secret


def test_redact_masks_every_secret(pki: Pki) -> None:
    out = to_librdkafka(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.jaas.config": PLAIN_JAAS,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.key": pki.key_pem,
            "ssl.keystore.certificate.chain": pki.chain_pem,
            "ssl.key.password": SECRET,
        }
    )
    shown = redact(out)
    assert SECRET not in repr(shown)
    assert "PRIVATE KEY" not in repr(shown)
    assert shown["sasl.username"] == "alice"
    assert shown["sasl.password"] == shown["ssl.key.password"] == "******"
