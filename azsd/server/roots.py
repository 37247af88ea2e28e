"""Which store a request names: its root made canonical, and identified by its store file.

A request names its store by a worktree root. :func:`worktree_root` makes it canonical (an absolute
path to an existing directory, its links resolved) and then names the store by its file: a root
whose ``.azureal`` or store is a link to another root's store (or a second path to the same file)
is the same root as the one first asked for (or already open), by the file's (device, inode), so
one file never has two writers in one daemon (a second daemon is kept out by the store's writer
lock, :mod:`azsd.store.writer_lock`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from azsd.store import store_path

__all__ = ["worktree_root"]

#: How long a root's canonical path is remembered (a root moved or deleted meanwhile fails when its
#: store is opened, with the reason).
_ROOT_TTL_S: Final = 1.0
_ROOTS: dict[str, tuple[str, float]] = {}  # root as asked -> (canonical, when resolved)
_STORE_ROOTS: dict[tuple[int, int], str] = {}  # a store file's (st_dev, st_ino) -> the root naming it


def worktree_root(root: str, open_roots: Callable[[], list[str]]) -> str | None:
    """`root` made canonical, if it is an absolute path to an existing directory; else None.

    A root found is remembered for :data:`_ROOT_TTL_S` (resolving it costs as much as a small read)."""
    now = time.monotonic()
    known = _ROOTS.get(root)
    if known is not None and now - known[1] < _ROOT_TTL_S:
        return known[0]
    if len(_ROOTS) > 1024:
        _ROOTS.clear()
    try:
        canonical = os.path.realpath(root) if root else ""
        usable = bool(root) and os.path.isabs(root) and os.path.isdir(canonical)
    except ValueError:  # e.g. a NUL byte in the path
        usable = False
    if not usable:
        return None
    canonical = _root_of_store(canonical, open_roots)
    _ROOTS[root] = (canonical, now)
    return canonical


def _root_of_store(root: str, open_roots: Callable[[], list[str]]) -> str:
    """The root that names the store file of `root`: a root is its store file, identified by its
    (device, inode), so a worktree whose ``.azureal`` or store is a link to another's store (or a
    second path to it) is the same root as the one first asked for (or open: `open_roots`), with
    one writer, not two."""
    key = _file_key(root)
    if key is None:  # no store yet (or none readable): the path is all there is
        return root
    known = _STORE_ROOTS.get(key)
    for other in [known] if known is not None else open_roots():
        if other != root and _file_key(other) == key:
            return other
    if len(_STORE_ROOTS) > 4096:
        _STORE_ROOTS.clear()
    _STORE_ROOTS[key] = root
    return root


def _file_key(root: str) -> tuple[int, int] | None:
    try:
        info = os.stat(store_path(Path(root)))
    except OSError:
        return None
    return info.st_dev, info.st_ino
