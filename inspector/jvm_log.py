"""Keep the embedded Spark driver JVM's output off the terminal: it goes to a log file instead.

PySpark starts the driver JVM (``bin/spark-submit``, then ``java``) with ``Popen``, and the child inherits
this process's file descriptors 1 and 2. The JVM writes there for its whole life: the launcher's own
``WARNING: Using incubator modules``, log4j's lines, Spark's stage progress bar, and anything its Python
workers print. So while the JVM starts, ``output_to`` points fds 1 and 2 at the log file; the JVM keeps
them, and this process gets its own back as soon as the session exists.

``log4j_java_option`` points log4j2 at ``log4j2-driver.properties`` (shipped beside this module):
warnings and errors with timestamps, on the JVM's stderr, that is the log file. A configuration of our own
also keeps Spark from printing ``Using Spark's default log4j profile`` and ``Setting default log level``.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator
from importlib import resources
from pathlib import Path

#: The log4j2 configuration the driver JVM gets (package data of ``mm2ctl.inspector``).
LOG4J2_CONFIG = "log4j2-driver.properties"

#: A Java option that already chooses a log4j2 configuration (the property's current name or its older one).
_LOG4J_OPTION = re.compile(r"-Dlog4j2?\.configurationFile=")


def log4j2_config_path() -> Path:
    """Where this install keeps ``LOG4J2_CONFIG``."""
    return Path(str(resources.files("mm2ctl.inspector").joinpath(LOG4J2_CONFIG)))


def _quoted(arg: str) -> str:
    """``arg`` as one word of a Spark Java-options string (Spark's launcher splits on spaces, honours
    double quotes and backslash escapes)."""
    if not re.search(r"[\s\"'\\]", arg):
        return arg
    return '"' + arg.replace("\\", "\\\\").replace('"', '\\"') + '"'


def log4j_java_option(java_options: str | None) -> str:
    """``java_options`` (``spark.driver.extraJavaOptions``) with ``-Dlog4j2.configurationFile`` added, unless
    they already choose a log4j configuration: a user's own choice wins."""
    options = (java_options or "").strip()
    if _LOG4J_OPTION.search(options):
        return options
    ours = _quoted(f"-Dlog4j2.configurationFile={log4j2_config_path()}")
    return f"{options} {ours}" if options else ours


@contextlib.contextmanager
def output_to(log: Path) -> Iterator[None]:
    """Point this process's fds 1 and 2 at ``log`` (appending) while the body runs, then restore them.

    Python's own buffered writes made meanwhile land in the log too (they are flushed before the restore).
    A closed fd stays closed.
    """
    _flush()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    saved: dict[int, int] = {}
    try:
        for target in (1, 2):
            try:
                saved[target] = os.dup(target)
            except OSError:
                continue  # not open: nothing to redirect or restore
            os.dup2(fd, target)
        yield
    finally:
        _flush()
        for target, copy in saved.items():
            os.dup2(copy, target)
            os.close(copy)
        os.close(fd)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()


__all__ = ["LOG4J2_CONFIG", "log4j2_config_path", "log4j_java_option", "output_to"]
