"""One single-node KRaft cluster (combined broker + controller) of the lab."""

from __future__ import annotations

import base64
import os
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from mm2ctl.lab.logging_config import logging_properties
from mm2ctl.lab.process import JvmSpec, free_port, is_alive, run_java_tool, start_jvm, wait_until
from mm2ctl.lab.releases import KafkaRelease


@dataclass(frozen=True, slots=True)
class BrokerSpec:
    alias: str
    folder: Path
    broker_port: int
    controller_port: int
    cluster_id: str
    #: The secured lab's OAUTHBEARER listener (``lab.secured``); None for a plaintext broker.
    oauth_port: int | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.broker_port}"

    @property
    def config_file(self) -> Path:
        return self.folder / "server.properties"

    @property
    def log_file(self) -> Path:
        return self.folder / "broker.log"


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (what kafka-storage makes)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def plan_broker(lab_dir: Path, alias: str, *, secured: bool = False) -> BrokerSpec:
    return BrokerSpec(
        alias=alias,
        folder=lab_dir / alias,
        broker_port=free_port(),
        controller_port=free_port(),
        cluster_id=new_cluster_id(),
        oauth_port=free_port() if secured else None,
    )


def _server_properties(spec: BrokerSpec, overrides: Mapping[str, str]) -> str:
    lines = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{spec.controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{spec.broker_port},CONTROLLER://127.0.0.1:{spec.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{spec.broker_port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(spec.folder / "data"),
        "num.partitions": "1",
        "default.replication.factor": "1",
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        # A Kafka Streams app of the lab gets its tasks within a second, not after two 5 s heartbeats.
        "group.streams.initial.rebalance.delay.ms": "0",
        "group.streams.min.heartbeat.interval.ms": "1000",
        "group.streams.heartbeat.interval.ms": "1000",
        "auto.create.topics.enable": "false",
        # Compaction must be observable in tests within seconds, not hours.
        "log.cleaner.backoff.ms": "500",
        "log.retention.check.interval.ms": "5000",
        "log.segment.delete.delay.ms": "1000",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "socket.request.max.bytes": "104857600",
        **overrides,
    }
    header = f"# KRaft cluster '{spec.alias}' of the mm2ctl lab (written by mm2ctl lab up)\n"
    return header + "".join(f"{k}={v}\n" for k, v in lines.items())


def start_broker(
    spec: BrokerSpec,
    release: KafkaRelease,
    classpath: str,
    *,
    overrides: Mapping[str, str] | None = None,
    format_args: Sequence[str] = (),
    system_properties: Sequence[tuple[str, str]] = (),
) -> int:
    """Format the storage and start the broker; returns its pid without waiting for readiness.

    ``overrides`` replace server.properties entries (the secured lab's listeners), ``format_args`` go to the
    storage formatter (its SCRAM users), ``system_properties`` to the broker's JVM.
    """
    spec.folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(spec.config_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # may hold credentials
    with os.fdopen(fd, "w") as fh:
        fh.write(_server_properties(spec, overrides or {}))
    log_props = logging_properties(spec.folder, release)
    common = JvmSpec(
        name=f"kafka-storage format ({spec.alias})",
        main_class="kafka.tools.StorageTool",
        # "--cluster-id=<id>" in one token: a random id may start with "-", which argparse reads as an option.
        args=(
            "format",
            f"--cluster-id={spec.cluster_id}",
            "-c",
            str(spec.config_file),
            "--ignore-formatted",
            *format_args,
        ),
        classpath=classpath,
        heap="256m",
        system_properties=log_props,
    )
    run_java_tool(common, spec.folder / "format.log", timeout_s=120)
    broker = JvmSpec(
        name=f"kafka broker ({spec.alias})",
        main_class="kafka.Kafka",
        args=(str(spec.config_file),),
        classpath=classpath,
        heap="768m",
        system_properties=(*log_props, ("kafka.logs.dir", str(spec.folder / "logs")), *system_properties),
    )
    return start_jvm(broker, spec.log_file)


def broker_ready(bootstrap: str, client: Mapping[str, str] | None = None) -> bool:
    """The broker answers metadata and has a controller: it can create topics and store offsets."""
    conf: dict[str, str | int | float | bool] = {**(client or {}), "bootstrap.servers": bootstrap}
    conf.update({"socket.timeout.ms": 2000, "log_level": 0})
    admin = AdminClient(conf)
    try:
        md = admin.list_topics(timeout=2)
    except Exception:  # any failure here just means "not yet"
        return False
    return bool(md.brokers)


def wait_for_broker(
    spec: BrokerSpec, pid: int, *, timeout_s: float = 120, client: Mapping[str, str] | None = None
) -> None:
    wait_until(
        lambda: broker_ready(spec.bootstrap, client),
        what=f"Kafka broker '{spec.alias}' on {spec.bootstrap}",
        timeout_s=timeout_s,
        interval_s=0.5,
        alive=lambda: is_alive(pid),
        log_file=spec.log_file,
    )
