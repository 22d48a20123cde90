"""ConnectClient against a real local HTTP server that plays a scripted Connect worker.

No mocking of requests: the client speaks real HTTP to 127.0.0.1, and each test asserts what the
server saw (methods, raw paths, bodies, headers) as well as what the client returned or raised.
Retry backoff is a few milliseconds here, so the whole module runs in a few seconds.
"""

from __future__ import annotations

import base64
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest
import requests

from mm2ctl.connect_client import (
    ConnectClient,
    ConnectorOffset,
    ConnectorOffsets,
    RetryPolicy,
    ServerInfo,
    apache_kafka_version,
    build_connect_client,
    connect_urls_from_env,
    connector_path,
    is_retryable,
    parse_version,
)
from mm2ctl.core.errors import (
    ConfigError,
    ConnectConflictError,
    ConnectError,
    ConnectNotFoundError,
    ConnectTransportError,
)

FAST = RetryPolicy(max_attempts=4, max_elapsed=5.0, initial_backoff=0.01, max_backoff=0.02, jitter=0.0)
ALTERED = "The offsets for this connector have been altered successfully"
RESET = "The offsets for this connector have been reset successfully"
REBALANCE = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"


# -- the fake worker ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes/str
    delay: float = 0.0
    content_type: str = "application/json"


@dataclass(frozen=True)
class Seen:
    method: str
    path: str  # raw request target, query included, exactly as sent
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeConnect:
    """Replies are scripted per (method, path-without-query); the last reply of a script repeats."""

    url: str = ""
    seen: list[Seen] = field(default_factory=list)
    scripts: dict[tuple[str, str], list[Reply]] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, method: str, path: str, *replies: Reply) -> None:
        self.scripts[(method, path)] = list(replies)

    def next_reply(self, method: str, path: str) -> Reply:
        with self.lock:
            replies = self.scripts.get((method, path))
            if not replies:
                return Reply(404, {"error_code": 404, "message": f"no script for {method} {path}"})
            return replies.pop(0) if len(replies) > 1 else replies[0]

    def requests_to(self, method: str, path: str) -> list[Seen]:
        return [s for s in self.seen if s.method == method and urlsplit(s.path).path == path]


def _handler(fake: FakeConnect) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with fake.lock:
                fake.seen.append(Seen(self.command, self.path, dict(self.headers.items()), body))
            reply = fake.next_reply(self.command, urlsplit(self.path).path)
            if reply.delay:
                fake.release.wait(reply.delay)
            if isinstance(reply.body, bytes):
                payload = reply.body
            elif isinstance(reply.body, str):
                payload = reply.body.encode()
            elif reply.body is None:
                payload = b""
            else:
                payload = json.dumps(reply.body).encode()
            self.send_response(reply.status)
            if reply.status != 204:
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if reply.status != 204:
                self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

        def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
            pass

    return Handler


class QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that timed out and hung up is expected in these tests


@pytest.fixture
def fake() -> Iterator[FakeConnect]:
    fake = FakeConnect()
    server = QuietServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    fake.script("GET", "/", Reply(200, {"version": "3.9.2", "commit": "abc", "kafka_cluster_id": "k1"}))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.release.set()
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.fixture
def session() -> Iterator[requests.Session]:
    with requests.Session() as s:
        yield s


@pytest.fixture
def client(fake: FakeConnect, session: requests.Session) -> ConnectClient:
    return ConnectClient([fake.url], session, retry=FAST, timeout=(1.0, 2.0))


def closed_port_url() -> str:
    """A loopback URL nobody listens on: connecting is refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def status_body(name: str, state: str, *task_states: str) -> dict[str, Any]:
    return {
        "name": name,
        "connector": {"state": state, "worker_id": "w1:8083"},
        "tasks": [{"id": i, "state": s, "worker_id": "w1:8083"} for i, s in enumerate(task_states)],
        "type": "source",
    }


# -- versions and server info ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "raw", "kafka", "stop", "alter"),
    [
        ("3.9.2", (3, 9, 2), (3, 9, 2), True, True),
        ("3.5.1", (3, 5, 1), (3, 5, 1), True, False),
        ("3.4.0", (3, 4, 0), (3, 4, 0), False, False),
        ("7.6.0-ccs", (7, 6, 0), (3, 6, 0), True, True),
        ("7.5.3-ce", (7, 5, 3), (3, 5, 3), True, False),
        ("7.4.0-ccs", (7, 4, 0), (3, 4, 0), False, False),  # a naive 7.4 >= 3.5 would be wrong
        ("6.2.1-ccs", (6, 2, 1), (2, 8, 1), False, False),
        ("8.0.0-ccs", (8, 0, 0), (4, 0, 0), True, True),
        ("3.6.0.redhat-00005", (3, 6, 0), (3, 6, 0), True, True),
        ("4.0.0-SNAPSHOT", (4, 0, 0), (4, 0, 0), True, True),
        ("3.7", (3, 7, 0), (3, 7, 0), True, True),
        ("unknown", None, None, False, False),
    ],
)
def test_versions_parse_and_gate_features(
    text: str, raw: tuple[int, int, int] | None, kafka: tuple[int, int, int] | None, stop: bool, alter: bool
) -> None:
    info = ServerInfo(version=text)
    assert parse_version(text) == raw == info.version_tuple
    assert apache_kafka_version(text) == kafka == info.kafka_version
    assert info.supports_stop() is stop
    assert info.supports_offsets_read() is stop
    assert info.supports_offsets_alter() is alter


def test_server_info_is_read_once_and_cached(client: ConnectClient, fake: FakeConnect) -> None:
    info = client.server_info()
    assert info == ServerInfo(version="3.9.2", commit="abc", kafka_cluster_id="k1")
    assert client.supports_stop() and client.supports_offsets_read() and client.supports_offsets_alter()
    assert len(fake.requests_to("GET", "/")) == 1
    assert fake.seen[0].headers["Accept"] == "application/json"


# -- reads -------------------------------------------------------------------------------------------


def test_list_connectors_expands_status_and_info(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script(
        "GET",
        "/connectors",
        Reply(
            200,
            {
                "mm2-source": {
                    "status": status_body("mm2-source", "RUNNING", "RUNNING"),
                    "info": {
                        "name": "mm2-source",
                        "config": {"connector.class": "MirrorSourceConnector", "tasks.max": "1"},
                        "tasks": [{"connector": "mm2-source", "task": 0}],
                        "type": "source",
                    },
                }
            },
        ),
    )
    listing = client.list_connectors()
    assert [s.path for s in fake.seen] == ["/connectors?expand=status&expand=info"]
    overview = listing["mm2-source"]
    assert overview.status is not None and overview.status.state == "RUNNING"
    assert overview.info is not None and overview.info.tasks == (0,)
    assert overview.info.config["connector.class"] == "MirrorSourceConnector"


def test_status_config_and_info_are_typed(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("GET", "/connectors/c/status", Reply(200, status_body("c", "RUNNING", "RUNNING", "FAILED")))
    fake.script("GET", "/connectors/c/config", Reply(200, {"name": "c", "tasks.max": "2"}))
    fake.script(
        "GET",
        "/connectors/c",
        Reply(
            200,
            {"name": "c", "config": {"name": "c"}, "tasks": [{"connector": "c", "task": 1}], "type": "sink"},
        ),
    )
    status = client.status("c")
    assert (status.name, status.state, status.worker_id, status.type) == ("c", "RUNNING", "w1:8083", "source")
    assert [(t.id, t.state) for t in status.tasks] == [(0, "RUNNING"), (1, "FAILED")]
    assert client.config("c") == {"name": "c", "tasks.max": "2"}
    info = client.info("c")
    assert (info.name, info.tasks, info.type) == ("c", (1,), "sink")


def test_unexpected_payload_shape_is_a_connect_error(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("GET", "/connectors/c/status", Reply(200, {"name": "c"}))
    with pytest.raises(ConnectError, match="unexpected connector status") as caught:
        client.status("c")
    assert isinstance(caught.value.__cause__, KeyError)


def test_connector_names_are_escaped_as_one_path_segment(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("GET", "/connectors/a%2Fb%20c/status", Reply(200, status_body("a/b c", "PAUSED")))
    fake.script("PUT", "/connectors/a%2Fb%20c/pause", Reply(202))
    assert client.status("a/b c").name == "a/b c"
    client.pause("a/b c")
    assert [s.path for s in fake.seen] == ["/connectors/a%2Fb%20c/status", "/connectors/a%2Fb%20c/pause"]
    assert connector_path("x?y#z") == "/connectors/x%3Fy%23z"


# -- writes ------------------------------------------------------------------------------------------


def test_lifecycle_calls_send_the_documented_requests(client: ConnectClient, fake: FakeConnect) -> None:
    info = {"name": "c", "config": {"name": "c", "k": "v"}, "tasks": [], "type": "source"}
    fake.script("POST", "/connectors", Reply(201, info))
    fake.script("PUT", "/connectors/c/config", Reply(200, info))
    fake.script("PUT", "/connectors/c/pause", Reply(202))
    fake.script("PUT", "/connectors/c/resume", Reply(202))
    fake.script("PUT", "/connectors/c/stop", Reply(204))
    fake.script("POST", "/connectors/c/restart", Reply(202, status_body("c", "RESTARTING", "RESTARTING")))
    fake.script("DELETE", "/connectors/c", Reply(204))

    assert client.create("c", {"k": "v"}).config == {"name": "c", "k": "v"}
    client.put_config("c", {"k": "v"})
    client.pause("c")
    client.resume("c")
    client.stop("c")
    restarted = client.restart("c", only_failed=True)
    client.delete("c")

    sent = [(s.method, s.path) for s in fake.seen if s.path != "/"]
    assert sent == [
        ("POST", "/connectors"),
        ("PUT", "/connectors/c/config"),
        ("PUT", "/connectors/c/pause"),
        ("PUT", "/connectors/c/resume"),
        ("PUT", "/connectors/c/stop"),
        ("POST", "/connectors/c/restart?includeTasks=true&onlyFailed=true"),
        ("DELETE", "/connectors/c"),
    ]
    assert fake.requests_to("POST", "/connectors")[0].json() == {"name": "c", "config": {"k": "v"}}
    assert fake.requests_to("PUT", "/connectors/c/config")[0].json() == {"k": "v"}
    assert restarted is not None and restarted.state == "RESTARTING"


def test_stop_is_refused_locally_on_a_worker_without_it(fake: FakeConnect, session: requests.Session) -> None:
    fake.script("GET", "/", Reply(200, {"version": "7.4.0-ccs"}))
    client = ConnectClient([fake.url], session, retry=FAST)
    with pytest.raises(ConnectError, match=r"needs Kafka Connect >= 3.5; the worker reports 7.4.0-ccs"):
        client.stop("c")
    with pytest.raises(ConnectError, match=r">= 3.6"):
        client.delete_offsets("c")
    assert [(s.method, s.path) for s in fake.seen] == [("GET", "/")]


# -- offsets (KIP-875) -------------------------------------------------------------------------------


def test_get_offsets_parses_partition_offset_pairs(client: ConnectClient, fake: FakeConnect) -> None:
    body = {
        "offsets": [
            {"partition": {"cluster": "src", "topic": "orders", "partition": 3}, "offset": {"offset": 41}},
        ]
    }
    fake.script("GET", "/connectors/mm2-source/offsets", Reply(200, body))
    offsets = client.get_offsets("mm2-source")
    assert list(offsets) == [ConnectorOffset({"cluster": "src", "topic": "orders", "partition": 3}, {"offset": 41})]
    assert offsets.to_json() == body


def test_patch_and_delete_offsets_bodies_follow_kip_875(client: ConnectClient, fake: FakeConnect) -> None:
    path = "/connectors/mm2-checkpoint/offsets"
    fake.script("PATCH", path, Reply(200, {"message": ALTERED}))
    fake.script("DELETE", path, Reply(200, {"message": RESET}))
    offsets = ConnectorOffsets.of(
        [
            ConnectorOffset({"group": "g", "topic": "src.orders", "partition": 0}, {"offset": 0}),
            ConnectorOffset({"group": "g", "topic": "src.orders", "partition": 1}, None),
        ]
    )
    assert client.patch_offsets("mm2-checkpoint", offsets) == ALTERED
    assert client.delete_offsets("mm2-checkpoint") == RESET

    (patch,) = fake.requests_to("PATCH", path)
    assert patch.headers["Content-Type"] == "application/json"
    assert patch.json() == {
        "offsets": [
            {"partition": {"group": "g", "topic": "src.orders", "partition": 0}, "offset": {"offset": 0}},
            {"partition": {"group": "g", "topic": "src.orders", "partition": 1}, "offset": None},
        ]
    }
    (delete,) = fake.requests_to("DELETE", path)
    assert delete.body == b""
    with pytest.raises(ValueError, match="at least one partition"):
        client.patch_offsets("mm2-checkpoint", [])


# -- the retry policy --------------------------------------------------------------------------------


def test_409_then_200_is_retried_and_logged(
    client: ConnectClient, fake: FakeConnect, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="mm2ctl.connect")
    fake.script(
        "PUT",
        "/connectors/c/resume",
        Reply(409, {"error_code": 409, "message": REBALANCE}),
        Reply(202),
    )
    client.resume("c")
    assert len(fake.requests_to("PUT", "/connectors/c/resume")) == 2
    retries = [r for r in caplog.records if r.name == "mm2ctl.connect" and "retrying" in r.getMessage()]
    assert len(retries) == 1
    assert "PUT /connectors/c/resume" in retries[0].getMessage()
    assert "attempt 1 of at most 4" in retries[0].getMessage()


def test_409_forever_gives_up_at_the_attempt_cap(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("PATCH", "/connectors/c/offsets", Reply(409, {"error_code": 409, "message": REBALANCE}))
    with pytest.raises(ConnectConflictError) as caught:
        client.patch_offsets("c", [ConnectorOffset({"p": 1}, {"offset": 0})])
    err = caught.value
    assert (err.status, err.error_code) == (409, 409)
    assert REBALANCE in str(err)
    assert err.url == fake.url
    assert isinstance(err.__cause__, requests.HTTPError)
    assert len(fake.requests_to("PATCH", "/connectors/c/offsets")) == FAST.max_attempts


def test_409_forever_gives_up_at_the_time_cap(fake: FakeConnect, session: requests.Session) -> None:
    policy = RetryPolicy(max_attempts=1000, max_elapsed=0.4, initial_backoff=0.05, max_backoff=0.05, jitter=0)
    client = ConnectClient([fake.url], session, retry=policy)
    fake.script("PUT", "/connectors/c/pause", Reply(409, {"error_code": 409, "message": REBALANCE}))
    with pytest.raises(ConnectConflictError):
        client.pause("c")
    # the cap, not the thousand attempts, ended it
    assert 2 <= len(fake.requests_to("PUT", "/connectors/c/pause")) < 20


def test_409_already_exists_is_not_retried(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("POST", "/connectors", Reply(409, {"error_code": 409, "message": "Connector c already exists"}))
    with pytest.raises(ConnectConflictError, match="already exists") as caught:
        client.create("c", {})
    assert not is_retryable(caught.value)
    assert len(fake.requests_to("POST", "/connectors")) == 1


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(500, ConnectError), (400, ConnectError), (404, ConnectNotFoundError), (401, ConnectError)],
)
def test_other_errors_are_not_retried_and_keep_connect_error_body(
    client: ConnectClient, fake: FakeConnect, status: int, error_type: type[ConnectError]
) -> None:
    message = f"Connector c says {status}"
    fake.script("PUT", "/connectors/c/pause", Reply(status, {"error_code": status, "message": message}))
    with pytest.raises(error_type) as caught:
        client.pause("c")
    err = caught.value
    assert type(err) is error_type
    assert (err.status, err.error_code) == (status, status)
    assert str(err) == f"Connect {status} {fake.url}: PUT /connectors/c/pause: {message}"
    assert isinstance(err.__cause__, requests.HTTPError)
    assert len(fake.requests_to("PUT", "/connectors/c/pause")) == 1


def test_non_json_error_body_is_kept_and_truncated(client: ConnectClient, fake: FakeConnect) -> None:
    html = "<html><body><h1>502 Bad Gateway</h1>" + "x" * 5000 + "</body></html>"
    fake.script("GET", "/connectors/c/status", Reply(502, html, content_type="text/html"))
    with pytest.raises(ConnectError) as caught:
        client.status("c")
    err = caught.value
    assert err.status == 502 and err.error_code is None
    assert "<h1>502 Bad Gateway</h1>" in str(err)
    assert "more chars)" in str(err)
    assert len(str(err)) < 500
    assert len(fake.requests_to("GET", "/connectors/c/status")) == 1


def test_read_timeout_is_a_transport_error(fake: FakeConnect, session: requests.Session) -> None:
    client = ConnectClient([fake.url], session, retry=RetryPolicy(max_attempts=1), timeout=(1.0, 5.0))
    fake.script("GET", "/connectors/c/status", Reply(200, status_body("c", "RUNNING"), delay=3.0))
    # The reply comes after 3 s: within the default read timeout (5 s), so only the per-call one can fail it.
    with pytest.raises(ConnectTransportError, match="no Connect worker answered") as caught:
        client.status("c", timeout=(1.0, 0.2))
    assert isinstance(caught.value.__cause__, requests.ReadTimeout)
    assert len(fake.requests_to("GET", "/connectors/c/status")) == 1


# -- failover ----------------------------------------------------------------------------------------


def test_fails_over_to_the_next_worker_and_remembers_it(
    fake: FakeConnect, session: requests.Session, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="mm2ctl.connect")
    dead = closed_port_url()
    client = ConnectClient([dead, fake.url], session, retry=FAST)
    fake.script("GET", "/connectors/c/status", Reply(200, status_body("c", "RUNNING")))
    assert client.url == dead
    assert client.status("c").state == "RUNNING"
    assert client.url == fake.url
    assert any("did not answer" in r.getMessage() for r in caplog.records)
    caplog.clear()
    client.status("c")
    # the second call went straight to the live worker
    assert not any("did not answer" in r.getMessage() for r in caplog.records)
    assert not any("retrying" in r.getMessage() for r in caplog.records)  # failover is not a retry
    assert len(fake.requests_to("GET", "/connectors/c/status")) == 2


def test_every_worker_down_is_retried_then_raised(session: requests.Session, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="mm2ctl.connect")
    dead = [closed_port_url(), closed_port_url()]
    client = ConnectClient(dead, session, retry=RetryPolicy(3, 5.0, 0.01, 0.01, 0))
    with pytest.raises(ConnectTransportError) as caught:
        client.connector_names()
    assert all(url in str(caught.value) for url in dead)
    assert isinstance(caught.value.__cause__, requests.ConnectionError)
    assert len([r for r in caplog.records if "retrying" in r.getMessage()]) == 2


# -- auth and secrets --------------------------------------------------------------------------------


def test_basic_auth_is_sent_and_the_password_never_logged(fake: FakeConnect, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger, urllib3 included
    password = "s3cr3t-P@ss"
    dead = closed_port_url()
    client = build_connect_client([dead, fake.url], username="ops", password=password, retry=FAST)
    fake.script(
        "GET",
        "/connectors/c/status",
        Reply(409, {"error_code": 409, "message": REBALANCE}),
        Reply(400, {"error_code": 400, "message": "bad"}),
    )
    with pytest.raises(ConnectError) as caught:
        client.status("c")
    token = base64.b64encode(f"ops:{password}".encode()).decode()
    assert all(s.headers.get("Authorization") == f"Basic {token}" for s in fake.seen)
    texts = [caplog.text, str(caught.value), repr(caught.value)]
    for text in texts:
        assert password not in text
        assert token not in text
        assert "Authorization" not in text


def test_credentials_in_a_url_are_moved_out_of_it(fake: FakeConnect) -> None:
    password = "pw-in-url"
    with_creds = fake.url.replace("http://", f"http://ops:{password}@")
    client = build_connect_client(with_creds, retry=FAST)
    fake.script("PUT", "/connectors/c/pause", Reply(500, {"error_code": 500, "message": "Request timed out"}))
    with pytest.raises(ConnectError) as caught:
        client.pause("c")
    assert password not in str(caught.value) and client.url == fake.url
    token = base64.b64encode(f"ops:{password}".encode()).decode()
    assert fake.seen[0].headers["Authorization"] == f"Basic {token}"


def test_factory_configures_tls_and_checks_files(tmp_path: Any) -> None:
    ca, cert, key = (tmp_path / n for n in ("ca.pem", "client.pem", "client.key"))
    for f in (ca, cert, key):
        f.write_text("-----BEGIN-----\n")
    session = requests.Session()
    try:
        client = build_connect_client(
            "https://a:8083/, https://b:8083",
            ca_file=str(ca),
            cert_file=str(cert),
            key_file=str(key),
            session=session,
        )
        assert client.urls == ("https://a:8083", "https://b:8083")
        assert session.verify == str(ca)
        assert session.cert == (str(cert), str(key))
    finally:
        session.close()
    with pytest.raises(ConfigError, match="ca_file"):
        build_connect_client("https://a:8083", ca_file=str(tmp_path / "missing.pem"))
    with pytest.raises(ConfigError, match="cert_file"):
        build_connect_client("https://a:8083", key_file=str(key))
    with pytest.raises(ConfigError, match="connect url"):
        build_connect_client("connect:8083")
    with pytest.raises(ConfigError, match="MM2CTL_CONNECT_URL"):
        build_connect_client([])


def test_urls_from_env() -> None:
    env = {"MM2CTL_CONNECT_URL": " http://a:8083 ,http://b:8083,, "}
    assert connect_urls_from_env(env) == ["http://a:8083", "http://b:8083"]
    assert connect_urls_from_env({}) == []


# -- waiting for a state -----------------------------------------------------------------------------


def test_wait_for_state_polls_until_connector_and_tasks_arrive(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script(
        "GET",
        "/connectors/c/status",
        Reply(200, status_body("c", "PAUSED", "PAUSED")),
        Reply(200, status_body("c", "RUNNING", "PAUSED")),  # connector first, tasks lag behind
        Reply(200, status_body("c", "RUNNING", "RUNNING")),
    )
    status = client.wait_for_state("c", {"RUNNING"}, timeout=5, poll_interval=0.02)
    assert status.state == "RUNNING" and [t.state for t in status.tasks] == ["RUNNING"]
    assert len(fake.requests_to("GET", "/connectors/c/status")) == 3


def test_wait_for_state_on_a_stopped_connector_without_tasks(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("GET", "/connectors/c/status", Reply(200, status_body("c", "STOPPED")))
    assert client.wait_for_state("c", {"STOPPED"}, timeout=1, poll_interval=0.02).tasks == ()


def test_wait_for_state_times_out_with_the_last_status(client: ConnectClient, fake: FakeConnect) -> None:
    fake.script("GET", "/connectors/c/status", Reply(200, status_body("c", "RUNNING", "FAILED")))
    started = time.monotonic()
    with pytest.raises(ConnectError) as caught:
        client.wait_for_state("c", {"RUNNING"}, timeout=0.3, poll_interval=0.05)
    assert time.monotonic() - started >= 0.3  # it waited out its deadline
    assert "did not reach RUNNING within 0.3s" in str(caught.value)
    assert "connector RUNNING on w1:8083, tasks [0:FAILED]" in str(caught.value)
    assert not isinstance(caught.value, ConnectNotFoundError)
    # ignoring the tasks, the same status is good enough
    assert client.wait_for_state("c", {"RUNNING"}, timeout=1, poll_interval=0.05, include_tasks=False)


def test_wait_for_state_treats_404_as_not_yet_only_when_asked(client: ConnectClient, fake: FakeConnect) -> None:
    missing = Reply(404, {"error_code": 404, "message": "No status found for connector c"})
    fake.script("GET", "/connectors/c/status", missing, Reply(200, status_body("c", "RUNNING", "RUNNING")))
    assert client.wait_for_state("c", {"RUNNING"}, timeout=5, poll_interval=0.02, allow_missing=True)

    fake.script("GET", "/connectors/c/status", missing)
    with pytest.raises(ConnectNotFoundError):
        client.wait_for_state("c", {"RUNNING"}, timeout=5, poll_interval=0.02)
    with pytest.raises(ConnectError, match="last seen: connector not found"):
        client.wait_for_state("c", {"RUNNING"}, timeout=0.1, poll_interval=0.02, allow_missing=True)


def test_wait_for_state_does_not_let_one_slow_poll_outlive_the_deadline(
    fake: FakeConnect, session: requests.Session
) -> None:
    client = ConnectClient([fake.url], session, retry=RetryPolicy(max_attempts=1), timeout=(1.0, 30.0))
    fake.script("GET", "/connectors/c/status", Reply(200, status_body("c", "RUNNING"), delay=5.0))
    # The status would come (RUNNING) after 5 s, within the client's 30 s read timeout: only a poll bounded by
    # the wait's own deadline fails.
    with pytest.raises(ConnectTransportError):
        client.wait_for_state("c", {"RUNNING"}, timeout=0.3, poll_interval=0.05)


def test_client_closes_its_session(fake: FakeConnect) -> None:
    with build_connect_client(fake.url, retry=FAST) as client:
        assert client.server_info().version == "3.9.2"
