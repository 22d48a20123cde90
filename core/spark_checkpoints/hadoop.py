"""A Structured Streaming checkpoint read through Hadoop's ``FileSystem`` in the Spark driver's JVM, so that a
checkpoint on any file system the session's Hadoop configuration reaches (``hdfs://``, ``s3a://``,
``abfss://``, ``file:``) reads as a local folder does (``core.spark_checkpoints.read.CheckpointFiles``).

It needs a classic session (a driver JVM in this process, through py4j); a Spark Connect session has none.
A path without a scheme resolves against the file system's working folder, as Spark resolves a
``checkpointLocation``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mm2ctl.core.errors import SparkCheckpointError

_NOT_FOUND = "java.io.FileNotFoundException"


@dataclass(frozen=True, slots=True)
class HadoopCheckpointFiles:
    """The checkpoint at ``root``, read with ``org.apache.hadoop.fs.FileSystem`` through ``jvm`` (a py4j JVM view)
    and ``hadoop_conf`` (a ``org.apache.hadoop.conf.Configuration``). Any other failure than a missing file
    raises :class:`SparkCheckpointError` naming the path and Hadoop's message."""

    jvm: Any
    hadoop_conf: Any
    root: str

    @property
    def location(self) -> str:
        return self.root

    def _path(self, relative: str) -> Any:
        root = self.jvm.org.apache.hadoop.fs.Path(self.root)
        return root if not relative else self.jvm.org.apache.hadoop.fs.Path(root, relative)

    def _call(self, relative: str, what: str, action: Any) -> Any:
        from py4j.protocol import Py4JJavaError

        path = self._path(relative)
        try:
            return action(path.getFileSystem(self.hadoop_conf), path)
        except Py4JJavaError as exc:
            java = exc.java_exception
            if java.getClass().getName() == _NOT_FOUND:
                return None
            raise SparkCheckpointError(self.root, f"{relative or '.'}: cannot be {what} ({java.toString()})") from exc

    def exists(self) -> bool:
        status = self._call("", "read", lambda fs, path: fs.getFileStatus(path))
        return status is not None and bool(status.isDirectory())

    def list_dir(self, path: str) -> list[str] | None:
        def listing(fs: Any, folder: Any) -> list[str] | None:
            if not fs.getFileStatus(folder).isDirectory():
                return None
            return sorted(str(status.getPath().getName()) for status in fs.listStatus(folder))

        result: list[str] | None = self._call(path, "listed", listing)
        return result

    def read(self, path: str) -> bytes | None:
        def content(fs: Any, file: Any) -> bytes:
            stream = fs.open(file)
            try:
                return bytes(self.jvm.org.apache.commons.io.IOUtils.toByteArray(stream))
            finally:
                stream.close()

        result: bytes | None = self._call(path, "read", content)
        return result


def hadoop_checkpoint_files(spark: Any, root: str) -> HadoopCheckpointFiles:
    """The checkpoint at ``root`` read through ``spark``'s driver JVM and Hadoop configuration. Raises
    :class:`SparkCheckpointError` for a session without a driver JVM in this process (Spark Connect)."""
    jvm = getattr(spark, "_jvm", None)
    jsc = getattr(spark, "_jsc", None)
    if jvm is None or jsc is None:
        raise SparkCheckpointError(root, "a Spark Connect session cannot read a checkpoint; use a local session")
    return HadoopCheckpointFiles(jvm=jvm, hadoop_conf=jsc.hadoopConfiguration(), root=root)
