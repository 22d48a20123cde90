"""The Kafka releases the lab can run, with every version the lab resolves pinned here.

Kafka's published poms leave the SLF4J binding to the distribution's tarball, so the lab adds the one each
release ships: reload4j for 3.x, log4j2's SLF4J 1.x binding (matching the release's log4j-core) for 4.x.
"""

from __future__ import annotations

from dataclasses import dataclass

from mm2ctl.core.errors import LabError


@dataclass(frozen=True, slots=True)
class KafkaRelease:
    version: str
    #: groupId:artifactId:version of the SLF4J binding the release's own tarball ships.
    slf4j_binding: str
    #: Which logging backend reads the lab's log config: "log4j2" (4.x) or "log4j1" (3.x, reload4j).
    logging: str
    #: Connect has ``PUT /connectors/{c}/stop`` and ``GET …/offsets`` (KIP-875, 3.5+).
    has_connector_stop: bool
    #: Connect has ``PATCH``/``DELETE …/offsets`` (3.6+).
    has_offsets_alter: bool

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])


RELEASES: dict[str, KafkaRelease] = {
    r.version: r
    for r in (
        KafkaRelease("4.3.1", "org.apache.logging.log4j:log4j-slf4j-impl:2.25.4", "log4j2", True, True),
        KafkaRelease("3.9.2", "org.slf4j:slf4j-reload4j:1.7.36", "log4j1", True, True),
        KafkaRelease("3.4.1", "org.slf4j:slf4j-reload4j:1.7.36", "log4j1", False, False),
    )
}

#: The newest 4.x release whose Connect and MirrorMaker 2 artifacts are all on Maven Central.
DEFAULT_KAFKA_VERSION = "4.3.1"


def release(version: str) -> KafkaRelease:
    """Look up a supported release; an unknown one is a clear error, not a Maven failure later."""
    try:
        return RELEASES[version]
    except KeyError:
        known = ", ".join(sorted(RELEASES, reverse=True))
        raise LabError(f"Kafka {version} is not a lab release; choose one of: {known}") from None
