"""The directory name Claude Code gives a project under ``projects/`` (agent-formats §2.1)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

__all__ = ["SLUG_MAX", "claude_slug", "long_slug_prefix"]

#: Claude cuts a longer slug to this many characters and appends a hash of the path.
SLUG_MAX: Final = 200

_NOT_SLUG: Final = re.compile(r"[^A-Za-z0-9]")


def claude_slug(project: Path | str) -> str:
    """The directory name Claude gives `project` under ``projects/``: every character but an ASCII
    letter or digit becomes ``-`` (one per UTF-16 unit, as JavaScript counts), and a name longer
    than 200 characters is cut and given a hash suffix (the one Node builds compute; other builds
    hash differently, which :func:`long_slug_prefix` allows for).

    >>> claude_slug("/Users/me/.worktrees/feat_x"), claude_slug("C:\\\\work\\\\repo")
    ('-Users-me--worktrees-feat-x', 'C--work-repo')
    """
    text = str(project)
    slug = _sanitized(text)
    if len(slug) <= SLUG_MAX:
        return slug
    return f"{slug[:SLUG_MAX]}-{_base36(abs(_js_hash(text)))}"


def long_slug_prefix(project: Path | str) -> str | None:
    """What every build's slug of a `project` too long for a whole slug begins with (the cut name
    and its ``-``, before a hash that depends on the build); None for a path short enough."""
    full = _sanitized(str(project))
    return full[:SLUG_MAX] + "-" if len(full) > SLUG_MAX else None


def _sanitized(text: str) -> str:
    """`text` with each non-alphanumeric character replaced by one ``-`` per UTF-16 unit."""
    return _NOT_SLUG.sub(lambda m: "--" if ord(m.group()) > 0xFFFF else "-", text)


def _js_hash(text: str) -> int:
    """JavaScript's `(h << 5) - h + charCodeAt(i) | 0` over the UTF-16 units of `text`."""
    units = text.encode("utf-16-le")
    h = 0
    for i in range(0, len(units), 2):
        h = (h * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def _base36(n: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        n, d = divmod(n, 36)
        out = digits[d] + out
        if n == 0:
            return out
