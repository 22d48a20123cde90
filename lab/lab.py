"""The lab: two single-node KRaft clusters and a Connect worker running MM2, from Maven Central jars.

``up`` resolves the jars, starts ``primary`` and ``backup`` side by side, starts a distributed Connect
worker bootstrapped to ``backup``, creates the three MM2 connectors for ``primary->backup`` and waits until
all are RUNNING. It writes ``lab.json`` (addresses, cluster ids, pids) and ``mm2.properties`` into the
lab folder, where every process also keeps its log. ``down`` stops exactly the processes ``lab.json`` names.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from mm2ctl.core.errors import LabError
from mm2ctl.core.progress import Progress
from mm2ctl.lab import connect_worker, kraft
from mm2ctl.lab.jars import kafka_classpath
from mm2ctl.lab.mm2_setup import ISOLATED_PREFIX, ROLES, Mm2Setup
from mm2ctl.lab.process import is_alive, stop_pids, wait_until
from mm2ctl.lab.versions import DEFAULT_KAFKA_VERSION, release

LAB_FILE = "lab.json"
MM2_FILE = "mm2.properties"
SOURCE_ALIAS = "primary"
TARGET_ALIAS = "backup"
_MARKER_FILE = ".mm2ctl-lab"


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    alias: str
    bootstrap: str
    cluster_id: str
    pid: int


@dataclass(frozen=True, slots=True)
class LabInfo:
    """What ``lab.json`` holds: enough to reach, inspect and stop a running lab."""

    dir: str
    kafka_version: str
    replication_policy: str
    offset_syncs_location: str
    clusters: dict[str, ClusterInfo]
    connect_url: str
    connect_pid: int
    connect_group: str
    connect_offsets_topic: str
    connectors: dict[str, str]
    mm2_config: str
    started_at: float
    boot_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> ClusterInfo:
        return self.clusters[SOURCE_ALIAS]

    @property
    def target(self) -> ClusterInfo:
        return self.clusters[TARGET_ALIAS]

    @property
    def pids(self) -> list[int]:
        return [self.connect_pid, *(c.pid for c in self.clusters.values())]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @staticmethod
    def from_json(text: str, path: str) -> LabInfo:
        try:
            raw = json.loads(text)
            clusters = {k: ClusterInfo(**v) for k, v in raw.pop("clusters").items()}
            return LabInfo(clusters=clusters, **raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise LabError(f"{path} is not a lab.json written by mm2ctl lab up: {exc}") from exc


def read_lab(lab_dir: Path) -> LabInfo:
    path = lab_dir / LAB_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise LabError(
            f"no lab in {lab_dir} (missing {LAB_FILE}); start one with: mm2ctl lab up --dir {lab_dir}"
        ) from None
    return LabInfo.from_json(text, str(path))


def up(
    lab_dir: Path,
    *,
    kafka_version: str = DEFAULT_KAFKA_VERSION,
    replication_policy: str = "default",
    offset_syncs_location: str = "source",
    progress: Progress | None = None,
    timeout_s: float = 240,
) -> LabInfo:
    """Start a lab in ``lab_dir`` and wait until both clusters answer and all three connectors run."""
    if replication_policy not in ("default", "identity"):
        raise LabError(f"replication policy must be 'default' or 'identity', not {replication_policy!r}")
    if offset_syncs_location not in ("source", "target"):
        raise LabError(f"offset-syncs location must be 'source' or 'target', not {offset_syncs_location!r}")
    say = progress or (lambda _msg: None)
    rel = release(kafka_version)
    lab_dir = lab_dir.resolve()
    existing = lab_dir / LAB_FILE
    if existing.exists():
        info = LabInfo.from_json(existing.read_text(), str(existing))
        if any(is_alive(p) for p in info.pids):
            raise LabError(f"a lab is already running in {lab_dir}; stop it with: mm2ctl lab down --dir {lab_dir}")
    _reset_dir(lab_dir)

    t0 = time.monotonic()
    say(f"resolving Kafka {kafka_version} jars with mvn")
    classpath = kafka_classpath(kafka_version)

    started: list[int] = []
    try:
        brokers = {alias: kraft.plan_broker(lab_dir, alias) for alias in (SOURCE_ALIAS, TARGET_ALIAS)}
        pids: dict[str, int] = {}
        for alias, spec in brokers.items():
            say(f"starting KRaft cluster '{alias}' on {spec.bootstrap}")
            pids[alias] = kraft.start_broker(spec, rel, classpath)
            started.append(pids[alias])
        for alias, spec in brokers.items():
            kraft.wait_for_broker(spec, pids[alias], timeout_s=timeout_s)

        worker = connect_worker.plan_worker(lab_dir, brokers[TARGET_ALIAS].bootstrap)
        say(f"starting Kafka Connect worker on {worker.url}")
        connect_pid = connect_worker.start_worker(worker, rel, classpath)
        started.append(connect_pid)
        connect_worker.wait_for_worker(worker, connect_pid, timeout_s=timeout_s)

        setup = Mm2Setup(
            source_alias=SOURCE_ALIAS,
            target_alias=TARGET_ALIAS,
            source_bootstrap=brokers[SOURCE_ALIAS].bootstrap,
            target_bootstrap=brokers[TARGET_ALIAS].bootstrap,
            replication_policy=replication_policy,
            offset_syncs_location=offset_syncs_location,
        )
        say("creating MirrorSource, MirrorCheckpoint and MirrorHeartbeat connectors")
        for name, config in setup.connector_configs().items():
            connect_worker.put_connector(worker.url, name, config)
        wait_for_connectors_running(worker.url, list(setup.connector_names.values()), timeout_s=timeout_s)

        mm2_path = lab_dir / MM2_FILE
        mm2_path.write_text(setup.mm2_properties())
        info = LabInfo(
            dir=str(lab_dir),
            kafka_version=kafka_version,
            replication_policy=replication_policy,
            offset_syncs_location=offset_syncs_location,
            clusters={
                alias: ClusterInfo(alias, spec.bootstrap, spec.cluster_id, pids[alias])
                for alias, spec in brokers.items()
            },
            connect_url=worker.url,
            connect_pid=connect_pid,
            connect_group=connect_worker.WORKER_GROUP,
            connect_offsets_topic=connect_worker.OFFSETS_TOPIC,
            connectors=setup.connector_names,
            mm2_config=str(mm2_path),
            started_at=time.time(),
            boot_seconds=round(time.monotonic() - t0, 1),
        )
        (lab_dir / LAB_FILE).write_text(info.to_json())
        say(f"lab up in {info.boot_seconds:.1f}s")
        return info
    except BaseException:
        stop_pids(started, str(lab_dir))
        raise


def wait_for_connectors_running(url: str, names: list[str], *, timeout_s: float) -> None:
    """Every named connector and every one of its tasks is RUNNING.

    A MirrorCheckpointConnector with no consumer groups to checkpoint legitimately runs with zero tasks, so
    task count is not required, only that no task is in another state.
    """

    def all_running() -> bool:
        states = connect_worker.connector_states(url)
        return all(
            n in states and states[n]["state"] == "RUNNING" and all(t == "RUNNING" for t in states[n]["tasks"])  # type: ignore[attr-defined]
            for n in names
        )

    wait_until(all_running, what=f"MM2 connectors {names} RUNNING", timeout_s=timeout_s, interval_s=0.5)


@dataclass(frozen=True, slots=True)
class Flow:
    """An isolated MM2 flow on a running lab: its own aliases, connectors, internal topics and filters."""

    setup: Mm2Setup
    connectors: dict[str, str]
    mm2_config: str

    @property
    def source_alias(self) -> str:
        return self.setup.source_alias

    @property
    def target_alias(self) -> str:
        return self.setup.target_alias


def isolated_setup(
    info: LabInfo,
    name: str,
    *,
    replication_policy: str | None = None,
    offset_syncs_location: str | None = None,
    roles: tuple[str, ...] = ROLES,
) -> Mm2Setup:
    """The MM2 setup of an isolated flow ``name``: aliases ``<name>src`` → ``<name>dst`` on the lab's clusters,
    mirroring only topics and groups named ``iso-<name>-…`` (which the lab's own flow ignores)."""
    if not name.isalnum():
        raise LabError(f"flow name must be letters and digits, not {name!r}")
    prefix = f"{ISOLATED_PREFIX}{name}-"
    return Mm2Setup(
        source_alias=f"{name}src",
        target_alias=f"{name}dst",
        source_bootstrap=info.source.bootstrap,
        target_bootstrap=info.target.bootstrap,
        replication_policy=replication_policy or info.replication_policy,
        offset_syncs_location=offset_syncs_location or info.offset_syncs_location,
        connector_prefix=f"mm2-{name}",
        topics=f"{prefix}.*",
        topics_exclude=r"mm2.*\.internal, .*\.replica, __.*",
        groups=f"{prefix}.*",
        groups_exclude="console-consumer-.*, connect-.*, __.*",
        roles=roles,
    )


def add_flow(
    info: LabInfo,
    name: str,
    *,
    replication_policy: str | None = None,
    offset_syncs_location: str | None = None,
    roles: tuple[str, ...] = ROLES,
    timeout_s: float = 120,
) -> Flow:
    """Create an MM2 flow of its own between the lab's two clusters and wait until it runs.

    ``name`` (letters and digits) makes the aliases ``<name>src`` → ``<name>dst``, so the flow's
    offset-syncs, checkpoints and remote topics are its own. It mirrors only topics and groups named
    ``iso-<name>-…``, which the lab's own flow ignores. Its MM2 properties file is written to the lab folder.
    """
    setup = isolated_setup(
        info,
        name,
        replication_policy=replication_policy,
        offset_syncs_location=offset_syncs_location,
        roles=roles,
    )
    for connector, config in setup.connector_configs().items():
        connect_worker.put_connector(info.connect_url, connector, config)
    wait_for_connectors_running(info.connect_url, list(setup.connector_names.values()), timeout_s=timeout_s)
    path = Path(info.dir) / f"mm2-{name}.properties"
    path.write_text(setup.mm2_properties())
    return Flow(setup=setup, connectors=setup.connector_names, mm2_config=str(path))


def down(lab_dir: Path, *, remove_data: bool = False) -> list[int]:
    """Stop every process ``lab.json`` names; return the pids that had to be stopped."""
    lab_dir = lab_dir.resolve()
    info = read_lab(lab_dir)
    # Connect first, so MM2 tasks stop cleanly while the brokers still answer.
    stopped = stop_pids([info.connect_pid], str(lab_dir))
    stopped += stop_pids([c.pid for c in info.clusters.values()], str(lab_dir))
    if remove_data:
        shutil.rmtree(lab_dir, ignore_errors=True)
    return stopped


@dataclass(frozen=True, slots=True)
class ClusterStatus:
    alias: str
    bootstrap: str
    cluster_id: str
    process_alive: bool
    reachable: bool
    topics: int


@dataclass(frozen=True, slots=True)
class LabStatus:
    info: LabInfo
    clusters: tuple[ClusterStatus, ...]
    connect_alive: bool
    connectors: dict[str, dict[str, object]]

    @property
    def healthy(self) -> bool:
        return (
            all(c.reachable for c in self.clusters)
            and self.connect_alive
            and len(self.connectors) >= len(self.info.connectors)
            and all(c["state"] == "RUNNING" for c in self.connectors.values())
        )


def status(lab_dir: Path) -> LabStatus:
    info = read_lab(lab_dir.resolve())
    clusters = []
    for c in info.clusters.values():
        topics = -1
        try:
            md = AdminClient({"bootstrap.servers": c.bootstrap, "log_level": 0}).list_topics(timeout=3)
            topics = len(md.topics)
        except Exception:  # unreachable is a status, not an error
            pass
        clusters.append(ClusterStatus(c.alias, c.bootstrap, c.cluster_id, is_alive(c.pid), topics >= 0, topics))
    return LabStatus(
        info=info,
        clusters=tuple(clusters),
        connect_alive=is_alive(info.connect_pid),
        connectors=connect_worker.connector_states(info.connect_url),
    )


def _reset_dir(lab_dir: Path) -> None:
    """Start from an empty folder; refuse to wipe one that is not a lab folder."""
    if lab_dir.exists() and any(lab_dir.iterdir()) and not (lab_dir / _MARKER_FILE).exists():
        raise LabError(f"{lab_dir} exists and is not an mm2ctl lab folder; choose an empty or new --dir")
    shutil.rmtree(lab_dir, ignore_errors=True)
    lab_dir.mkdir(parents=True)
    (lab_dir / _MARKER_FILE).write_text(f"mm2ctl lab, pid {os.getpid()}\n")
