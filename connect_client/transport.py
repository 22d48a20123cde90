"""Failover, the one retry policy, and error translation for the Connect REST API.

Every request goes through :meth:`ConnectTransport.request`, which is the only place where ``requests``
exceptions and HTTP error statuses become mm2ctl errors::

    requests.ConnectionError / Timeout / SSLError / ChunkedEncodingError
        -> try the next worker URL; when every URL failed -> ConnectTransportError   (retried)
    HTTP 409 (rebalance pending, stale config)  -> ConnectConflictError             (retried)
    HTTP 409 "Connector ... already exists"     -> ConnectConflictError             (not retried)
    HTTP 404                                    -> ConnectNotFoundError             (not retried)
    any other HTTP >= 400 (400, 401, 500, ...)  -> ConnectError                     (not retried)
    other requests errors (bad URL, redirects)  -> ConnectError                     (not retried)

Why only those two are retried: a transport error or a rebalance says nothing about the request, so the
same request may succeed a moment later; a 4xx is the worker judging the request itself, and a 500 from
Connect usually means its own 90 s herder timeout already expired, so repeating it only doubles the wait.

The retry is a single tenacity policy (:class:`RetryPolicy`), capped by attempts *and* total time, with
exponential backoff and jitter, and one warning on the ``mm2ctl.connect`` logger per retry. Log lines
and error messages name URLs without their userinfo and never include the password or any header.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import requests
import tenacity

from mm2ctl.core.errors import (
    ConfigError,
    ConnectConflictError,
    ConnectError,
    ConnectNotFoundError,
    ConnectTransportError,
)
from mm2ctl.core.security.redaction import display_url, redact_text

LOGGER = logging.getLogger("mm2ctl.connect")

#: A requests timeout: one number for both phases, or ``(connect, read)`` seconds.
Timeout = float | tuple[float, float]

#: Connect gives up on a herder operation after 90 s and answers 500 "Request timed out". A read timeout
#: just above that lets the worker's own answer arrive instead of cutting a slow PATCH/stop short and
#: re-sending it to another worker. Connecting should be quick.
DEFAULT_TIMEOUT: tuple[float, float] = (5.0, 95.0)

#: How much of a non-JSON error body ends up in a message: enough to recognise a proxy's HTML page.
MAX_BODY_CHARS = 300

_TRANSPORT_EXCEPTIONS: tuple[type[BaseException], ...] = (
    requests.ConnectionError,  # includes SSLError, ProxyError, ConnectTimeout
    requests.Timeout,  # ReadTimeout
    requests.exceptions.ChunkedEncodingError,  # the worker dropped the connection mid-body
)


@dataclass(frozen=True)
class RetryPolicy:
    """The caps of the single retry policy. Small by default: an operator is waiting at a terminal.

    ``max_attempts`` counts every attempt, the first included; one attempt means no retry.
    ``max_elapsed`` bounds the total time from the first attempt: no retry starts (and no backoff
    sleeps) past it. A single request can still take up to its own read timeout.
    """

    max_attempts: int = 6
    max_elapsed: float = 30.0
    initial_backoff: float = 0.5
    max_backoff: float = 8.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.max_elapsed < 0 or self.initial_backoff < 0 or self.max_backoff < 0 or self.jitter < 0:
            raise ValueError("retry times must not be negative")


def normalize_url(url: str) -> str:
    """Check a worker URL and drop its trailing slash, so paths can be appended verbatim."""
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"not an http(s) URL: {display_url(text)!r} (expected e.g. http://connect:8083)",
            key="connect url",
        )
    if parts.query or parts.fragment:
        raise ConfigError(f"a Connect URL takes no query or fragment: {display_url(text)!r}", key="connect url")
    return text.rstrip("/")


def is_rebalance_conflict(exc: BaseException) -> bool:
    """A 409 that a later attempt can cure. Connect also answers 409 when a created connector already
    exists (``AlreadyExistsException``); repeating that request cannot help, so it is excluded."""
    return isinstance(exc, ConnectConflictError) and not exc.message.rstrip(" .").lower().endswith("already exists")


def is_retryable(exc: BaseException) -> bool:
    """The one retry predicate: transport failures (after failover) and rebalance conflicts."""
    return isinstance(exc, ConnectTransportError) or is_rebalance_conflict(exc)


def _truncate(text: str, limit: int = MAX_BODY_CHARS) -> str:
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[:limit]}... ({len(flat) - limit} more chars)"


def error_from_response(response: requests.Response, *, method: str, path: str, url: str) -> ConnectError:
    """Translate an HTTP error answer, keeping Connect's own ``error_code`` and ``message``.

    Connect's error body is ``{"error_code": 409, "message": "..."}``. A proxy or load balancer in front
    of the worker may answer with HTML or plain text instead; that is kept too, flattened and truncated.
    """
    status = response.status_code
    error_code: int | None = None
    message: str | None = None
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if isinstance(payload, dict):
        code = payload.get("error_code")
        if isinstance(code, int) and not isinstance(code, bool):
            error_code = code
        text = payload.get("message")
        if isinstance(text, str) and text.strip():
            message = text.strip()
    if message is None:
        body = _truncate(response.text or "")
        message = body or response.reason or "no response body"
    error_type: type[ConnectError] = {404: ConnectNotFoundError, 409: ConnectConflictError}.get(status, ConnectError)
    return error_type(f"{method} {path}: {message}", status=status, error_code=error_code, url=url)


class ConnectTransport:
    """Sends one logical request to a set of equivalent workers, with failover and the retry policy.

    Any worker of a Connect cluster serves (or forwards) every request, so on a transport error the next
    URL is tried at once; the URL that last answered is tried first next time, so a dead worker costs one
    connect timeout per sweep rather than one per request. The session is passed in (auth, TLS and
    pooling live there), which lets tests hand in a plain session pointed at a local fake.
    """

    def __init__(
        self,
        urls: Sequence[str],
        session: requests.Session,
        *,
        timeout: Timeout = DEFAULT_TIMEOUT,
        retry: RetryPolicy | None = None,
        logger: logging.Logger | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if isinstance(urls, str):
            urls = [urls]
        normalized = [normalize_url(u) for u in urls if u and u.strip()]
        if not normalized:
            raise ConfigError("no Connect worker URL given", key="connect url")
        self._urls: tuple[str, ...] = tuple(dict.fromkeys(normalized))
        self._session = session
        self._timeout = timeout
        self._retry = retry or RetryPolicy()
        self._log = logger or LOGGER
        self._sleep = sleep
        self._preferred = 0
        self._lock = threading.Lock()

    @property
    def urls(self) -> tuple[str, ...]:
        """Every configured worker URL, as displayed (no userinfo)."""
        return tuple(display_url(u) for u in self._urls)

    @property
    def current_url(self) -> str:
        """The worker that answered last (tried first next time), as displayed."""
        return display_url(self._urls[self._preferred])

    @property
    def retry_policy(self) -> RetryPolicy:
        return self._retry

    @property
    def timeout(self) -> Timeout:
        """The default per-request timeout, used when a call passes none."""
        return self._timeout

    def close(self) -> None:
        """Close the session's pooled connections."""
        self._session.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | Sequence[tuple[str, str]] | None = None,
        json_body: Any = None,
        timeout: Timeout | None = None,
        max_elapsed: float | None = None,
    ) -> requests.Response:
        """Send ``method path`` (path already escaped) and return the 2xx/3xx response.

        ``max_elapsed`` narrows the policy's total-time cap for this call, so a caller with its own
        deadline (``wait_for_state``) is not held past it by retries.
        """
        policy = self._retry
        budget = policy.max_elapsed if max_elapsed is None else max(0.0, min(policy.max_elapsed, max_elapsed))
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(policy.max_attempts) | _stop_before_delay(budget),
            # initial, 2x, 4x ... up to max_backoff, plus up to `jitter` so parallel callers spread out.
            wait=tenacity.wait_exponential(multiplier=policy.initial_backoff, max=policy.max_backoff)
            + tenacity.wait_random(0, policy.jitter),
            retry=tenacity.retry_if_exception(is_retryable),
            before_sleep=self._log_retry,
            sleep=self._sleep,
            reraise=True,
        )
        return retrying(self._send_once, method, path, params, json_body, timeout)

    def _log_retry(self, state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome is not None else None
        delay = state.next_action.sleep if state.next_action is not None else 0.0
        method, path = state.args[0], state.args[1]
        self._log.warning(
            "Connect %s %s failed (attempt %d of at most %d): %s; retrying in %.2fs",
            method,
            path,
            state.attempt_number,
            self._retry.max_attempts,
            exc,
            delay,
        )

    def _send_once(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | Sequence[tuple[str, str]] | None,
        json_body: Any,
        timeout: Timeout | None,
    ) -> requests.Response:
        """One sweep over the workers, starting with the one that answered last."""
        with self._lock:
            start = self._preferred
        failures: list[str] = []
        last_exc: BaseException | None = None
        count = len(self._urls)
        for step in range(count):
            index = (start + step) % count
            base = self._urls[index]
            shown = display_url(base)
            try:
                response = self._session.request(
                    method,
                    base + path,
                    params=params,
                    json=json_body,
                    timeout=timeout if timeout is not None else self._timeout,
                    headers={"Accept": "application/json"},
                )
            except _TRANSPORT_EXCEPTIONS as exc:
                last_exc = exc
                failures.append(f"{shown}: {self._redact(exc)}")
                if step + 1 < count:
                    self._log.info("Connect worker %s did not answer %s %s; trying the next one", shown, method, path)
                continue
            except requests.RequestException as exc:
                raise ConnectError(f"{method} {path}: {self._redact(exc)}", url=shown) from exc
            if index != start:
                self._log.info("Connect worker %s answered; using it from now on", shown)
            with self._lock:
                self._preferred = index
            try:
                response.raise_for_status()
            except requests.HTTPError as exc:
                raise error_from_response(response, method=method, path=path, url=shown) from exc
            return response
        detail = "; ".join(failures)
        raise ConnectTransportError(
            f"{method} {path}: no Connect worker answered ({detail})",
            url=self.current_url if count == 1 else None,
        ) from last_exc

    def _redact(self, exc: BaseException) -> str:
        """An exception's text with any known secret and URL userinfo removed.

        ``requests`` messages name host, port and path only, but a URL given with ``user:pass@`` and
        the session's basic-auth password are scrubbed anyway: a leak in a log file is not undone.
        """
        return redact_text(_truncate(str(exc), 500), known=self._secrets())

    def _secrets(self) -> list[str]:
        found: list[str] = []
        auth = self._session.auth
        password = getattr(auth, "password", None)
        if password is None and isinstance(auth, tuple) and len(auth) == 2:
            password = auth[1]
        if isinstance(password, bytes):
            password = password.decode("utf-8", "replace")
        if isinstance(password, str) and password:
            found.append(password)
        for url in self._urls:
            parts = urlsplit(url)
            if parts.password:
                found.append(parts.password)
        return found


def _stop_before_delay(seconds: float) -> Any:
    """Stop when the *next* attempt would start past the cap (tenacity >= 8.4), else after it."""
    factory = getattr(tenacity, "stop_before_delay", None) or tenacity.stop_after_delay
    return factory(seconds)
