"""Log configuration for the lab's JVMs: everything at INFO to the process's own log file in the lab folder.

Kafka 3.x reads a log4j 1 (reload4j) file, 4.x a log4j2 file; each JVM gets the one its release reads.
The chattiest loggers are lowered so a lab log stays readable when a test fails.
"""

from __future__ import annotations

from pathlib import Path

from mm2ctl.lab.releases import KafkaRelease

_QUIET = (
    "org.apache.kafka.clients.consumer.internals",
    "org.apache.kafka.clients.producer.internals",
    "org.apache.kafka.common.utils.AppInfoParser",
    "org.apache.kafka.clients.NetworkClient",
    "org.apache.kafka.common.metrics",
    "org.apache.kafka.clients.admin.AdminClientConfig",
    "org.apache.kafka.clients.consumer.ConsumerConfig",
    "org.apache.kafka.clients.producer.ProducerConfig",
    "org.reflections",
    "org.eclipse.jetty",
    "kafka.server.KafkaConfig",
    "org.apache.kafka.server.config",
)

_LOG4J1 = """log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
"""

_LOG4J2 = """status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
"""


def logging_properties(folder: Path, release: KafkaRelease) -> tuple[tuple[str, str], ...]:
    """Write the log config for ``release`` into ``folder``; return the JVM system properties to pass."""
    folder.mkdir(parents=True, exist_ok=True)
    if release.logging == "log4j2":
        body = _LOG4J2 + "".join(
            f"logger.q{i}.name = {name}\nlogger.q{i}.level = WARN\n" for i, name in enumerate(_QUIET)
        )
        path = folder / "log4j2.properties"
        path.write_text(body)
        return (("log4j2.configurationFile", str(path)),)
    body = _LOG4J1 + "".join(f"log4j.logger.{name}=WARN\n" for name in _QUIET)
    path = folder / "log4j.properties"
    path.write_text(body)
    return (("log4j.configuration", f"file:{path}"),)
