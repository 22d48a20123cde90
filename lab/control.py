"""The lab: two single-node KRaft clusters and a Connect worker running MM2, from Maven Central jars.

``up`` resolves the jars, starts ``primary`` and ``backup`` side by side, starts a distributed Connect
worker bootstrapped to ``backup``, creates the three MM2 connectors for ``primary->backup`` and waits until
all are RUNNING. It writes ``lab.json`` (addresses, cluster ids, pids), ``mm2.properties`` and the same setup
as a Strimzi KafkaMirrorMaker2 resource (``kafka-mirror-maker-2.yaml``, its Secrets in ``secrets/``) into the
lab folder, where every process also keeps its log. ``down`` stops exactly the processes ``lab.json`` names.

With ``security="sasl-ssl"`` (``lab.secured``) the clusters take SASL_SSL (SCRAM-SHA-512) and OAUTHBEARER,
enforce ACLs, and MM2 runs as an admin principal while ``mm2.properties`` (and ``mm2-oauth.properties``) connect
as the least-privilege ``mm2ctl`` principal. The lab's OAuth identity provider runs as one more process.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import requests
from confluent_kafka.admin import AdminClient

from mm2ctl.core.errors import LabError
from mm2ctl.core.progress import Progress
from mm2ctl.lab import connect_worker, kraft
from mm2ctl.lab import secured as lab_security
from mm2ctl.lab.jars import kafka_classpath
from mm2ctl.lab.mm2_setup import ISOLATED_PREFIX, ROLES, Mm2Setup
from mm2ctl.lab.process import free_port, is_alive, start_command, stop_pids, wait_until
from mm2ctl.lab.releases import DEFAULT_KAFKA_VERSION, KafkaRelease, release

LAB_FILE = "lab.json"
MM2_FILE = "mm2.properties"
MM2_OAUTH_FILE = "mm2-oauth.properties"
RESOURCE_FILE = "kafka-mirror-maker-2.yaml"
SECRETS_DIR = "secrets"
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
    #: ``none`` or ``sasl-ssl`` (``lab.secured``).
    security: str = "none"
    #: The same setup as ``mm2_config``, as a KafkaMirrorMaker2 resource, and the folder of its Secrets.
    resource: str = ""
    secrets: str = ""
    #: Secured lab: ``mm2_config`` over OAUTHBEARER, each cluster's OAUTHBEARER listener, the token endpoint.
    mm2_oauth_config: str = ""
    oauth_bootstrap: dict[str, str] = field(default_factory=dict)
    token_url: str = ""
    #: Processes besides the JVMs (the secured lab's identity provider).
    helper_pids: list[int] = field(default_factory=list)
    #: The Connect worker runs source connectors with exactly-once support (KIP-618): MM2 writes the target
    #: in transactions.
    exactly_once: bool = False

    @property
    def source(self) -> ClusterInfo:
        return self.clusters[SOURCE_ALIAS]

    @property
    def target(self) -> ClusterInfo:
        return self.clusters[TARGET_ALIAS]

    @property
    def pids(self) -> list[int]:
        return [self.connect_pid, *(c.pid for c in self.clusters.values()), *self.helper_pids]

    @property
    def secured(self) -> bool:
        return self.security != "none"

    def client_config(self, alias: str, user: str = lab_security.ADMIN) -> dict[str, str]:
        """confluent-kafka settings to reach cluster ``alias``: on a secured lab as ``user`` (default the admin)."""
        bootstrap = self.clusters[alias].bootstrap
        if not self.secured:
            return {"bootstrap.servers": bootstrap}
        return lab_security.client_config(lab_security.LabSecurity(self.dir), bootstrap, user)

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
    security_mode: str = "none",
    exactly_once: bool = False,
    progress: Progress | None = None,
    timeout_s: float = 240,
) -> LabInfo:
    """Start a lab in ``lab_dir`` and wait until both clusters answer and all three connectors run.

    ``exactly_once`` turns on the worker's exactly-once source support (``exactly.once.source.support=enabled``,
    KIP-618): every MM2 connector then writes the target in transactions (its records, Connect's offsets), and
    MirrorSourceConnector writes its offset syncs once each transaction commits."""
    _check_up_options(replication_policy, offset_syncs_location, security_mode)
    secured = security_mode != "none"
    say: Progress = progress or (lambda _msg: None)
    kafka_release = release(kafka_version)
    if secured and kafka_release.major < 4:
        raise LabError("--security sasl-ssl needs Kafka 4.x (OAUTHBEARER validation by JWKS, SCRAM at format)")
    lab_dir = lab_dir.resolve()
    _refuse_a_running_lab(lab_dir)
    _reset_dir(lab_dir)

    boot_started = time.monotonic()
    say(f"resolving Kafka {kafka_version} jars with mvn")
    classpath = kafka_classpath(kafka_version)

    started_pids: list[int] = []  # stopped again if any step fails
    try:
        brokers = {alias: kraft.plan_broker(lab_dir, alias, secured=secured) for alias in (SOURCE_ALIAS, TARGET_ALIAS)}
        if secured:
            security = _secure_brokers(lab_dir, brokers, started_pids, say, timeout_s)
        else:
            security = _BrokerSecurity.open(brokers)
        broker_pids = _start_clusters(brokers, security, kafka_release, classpath, started_pids, say, timeout_s)

        worker = connect_worker.plan_worker(lab_dir, brokers[TARGET_ALIAS].bootstrap)
        clients = _connect_clients(security.material)
        connect_pid = _start_connect(
            worker, clients, exactly_once, kafka_release, classpath, started_pids, say, timeout_s
        )

        setup = _lab_flow(brokers, replication_policy, offset_syncs_location, clients)
        _start_flow(worker.url, setup, say, timeout_s)
        files = _write_setup_files(lab_dir, setup, brokers, security)
        info = LabInfo(
            dir=str(lab_dir),
            kafka_version=kafka_version,
            replication_policy=replication_policy,
            offset_syncs_location=offset_syncs_location,
            clusters={
                alias: ClusterInfo(alias, spec.bootstrap, spec.cluster_id, broker_pids[alias])
                for alias, spec in brokers.items()
            },
            connect_url=worker.url,
            connect_pid=connect_pid,
            connect_group=connect_worker.WORKER_GROUP,
            connect_offsets_topic=connect_worker.OFFSETS_TOPIC,
            connectors=setup.connector_names,
            mm2_config=str(files.mm2_config),
            started_at=time.time(),
            boot_seconds=round(time.monotonic() - boot_started, 1),
            security=security_mode,
            resource=str(files.resource),
            secrets=str(files.secrets),
            mm2_oauth_config=files.mm2_oauth_config,
            oauth_bootstrap=files.oauth_bootstrap,
            token_url=security.token_url,
            helper_pids=security.helper_pids,
            exactly_once=exactly_once,
        )
        (lab_dir / LAB_FILE).write_text(info.to_json())
        say(f"lab up in {info.boot_seconds:.1f}s")
        return info
    except BaseException:
        stop_pids(started_pids, str(lab_dir))
        raise


def _check_up_options(replication_policy: str, offset_syncs_location: str, security_mode: str) -> None:
    """LabError for an option value ``up`` does not know."""
    if replication_policy not in ("default", "identity"):
        raise LabError(f"replication policy must be 'default' or 'identity', not {replication_policy!r}")
    if offset_syncs_location not in ("source", "target"):
        raise LabError(f"offset-syncs location must be 'source' or 'target', not {offset_syncs_location!r}")
    if security_mode not in lab_security.SECURITY_MODES:
        raise LabError(f"security must be one of {', '.join(lab_security.SECURITY_MODES)}, not {security_mode!r}")


def _refuse_a_running_lab(lab_dir: Path) -> None:
    """LabError when ``lab_dir`` holds a lab any of whose processes still runs (its folder is about to be reset)."""
    existing = lab_dir / LAB_FILE
    if existing.exists():
        info = LabInfo.from_json(existing.read_text(), str(existing))
        if any(is_alive(p) for p in info.pids):
            raise LabError(f"a lab is already running in {lab_dir}; stop it with: mm2ctl lab down --dir {lab_dir}")


@dataclass(frozen=True)
class _BrokerSecurity:
    """What a secured lab adds to its brokers; an open lab has no material and empty broker options."""

    #: The certificates, SCRAM passwords and OAuth signing key (None on an open lab).
    material: lab_security.LabSecurity | None
    #: The identity provider's token endpoint ("" on an open lab).
    token_url: str
    #: Per cluster alias, the keyword arguments of ``kraft.start_broker`` (listeners, SCRAM users, JWKS URL).
    broker_options: dict[str, dict[str, Any]]
    #: The identity provider's process.
    helper_pids: list[int]

    @staticmethod
    def open(brokers: Mapping[str, kraft.BrokerSpec]) -> _BrokerSecurity:
        return _BrokerSecurity(None, "", {alias: {} for alias in brokers}, [])


def _secure_brokers(
    lab_dir: Path, brokers: Mapping[str, kraft.BrokerSpec], started_pids: list[int], say: Progress, timeout_s: float
) -> _BrokerSecurity:
    """Generate the secured lab's material, start its identity provider and plan each broker's security."""
    say("generating TLS certificates, SCRAM users and the OAuth signing key")
    material = lab_security.generate(lab_dir)
    token_url, jwks_url, issuer, identity_provider_pid = _start_identity_provider(lab_dir, timeout_s)
    started_pids.append(identity_provider_pid)
    users = (lab_security.ADMIN, lab_security.MM2CTL)
    broker_options: dict[str, dict[str, Any]] = {}
    for alias, spec in brokers.items():
        assert spec.oauth_port is not None
        broker_options[alias] = {
            "overrides": lab_security.broker_settings(
                material,
                scram_port=spec.broker_port,
                oauth_port=spec.oauth_port,
                controller_port=spec.controller_port,
                jwks_url=jwks_url,
                issuer=issuer,
            ),
            "format_args": [
                arg
                for user in users
                for arg in ("--add-scram", lab_security.scram_credential(user, material.password(user)))
            ],
            "system_properties": [("org.apache.kafka.sasl.oauthbearer.allowed.urls", jwks_url)],
        }
    return _BrokerSecurity(material, token_url, broker_options, [identity_provider_pid])


def _start_clusters(
    brokers: Mapping[str, kraft.BrokerSpec],
    security: _BrokerSecurity,
    kafka_release: KafkaRelease,
    classpath: str,
    started_pids: list[int],
    say: Progress,
    timeout_s: float,
) -> dict[str, int]:
    """Start both KRaft clusters side by side, wait until each answers, and on a secured lab grant mm2ctl's
    ACLs; each broker's pid by cluster alias."""
    broker_pids: dict[str, int] = {}
    for alias, spec in brokers.items():
        say(f"starting KRaft cluster '{alias}' on {spec.bootstrap}")
        broker_pids[alias] = kraft.start_broker(spec, kafka_release, classpath, **security.broker_options[alias])
        started_pids.append(broker_pids[alias])
    material = security.material
    admin_client = (
        {} if material is None else _without_bootstrap(lab_security.client_config(material, "", lab_security.ADMIN))
    )
    for alias, spec in brokers.items():
        kraft.wait_for_broker(spec, broker_pids[alias], timeout_s=timeout_s, client=admin_client)
    if material is not None:
        say("granting the mm2ctl principal its ACLs")
        for spec in brokers.values():
            lab_security.grant_acls({**admin_client, "bootstrap.servers": spec.bootstrap})
    return broker_pids


@dataclass(frozen=True)
class _ConnectClients:
    """The Java client settings of a secured lab's Connect side (all empty on an open lab)."""

    #: MM2's connectors, as the admin principal.
    connector: dict[str, str]
    #: ``mm2.properties``, as the least-privilege mm2ctl principal.
    mm2_file: dict[str, str]
    #: The worker's own clients and its producer, consumer and admin clients, as the admin principal.
    worker: dict[str, str]
    #: Each cluster's ``tls`` and ``authentication`` in the KafkaMirrorMaker2 resource.
    resource_security: dict[str, object]


def _connect_clients(material: lab_security.LabSecurity | None) -> _ConnectClients:
    if material is None:
        return _ConnectClients({}, {}, {}, {})
    connector = lab_security.java_client_settings(material, lab_security.ADMIN)
    mm2_file = lab_security.java_client_settings(material, lab_security.MM2CTL)
    worker: dict[str, str] = {}
    for prefix in ("", "producer.", "consumer.", "admin."):
        worker.update(lab_security.prefixed(prefix, connector))
    return _ConnectClients(connector, mm2_file, worker, _resource_security())


def _start_connect(
    worker: connect_worker.WorkerSpec,
    clients: _ConnectClients,
    exactly_once: bool,
    kafka_release: KafkaRelease,
    classpath: str,
    started_pids: list[int],
    say: Progress,
    timeout_s: float,
) -> int:
    """Start the distributed Connect worker and wait until its REST API answers; its pid."""
    worker_overrides = dict(clients.worker)
    if exactly_once:
        worker_overrides["exactly.once.source.support"] = "enabled"
    say(f"starting Kafka Connect worker on {worker.url}" + (" (exactly-once source support)" if exactly_once else ""))
    connect_pid = connect_worker.start_worker(worker, kafka_release, classpath, overrides=worker_overrides)
    started_pids.append(connect_pid)
    connect_worker.wait_for_worker(worker, connect_pid, timeout_s=timeout_s)
    return connect_pid


def _lab_flow(
    brokers: Mapping[str, kraft.BrokerSpec],
    replication_policy: str,
    offset_syncs_location: str,
    clients: _ConnectClients,
) -> Mm2Setup:
    """The lab's one MM2 flow, ``primary->backup``."""
    return Mm2Setup(
        source_alias=SOURCE_ALIAS,
        target_alias=TARGET_ALIAS,
        source_bootstrap=brokers[SOURCE_ALIAS].bootstrap,
        target_bootstrap=brokers[TARGET_ALIAS].bootstrap,
        replication_policy=replication_policy,
        offset_syncs_location=offset_syncs_location,
        connector_client=clients.connector,
        file_client=clients.mm2_file,
        resource_cluster_security=clients.resource_security,
    )


def _start_flow(connect_url: str, setup: Mm2Setup, say: Progress, timeout_s: float) -> None:
    """Create the flow's three MM2 connectors and wait until they and their tasks run."""
    say("creating MirrorSource, MirrorCheckpoint and MirrorHeartbeat connectors")
    for name, config in setup.connector_configs().items():
        connect_worker.put_connector(connect_url, name, config)
    wait_for_connectors_running(connect_url, list(setup.connector_names.values()), timeout_s=timeout_s)


@dataclass(frozen=True)
class _SetupFiles:
    """The setup as the lab writes it for users: an MM2 file, a Strimzi resource and its Secrets' folder."""

    mm2_config: Path
    resource: Path
    secrets: Path
    #: Secured lab: ``mm2_config`` over OAUTHBEARER ("" on an open lab) and each cluster's OAUTHBEARER listener.
    mm2_oauth_config: str
    oauth_bootstrap: dict[str, str]


def _write_setup_files(
    lab_dir: Path, setup: Mm2Setup, brokers: Mapping[str, kraft.BrokerSpec], security: _BrokerSecurity
) -> _SetupFiles:
    mm2_path = _write_private(lab_dir / MM2_FILE, setup.mm2_properties())
    resource_path = lab_dir / RESOURCE_FILE
    resource_path.write_text(setup.strimzi_resource("mm2ctl-lab"))
    secrets_dir = lab_dir / SECRETS_DIR
    secrets_dir.mkdir(exist_ok=True)
    oauth_path = ""
    oauth_bootstrap: dict[str, str] = {}
    if security.material is not None:
        oauth_bootstrap = {alias: f"127.0.0.1:{spec.oauth_port}" for alias, spec in brokers.items()}
        oauth_client = lab_security.java_client_settings(
            security.material, lab_security.MM2CTL, token_url=security.token_url
        )
        oauth_setup = dataclasses.replace(
            setup,
            source_bootstrap=oauth_bootstrap[SOURCE_ALIAS],
            target_bootstrap=oauth_bootstrap[TARGET_ALIAS],
            file_client=oauth_client,
        )
        oauth_path = str(_write_private(lab_dir / MM2_OAUTH_FILE, oauth_setup.mm2_properties()))
    return _SetupFiles(mm2_path, resource_path, secrets_dir, oauth_path, oauth_bootstrap)


def _without_bootstrap(config: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in config.items() if k != "bootstrap.servers"}


def _write_private(path: Path, text: str) -> Path:
    """A lab file that holds credentials: readable by this user only."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return path


def _resource_security() -> dict[str, object]:
    """The ``tls`` and ``authentication`` of each cluster in the lab's KafkaMirrorMaker2 resource: the lab CA
    and mm2ctl's SCRAM user, both from the Secrets in ``secrets/``."""
    return {
        "tls": {"trustedCertificates": [{"secretName": lab_security.CA_SECRET, "certificate": "ca.crt"}]},
        "authentication": {
            "type": "scram-sha-512",
            "username": lab_security.MM2CTL,
            "passwordSecret": {"secretName": lab_security.MM2CTL, "password": "password"},
        },
    }


def _start_identity_provider(lab_dir: Path, timeout_s: float) -> tuple[str, str, str, int]:
    """Start the lab's token endpoint and JWKS; (token URL, JWKS URL, issuer, pid) once it answers."""
    from mm2ctl.lab.token_endpoint import issuer_of

    port = free_port()
    folder = lab_dir / "oauth"
    folder.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "mm2ctl.lab.token_endpoint", "--dir", str(lab_dir), "--port", str(port)]
    pid = start_command(argv, folder / "token-endpoint.log")
    issuer = issuer_of(port)

    def answers() -> bool:
        try:
            return requests.get(f"{issuer}/jwks", timeout=2).status_code == 200
        except requests.RequestException:
            return False

    wait_until(
        answers,
        what=f"the lab's token endpoint on {issuer}",
        timeout_s=timeout_s,
        interval_s=0.2,
        alive=lambda: is_alive(pid),
        log_file=folder / "token-endpoint.log",
    )
    return f"{issuer}/token", f"{issuer}/jwks", issuer, pid


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
class LabFlow:
    """An isolated MM2 flow on a running lab: its own aliases, connectors, internal topics and filters."""

    setup: Mm2Setup
    connectors: dict[str, str]
    mm2_config: str
    #: The same flow as a KafkaMirrorMaker2 resource (its Secrets: the lab's ``secrets/``).
    resource: str = ""
    #: Secured lab: ``mm2_config`` over OAUTHBEARER.
    mm2_oauth_config: str = ""

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
    source_settings: Mapping[str, str] | None = None,
) -> Mm2Setup:
    """The MM2 setup of an isolated flow ``name``: aliases ``<name>src`` → ``<name>dst`` on the lab's clusters,
    mirroring only topics and groups named ``iso-<name>-…`` (which the lab's own flow ignores)."""
    if not name.isalnum():
        raise LabError(f"flow name must be letters and digits, not {name!r}")
    prefix = f"{ISOLATED_PREFIX}{name}-"
    secured: dict[str, Any] = {}
    if info.secured:
        material = lab_security.LabSecurity(info.dir)
        secured = {
            "connector_client": lab_security.java_client_settings(material, lab_security.ADMIN),
            "file_client": lab_security.java_client_settings(material, lab_security.MM2CTL),
            "resource_cluster_security": _resource_security(),
        }
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
        source_settings=dict(source_settings or {}),
        **secured,
    )


def add_flow(
    info: LabInfo,
    name: str,
    *,
    replication_policy: str | None = None,
    offset_syncs_location: str | None = None,
    roles: tuple[str, ...] = ROLES,
    source_settings: Mapping[str, str] | None = None,
    timeout_s: float = 120,
) -> LabFlow:
    """Create an MM2 flow of its own between the lab's two clusters and wait until it runs.

    ``name`` (letters and digits) makes the aliases ``<name>src`` → ``<name>dst``, so the flow's
    offset-syncs, checkpoints and remote topics are its own. It mirrors only topics and groups named
    ``iso-<name>-…``, which the lab's own flow ignores. Its MM2 properties file is written to the lab folder.
    ``source_settings`` go to its MirrorSourceConnector (and the file): ``emit.offset-syncs.enabled=false``
    (with ``roles`` leaving out the checkpoint connector, which refuses to run then), a source consumer
    ``isolation.level``.
    """
    setup = isolated_setup(
        info,
        name,
        replication_policy=replication_policy,
        offset_syncs_location=offset_syncs_location,
        roles=roles,
        source_settings=source_settings,
    )
    for connector, config in setup.connector_configs().items():
        connect_worker.put_connector(info.connect_url, connector, config)
    wait_for_connectors_running(info.connect_url, list(setup.connector_names.values()), timeout_s=timeout_s)
    folder = Path(info.dir)
    path = _write_private(folder / f"mm2-{name}.properties", setup.mm2_properties())
    resource = folder / f"kafka-mirror-maker-2-{name}.yaml"
    resource.write_text(setup.strimzi_resource(f"mm2ctl-lab-{name}"))
    oauth = ""
    if info.secured:
        oauth_setup = dataclasses.replace(
            setup,
            source_bootstrap=info.oauth_bootstrap[SOURCE_ALIAS],
            target_bootstrap=info.oauth_bootstrap[TARGET_ALIAS],
            file_client=lab_security.java_client_settings(
                lab_security.LabSecurity(info.dir), lab_security.MM2CTL, token_url=info.token_url
            ),
        )
        oauth = str(_write_private(folder / f"mm2-{name}-oauth.properties", oauth_setup.mm2_properties()))
    return LabFlow(
        setup=setup,
        connectors=setup.connector_names,
        mm2_config=str(path),
        resource=str(resource),
        mm2_oauth_config=oauth,
    )


def down(lab_dir: Path, *, remove_data: bool = False) -> list[int]:
    """Stop every process ``lab.json`` names; return the pids that had to be stopped."""
    lab_dir = lab_dir.resolve()
    info = read_lab(lab_dir)
    # Connect first, so MM2 tasks stop cleanly while the brokers still answer.
    stopped = stop_pids([info.connect_pid], str(lab_dir))
    stopped += stop_pids([c.pid for c in info.clusters.values()], str(lab_dir))
    stopped += stop_pids(info.helper_pids, str(lab_dir))
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
        """Both clusters answer, the Connect worker answers, the lab's own connectors run, and no connector
        failed. A connector of another flow may be stopped or paused: a failover plan stops its flow."""
        return (
            all(c.reachable for c in self.clusters)
            and self.connect_alive
            and all(self.connectors.get(name, {}).get("state") == "RUNNING" for name in self.info.connectors.values())
            and all(c["state"] in ("RUNNING", "PAUSED", "STOPPED") for c in self.connectors.values())
        )


def status(lab_dir: Path) -> LabStatus:
    info = read_lab(lab_dir.resolve())
    clusters = []
    for c in info.clusters.values():
        topics = -1
        try:
            md = AdminClient({**info.client_config(c.alias), "log_level": 0}).list_topics(timeout=3)
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
