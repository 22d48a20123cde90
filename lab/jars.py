"""The Kafka jars of one lab release, resolved with the repo's pom into the shared cache."""

from __future__ import annotations

import os
from pathlib import Path

from mm2ctl.core.java.maven import packaged_pom, resolve_jars
from mm2ctl.lab.releases import release


def kafka_jars(version: str) -> Path:
    """The folder holding every jar a release's broker, Connect worker, MM2 and tools need."""
    rel = release(version)
    group, artifact, binding_version = rel.slf4j_binding.split(":")
    return resolve_jars(
        packaged_pom("mm2ctl.lab", "kafka.pom.xml"),
        f"kafka-{version}",
        {
            "kafka.version": version,
            "slf4j.binding.groupId": group,
            "slf4j.binding.artifactId": artifact,
            "slf4j.binding.version": binding_version,
        },
    )


def kafka_classpath(version: str) -> str:
    return os.pathsep.join(str(p) for p in sorted(kafka_jars(version).glob("*.jar")))
