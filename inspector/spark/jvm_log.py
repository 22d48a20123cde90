"""Keep the embedded Spark driver JVM's output off the terminal: it goes to a log file instead.

PySpark starts the driver JVM (``bin/spark-submit``, then ``java``) with ``Popen``; ``inspector.spark.session``
gives it the log file as its stdout and stderr, and the JVM writes there for its whole life: the launcher's
own ``WARNING: Using incubator modules``, log4j's lines, Spark's stage progress bar, and anything its Python
workers print.

``log4j_java_option`` points log4j2 at ``log4j2-driver.properties`` (shipped beside this module):
warnings and errors with timestamps, on the JVM's stderr, that is the log file. A configuration of our own
also keeps Spark from printing ``Using Spark's default log4j profile`` and ``Setting default log level``.
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

#: The log4j2 configuration the driver JVM gets (package data of ``mm2ctl.inspector``).
LOG4J2_CONFIG = "log4j2-driver.properties"

#: A Java option that already chooses a log4j2 configuration (the property's current name or its older one).
_LOG4J_OPTION = re.compile(r"-Dlog4j2?\.configurationFile=")


def log4j2_config_path() -> Path:
    """Where this install keeps ``LOG4J2_CONFIG``."""
    return Path(str(resources.files("mm2ctl.inspector.spark").joinpath(LOG4J2_CONFIG)))


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


__all__ = ["LOG4J2_CONFIG", "log4j2_config_path", "log4j_java_option"]
