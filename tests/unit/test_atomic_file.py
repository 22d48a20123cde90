"""``core.atomic_file.replaced``: the new content replaces the file whole, or the old one stays."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from mm2ctl.core.atomic_file import replaced


def test_the_new_content_replaces_the_file_and_no_temporary_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "plan.yaml"
    path.write_text("old")
    with replaced(path, encoding="utf-8") as fh:
        fh.write("new")
        assert path.read_text() == "old"  # nothing is seen before the block ends
    assert path.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.yaml"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_an_error_keeps_the_old_content_and_removes_the_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), replaced(path, "wb") as fh:
        fh.write(b"half")
        raise RuntimeError("died while writing")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["rows.csv"]
