"""What azsd makes around a store it creates: a directory of the user's own, kept out of git's view.

A worktree's ``.azureal/`` holds every session an agent ran there, prompts and outputs included. So
azsd makes the directory with mode 0700 and the store file with mode 0600 (SQLite gives its WAL and
shared-memory files the store file's mode), whatever the umask, and puts a ``.gitignore`` of ``*``
in the directory: every git, the project's own and the ones agents keep beside it (OpenCode's
snapshots of the worktree, Aider's commits), then leaves the store out, with nothing written into
the project's own files. Existing stores are left as they are (`azs doctor` says when one is
readable by others).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["GITIGNORE", "prepare_store_file", "readable_by_others"]

#: The ``.azureal/.gitignore`` azsd writes: everything in the directory, itself included.
GITIGNORE: Final = "# made by azsd: the session store is this worktree's own, never committed\n*\n"


def prepare_store_file(path: Path) -> None:
    """Before a writer opens the store `path`: its directory (0700 when made here) with its
    ``.gitignore``, and the file itself (0600) when it does not exist yet. Best effort: a directory
    azsd cannot write to fails later, where SQLite says so."""
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(GITIGNORE)
    except OSError:
        pass
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except OSError:
        pass  # it exists (or cannot be made: SQLite's error says why)


def readable_by_others(path: Path) -> bool:
    """Whether the store file `path` grants anything to users other than its owner."""
    try:
        return bool(os.stat(path).st_mode & 0o077)
    except OSError:
        return False
