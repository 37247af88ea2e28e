"""A store's repository identity: where sessions of the same repository meet in the database.

The identity is the normalized URL of the worktree's ``origin`` remote (scheme, user, password,
port and a trailing ``.git`` dropped, so the SSH and HTTPS forms of one repository are equal), or,
for a worktree without one, ``path:`` and its absolute path (which meets nothing else).

>>> normalize_remote("git@github.com:Acme/Tool.git")
'github.com/acme/tool'
>>> normalize_remote("https://ada:tok@GitHub.com/acme/tool/")
'github.com/acme/tool'
>>> normalize_remote("ssh://git@gitlab.example:2222/team/tool.git")
'gitlab.example/team/tool'
>>> normalize_remote("/srv/git/tool.git")
'path:/srv/git/tool'
"""

from __future__ import annotations

import re
import subprocess
from typing import Final
from urllib.parse import urlsplit

__all__ = ["normalize_remote", "repository_identity"]

_SCP: Final = re.compile(r"^(?:[^@/]+@)?([^:/]+):(?!//)(.+)$")
_GIT_TIMEOUT_S: Final = 10.0


def normalize_remote(url: str) -> str:
    """The comparable form of a git remote URL (see the module's examples)."""
    url = url.strip()
    if "://" in url:
        parts = urlsplit(url)
        host, path = (parts.hostname or "").lower(), parts.path
        if parts.scheme == "file" or not host:
            return "path:" + _trim(path)
        return f"{host}/{_trim(path).lstrip('/').lower()}"
    scp = _SCP.match(url)
    if scp and not url.startswith("/"):
        return f"{scp.group(1).lower()}/{_trim(scp.group(2)).lstrip('/').lower()}"
    return "path:" + _trim(url)


def _trim(path: str) -> str:
    path = path.rstrip("/")
    return path[:-4] if path.endswith(".git") else path


def repository_identity(root: str) -> str:
    """The identity of the repository the worktree `root` belongs to (see the module docstring)."""
    try:
        done = subprocess.run(
            ["git", "config", "--get", "remote.origin.url"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
        origin = done.stdout.strip() if done.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        origin = ""
    return normalize_remote(origin) if origin else "path:" + root
