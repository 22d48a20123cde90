"""A Spark standalone cluster on loopback, from the installed pyspark: one master and its workers.

The inspection is a Spark application (``mm2ctl.inspector.job``) that an operator submits to a cluster in
client deploy mode. The tests and benchmarks submit it here to a real cluster manager: a master and workers
started with pyspark's own ``bin/spark-class`` (``SPARK_HOME`` is pyspark's package folder), each worker with
its own cores and memory, so the executors are separate JVMs as on a cluster, not threads of the driver as
with ``local[*]``.

Everything lives in one folder: each daemon's log, the workers' work folders (the executors' logs) and the
properties file every daemon is given, whose path on their command lines marks them as this cluster's.
Ports are picked free on 127.0.0.1. ``stop`` ends the daemons' process groups, executors included, and
checks that none of their processes is left.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mm2ctl.core.errors import LabError
from mm2ctl.core.polling import poll_until
from mm2ctl.lab.process import free_port, is_alive, start_command, stop_pids, tail

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
#: The daemons' own heap: they only schedule (the executors get the worker's memory).
DAEMON_MEMORY = "256m"


def spark_home() -> Path:
    """pyspark's package folder: it holds Spark's ``bin/``, ``sbin/`` and ``jars/``."""
    import pyspark

    return Path(pyspark.__file__).parent


@dataclass(frozen=True, slots=True)
class SparkCluster:
    folder: Path
    #: ``spark://127.0.0.1:PORT``, what ``spark-submit --master`` takes.
    master_url: str
    #: The master's web UI (``/json`` is its state).
    master_web_url: str
    #: Each worker's web UI (``/json`` lists its executors, running and finished).
    worker_web_urls: tuple[str, ...]
    #: The master's pid, then the workers'; each leads a process group of its own.
    pids: tuple[int, ...]
    cores_per_worker: int
    memory_per_worker: str


def _environment(folder: Path) -> dict[str, str]:
    conf = folder / "conf"  # an empty conf folder: no spark-defaults.conf or spark-env.sh of the machine's
    conf.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "SPARK_CONF_DIR": str(conf),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
            # Executors that start a Python worker use this interpreter, the one mm2ctl runs in.
            "PYSPARK_PYTHON": sys.executable,
        }
    )
    return env


def read_json(url: str, *, timeout_s: float = 5.0) -> Any:
    """A daemon's state from its web UI (``<web url>/json``)."""
    with urllib.request.urlopen(f"{url}/json", timeout=timeout_s) as response:
        return json.loads(response.read())


def _answers(url: str) -> Any:
    try:
        return read_json(url, timeout_s=2.0)
    except (OSError, ValueError):
        return None


def start(
    folder: Path,
    *,
    workers: int = 2,
    cores_per_worker: int = 1,
    memory_per_worker: str = "1g",
    timeout_s: float = 90.0,
) -> SparkCluster:
    """Start a master and ``workers`` workers in ``folder`` and wait until every worker has registered."""
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    env = _environment(folder)
    properties = folder / "conf" / "spark-daemons.conf"
    # Given to every daemon with --properties-file: the folder on their command lines marks them as ours.
    properties.write_text("spark.master.rest.enabled false\nspark.ui.killEnabled false\n")
    spark_class = str(spark_home() / "bin" / "spark-class")
    master_port, master_web_port = free_port(), free_port()
    master_url = f"spark://127.0.0.1:{master_port}"
    master_web_url = f"http://127.0.0.1:{master_web_port}"
    pids: list[int] = []
    web_urls: list[str] = []

    def launch(name: str, argv: list[str]) -> int:
        log = folder / f"{name}.log"
        pid = start_command(argv, log, env=env)
        pids.append(pid)
        return pid

    try:
        launch(
            "master",
            [
                spark_class, MASTER_CLASS,
                "--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(master_web_port),
                "--properties-file", str(properties),
            ],
        )  # fmt: skip
        for i in range(workers):
            web_port = free_port()
            work = folder / f"worker-{i}"
            work.mkdir(exist_ok=True)
            launch(
                f"worker-{i}",
                [
                    spark_class, WORKER_CLASS, master_url,
                    "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(web_port),
                    "--cores", str(cores_per_worker), "--memory", memory_per_worker,
                    "--work-dir", str(work), "--properties-file", str(properties),
                ],
            )  # fmt: skip
            web_urls.append(f"http://127.0.0.1:{web_port}")
        cluster = SparkCluster(
            folder=folder,
            master_url=master_url,
            master_web_url=master_web_url,
            worker_web_urls=tuple(web_urls),
            pids=tuple(pids),
            cores_per_worker=cores_per_worker,
            memory_per_worker=memory_per_worker,
        )

        def ready() -> bool:
            for pid, name in zip(pids, ["master", *(f"worker-{i}" for i in range(workers))], strict=True):
                if not is_alive(pid):
                    raise LabError(f"Spark {name} exited while starting:\n{tail(folder / f'{name}.log')}")
            state = _answers(master_web_url)
            return state is not None and state.get("status") == "ALIVE" and len(alive_workers(state)) == workers

        if not poll_until(ready, timeout_s=timeout_s, interval_s=0.5):
            raise LabError(f"the Spark cluster in {folder} was not ready after {timeout_s:.0f}s (logs there)")
        return cluster
    except BaseException:
        _stop_groups(pids, folder)
        raise


def alive_workers(master_state: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [w for w in master_state.get("workers", []) if w.get("state") == "ALIVE"]


def _group_members(group_ids: Sequence[int]) -> list[int]:
    """Every live process whose process group is one of ``group_ids`` (the daemons and the executors the
    workers forked, which stay in their worker's group)."""
    wanted = set(group_ids)
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # After the command name: state, ppid, pgrp. A zombie is gone for our purposes.
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) in wanted:
            members.append(int(entry.name))
    return members


def processes_left(cluster: SparkCluster) -> list[int]:
    """The cluster's processes still running: its daemons and any executor they started."""
    return _group_members(cluster.pids)


def _stop_groups(pids: Sequence[int], folder: Path, *, timeout_s: float = 30.0) -> None:
    stop_pids(list(reversed(pids)), str(folder), timeout_s=timeout_s)  # workers first, then the master
    deadline = time.monotonic() + 10.0
    while _group_members(pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in _group_members(pids):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def stop(cluster: SparkCluster, *, timeout_s: float = 30.0) -> None:
    """Stop the workers (and their executors), then the master; a process of theirs still running after
    SIGKILL is a ``LabError``."""
    _stop_groups(cluster.pids, cluster.folder, timeout_s=timeout_s)
    if not poll_until(lambda: not processes_left(cluster), timeout_s=10.0, interval_s=0.2):
        raise LabError(f"processes {processes_left(cluster)} of the Spark cluster in {cluster.folder} survived")


def submit_command(
    cluster: SparkCluster,
    application: str,
    arguments: Sequence[str],
    *,
    options: Sequence[str] = (),
    conf: Mapping[str, str] | None = None,
) -> list[str]:
    """``spark-submit`` of ``application`` to the cluster, in client deploy mode (the driver runs here).

    The driver advertises 127.0.0.1, where the executors reach it on this machine; ``options`` are more of
    spark-submit's (``--packages`` and the like: the driver serves what it resolved to the executors);
    ``conf`` adds ``--conf`` settings.
    """
    settings = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1", **(conf or {})}
    command = [
        str(spark_home() / "bin" / "spark-submit"),
        "--master", cluster.master_url,
        "--deploy-mode", "client",
    ]  # fmt: skip
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, *options, application, *arguments]


def submit_environment() -> dict[str, str]:
    """The environment ``submit_command`` runs in: the driver's Python and the executors' are this one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
        }
    )
    return env
