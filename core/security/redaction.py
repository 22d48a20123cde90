"""Which settings and values are secret, and how mm2ctl hides them: the one place that decides.

Everything that could show or store a secret asks this module: config display (:func:`redact`, the repr of a
properties file), plans and journals (:func:`redact_json`, :func:`redact_text` with :data:`REDACTED`), the
Connect client's errors and log lines (:func:`display_url`, :func:`redact_text` with the values it holds),
and the Connect URLs a plan records (:func:`strip_url_credentials`). One detector means a key newly known to
be secret is hidden everywhere at once. Its rules err towards yes: a leak costs more than a masked harmless
value, and a leak in a log file or a plan on a shared drive is not undone.

Two markers, for two readers:

- :data:`MASK` replaces a secret in what a person reads now (a config shown, a repr, an error message). It
  never reveals the secret's length.
- :data:`REDACTED` replaces it in what mm2ctl writes down and reads back later (plans, journals). Apply
  recognises it and refuses to send it anywhere (``mm2ctl.plans.connector_config.unredact_config``); it is
  deliberately not Connect's ``${provider:path:key}`` syntax, so a config still holding it can never be
  mistaken for a resolvable reference.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit, urlunsplit

#: What a secret is shown as.
MASK = "******"

#: What a secret is stored as in a plan or a journal.
REDACTED = "**redacted-by-mm2ctl**"

# A key is secret when either rule set says so: this regex, or the tokens below.
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
_SECRET_ASSIGNMENT = re.compile(r"(?i)((?:password|passwd|secret|token)\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|\S+)")
_URL_USERINFO = re.compile(r"://[^/\s:@]+:[^/\s@]+@")

#: A Connect config-provider reference as a whole value (``${file:/etc/secrets.properties:pw}``).
_CONFIG_PROVIDER_REF = re.compile(r"^\$\{[^}]+\}$")


# --------------------------------------------------------------------------------------------- detection


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
    """Does a string carry a secret whatever its key (a JAAS line, ``password=…``, credentials in a URL)?

    :data:`REDACTED` itself does not, so redacting twice changes nothing.
    """
    return value != REDACTED and bool(_SECRET_VALUE.search(value))


# ------------------------------------------------------------------------------------- what people read


def mask(value: str) -> str:
    """The fixed mask shown instead of a secret (it never reveals the length)."""
    return MASK if value else ""


def redact(config: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``config`` safe to print or log: every secret-looking value is masked."""
    return {k: (mask(v) if is_secret_key(k) else v) for k, v in config.items()}


def redact_text(text: str, replacement: str = MASK, *, known: Iterable[str] = ()) -> str:
    """Free text (an error message) with each secret replaced by ``replacement``, the rest kept readable.

    ``known`` are secret values the caller holds (a basic-auth password, say): they are replaced wherever
    they appear, even where no pattern would recognise them.
    """
    for secret in known:
        if secret:
            text = text.replace(secret, replacement)
    if not looks_secret_value(text):
        return text
    return _SECRET_ASSIGNMENT.sub(
        lambda m: m.group(1) + replacement,
        _URL_USERINFO.sub(f"://{replacement}@", text),
    )


def _host_and_port(parts: SplitResult) -> str:
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return host + (f":{parts.port}" if parts.port is not None else "")


def display_url(url: str) -> str:
    """The URL as it may appear in logs and errors: without any ``user:password@``."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    return urlunsplit((parts.scheme, _host_and_port(parts), parts.path, parts.query, parts.fragment))


# ------------------------------------------------------------------------------------ what mm2ctl stores


def strip_url_credentials(url: str) -> str:
    """``url`` without user:password, query or fragment: what a plan may record of a Connect URL."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, _host_and_port(parts), parts.path, "", ""))


def redact_value_of_secret_key(value: Any) -> Any:
    """What a value stored under a secret key becomes: :data:`REDACTED`, unless it only points at the secret.

    A Connect config-provider reference (``${file:/etc/secrets.properties:pw}``) names where the secret is,
    not the secret; keeping it lets a plan re-create a connector without any secret in hand.
    """
    if isinstance(value, str) and _CONFIG_PROVIDER_REF.match(value):
        return value
    return REDACTED


def redact_json(value: Any) -> Any:
    """Deep copy of a JSON value with every secret replaced by :data:`REDACTED`. Idempotent.

    Used for everything config-like that a plan or journal stores: step before/after values, connector
    configs, live state before it is fingerprinted.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if isinstance(k, str) and is_secret_key(k) and v is not None:
                out[k] = redact_value_of_secret_key(v)
            else:
                out[k] = redact_json(v)
        return out
    if isinstance(value, (list, tuple)):
        return [redact_json(v) for v in value]
    if isinstance(value, str) and looks_secret_value(value):
        return REDACTED
    return value
