"""The Java programs this package ships, compiled once and run: one owner of a program's jars and class path.

Each program is a Java source and a pom beside this module. Its pom's runtime dependencies resolve once into the
cache (``core.java.maven``), and its source compiles once against them (``core.java.tools.compiled``). The
programs: ``GroupAdmin.java`` (the share and streams groups' calls, ``core.kafka.group_admin``),
``TranslateOffsets.java`` (Kafka's own translation, for the lab's tests, ``lab.translate_offsets``) and
``StreamsApp.java`` (the lab's Kafka Streams application, ``lab.streams_app``). ``CommittedOffsets.java`` is
compiled in the Spark driver's JVM instead (``inspector.reads.committed_offsets``), so it has no pom.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from mm2ctl.core.errors import Mm2ctlError
from mm2ctl.core.java.maven import packaged_pom, resolve_jars
from mm2ctl.core.java.tools import compiled

#: The package whose folder holds the Java sources and their poms.
PACKAGE = "mm2ctl.core.java"


@dataclass(frozen=True, slots=True)
class JavaProgram:
    """A Java program of this package: ``source`` and ``pom`` name files beside this module; its jars resolve
    into ``<cache>/jars/<jars_name>`` with ``properties`` set on the pom; ``resources`` (file name -> text) sit
    beside its compiled classes."""

    source: str
    main_class: str
    pom: str
    jars_name: str
    properties: Mapping[str, str]
    cache_name: str
    resources: Mapping[str, str] = field(default_factory=dict)


def source_text(file_name: str) -> str:
    """The text of the Java source ``file_name`` shipped in this package."""
    return resources.files(PACKAGE).joinpath(file_name).read_text(encoding="utf-8")


def program_jars(program: JavaProgram) -> Path:
    """The folder of ``program``'s runtime jars, resolved once."""
    return resolve_jars(packaged_pom(PACKAGE, program.pom), program.jars_name, dict(program.properties))


def program_classpath(program: JavaProgram, *, error: type[Mm2ctlError] = Mm2ctlError) -> tuple[Path, str]:
    """(the folder of ``program``'s compiled classes, the class path to run it with): its jars resolved and its
    source compiled, each once. Failures raise ``error``."""
    jars = program_jars(program)
    jar_path = os.pathsep.join(str(p) for p in sorted(jars.glob("*.jar")))
    source = resources.files(PACKAGE).joinpath(program.source)
    if not source.is_file():
        raise error(f"{program.source} is missing from this install of {PACKAGE}")
    text = source.read_text(encoding="utf-8")
    classes = compiled(
        text, program.source, jar_path, cache_name=program.cache_name, resources=program.resources, error=error
    )
    return classes, os.pathsep.join([str(classes), jar_path])
