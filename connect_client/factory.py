"""Builds the real ConnectClient: a ``requests.Session`` with auth and TLS, plus worker URLs.

This is the only place that configures a session. Tests construct :class:`ConnectClient` directly with
a plain session pointed at a local fake, so clients are passed in, never built inside the code that uses them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

import requests

from mm2ctl.connect_client.client import ConnectClient
from mm2ctl.connect_client.transport import DEFAULT_TIMEOUT, RetryPolicy, Timeout
from mm2ctl.core.errors import ConfigError
from mm2ctl.core.security.redaction import display_url

#: Comma-separated worker URLs, used when no URL is given on the command line.
CONNECT_URL_ENV = "MM2CTL_CONNECT_URL"


def split_urls(text: str) -> list[str]:
    """``"http://a:8083, http://b:8083"`` -> both URLs; blanks are dropped."""
    return [part.strip() for part in text.split(",") if part.strip()]


def connect_urls_from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """The worker URLs in ``MM2CTL_CONNECT_URL`` (comma separated), or an empty list when unset."""
    env = os.environ if environ is None else environ
    return split_urls(env.get(CONNECT_URL_ENV, ""))


def _check_file(path: str, key: str) -> str:
    if not Path(path).is_file():
        raise ConfigError(f"file not found: {path}", key=key)
    return path


def build_connect_client(
    urls: Sequence[str] | str,
    *,
    username: str | None = None,
    password: str | None = None,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
    timeout: Timeout = DEFAULT_TIMEOUT,
    retry: RetryPolicy | None = None,
    session: requests.Session | None = None,
) -> ConnectClient:
    """Build the client used against real workers.

    - ``urls``: one or more worker URLs (a string may hold several, comma separated). Credentials
      written into a URL (``http://user:pw@host``) are moved into the session so they never appear in
      logs; explicit ``username``/``password`` win over them.
    - ``ca_file``: PEM bundle to verify the workers' certificates (default: the system's trust store).
    - ``cert_file``/``key_file``: client certificate for mutual TLS (the key may sit in ``cert_file``).

    Files are checked here, so a typo is a ConfigError now rather than a TLS error on every retry.
    """
    given = split_urls(urls) if isinstance(urls, str) else [u for u in urls if u and u.strip()]
    if not given:
        raise ConfigError(f"no Connect worker URL given (pass one, or set {CONNECT_URL_ENV})", key="connect url")
    url_user, url_password = None, None
    clean: list[str] = []
    for url in given:
        parts = urlsplit(url.strip())
        if parts.username is not None and url_user is None:
            url_user = unquote(parts.username)
            url_password = unquote(parts.password) if parts.password is not None else None
        clean.append(display_url(url.strip()))

    if username is None and password is None:
        username, password = url_user, url_password
    if password is not None and username is None:
        raise ConfigError("a password was given without a username", key="username")
    if key_file is not None and cert_file is None:
        raise ConfigError("a client key was given without a client certificate", key="cert_file")

    http = session if session is not None else requests.Session()
    if username is not None:
        http.auth = requests.auth.HTTPBasicAuth(username, password or "")
    if ca_file is not None:
        http.verify = _check_file(ca_file, "ca_file")
    if cert_file is not None:
        _check_file(cert_file, "cert_file")
        http.cert = (cert_file, _check_file(key_file, "key_file")) if key_file is not None else cert_file
    return ConnectClient(clean, http, timeout=timeout, retry=retry)


def connector_config_reader(
    *,
    username: str | None = None,
    password: str | None = None,
    ca_file: str | None = None,
    cert_file: str | None = None,
    key_file: str | None = None,
) -> Callable[[str], dict[str, dict[str, str]]]:
    """Reads every connector's config from the Connect cluster at a URL (``--from-connect``), with this auth."""

    def read(url: str) -> dict[str, dict[str, str]]:
        client = build_connect_client(
            url, username=username, password=password, ca_file=ca_file, cert_file=cert_file, key_file=key_file
        )
        with client:
            return client.connector_configs()

    return read
