"""Keystores and truststores in the formats Java reads (JKS, PKCS12, PEM), made usable by librdkafka.

librdkafka reads PEM files and PKCS12 keystores, while MM2 files often name JKS or PKCS12 truststores. This
module tells the formats apart by their bytes (as Java does), extracts trusted certificates to PEM without
Java, and keeps each converted file private (0600) and alive only as long as the process. Errors name what
is wrong with a store, never its password.
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


class KeystoreError(ValueError):
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
        raise KeystoreError("the JKS file is truncated") from exc
    if magic != JKS_MAGIC or version not in (1, 2):
        raise KeystoreError("not a JKS keystore")
    pos = 12

    def take(n: int) -> bytes:
        nonlocal pos
        if pos + n > len(data) - 20:
            raise KeystoreError("the JKS file is truncated")
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
            raise KeystoreError("it holds a private key entry (a keystore), which only keytool can convert")
        if tag != 2:
            raise KeystoreError(f"unknown JKS entry tag {tag}")
        if version == 2:
            cert_type = utf()
            if cert_type != "X.509":
                raise KeystoreError(f"unsupported certificate type {cert_type}")
        (length,) = struct.unpack(">I", take(4))
        certs.append(_der_to_pem(take(length)))
    if password is not None:
        pw = password.encode("utf-16-be")
        digest = hashlib.sha1(pw + b"Mighty Aphrodite" + data[:pos]).digest()
        if digest != data[pos : pos + 20]:
            raise KeystoreError("the keystore password is wrong or the file was tampered with")
    if not certs:
        raise KeystoreError("it holds no trusted certificates")
    return "".join(certs)


def pkcs12_certs_to_pem(data: bytes, password: str | None) -> str:
    """Every certificate in a PKCS12 truststore, as PEM (``cryptography`` does the parsing)."""
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    pw = None if password is None else password.encode("utf-8")
    try:
        store = pkcs12.load_pkcs12(data, pw)
    except (ValueError, TypeError) as exc:
        raise KeystoreError("cannot open the PKCS12 file: wrong or missing password, or not PKCS12") from exc
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.insert(0, store.cert.certificate)
    if not certs:
        raise KeystoreError("it holds no certificates")
    return "".join(c.public_bytes(Encoding.PEM).decode("ascii") for c in certs)


_TEMP_LOCK = threading.Lock()
_TEMP_FILES: dict[tuple[str, int, int, str], str] = {}


def _cleanup_temp_files() -> None:
    for name in list(_TEMP_FILES.values()):
        with contextlib.suppress(OSError):
            os.unlink(name)
    _TEMP_FILES.clear()


atexit.register(_cleanup_temp_files)


def pem_file_for(location: str, password: str | None, pem: str) -> str:
    """A private copy of ``pem``, converted from the store at ``location``, as a file librdkafka can read.

    The file is 0600 and removed at exit; one file per source store, version (mtime, size) and password,
    so a process that builds many clients converts each store once.
    """
    st = os.stat(location)
    digest = hashlib.sha256((password or "").encode("utf-8")).hexdigest()
    return _private_pem_file((os.path.realpath(location), st.st_mtime_ns, st.st_size, digest), pem)


def _private_pem_file(cache_key: tuple[str, int, int, str], pem: str) -> str:
    with _TEMP_LOCK:
        existing = _TEMP_FILES.get(cache_key)
        if existing and os.path.exists(existing):
            return existing
        fd, name = tempfile.mkstemp(prefix="mm2ctl-ca-", suffix=".pem")  # mkstemp creates it 0600
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(pem)
        _TEMP_FILES[cache_key] = name
        return name


def keytool_hint(location: str, password_key: str, kind: str) -> str:
    """How to convert a JKS ``kind`` (keystore or truststore) once with ``keytool``: only Java can open its
    private key entries, so the hint names the command instead of mm2ctl guessing."""
    target = re.sub(r"\.(jks|keystore|truststore)$", "", location) + ".p12"
    return (
        f"{kind} {location} is a JKS keystore; convert it once with: keytool -importkeystore "
        f"-srckeystore {location} -srcstoretype JKS -destkeystore {target} -deststoretype PKCS12 "
        f"(keytool asks for the {password_key} value), then set ssl.{kind}.type=PKCS12 and "
        f"ssl.{kind}.location={target}"
    )
