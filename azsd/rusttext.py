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

__all__ = [
    "RUST_WHITESPACE",
    "head_lines",
    "is_blank",
    "last_lines",
    "line_count",
    "rust_lines",
    "trim",
    "trim_end",
    "trim_start",
]

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
    if "\r" in s:
        for i in range(terminated):
            if parts[i].endswith("\r"):
                parts[i] = parts[i][:-1]
    return parts


def line_count(s: str) -> int:
    """`len(rust_lines(s))`, without making the lines."""
    return 0 if not s else s.count("\n") + (not s.endswith("\n"))


def head_lines(s: str, n: int) -> list[str]:
    """`rust_lines(s)[:n]`, splitting no further than the `n`th line."""
    if n <= 0:
        return []
    parts = s.split("\n", n)
    if len(parts) <= n:
        return rust_lines(s)
    del parts[n]  # the rest, after the nth line's newline: each of these lines is terminated
    return [part[:-1] if part.endswith("\r") else part for part in parts]


def last_lines(s: str, n: int) -> list[str]:
    """The last `n` lines of `rust_lines(s)` that are not blank (:func:`is_blank`), in order,
    read from the end of `s` only as far as they take."""
    if n <= 0:
        return []
    want = 2 * n
    while True:
        parts = s.rsplit("\n", want)
        whole = len(parts) <= want  # every line of s is among the parts
        lines = rust_lines(s) if whole else rust_lines("\n".join(parts[1:]))
        kept = [line for line in lines if not is_blank(line)]
        if whole or len(kept) >= n:
            return kept[-n:]
        want *= 4
