"""Translate MM2's Java client security settings into confluent-kafka (librdkafka) settings.

mm2ctl must reach the same clusters MM2 reaches, with the credentials already in the MM2 file; asking
users to restate them for librdkafka would be a second, drifting copy. The Java and librdkafka settings
overlap only partly, so each branch below is deliberate:

* ``security.protocol`` PLAINTEXT / SSL / SASL_PLAINTEXT / SASL_SSL (Java matches it case-insensitively).
  As in Java, ``ssl.*`` is only read when the protocol uses TLS and ``sasl.*`` only when it uses SASL.
* ``sasl.mechanism`` PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512, with the username and password taken from the
  single login module in ``sasl.jaas.config``. Java's default mechanism is GSSAPI: a SASL protocol with no
  mechanism set means Kerberos, which (like OAUTHBEARER) mm2ctl does not drive, so that is an error.
* Trust: ``ssl.truststore.type`` PEM (a file or inline ``ssl.truststore.certificates``) maps directly;
  PKCS12 and JKS truststores are converted to a private PEM file that lives as long as the process.
  Java's own default type is JKS, and since JDK 9 its JKS loader also opens PKCS12 files, so the file's
  magic bytes decide, exactly as they do for MM2.
* Identity: PKCS12 keystores are read natively by librdkafka; PEM keystores (a file, or inline
  ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``) map to ``ssl.key.*``/``ssl.certificate.*``.
  A JKS keystore (private key entries) is refused with the ``keytool`` command that converts it.
* ``ssl.endpoint.identification.algorithm``: Java's ``""`` is librdkafka's ``none``; ``https`` stays.

Secrets never reach a message, a repr or a log: errors name the *key*, and :func:`redact` masks values.
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import os
import re
import struct
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from mm2ctl.core.errors import ConfigError

# --- redaction ------------------------------------------------------------------------------------

# The one secret detector of mm2ctl: config display (``redact``), plans and journals (``plans.model``) all
# ask it. A key is secret when either rule set says so; both err towards yes (a leak costs more than a
# masked harmless value).
_SECRET_KEY = re.compile(
    r"password|secret|jaas|token|credential|user\.info|auth\.info|private|(^|\.)key(\.pem)?$|\.keystore\.key$",
    re.IGNORECASE,
)
#: Whole dot/underscore/dash-separated tokens that name a secret (``api_key`` style names included).
_SECRET_TOKENS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "secret",
        "token",
        "credentials",
        "credential",
        "jaas",
        "apikey",
        "passphrase",
        "privatekey",
        "secretkey",
        "accesskey",
    }
)
#: A value that carries a secret whatever its key: ``password=…`` blobs, any JAAS line, ``user:pw@`` in a URL.
_SECRET_VALUE = re.compile(
    r"(?i)(password|passwd|secret|token)\s*[=:]\s*\S"
    r"|loginmodule"
    r"|://[^/\s:@]+:[^/\s@]+@"
)
_MASK = "******"


def is_secret_key(key: str) -> bool:
    """True when a setting named ``key`` (Java, librdkafka or Connect spelling, any prefix) may hold a secret.

    Tokens are split on ``.``, ``_`` and ``-``, so ``key.converter`` (a class name) is kept while
    ``ssl.keystore.key``, ``sasl.jaas.config``, ``api_token`` and ``basic.auth.user.info`` are secret.
    """
    if _SECRET_KEY.search(key):
        return True
    tokens = [t for t in re.split(r"[._\-]", key.lower()) if t]
    if any(t in _SECRET_TOKENS for t in tokens):
        return True
    return len(tokens) > 1 and tokens[-1] == "key"


def looks_secret_value(value: str) -> bool:
    """Does a string carry a secret whatever its key (a JAAS line, ``password=…``, credentials in a URL)?"""
    return bool(_SECRET_VALUE.search(value))


def redact_text(text: str, replacement: str = _MASK) -> str:
    """Free text (an error message) with each secret replaced by ``replacement``, the rest kept readable."""
    if not looks_secret_value(text):
        return text
    return re.sub(
        r"(?i)((?:password|passwd|secret|token)\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)",
        lambda m: m.group(1) + replacement,
        re.sub(r"://[^/\s:@]+:[^/\s@]+@", f"://{replacement}@", text),
    )


def mask(value: str) -> str:
    """The fixed mask shown instead of a secret (it never reveals the length)."""
    return _MASK if value else ""


def redact(config: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``config`` safe to print or log: every secret-looking value is masked."""
    return {k: (mask(v) if is_secret_key(k) else v) for k, v in config.items()}


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


# --- JAAS -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class JaasEntry:
    """One login module from ``sasl.jaas.config``. Options may hold secrets and are kept out of repr."""

    module: str
    flag: str
    options: dict[str, str] = field(repr=False)


_JAAS_FLAGS = ("required", "requisite", "sufficient", "optional")
_QUOTE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


class _JaasSyntaxError(ValueError):
    """A JAAS syntax problem; its message never contains option values."""


class _JaasLexer:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip(self) -> None:
        t = self.text
        while self.pos < len(t):
            if t[self.pos].isspace():
                self.pos += 1
            elif t.startswith("//", self.pos):
                end = t.find("\n", self.pos)
                self.pos = len(t) if end < 0 else end + 1
            elif t.startswith("/*", self.pos):
                end = t.find("*/", self.pos + 2)
                self.pos = len(t) if end < 0 else end + 2
            else:
                return

    def peek(self) -> str:
        self.skip()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def word(self) -> str:
        self.skip()
        start = self.pos
        t = self.text
        while self.pos < len(t) and not t[self.pos].isspace() and t[self.pos] not in ";=\"'":
            self.pos += 1
        return t[start : self.pos]

    def value(self) -> str:
        self.skip()
        t = self.text
        if self.pos < len(t) and t[self.pos] in "\"'":
            quote = t[self.pos]
            self.pos += 1
            out: list[str] = []
            while self.pos < len(t):
                c = t[self.pos]
                self.pos += 1
                if c == quote:
                    return "".join(out)
                if c == "\\" and self.pos < len(t):
                    nxt = t[self.pos]
                    self.pos += 1
                    out.append(_QUOTE_ESCAPES.get(nxt, nxt))
                else:
                    out.append(c)
            raise _JaasSyntaxError("a quoted value is not closed")
        return self.word()


def parse_jaas_config(text: str) -> list[JaasEntry]:
    """Parse ``sasl.jaas.config`` the way Kafka's ``JaasConfig`` does (comments, quotes, escapes).

    Raises ValueError with a message that never includes an option value.
    """
    lexer = _JaasLexer(text)
    entries: list[JaasEntry] = []
    while lexer.peek():
        module = lexer.word()
        if not module:
            raise _JaasSyntaxError("expected a login module class name")
        flag = lexer.word()
        if flag.lower() not in _JAAS_FLAGS:
            raise _JaasSyntaxError(
                f"login module {module} needs a control flag (required, requisite, sufficient or optional)"
            )
        options: dict[str, str] = {}
        while lexer.peek() not in ("", ";"):
            name = lexer.word()
            if not name:
                raise _JaasSyntaxError(f"unexpected character in the options of {module}")
            if lexer.peek() != "=":
                raise _JaasSyntaxError(f"option {name!r} of {module} has no '=value'")
            lexer.pos += 1
            if lexer.peek() in ("", ";"):
                raise _JaasSyntaxError(f"option {name!r} of {module} has no value")
            options[name] = lexer.value()
        if lexer.peek() != ";":
            raise _JaasSyntaxError(f"login module {module} must end with ';'")
        lexer.pos += 1
        entries.append(JaasEntry(module, flag.lower(), options))
    return entries


# --- PEM helpers ----------------------------------------------------------------------------------

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


def normalize_pem(text: str) -> str:
    """Re-wrap PEM blocks at 64 columns.

    Java's PEM reader ignores line breaks inside a block, so users often write certificates and keys as
    one long properties value (continuation lines lose their newlines). OpenSSL needs them back.
    Raises ValueError when there is no PEM block at all.
    """
    blocks = []
    for label, body in _PEM_BLOCK.findall(text):
        b64 = re.sub(r"\s+", "", body)
        lines = [b64[i : i + 64] for i in range(0, len(b64), 64)]
        blocks.append(f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n")
    if not blocks:
        raise ValueError("no PEM block found")
    return "".join(blocks)


# --- keystore conversion -------------------------------------------------------------------------

JKS_MAGIC = 0xFEEDFEED
JCEKS_MAGIC = 0xCECECECE


class _StoreError(ValueError):
    """A keystore could not be read; the message names no secret."""


def sniff_store_type(data: bytes) -> str:
    """``JKS``, ``JCEKS``, ``PKCS12`` or ``PEM`` from a keystore's first bytes; ``UNKNOWN`` otherwise."""
    if len(data) >= 4:
        magic = struct.unpack(">I", data[:4])[0]
        if magic == JKS_MAGIC:
            return "JKS"
        if magic == JCEKS_MAGIC:
            return "JCEKS"
    if data[:1] == b"\x30":
        return "PKCS12"
    if b"-----BEGIN " in data[:4096]:
        return "PEM"
    return "UNKNOWN"


def _der_to_pem(der: bytes) -> str:
    from base64 import b64encode

    b64 = b64encode(der).decode("ascii")
    return (
        "-----BEGIN CERTIFICATE-----\n"
        + "\n".join(b64[i : i + 64] for i in range(0, len(b64), 64))
        + ("\n-----END CERTIFICATE-----\n")
    )


def jks_trusted_certs_to_pem(data: bytes, password: str | None) -> str:
    """Extract the trusted certificates of a JKS truststore as PEM, without Java.

    JKS is a simple format: magic, version, entry count, then entries (tag 2 = trusted certificate),
    followed by a SHA-1 integrity digest over ``password (UTF-16BE) + "Mighty Aphrodite" + body``. The
    digest is checked when a password is given, as Java does. Private-key entries (a keystore, not a
    truststore) are refused: their keys are sealed with Sun's proprietary scheme and ``keytool`` should
    convert those.
    """
    try:
        magic, version, count = struct.unpack(">III", data[:12])
    except struct.error as exc:
        raise _StoreError("the JKS file is truncated") from exc
    if magic != JKS_MAGIC or version not in (1, 2):
        raise _StoreError("not a JKS keystore")
    pos = 12

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data) - 20:
            raise _StoreError("the JKS file is truncated")
        chunk = data[pos : pos + n]
        pos += n
        return chunk

    def utf() -> str:
        (length,) = struct.unpack(">H", take(2))
        return take(length).decode("utf-8", errors="replace")

    certs: list[str] = []
    for _ in range(count):
        (tag,) = struct.unpack(">I", take(4))
        utf()  # alias
        take(8)  # timestamp
        if tag == 1:
            raise _StoreError("it holds a private key entry (a keystore), which only keytool can convert")
        if tag != 2:
            raise _StoreError(f"unknown JKS entry tag {tag}")
        if version == 2:
            cert_type = utf()
            if cert_type != "X.509":
                raise _StoreError(f"unsupported certificate type {cert_type}")
        (length,) = struct.unpack(">I", take(4))
        certs.append(_der_to_pem(take(length)))
    if password is not None:
        pw = password.encode("utf-16-be")
        digest = hashlib.sha1(pw + b"Mighty Aphrodite" + data[:pos]).digest()
        if digest != data[pos : pos + 20]:
            raise _StoreError("the keystore password is wrong or the file was tampered with")
    if not certs:
        raise _StoreError("it holds no trusted certificates")
    return "".join(certs)


def pkcs12_certs_to_pem(data: bytes, password: str | None) -> str:
    """Every certificate in a PKCS12 truststore, as PEM (``cryptography`` does the parsing)."""
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    pw = None if password is None else password.encode("utf-8")
    try:
        store = pkcs12.load_pkcs12(data, pw)
    except (ValueError, TypeError) as exc:
        raise _StoreError("cannot open the PKCS12 file: wrong or missing password, or not PKCS12") from exc
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise _StoreError("it holds no certificates")
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)


_TEMP_LOCK = threading.Lock()
_TEMP_FILES: dict[tuple[str, int, int, str], str] = {}


def _cleanup_temp_files() -> None:
    for name in list(_TEMP_FILES.values()):
        with contextlib.suppress(OSError):
            os.unlink(name)
    _TEMP_FILES.clear()


atexit.register(_cleanup_temp_files)


def _private_pem_file(cache_key: tuple[str, int, int, str], pem: str) -> str:
    """Write ``pem`` to a 0600 temp file removed at exit; one file per source keystore and password."""
    with _TEMP_LOCK:
        existing = _TEMP_FILES.get(cache_key)
        if existing and os.path.exists(existing):
            return existing
        fd, name = tempfile.mkstemp(prefix="mm2ctl-ca-", suffix=".pem")  # mkstemp creates it 0600
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(pem)
        _TEMP_FILES[cache_key] = name
        return name


def _keytool_hint(location: str, password_key: str, kind: str) -> str:
    target = re.sub(r"\.(jks|keystore|truststore)$", "", location) + ".p12"
    return (
        f"{kind} {location} is a JKS keystore; convert it once with: keytool -importkeystore "
        f"-srckeystore {location} -srcstoretype JKS -destkeystore {target} -deststoretype PKCS12 "
        f"(keytool asks for the {password_key} value), then set ssl.{kind}.type=PKCS12 and "
        f"ssl.{kind}.location={target}"
    )


# --- translation ----------------------------------------------------------------------------------

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SUPPORTED_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


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
                    f"; {_keytool_hint(location, err.key('ssl.truststore.password'), 'truststore')}"
                    if actual == "JCEKS"
                    else ""
                ),
            )
    except _StoreError as exc:
        raise err("ssl.truststore.location", f"cannot use truststore {location}: {exc}") from exc
    st = os.stat(location)
    digest = hashlib.sha256((password or "").encode("utf-8")).hexdigest()
    key = (os.path.realpath(location), st.st_mtime_ns, st.st_size, digest)
    out["ssl.ca.location"] = _private_pem_file(key, pem)


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
            raise err("ssl.keystore.location", _keytool_hint(location, err.key("ssl.keystore.password"), "keystore"))
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
    except _JaasSyntaxError as exc:
        raise err("sasl.jaas.config", f"cannot be parsed: {exc}") from exc
    if len(entries) != 1:
        raise err("sasl.jaas.config", f"contains {len(entries)} login modules, should be 1 module")
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
