"""The Kafka Connect REST client mm2ctl's planners and executors talk to.

It knows the endpoints and their payloads, and nothing about plans. Transport concerns (failover between
workers, the retry policy, error translation) live in :mod:`connect_client.transport`; the client adds
typed results, connector-name escaping, feature checks against the worker version, and a deadline-bound
wait for connector states.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import requests

from mm2ctl.connect_client.models import (
    ConnectorInfo,
    ConnectorOffset,
    ConnectorOffsets,
    ConnectorOverview,
    ConnectorStatus,
    ServerInfo,
)
from mm2ctl.connect_client.transport import ConnectTransport, RetryPolicy, Timeout
from mm2ctl.connect_client.versions import OFFSETS_ALTER_SINCE, OFFSETS_READ_SINCE, STOP_SINCE, Version
from mm2ctl.core.errors import ConnectError, ConnectNotFoundError

T = TypeVar("T")


def connector_path(name: str, *suffix: str) -> str:
    """``/connectors/<name>[/suffix...]`` with the name escaped as one path segment.

    Every reserved character is escaped, ``/`` included, so ``a/b c`` becomes ``a%2Fb%20c`` and cannot
    address another resource. (Jetty 12 based workers, Kafka 4.x, may still refuse an encoded ``/`` as an
    ambiguous path; that is the server's rule, and the 400 comes back as a ConnectError.)
    """
    if not name:
        raise ValueError("connector name must not be empty")
    return "/".join(("/connectors", quote(name, safe=""), *suffix))


class ConnectClient:
    """Typed calls to one Connect cluster, reachable through any of several worker URLs."""

    def __init__(
        self,
        urls: Sequence[str],
        session: requests.Session,
        *,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        check_features: bool = True,
        logger: logging.Logger | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``check_features`` makes stop/offset calls consult ``GET /`` first, because a worker too old
        for an endpoint answers 404 or 405, which would read as "no such connector"."""
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        self._transport = ConnectTransport(urls, session, retry=retry, logger=logger, sleep=sleep, **extra)
        self._check_features = check_features
        self._sleep = sleep
        self._clock = clock
        self._server_info: ServerInfo | None = None

    @property
    def url(self) -> str:
        """The worker URL that answered last (no userinfo)."""
        return self._transport.current_url

    @property
    def urls(self) -> tuple[str, ...]:
        return self._transport.urls

    def close(self) -> None:
        """Close the session this client was given (the factory's session is the client's to close)."""
        self._transport.close()

    def __enter__(self) -> ConnectClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- worker ---------------------------------------------------------------------------------------

    def server_info(self, *, refresh: bool = False, timeout: Timeout | None = None) -> ServerInfo:
        """``GET /``, cached: every worker of a cluster runs the same release in a healthy cluster."""
        if self._server_info is None or refresh:
            payload = self._get_json("/", timeout=timeout)
            self._server_info = self._parse("server info", ServerInfo.from_json, payload)
        return self._server_info

    def supports_stop(self) -> bool:
        """``PUT /connectors/{c}/stop`` is available (Kafka >= 3.5)."""
        return self.server_info().supports_stop()

    def supports_offsets_read(self) -> bool:
        """``GET /connectors/{c}/offsets`` is available (Kafka >= 3.5)."""
        return self.server_info().supports_offsets_read()

    def supports_offsets_alter(self) -> bool:
        """``PATCH``/``DELETE /connectors/{c}/offsets`` are available (Kafka >= 3.6)."""
        return self.server_info().supports_offsets_alter()

    # -- reads ----------------------------------------------------------------------------------------

    def connector_names(self, *, timeout: Timeout | None = None) -> list[str]:
        """``GET /connectors``: the names only, sorted so output and fingerprints are stable."""
        payload = self._get_json("/connectors", timeout=timeout)
        return self._parse("connector list", lambda p: sorted(str(n) for n in p), payload)

    def list_connectors(self, *, timeout: Timeout | None = None) -> dict[str, ConnectorOverview]:
        """``GET /connectors?expand=status&expand=info``: status and config of all connectors in one call.

        A connector deleted while the worker builds the answer is silently left out by Connect.
        """
        payload = self._get_json("/connectors", params=[("expand", "status"), ("expand", "info")], timeout=timeout)

        def parse(data: Mapping[str, Any]) -> dict[str, ConnectorOverview]:
            return {name: ConnectorOverview.from_json(name, data[name]) for name in sorted(data)}

        return self._parse("expanded connector list", parse, payload)

    def connector_configs(self, *, timeout: Timeout | None = None) -> dict[str, dict[str, str]]:
        """Every connector's config (``GET /connectors?expand=info``), secrets in clear: memory only."""
        return {
            name: dict(overview.info.config)
            for name, overview in self.list_connectors(timeout=timeout).items()
            if overview.info is not None
        }

    def status(self, name: str, *, timeout: Timeout | None = None, max_elapsed: float | None = None) -> ConnectorStatus:
        """``GET /connectors/{c}/status``."""
        payload = self._get_json(connector_path(name, "status"), timeout=timeout, max_elapsed=max_elapsed)
        return self._parse("connector status", ConnectorStatus.from_json, payload)

    def config(self, name: str, *, timeout: Timeout | None = None) -> dict[str, str]:
        """``GET /connectors/{c}/config``."""
        payload = self._get_json(connector_path(name, "config"), timeout=timeout)
        return self._parse("connector config", lambda p: {str(k): str(v) for k, v in dict(p).items()}, payload)

    def info(self, name: str, *, timeout: Timeout | None = None) -> ConnectorInfo:
        """``GET /connectors/{c}``: name, config, task ids and type."""
        payload = self._get_json(connector_path(name), timeout=timeout)
        return self._parse("connector info", ConnectorInfo.from_json, payload)

    # -- lifecycle ------------------------------------------------------------------------------------

    def create(self, name: str, config: Mapping[str, str], *, timeout: Timeout | None = None) -> ConnectorInfo:
        """``POST /connectors``. An existing name answers 409 "already exists", which is not retried.

        If a transport error hides whether the first attempt arrived, the retry may meet that 409: the
        connector exists either way, so callers creating idempotently can treat it as done.
        """
        response = self._transport.request(
            "POST", "/connectors", json_body={"name": name, "config": dict(config)}, timeout=timeout
        )
        return self._parse("connector info", ConnectorInfo.from_json, self._json(response, "POST /connectors"))

    def put_config(self, name: str, config: Mapping[str, str], *, timeout: Timeout | None = None) -> ConnectorInfo:
        """``PUT /connectors/{c}/config``: create or replace the whole config (idempotent)."""
        path = connector_path(name, "config")
        response = self._transport.request("PUT", path, json_body=dict(config), timeout=timeout)
        return self._parse("connector info", ConnectorInfo.from_json, self._json(response, f"PUT {path}"))

    def delete(self, name: str, *, timeout: Timeout | None = None) -> None:
        """``DELETE /connectors/{c}``. Its offsets stay in the offsets topic; reset them first if needed."""
        self._transport.request("DELETE", connector_path(name), timeout=timeout)

    def pause(self, name: str, *, timeout: Timeout | None = None) -> None:
        """``PUT /connectors/{c}/pause`` (202): asynchronous, use :meth:`wait_for_state` to see it land."""
        self._transport.request("PUT", connector_path(name, "pause"), timeout=timeout)

    def resume(self, name: str, *, timeout: Timeout | None = None) -> None:
        """``PUT /connectors/{c}/resume`` (202); also resumes a STOPPED connector."""
        self._transport.request("PUT", connector_path(name, "resume"), timeout=timeout)

    def stop(self, name: str, *, timeout: Timeout | None = None) -> None:
        """``PUT /connectors/{c}/stop`` (204, Kafka >= 3.5): tasks are shut down and removed, which
        KIP-875 requires before offsets may be altered."""
        self._require("PUT .../stop", STOP_SINCE)
        self._transport.request("PUT", connector_path(name, "stop"), timeout=timeout)

    def restart(
        self,
        name: str,
        *,
        include_tasks: bool = True,
        only_failed: bool = False,
        timeout: Timeout | None = None,
    ) -> ConnectorStatus | None:
        """``POST /connectors/{c}/restart?includeTasks=...&onlyFailed=...`` (KIP-745).

        Returns the status Connect answers with (202), or None when it answers without a body: when
        both flags are false, and on workers older than 3.0 that ignore the flags.
        """
        path = connector_path(name, "restart")
        params = {"includeTasks": _flag(include_tasks), "onlyFailed": _flag(only_failed)}
        response = self._transport.request("POST", path, params=params, timeout=timeout)
        payload = self._json(response, f"POST {path}")
        if not payload:
            return None
        return self._parse("connector status", ConnectorStatus.from_json, payload)

    # -- offsets (KIP-875) ----------------------------------------------------------------------------

    def get_offsets(self, name: str, *, timeout: Timeout | None = None) -> ConnectorOffsets:
        """``GET /connectors/{c}/offsets`` (Kafka >= 3.5)."""
        self._require("GET .../offsets", OFFSETS_READ_SINCE)
        payload = self._get_json(connector_path(name, "offsets"), timeout=timeout)
        return self._parse("connector offsets", ConnectorOffsets.from_json, payload)

    def patch_offsets(
        self,
        name: str,
        offsets: ConnectorOffsets | Sequence[ConnectorOffset],
        *,
        timeout: Timeout | None = None,
    ) -> str:
        """``PATCH /connectors/{c}/offsets`` (Kafka >= 3.6): alter the given partitions' offsets.

        The connector must be STOPPED (else 400). Partitions not listed keep their offsets; an entry
        whose ``offset`` is None removes that partition's offset. Returns Connect's message.
        """
        body = offsets if isinstance(offsets, ConnectorOffsets) else ConnectorOffsets.of(offsets)
        if not body.offsets:
            # Connect answers 400 to an empty list; failing here keeps a no-op plan from touching the cluster.
            raise ValueError("patch_offsets needs at least one partition; use delete_offsets to reset all")
        self._require("PATCH .../offsets", OFFSETS_ALTER_SINCE)
        path = connector_path(name, "offsets")
        response = self._transport.request("PATCH", path, json_body=body.to_json(), timeout=timeout)
        return _message(self._json(response, f"PATCH {path}"))

    def delete_offsets(self, name: str, *, timeout: Timeout | None = None) -> str:
        """``DELETE /connectors/{c}/offsets`` (Kafka >= 3.6): reset every offset of a STOPPED connector.

        Returns Connect's message.
        """
        self._require("DELETE .../offsets", OFFSETS_ALTER_SINCE)
        path = connector_path(name, "offsets")
        response = self._transport.request("DELETE", path, timeout=timeout)
        return _message(self._json(response, f"DELETE {path}"))

    # -- waiting --------------------------------------------------------------------------------------

    def wait_for_state(
        self,
        name: str,
        states: Collection[str],
        *,
        timeout: float,
        poll_interval: float = 1.0,
        include_tasks: bool = True,
        allow_missing: bool = False,
    ) -> ConnectorStatus:
        """Poll the status until the connector (and its tasks) reach one of ``states``; return that status.

        pause/resume/stop are asynchronous (202/204 mean "accepted"), so an executor must see the state
        land before its next step. The wait is bounded by a monotonic deadline, each poll's retries are
        bounded by what is left of it, and the last status seen is in the error on timeout. A 404 ends
        the wait unless ``allow_missing`` (e.g. right after a create, before the status is written).
        """
        wanted = {s.upper() for s in states}
        if not wanted:
            raise ValueError("wait_for_state needs at least one state")
        if timeout < 0 or poll_interval <= 0:
            raise ValueError("timeout must be >= 0 and poll_interval > 0")
        deadline = self._clock() + timeout
        last_seen = "no answer yet"
        while True:
            remaining = max(0.0, deadline - self._clock())
            try:
                status = self.status(name, timeout=self._poll_timeout(remaining), max_elapsed=remaining)
            except ConnectNotFoundError:
                if not allow_missing:
                    raise
                last_seen = "connector not found"
            else:
                if status.reached(wanted, include_tasks=include_tasks):
                    return status
                last_seen = status.describe()
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise ConnectError(
                    f"connector {name!r} did not reach {'/'.join(sorted(wanted))} within {timeout:g}s; "
                    f"last seen: {last_seen}",
                    url=self.url,
                )
            self._sleep(min(poll_interval, remaining))

    # -- plumbing -------------------------------------------------------------------------------------

    def _poll_timeout(self, remaining: float) -> Timeout:
        """The default timeout, shortened to what is left of a deadline (but never below 0.1 s), so
        one slow poll cannot hold ``wait_for_state`` long past it."""
        cap = max(0.1, remaining)
        default = self._transport.timeout
        if isinstance(default, tuple):
            return (min(default[0], cap), min(default[1], cap))
        return min(default, cap)

    def _require(self, what: str, since: Version) -> None:
        """Refuse an endpoint the worker is known not to have; an unknown version lets the server decide."""
        if not self._check_features:
            return
        info = self.server_info()
        version = info.kafka_version
        if version is not None and version < since:
            needed = ".".join(str(p) for p in since[:2])
            raise ConnectError(
                f"{what} needs Kafka Connect >= {needed}; the worker reports {info.version}",
                url=self.url,
            )

    def _get_json(
        self,
        path: str,
        *,
        params: Any = None,
        timeout: Timeout | None = None,
        max_elapsed: float | None = None,
    ) -> Any:
        response = self._transport.request("GET", path, params=params, timeout=timeout, max_elapsed=max_elapsed)
        return self._json(response, f"GET {path}")

    def _json(self, response: requests.Response, what: str) -> Any:
        if response.status_code == 204 or not response.content:
            return None
        try:
            return response.json()
        except ValueError as exc:
            raise ConnectError(
                f"{what}: the worker answered {response.status_code} with a body that is not JSON",
                status=response.status_code,
                url=self.url,
            ) from exc

    def _parse(self, what: str, parse: Callable[[Any], T], payload: Any) -> T:
        try:
            return parse(payload)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ConnectError(f"unexpected {what} from the worker: {exc!r}", url=self.url) from exc


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _message(payload: Any) -> str:
    if isinstance(payload, Mapping) and isinstance(payload.get("message"), str):
        return str(payload["message"])
    return ""
