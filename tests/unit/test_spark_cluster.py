"""How the lab's Spark standalone cluster is submitted to: client deploy mode, a driver on loopback."""

from __future__ import annotations

import sys
from pathlib import Path

from mm2ctl.lab import spark_cluster
from mm2ctl.lab.spark_cluster import SparkCluster

CLUSTER = SparkCluster(
    folder=Path("/tmp/c"),
    master_url="spark://127.0.0.1:7077",
    master_web_url="http://127.0.0.1:8080",
    worker_web_urls=("http://127.0.0.1:8081",),
    pids=(1, 2),
    cores_per_worker=1,
    memory_per_worker="1g",
)


def _conf(command: list[str]) -> dict[str, str]:
    pairs = [command[i + 1] for i, arg in enumerate(command) if arg == "--conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_the_job_is_submitted_in_client_mode_with_its_packages_and_its_arguments_last() -> None:
    packages = ["--packages", "g:a:1", "--conf", "spark.jars.ivy=/ivy"]
    command = spark_cluster.submit_command(CLUSTER, "/x/job.py", ["--output", "o"], options=packages)
    assert command[0] == str(spark_cluster.spark_home() / "bin" / "spark-submit")
    assert command[command.index("--master") + 1] == "spark://127.0.0.1:7077"
    assert command[command.index("--deploy-mode") + 1] == "client"
    assert command[-7:] == [*packages, "/x/job.py", "--output", "o"]
    assert _conf(command)["spark.driver.host"] == "127.0.0.1"


def test_a_given_setting_wins_over_the_loopback_driver() -> None:
    command = spark_cluster.submit_command(CLUSTER, "j.py", [], conf={"spark.driver.host": "10.0.0.5", "a": "b=c"})
    assert _conf(command) == {"spark.driver.host": "10.0.0.5", "spark.driver.bindAddress": "127.0.0.1", "a": "b=c"}
    assert "--packages" not in command


def test_the_driver_and_the_executors_run_this_python() -> None:
    env = spark_cluster.submit_environment()
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable
    assert env["SPARK_HOME"] == str(spark_cluster.spark_home())


def test_alive_workers_are_read_from_the_masters_state() -> None:
    state = {"workers": [{"id": "w1", "state": "ALIVE"}, {"id": "w2", "state": "DEAD"}]}
    assert [w["id"] for w in spark_cluster.alive_workers(state)] == ["w1"]
