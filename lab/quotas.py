"""Client quotas on the lab's clusters: a way to make MirrorMaker 2 fall behind the source on purpose.

A producer quota (``producer_byte_rate``) on the target, for the client id of MM2's source task producer,
throttles the copy as a busy or distant target would: MM2 keeps running and keeps committing its position,
only slower. Kafka Connect names a source task's producer ``connector-producer-<connector>-<task>``. Quotas
are set with Kafka's own ``kafka-configs`` (``kafka.admin.ConfigCommand``) from the lab's jars.
"""

from __future__ import annotations

from pathlib import Path

from mm2ctl.core.errors import LabError
from mm2ctl.lab.control import LabInfo
from mm2ctl.lab.jars import kafka_classpath
from mm2ctl.lab.process import JvmSpec, run_java_tool


def task_producer_client_id(connector: str, task: int = 0) -> str:
    """The client id Kafka Connect gives a source task's producer."""
    return f"connector-producer-{connector}-{task}"


def set_producer_quota(info: LabInfo, client_id: str, bytes_per_second: int | None) -> None:
    """Throttle ``client_id``'s produce requests on the lab's target cluster (where every flow's MM2
    produces) to ``bytes_per_second``; None lifts it."""
    if info.security != "none":
        raise LabError("client quotas are set on a lab without security only")
    change = (
        ("--delete-config", "producer_byte_rate")
        if bytes_per_second is None
        else ("--add-config", f"producer_byte_rate={bytes_per_second}")
    )
    spec = JvmSpec(
        name="kafka-configs (target)",
        main_class="kafka.admin.ConfigCommand",
        args=(
            "--bootstrap-server",
            info.target.bootstrap,
            "--alter",
            "--entity-type",
            "clients",
            "--entity-name",
            client_id,
            *change,
        ),
        classpath=kafka_classpath(info.kafka_version),
        heap="128m",
    )
    run_java_tool(spec, Path(info.dir) / "quotas.log", timeout_s=120)
