"""A dedicated-mode MirrorMaker 2 process (what ``connect-mirror-maker.sh`` runs) for one isolated flow.

Dedicated MM2 has no ``/connectors`` REST API: it keeps its connector offsets in
``mm2-offsets.<source>.internal`` on the target, and its workers join the group ``<source>-mm2`` there
(docs/design.md, "Topic names"). mm2ctl may only write those offsets while that group has no members, so the tests need
a real dedicated process they can start, observe and stop. Like ``lab.add_flow`` it gets its own aliases (``<name>src``
→ ``<name>dst``) and mirrors only ``iso-<name>-…`` topics, so it never touches the lab's Connect-mode flows. The one
properties file is read by MirrorMaker and by ``mm2ctl --mm2-config`` alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mm2ctl.core.errors import KafkaClusterError, LabError
from mm2ctl.core.kafka.admin import KafkaAdmin
from mm2ctl.lab.control import LabInfo, isolated_setup
from mm2ctl.lab.jars import kafka_classpath
from mm2ctl.lab.logging_config import logging_properties
from mm2ctl.lab.mm2_setup import Mm2Setup
from mm2ctl.lab.process import JvmSpec, is_alive, start_jvm, stop_pids, wait_until
from mm2ctl.lab.releases import release

MAIN_CLASS = "org.apache.kafka.connect.mirror.MirrorMaker"


@dataclass(frozen=True, slots=True)
class DedicatedMm2:
    """A dedicated MirrorMaker 2 for ``<name>src->…dst``; ``pid`` is None while it is stopped."""

    setup: Mm2Setup
    folder: str
    mm2_config: str
    kafka_version: str
    pid: int | None = None

    @property
    def source_alias(self) -> str:
        return self.setup.source_alias

    @property
    def target_alias(self) -> str:
        return self.setup.target_alias

    @property
    def group_id(self) -> str:
        return f"{self.source_alias}-mm2"

    @property
    def offsets_topic(self) -> str:
        return f"mm2-offsets.{self.source_alias}.internal"

    @property
    def log_file(self) -> Path:
        return Path(self.folder) / "mirror-maker.log"


def dedicated_properties(setup: Mm2Setup) -> str:
    """``setup``'s MM2 file plus what a dedicated process on single-broker clusters needs."""
    s, t = setup.source_alias, setup.target_alias
    return (
        setup.mm2_properties()
        + f"""
# Dedicated mode: the reverse flow stays off entirely (no heartbeat-only herder for {t}->{s}).
{t}->{s}.emit.heartbeats.enabled = false
tasks.max = 1
offset.storage.replication.factor = 1
config.storage.replication.factor = 1
status.storage.replication.factor = 1
# A worker setting: dedicated MM2 ignores it at the top level (MirrorMakerConfig.workerConfig takes only the
# offset/config/status storage, converter, task and worker keys from there) and reads it from the target's
# cluster settings, so unprefixed it stays at the 60 s default and a test can wait a minute for a commit.
{t}.offset.flush.interval.ms = 1000
# MM2's classes are on the classpath with ServiceLoader manifests: skip the slow reflective plugin scan.
plugin.discovery = service_load
"""
    )


def create_dedicated_mm2(info: LabInfo, name: str) -> DedicatedMm2:
    """Write the properties of a dedicated MM2 for the isolated flow ``name`` (not started yet)."""
    setup = isolated_setup(info, name)
    folder = Path(info.dir) / f"dedicated-{name}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "mm2.properties"
    path.write_text(dedicated_properties(setup))
    return DedicatedMm2(setup=setup, folder=str(folder), mm2_config=str(path), kafka_version=info.kafka_version)


def group_members(mm2: DedicatedMm2) -> int:
    """Members of the dedicated worker group on the target (0 when the group does not exist)."""
    admin = KafkaAdmin.connect({"bootstrap.servers": mm2.setup.target_bootstrap}, name=mm2.target_alias)
    desc = admin.describe_worker_group(mm2.group_id)
    if desc.error is not None:
        raise LabError(f"cannot describe {mm2.group_id} on {mm2.target_alias}: {desc.error.message}")
    return desc.members


def _members_now(mm2: DedicatedMm2) -> int | None:
    """Like ``group_members``, but None while the answer is not to be had yet (the coordinator is still
    loading or moving, or the broker did not answer in time): a wait polls again rather than failing."""
    try:
        return group_members(mm2)
    except (LabError, KafkaClusterError):
        return None


def start(mm2: DedicatedMm2, *, timeout_s: float = 120) -> DedicatedMm2:
    """Start MirrorMaker for the flow and wait until its worker group on the target has a member."""
    if mm2.pid is not None and is_alive(mm2.pid):
        raise LabError(f"dedicated MM2 {mm2.source_alias}->{mm2.target_alias} already runs (pid {mm2.pid})")
    rel = release(mm2.kafka_version)
    folder = Path(mm2.folder)
    spec = JvmSpec(
        name=f"dedicated mirror maker {mm2.source_alias}->{mm2.target_alias}",
        main_class=MAIN_CLASS,
        args=(mm2.mm2_config, "--clusters", mm2.target_alias),
        classpath=kafka_classpath(mm2.kafka_version),
        system_properties=logging_properties(folder, rel),
    )
    pid = start_jvm(spec, mm2.log_file)
    running = DedicatedMm2(mm2.setup, mm2.folder, mm2.mm2_config, mm2.kafka_version, pid)
    try:
        wait_until(
            lambda: (_members_now(running) or 0) > 0,
            what=f"dedicated MM2 worker group {running.group_id} has a member",
            timeout_s=timeout_s,
            interval_s=0.5,
            alive=lambda: is_alive(pid),
            log_file=mm2.log_file,
        )
    except BaseException:
        stop_pids([pid], mm2.folder)
        raise
    return running


def stop(mm2: DedicatedMm2, *, timeout_s: float = 60) -> DedicatedMm2:
    """Stop the process (SIGTERM: its herder leaves the group) and wait until the group has no members."""
    if mm2.pid is not None:
        stop_pids([mm2.pid], mm2.folder)
    stopped = DedicatedMm2(mm2.setup, mm2.folder, mm2.mm2_config, mm2.kafka_version, None)
    wait_until(lambda: _members_now(stopped) == 0, what=f"{mm2.group_id} has no members", timeout_s=timeout_s)
    return stopped
