"""Every group type on a cluster, and the share and streams groups' positions: the calls librdkafka lacks.

Kafka 4.2+ hosts two group types beside the classic and consumer (KIP-848) groups, and MirrorMaker 2
translates neither: its checkpoint connector lists only the classic and consumer types.

- **Share groups** (KIP-932): their position is a share-partition *start offset*; what was acknowledged past it
  lives in the group's state (``__share_group_state``), and the broker reports it as the lag (the records
  past the start offset not yet acknowledged). ``alterShareGroupOffsets`` sets the start offset of an empty
  group; an admin offset commit is refused (``GROUP_ID_NOT_FOUND``).
- **Streams groups** (KIP-1071, Kafka Streams with ``group.protocol=streams``): committed offsets, as a
  consumer group's; ``alterStreamsGroupOffsets`` commits them when the group is empty (a group with members
  fails with ``UNKNOWN_MEMBER_ID``).

librdkafka (confluent-kafka 2.16) lists neither type and has none of their admin calls, and Spark's Kafka
source brings kafka-clients 3.9, which has none either. So ``GroupAdmin.java`` makes them with kafka-clients
4.3.1 (resolved from Maven Central into the cache, with ``group-admin.pom.xml``) on a short-lived JVM of its
own: compiled with ``javac`` once per source, started once per batch of calls (one listing, one description
and one offset read per group type, for every group at once), its settings passed on stdin so no secret
reaches a command line. The JVM's start is most of a batch's cost.

On a cluster older than a type (Kafka 3.x has no share or streams groups) that type is simply absent: the
listing has none of it and a call for it answers ``unsupported``, which is not an error.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mm2ctl.core.errors import ConfigError, KafkaClusterError, UnhostedGroupTypeError
from mm2ctl.core.java.programs import JavaProgram, program_classpath
from mm2ctl.core.java.served import ServedProgram, Unanswered
from mm2ctl.core.java.tools import java_tool
from mm2ctl.core.kafka.admin import TP, ItemError
from mm2ctl.core.kafka.provenance import written_by

KAFKA_CLIENTS_VERSION = "4.3.1"
#: Every group type a Kafka cluster can host, in the order reports list them.
GROUP_TYPES = ("classic", "consumer", "share", "streams")
#: The types MirrorMaker 2 never checkpoints nor syncs.
UNMIRRORED_TYPES = frozenset({"share", "streams"})

_NEEDS = "share and streams groups need Kafka 4.2 or later"
_PROBE = "mm2ctl-probe-no-such-group-"
GROUP_ADMIN = JavaProgram(
    source="GroupAdmin.java",
    main_class="mm2ctl.core.GroupAdmin",
    pom="group-admin.pom.xml",
    jars_name=f"kafka-clients-{KAFKA_CLIENTS_VERSION}",
    properties={"kafka.clients.version": KAFKA_CLIENTS_VERSION},
    cache_name="group-admin",
)
_FATAL_EXIT = 3


@dataclass(frozen=True, slots=True)
class TypedGroup:
    """A group as the cluster lists it: ``type`` is one of ``GROUP_TYPES`` (or ``unknown``)."""

    group: str
    type: str
    state: str
    protocol: str = ""


@dataclass(frozen=True, slots=True)
class GroupShape:
    """A share or streams group described: its state, member count and, for a streams group, its topics by
    role (``source``, ``repartition``, ``changelog``)."""

    group: str
    type: str
    state: str
    members: int
    topics: dict[str, tuple[str, ...]] = field(default_factory=dict)
    error: ItemError | None = None


@dataclass(frozen=True, slots=True)
class TypedPositions:
    """A share or streams group's positions: a share group's start offsets with, per partition, the records
    past the start offset not yet acknowledged (``lag``; ``None`` when the broker did not say); a streams
    group's committed offsets (no lag)."""

    group: str
    type: str
    offsets: dict[TP, int]
    lag: dict[TP, int] = field(default_factory=dict)
    error: ItemError | None = None
    #: A streams group's commit metadata where mm2ctl wrote it (``core.kafka.provenance``); share groups keep
    #: none.
    written_by: dict[TP, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WriteResult:
    """One partition of an offset write: ``error`` is ``None`` when it was written."""

    group: str
    topic: str
    partition: int
    error: ItemError | None = None


def group_admin_classpath() -> str:
    """The class path of ``GroupAdmin``: kafka-clients (resolved once) and the class compiled once per source."""
    return program_classpath(GROUP_ADMIN, error=ConfigError)[1]


class GroupAdmin:
    """The group calls of one cluster, made on a JVM per batch, or with ``keep_alive`` on one long-lived JVM
    (a live session's: no process is started per run; ``close`` ends it). A write always runs on a JVM of its
    own, as it carries its metadata in the settings. ``settings`` are the cluster's Java client settings
    (``MM2Config.client_settings``); ``name`` names the cluster in errors."""

    def __init__(
        self, settings: Mapping[str, str], name: str, *, timeout_s: float = 30.0, keep_alive: bool = False
    ) -> None:
        self._settings = dict(settings)
        self._name = name
        self._timeout_s = timeout_s
        self._served = (
            ServedProgram(self._argv, self._settings_text(**{"mm2ctl.serve": "true"})) if keep_alive else None
        )

    @property
    def jvm_running(self) -> bool:
        """Whether this admin's long-lived JVM is up."""
        return self._served is not None and self._served.running

    @property
    def jvm_starts(self) -> int:
        """How many long-lived JVMs this admin started (0 without ``keep_alive``)."""
        return self._served.starts if self._served is not None else 0

    def list_groups(self) -> list[TypedGroup]:
        """Every group of every type the cluster knows, sorted by name."""
        out = [TypedGroup(*r[1:5]) for r in self._run([("list",)]) if r[0] == "group"]
        return sorted(out, key=lambda g: g.group)

    def describe(self, groups: Mapping[str, str]) -> dict[str, GroupShape]:
        """State, members and (streams) topics of ``groups`` (name -> type: ``share`` or ``streams``)."""
        calls = [(f"describe-{t}", *sorted(g for g, gt in groups.items() if gt == t)) for t in sorted(UNMIRRORED_TYPES)]
        rows = self._run([c for c in calls if len(c) > 1])
        shapes: dict[str, GroupShape] = {}
        topics: dict[str, dict[str, list[str]]] = {}
        for r in rows:
            if r[0] == "described":
                shapes[r[1]] = GroupShape(r[1], r[2], r[3], int(r[4]))
            elif r[0] == "topic":
                topics.setdefault(r[1], {}).setdefault(r[2], []).append(r[3])
            elif r[0] == "error":
                shapes[r[1]] = GroupShape(r[1], groups[r[1]], "", 0, error=ItemError(r[2], r[3]))
        for g, by_role in topics.items():
            roles = {role: tuple(sorted(set(ts))) for role, ts in by_role.items()}
            shapes[g] = GroupShape(shapes[g].group, shapes[g].type, shapes[g].state, shapes[g].members, roles)
        return shapes

    def positions(self, groups: Mapping[str, str]) -> dict[str, TypedPositions]:
        """The positions of ``groups`` (name -> ``share`` or ``streams``), one call per type."""
        calls = [(f"{t}-offsets", *sorted(g for g, gt in groups.items() if gt == t)) for t in sorted(UNMIRRORED_TYPES)]
        out = {g: TypedPositions(g, t, {}) for g, t in groups.items()}
        for r in self._run([c for c in calls if len(c) > 1]):
            if r[0] == "offset":
                tp = (r[2], int(r[3]))
                out[r[1]].offsets[tp] = int(r[4])
                if int(r[5]) >= 0:
                    out[r[1]].lag[tp] = int(r[5])
                mine = written_by(r[6]) if len(r) > 6 else None
                if mine is not None:
                    out[r[1]].written_by[tp] = mine
            elif r[0] == "error":
                p = out[r[1]]
                out[r[1]] = TypedPositions(p.group, p.type, {}, {}, ItemError(r[2], r[3]))
        return out

    def write(self, group: str, group_type: str, offsets: Mapping[TP, int], *, metadata: str = "") -> list[WriteResult]:
        """Write ``offsets`` to ``group`` through its type's call (a share group's start offsets; a streams
        group's committed offsets, with ``metadata`` and no leader epoch)."""
        if group_type not in UNMIRRORED_TYPES:
            raise ValueError(f"not a share or streams group type: {group_type}")
        fields = [f"{t}:{p}={o}" for (t, p), o in sorted(offsets.items())]
        rows = self._run([(f"alter-{group_type}", group, *fields)], metadata=metadata, keep_unsupported=True)
        if any(r[0] == "unsupported" or (r[0] == "refused" and r[4] == "UNSUPPORTED_VERSION") for r in rows):
            raise UnhostedGroupTypeError(f"{self._name} cannot host {group_type} group {group}: {_NEEDS}")
        out = []
        for r in rows:
            if r[0] == "written":
                out.append(WriteResult(r[1], r[2], int(r[3])))
            elif r[0] == "refused":
                out.append(WriteResult(r[1], r[2], int(r[3]), ItemError(r[4], r[5])))
        return out

    def hosts(self, types: Iterable[str]) -> frozenset[str]:
        """Which of ``types`` (``share``, ``streams``) the cluster can host: a read of a group of each type that
        the broker answers as unsupported is a type it cannot (Kafka before 4.2)."""
        wanted = sorted(set(types) & UNMIRRORED_TYPES)
        # A description, not an offset read: a streams group's offsets are read with OffsetFetch, which every
        # release answers; its description (StreamsGroupDescribe) and a share group's (ShareGroupDescribe) are
        # 4.x calls. The probe's name says which type answered.
        rows = self._run([(f"describe-{t}", f"{_PROBE}{t}") for t in wanted], keep_unsupported=True)
        refused = {r[1].removeprefix(_PROBE) for r in rows if r[0] == "unsupported"}
        return frozenset(t for t in wanted if t not in refused)

    def delete_share_group(self, group: str) -> ItemError | None:
        """Delete an empty share group (its start offsets with it); the error, or ``None`` when deleted."""
        for r in self._run([("delete-share", group)]):
            if r[0] == "error":
                return ItemError(r[2], r[3])
        return None

    def _run(
        self, calls: Sequence[tuple[str, ...]], *, metadata: str = "", keep_unsupported: bool = False
    ) -> list[list[str]]:
        if not calls:
            return []
        lines = ["\t".join(c) for c in calls]
        if self._served is not None and not metadata:
            rows = self._served_rows(self._served, lines)
        else:
            rows = self._one_shot_rows(lines, metadata)
        return [r for r in rows if keep_unsupported or r[0] != "unsupported"]

    def _settings_text(self, **extra: str) -> str:
        ours = {"mm2ctl.timeout.ms": str(int(self._timeout_s * 1000)), **{k: v for k, v in extra.items() if v}}
        return _properties({**self._settings, **ours})

    def _argv(self) -> list[str]:
        java = java_tool("java") or "java"
        cmd = [java, "-XX:TieredStopAtLevel=1", "-Xshare:auto", *_allowed_urls(self._settings)]
        return [*cmd, "-cp", group_admin_classpath(), GROUP_ADMIN.main_class]

    def _one_shot_rows(self, lines: list[str], metadata: str) -> list[list[str]]:
        request = self._settings_text(**{"mm2ctl.metadata": metadata}) + "%%\n" + "".join(f"{x}\n" for x in lines)
        try:
            proc = subprocess.run(
                self._argv(),
                input=request.encode("utf-8"),
                capture_output=True,
                timeout=self._timeout_s * 2 + 30,
                check=False,
            )  # the program reads and writes UTF-8 whatever the locale
        except subprocess.TimeoutExpired as exc:
            raise KafkaClusterError(f"the group calls on {self._name} did not finish in time") from exc
        stdout, stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
        rows = [line.split("\t") for line in stdout.splitlines()]
        self._raise_fatal(rows, stderr if proc.returncode == _FATAL_EXIT else "")
        if proc.returncode != 0 or not rows or rows[-1] != ["done"]:
            tail = stderr.strip().splitlines()[-1:] or ["no output"]
            raise KafkaClusterError(f"the group calls on {self._name} ended early (exit {proc.returncode}): {tail[0]}")
        return rows[:-1]

    def _served_rows(self, served: ServedProgram, lines: list[str]) -> list[list[str]]:
        try:
            answer = served.call(lines, self._timeout_s * 2 + 30)
        except Unanswered as exc:
            self._raise_fatal([line.split("\t") for line in exc.output], "")
            if exc.timed_out:
                raise KafkaClusterError(f"the group calls on {self._name} did not finish in time") from exc
            tail = exc.stderr_tail.strip().splitlines()[-1:] or ["no output"]
            raise KafkaClusterError(f"the group calls on {self._name} ended early: {tail[0]}") from exc
        rows = [line.split("\t") for line in answer]
        self._raise_fatal(rows, "")
        return rows

    def _raise_fatal(self, rows: list[list[str]], stderr: str) -> None:
        """A ``fatal`` record (or a fatal exit's stderr) as the error of the whole batch."""
        fatal = next((r for r in rows if r[0] == "fatal"), None)
        if fatal is not None or stderr:
            what = f"{fatal[1]}: {fatal[2]}" if fatal else stderr.strip()[-300:]
            raise KafkaClusterError(f"listing or reading groups on {self._name} failed: {what}")

    def close(self) -> None:
        """End the long-lived client's JVM, if this admin keeps one (a later call starts it again)."""
        if self._served is not None:
            self._served.close()


def _allowed_urls(settings: Mapping[str, str]) -> list[str]:
    """The JVM flag that lets a Kafka 4 client fetch OAuth tokens from the settings' token endpoint: since 4.0
    (CVE-2025-27817) it refuses every URL that the system property ``org.apache.kafka.sasl.oauthbearer.allowed.urls``
    does not list. The endpoint's address is no secret."""
    url = settings.get("sasl.oauthbearer.token.endpoint.url", "").strip()
    return [f"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={url}"] if url else []


def _properties(settings: Mapping[str, str]) -> str:
    """``settings`` as a Java properties text (backslashes, ``=``, ``:`` and line ends escaped)."""

    def esc(text: str, key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if key:
            out = out.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
        return out

    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in sorted(settings.items()))
