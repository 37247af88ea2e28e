"""azsd.files: the one atomic-write helper, on real files."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from azsd.files import atomic_write, open_regular, write_atomic


def test_replaces_the_file_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    write_atomic(path, b"new", mode=0o600)
    assert path.read_bytes() == b"new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]  # no temporary file left


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"old")
    with pytest.raises(RuntimeError), atomic_write(path) as out:
        out.write(b"half")
        raise RuntimeError("interrupted")
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_default_permissions_follow_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "f", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "f").stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda p: os.mkfifo(p), "FIFO"),
        (lambda p: p.mkdir(), "directory"),
    ],
)
def test_open_regular_refuses_what_is_not_a_regular_file(tmp_path: Path, make: Any, kind: str) -> None:
    path = tmp_path / "x"
    make(path)
    with pytest.raises(OSError, match=kind):
        open_regular(path)  # never blocks: a FIFO without a writer opens at once


def test_open_regular_refuses_a_link_only_when_asked(tmp_path: Path) -> None:
    target = tmp_path / "t"
    target.write_bytes(b"x")
    (tmp_path / "l").symlink_to(target)
    with open_regular(tmp_path / "l") as stream:
        assert stream.read() == b"x"
    with pytest.raises(OSError, match="symbolic link"):
        open_regular(tmp_path / "l", nofollow=True)
