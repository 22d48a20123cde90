"""Files replaced whole: a reader sees the old content or the new one, never part of it, even after a crash."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def replaced(path: str | os.PathLike[str], mode: str = "w", *, suffix: str = "", **open_args: Any) -> Iterator[IO[Any]]:
    """A file to write what replaces ``path``: a temporary file in the same folder (mode 0600, hidden), flushed
    and fsync'd when the block ends, then renamed over ``path``; removed instead when the block raises."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.tmp-", suffix=suffix, dir=target.parent)
    try:
        with os.fdopen(fd, mode, **open_args) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
