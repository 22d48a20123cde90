"""Writing a Spark query's translated position to a local folder, in the two forms a Spark user can use, and
reading it back (docs/design.md, "Spark queries").

- ``json``: the ``startingOffsets`` of a new query on the target (``core.spark_checkpoints.starting_offsets``), one
  file per
  Kafka source.
- ``checkpoint``: a copy of the checkpoint whose last committed batch ``N`` resumes at the translated offsets.
  The copy holds ``metadata`` (the query id stays), ``offsets/<N>`` with each Kafka line replaced and
  ``offsets/<N-1>`` with the same source lines under its own metadata line (Spark resumes batch ``N`` only
  with ``N-1`` present, and a DSv1 Kafka source's replay of batch ``N`` is then empty), ``commits/<N-1>`` and
  ``commits/<N>``, ``sources/<i>/0`` rewritten to the translated offsets, every other source folder and ``state/`` as
  they are, less any state store version above ``N + 1`` (a batch that never committed). Hadoop's hidden
  ``.<file>.crc`` files are not copied beside the logs (its local file system would verify them against the
  rewritten files); Spark's own state checksums are.

Everything is written under a temporary name beside ``output`` and renamed into place, so ``output`` either
does not exist or is complete; nothing is ever written over an existing path.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from mm2ctl.core.errors import SparkCheckpointError
from mm2ctl.core.spark_checkpoints.copy_form import initial_offsets_file, initial_offsets_path, rewritten_offset_file
from mm2ctl.core.spark_checkpoints.read import (
    COMMITS_DIR,
    METADATA_FILE,
    OFFSETS_DIR,
    SOURCES_DIR,
    STATE_DIR,
    CheckpointRead,
    LocalCheckpointFiles,
    Positions,
    read_checkpoint,
)
from mm2ctl.core.spark_checkpoints.starting_offsets import read_starting_offsets, starting_offsets_json

_STATE_FILE = re.compile(r"([0-9]+)(?:_[^.]*)?\.(?:delta|snapshot|zip|changelog)(?:\.crc)?")


def json_outputs(output: str, indexes: list[int]) -> dict[int, Path]:
    """Where each Kafka source's ``startingOffsets`` goes: ``output`` itself for a query with one Kafka source,
    ``<output without .json>.source-<index>.json`` for each of several."""
    base = Path(output)
    if len(indexes) == 1:
        return {indexes[0]: base}
    stem = output.removesuffix(".json")
    return {i: Path(f"{stem}.source-{i}.json") for i in indexes}


def output_paths(output: str, form: str, indexes: list[int]) -> list[Path]:
    """Every path a query's result takes in ``form``: the JSON files of its Kafka sources (``indexes``), or the
    checkpoint copy's folder."""
    return list(json_outputs(output, indexes).values()) if form == "json" else [Path(output)]


def json_files(output: str, translated: Mapping[int, Positions]) -> dict[Path, bytes]:
    """Each ``startingOffsets`` file the JSON form writes, with its bytes."""
    paths = json_outputs(output, sorted(translated))
    return {path: starting_offsets_json(translated[index]).encode() for index, path in paths.items()}


def write_json(output: str, translated: Mapping[int, Positions]) -> list[Path]:
    """Write each source's ``startingOffsets`` file, all or none: a file already there with exactly these bytes
    (an earlier, interrupted run) is kept, any other refuses the write. Returns the files."""
    files = json_files(output, translated)
    for path, data in files.items():
        if path.exists() and path.read_bytes() != data:
            raise SparkCheckpointError(str(path), "exists already: mm2ctl never writes over a file")
    linked: list[Path] = []
    try:
        for path, data in files.items():
            if not path.exists():
                _write_file_atomically(path, data)
                linked.append(path)
    except BaseException:
        for path in linked:
            path.unlink(missing_ok=True)
        raise
    return list(files)


def read_json_back(output: str, translated: Mapping[int, Positions]) -> list[str]:
    """What differs between the files at ``output`` and ``translated`` (empty: they read back equal)."""
    problems = []
    for index, path in json_outputs(output, sorted(translated)).items():
        try:
            got = read_starting_offsets(path.read_text(encoding="utf-8"), where=str(path))
        except (OSError, SparkCheckpointError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        want = {t: dict(parts) for t, parts in translated[index].items()}
        if got != want:
            problems.append(f"{path} does not hold the translated offsets of source {index}")
    return problems


def write_copy(source: Path, read: CheckpointRead, translated: Mapping[int, Positions], output: Path) -> None:
    """Write the translated copy of the checkpoint at ``source`` (read as ``read``) to ``output``, which must not
    exist; ``translated`` maps each Kafka source's index to its offsets on the target (same topic names)."""
    if output.exists():
        raise SparkCheckpointError(str(output), "exists already: mm2ctl never writes over a checkpoint")
    n = read.batch_id
    # One temporary name per output: an interrupted run's leftover is removed by the next (apply holds a lock).
    tmp = output.with_name(f".{output.name}.mm2ctl.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        _copy_tree(source, tmp, n)
        where = str(source / OFFSETS_DIR / str(n))
        last = rewritten_offset_file((source / OFFSETS_DIR / str(n)).read_bytes(), translated, where=where)
        _write_file(tmp / OFFSETS_DIR / str(n), last)
        if n > 0:
            previous = (source / OFFSETS_DIR / str(n - 1)).read_bytes().decode("utf-8").split("\n")
            lines = last.decode("utf-8").split("\n")
            _write_file(tmp / OFFSETS_DIR / str(n - 1), "\n".join([*previous[:2], *lines[2:]]).encode())
        for index, positions in translated.items():
            _write_file(tmp / initial_offsets_path(index), initial_offsets_file(positions))
        _fsync_tree(tmp)
        if output.exists():
            raise SparkCheckpointError(str(output), "appeared while the copy was written: left as it is")
        os.rename(tmp, output)
        _fsync_folder(output.parent)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SparkCheckpointError(str(output), f"cannot be written ({exc})") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def read_copy_back(output: Path, batch_id: int, translated: Mapping[int, Positions]) -> list[str]:
    """What differs between the copy at ``output`` and what was meant (empty: it reads back right): its last
    committed batch, and each Kafka source's offsets there and in its initial offsets file."""
    try:
        read = read_checkpoint(LocalCheckpointFiles(output))
    except SparkCheckpointError as exc:
        return [str(exc)]
    problems = []
    if read.batch_id != batch_id or read.uncommitted_batch_id is not None:
        problems.append(f"{output}: the last committed batch is {read.batch_id}, not {batch_id}")
    got = {s.index: s for s in read.kafka_sources}
    for index, positions in translated.items():
        want = {t: dict(parts) for t, parts in positions.items()}
        source = got.get(index)
        if source is None or {t: dict(p) for t, p in source.positions.items()} != want:
            problems.append(f"{output}: source {index} does not resume at the translated offsets")
        elif source.initial_positions is None or {t: dict(p) for t, p in source.initial_positions.items()} != want:
            problems.append(f"{output}: {initial_offsets_path(index)} does not hold the translated offsets")
    return problems


def remove_output(path: Path) -> bool:
    """Delete a file or folder mm2ctl wrote (rollback). Returns whether something was there."""
    if path.is_dir():
        shutil.rmtree(path)
        return True
    if path.exists():
        path.unlink()
        return True
    return False


def _copy_tree(source: Path, dest: Path, n: int) -> None:
    """Everything a resume of batch ``n`` reads, as it is; the files ``write_copy`` rewrites come after."""
    metadata = source / METADATA_FILE
    if metadata.is_file():
        shutil.copy2(metadata, dest / METADATA_FILE)
    for folder in (OFFSETS_DIR, COMMITS_DIR):
        (dest / folder).mkdir()
        for batch in range(max(0, n - 1), n + 1):
            if (source / folder / str(batch)).is_file():
                shutil.copy2(source / folder / str(batch), dest / folder / str(batch))
    if (source / SOURCES_DIR).is_dir():
        shutil.copytree(source / SOURCES_DIR, dest / SOURCES_DIR, ignore=_hadoop_checksums)
    if (source / STATE_DIR).is_dir():
        shutil.copytree(source / STATE_DIR, dest / STATE_DIR, ignore=lambda _d, names: _later_versions(names, n + 1))


def _hadoop_checksums(_folder: str, names: list[str]) -> set[str]:
    return {name for name in names if name.startswith(".") and name.endswith(".crc")}


def _later_versions(names: list[str], newest: int) -> set[str]:
    """The state store files of versions above ``newest`` (and their checksum files)."""
    out = set()
    for name in names:
        m = _STATE_FILE.fullmatch(name.lstrip("."))
        if m is not None and int(m.group(1)) > newest:
            out.add(name)
    return out


def _write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    crc = path.with_name(f".{path.name}.crc")
    if crc.exists():
        crc.unlink()
    path.write_bytes(data)


def _write_file_atomically(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.mm2ctl-{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.link(tmp, path)  # fails if path appeared meanwhile: never over a file
        _fsync_folder(path.parent)
    except FileExistsError as exc:
        raise SparkCheckpointError(str(path), "exists already: mm2ctl never writes over a file") from exc
    except OSError as exc:
        raise SparkCheckpointError(str(path), f"cannot be written ({exc.strerror})") from exc
    finally:
        tmp.unlink(missing_ok=True)


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    for folder, _dirs, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as fh:
                os.fsync(fh.fileno())
