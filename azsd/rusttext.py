"""Rust's string semantics, where AZUREAL's output depends on them (spec §3).

Rust's ``trim``/``is_whitespace`` use the Unicode ``White_Space`` property, which differs from
Python's ``str.isspace``: Python also treats U+001C..U+001F as whitespace, Rust does not. Rust's
``str::lines`` splits on ``\\n``, drops the ``\\r`` of each ``\\r\\n`` pair, keeps a lone ``\\r``, and
adds no empty line for a trailing newline.

>>> rust_lines("a\\r\\nb\\n")
['a', 'b']
>>> rust_lines("a\\r")
['a\\r']
>>> "\\x1c".isspace(), is_blank("\\x1c")
(True, False)
"""

from __future__ import annotations

from typing import Final

__all__ = ["RUST_WHITESPACE", "is_blank", "rust_lines", "trim", "trim_end", "trim_start"]

#: The Unicode White_Space code points: exactly what Rust's `char::is_whitespace` accepts.
RUST_WHITESPACE: Final = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


def trim(s: str) -> str:
    """Rust `str::trim`."""
    return s.strip(RUST_WHITESPACE)


def trim_end(s: str) -> str:
    """Rust `str::trim_end`."""
    return s.rstrip(RUST_WHITESPACE)


def trim_start(s: str) -> str:
    """Rust `str::trim_start`."""
    return s.lstrip(RUST_WHITESPACE)


def is_blank(s: str) -> bool:
    """True when `s.trim().is_empty()` in Rust."""
    return not s.strip(RUST_WHITESPACE)


def rust_lines(s: str) -> list[str]:
    """Rust `str::lines`: `""` gives no lines, `"\\n"` gives one empty line."""
    if not s:
        return []
    parts = s.split("\n")
    if s.endswith("\n"):
        parts.pop()
        terminated = len(parts)
    else:
        terminated = len(parts) - 1
    for i in range(terminated):
        if parts[i].endswith("\r"):
            parts[i] = parts[i][:-1]
    return parts
