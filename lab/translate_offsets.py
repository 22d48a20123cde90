"""Kafka's own translation of consumer group offsets from MirrorMaker 2's checkpoints, for the lab's tests to
compare mm2ctl with: ``RemoteClusterUtils.translateOffsets(Map, String, Pattern, Duration)`` of
connect-mirror-client 4.3 (KIP-1239, every group matching a pattern in one read), run by ``TranslateOffsets.java``
on a short-lived JVM.

What that call reads (``MirrorClient.remoteConsumerOffsets`` in 4.3.1): partition 0 of the checkpoints topic the
replication policy names for the remote alias (``<alias>.checkpoints.internal``) on the cluster the settings
point at, from its beginning until the consumer's position reaches the end offset or the timeout passes. Every
record whose group fully matches the pattern puts its checkpoint's downstream offset under (group, topic as
named on that cluster, partition), so the last record of a key in the log wins; nothing else is consulted (no
committed offset, no offset sync, no record). A record that does not parse is skipped. Its consumer reads with
the settings given, so by default ``read_uncommitted`` (mm2ctl reads ``read_committed``: the two differ only on
checkpoints written in a transaction not committed). At the deadline it returns what it has read so far,
without an error: a timeout too short for the topic gives a partial answer.

The jars (connect-mirror-client, kafka-clients and slf4j-nop) resolve once into the shared cache with
``translate-offsets.pom.xml``; the source compiles once with ``javac`` (``core.java.tools.compiled``). The settings go
to the JVM on stdin, so no secret reaches a command line.

    translate_offsets(lab.target.bootstrap, "primary", "orders-.*")
    # {"orders-app": {("primary.orders", 0): 1200, ("primary.orders", 1): 1187}}
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping

from mm2ctl.core.errors import LabError
from mm2ctl.core.java.programs import JavaProgram, program_classpath
from mm2ctl.core.java.tools import java_tool

#: The connect-mirror-client release whose ``RemoteClusterUtils`` answers (the batched call needs 4.3+).
MIRROR_CLIENT_VERSION = "4.3.1"
TRANSLATE_OFFSETS = JavaProgram(
    source="TranslateOffsets.java",
    main_class="mm2ctl.lab.TranslateOffsets",
    pom="translate-offsets.pom.xml",
    jars_name=f"connect-mirror-client-{MIRROR_CLIENT_VERSION}",
    properties={"kafka.version": MIRROR_CLIENT_VERSION},
    cache_name="translate-offsets",
)


def translate_offsets_classpath() -> str:
    """The class path of ``TranslateOffsets``: its jars (resolved once) and the class compiled once per source."""
    return program_classpath(TRANSLATE_OFFSETS, error=LabError)[1]


def translate_offsets(
    bootstrap_or_settings: str | Mapping[str, str],
    remote_alias: str,
    group_pattern: str,
    timeout_s: float = 30.0,
) -> dict[str, dict[tuple[str, int], int]]:
    """group -> {(topic, partition): offset}: ``RemoteClusterUtils.translateOffsets`` for the groups fully
    matching ``group_pattern`` (a Java regex) checkpointed from ``remote_alias``.

    ``bootstrap_or_settings`` is the bootstrap of the cluster holding the checkpoints topic (MM2's target), or
    the MirrorClient's settings for it (``bootstrap.servers``, client security, and ``replication.policy.class``
    when not the default: the policy names the checkpoints topic). Raises ``LabError`` when the JVM fails or
    does not finish."""
    settings = (
        {"bootstrap.servers": bootstrap_or_settings}
        if isinstance(bootstrap_or_settings, str)
        else dict(bootstrap_or_settings)
    )
    java = java_tool("java")
    if java is None:
        raise LabError(f"{TRANSLATE_OFFSETS.source} needs Java 17+: no 'java' in JAVA_HOME or on PATH")
    argv = [
        java,
        "-XX:TieredStopAtLevel=1",
        "-Xshare:auto",
        "-cp",
        translate_offsets_classpath(),
        TRANSLATE_OFFSETS.main_class,
        remote_alias,
        group_pattern,
        str(int(timeout_s * 1000)),
    ]
    try:
        proc = subprocess.run(
            argv, input=_properties(settings), capture_output=True, text=True, timeout=timeout_s * 2 + 30, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"RemoteClusterUtils.translateOffsets for {remote_alias} did not finish in time") from exc
    lines = proc.stdout.splitlines()
    if proc.returncode != 0 or not lines or lines[-1] != "done":
        tail = proc.stderr.strip().splitlines()[-1:] or ["no output"]
        raise LabError(
            f"RemoteClusterUtils.translateOffsets for {remote_alias} failed (exit {proc.returncode}): {tail[0]}"
        )
    out: dict[str, dict[tuple[str, int], int]] = {}
    for line in lines[:-1]:
        group, topic, partition, offset = line.split("\t")
        out.setdefault(group, {})[(topic, int(partition))] = int(offset)
    return out


def _properties(settings: Mapping[str, str]) -> str:
    """``settings`` as a Java properties text (backslashes, line ends, and a key's ``=``, ``:`` and spaces
    escaped)."""

    def esc(text: str, key: bool) -> str:
        out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
        if key:
            out = out.replace("=", "\\=").replace(":", "\\:").replace(" ", "\\ ")
        return out

    return "".join(f"{esc(k, True)}={esc(v, False)}\n" for k, v in sorted(settings.items()))
