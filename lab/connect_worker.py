"""The lab's distributed Kafka Connect worker, bootstrapped to the target cluster, running MM2's connectors."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import requests

from mm2ctl.core.errors import LabError
from mm2ctl.lab.logging_config import logging_properties
from mm2ctl.lab.process import JvmSpec, free_port, is_alive, start_jvm, wait_until
from mm2ctl.lab.releases import KafkaRelease

WORKER_GROUP = "mm2ctl-lab-connect"
OFFSETS_TOPIC = "connect-offsets"
CONFIGS_TOPIC = "connect-configs"
STATUS_TOPIC = "connect-status"


@dataclass(frozen=True, slots=True)
class WorkerSpec:
    folder: Path
    rest_port: int
    bootstrap: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.rest_port}"

    @property
    def config_file(self) -> Path:
        return self.folder / "connect-distributed.properties"

    @property
    def log_file(self) -> Path:
        return self.folder / "connect.log"


def plan_worker(lab_dir: Path, bootstrap: str) -> WorkerSpec:
    return WorkerSpec(folder=lab_dir / "connect", rest_port=free_port(), bootstrap=bootstrap)


def _worker_properties(spec: WorkerSpec, overrides: Mapping[str, str]) -> str:
    props = {
        "bootstrap.servers": spec.bootstrap,
        "group.id": WORKER_GROUP,
        "listeners": f"http://127.0.0.1:{spec.rest_port}",
        "rest.advertised.host.name": "127.0.0.1",
        "rest.advertised.port": str(spec.rest_port),
        "key.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "key.converter.schemas.enable": "false",
        "value.converter.schemas.enable": "false",
        "offset.storage.topic": OFFSETS_TOPIC,
        "offset.storage.replication.factor": "1",
        "offset.storage.partitions": "25",
        "config.storage.topic": CONFIGS_TOPIC,
        "config.storage.replication.factor": "1",
        "status.storage.topic": STATUS_TOPIC,
        "status.storage.replication.factor": "1",
        "status.storage.partitions": "5",
        # Commit source offsets every second so tests see connect-offsets move quickly.
        "offset.flush.interval.ms": "1000",
        "scheduled.rebalance.max.delay.ms": "1000",
        "task.shutdown.graceful.timeout.ms": "5000",
        # MM2's classes are on the worker's classpath; no plugin scanning needed.
        "plugin.discovery": "only_scan",
        **overrides,
    }
    header = "# Distributed Kafka Connect worker of the mm2ctl lab (written by mm2ctl lab up)\n"
    return header + "".join(f"{k}={v}\n" for k, v in props.items())


def start_worker(
    spec: WorkerSpec, release: KafkaRelease, classpath: str, *, overrides: Mapping[str, str] | None = None
) -> int:
    """Start the worker; ``overrides`` add to its properties (the secured lab's client security)."""
    spec.folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(spec.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # may hold credentials
    with os.fdopen(fd, "w") as fh:
        fh.write(_worker_properties(spec, overrides or {}))
    jvm = JvmSpec(
        name="kafka connect worker",
        main_class="org.apache.kafka.connect.cli.ConnectDistributed",
        args=(str(spec.config_file),),
        classpath=classpath,
        heap="1g",
        system_properties=(
            *logging_properties(spec.folder, release),
            ("kafka.logs.dir", str(spec.folder / "logs")),
        ),
    )
    return start_jvm(jvm, spec.log_file)


def _rest_ready(url: str) -> bool:
    try:
        return requests.get(f"{url}/connectors", timeout=2).status_code == 200
    except requests.RequestException:
        return False


def wait_for_worker(spec: WorkerSpec, pid: int, *, timeout_s: float = 180) -> None:
    """The REST API answers ``GET /connectors`` only after the worker joined its group and read its configs."""
    wait_until(
        lambda: _rest_ready(spec.url),
        what=f"Kafka Connect worker at {spec.url}",
        timeout_s=timeout_s,
        interval_s=0.5,
        alive=lambda: is_alive(pid),
        log_file=spec.log_file,
    )


def put_connector(url: str, name: str, config: dict[str, str], *, timeout_s: float = 60) -> None:
    """Create or update a connector; retries the 409 a worker answers while it rebalances."""
    last = ""

    def attempt() -> bool:
        nonlocal last
        try:
            resp = requests.put(f"{url}/connectors/{name}/config", json=config, timeout=10)
        except requests.RequestException as exc:
            last = str(exc)
            return False
        if resp.status_code in (200, 201):
            return True
        last = f"{resp.status_code} {resp.text[:300]}"
        if resp.status_code == 409:
            return False
        raise LabError(f"creating connector {name} failed: {last}")

    try:
        wait_until(attempt, what=f"create connector {name}", timeout_s=timeout_s, interval_s=0.5)
    except LabError as exc:
        raise LabError(f"{exc}; last answer: {last}") from exc


def connector_states(url: str) -> dict[str, dict[str, object]]:
    """Connector name → {"state": ..., "tasks": [task states]} (empty when the worker is unreachable)."""
    try:
        resp = requests.get(f"{url}/connectors", params={"expand": "status"}, timeout=5)
        resp.raise_for_status()
    except requests.RequestException:
        return {}
    out: dict[str, dict[str, object]] = {}
    for name, body in resp.json().items():
        status = body.get("status", {})
        out[name] = {
            "state": status.get("connector", {}).get("state", "UNKNOWN"),
            "tasks": [t.get("state", "UNKNOWN") for t in status.get("tasks", [])],
        }
    return out
