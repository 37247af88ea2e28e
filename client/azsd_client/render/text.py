"""The building blocks of `azs`'s human output: colour, aligned columns, short numbers and durations.

Colour only when a :class:`Style` says so (a terminal, and no ``NO_COLOR``).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "LINE_MAX",
    "Cell",
    "Style",
    "display_width",
    "format_cost",
    "format_duration",
    "format_size",
    "format_tokens",
    "one_line",
    "table",
]

#: The longest line :func:`one_line` makes by default.
LINE_MAX: Final = 160


@dataclass(frozen=True)
class Style:
    """ANSI colour, or none at all."""

    color: bool = False

    def _sgr(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color and text else text

    def bold(self, text: str) -> str:
        return self._sgr("1", text)

    def dim(self, text: str) -> str:
        return self._sgr("2", text)

    def red(self, text: str) -> str:
        return self._sgr("31", text)

    def green(self, text: str) -> str:
        return self._sgr("32", text)

    def yellow(self, text: str) -> str:
        return self._sgr("33", text)

    def cyan(self, text: str) -> str:
        return self._sgr("36", text)


def _plain(text: str) -> str:
    return text


@dataclass(frozen=True)
class Cell:
    """A table cell: its text (which sets the width) and how to paint it once padded."""

    text: str
    paint: Callable[[str], str] = _plain


def display_width(text: str) -> int:
    """Terminal columns of `text`: wide East Asian characters take two, combining marks none.

    >>> display_width("S3"), display_width("修正"), display_width("e\\u0301")
    (2, 4, 1)
    """
    if text.isascii():  # one column each: no ASCII character is wide or combining
        return len(text)
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def table(rows: Sequence[Sequence[Cell]], right: frozenset[int] = frozenset()) -> list[str]:
    """Rows aligned in columns two spaces apart; columns in `right` are right-aligned.

    >>> table([[Cell("S3"), Cell("x")], [Cell("S12"), Cell("yy")]], right=frozenset({0}))
    [' S3  x', 'S12  yy']
    """
    cell_widths = [[display_width(cell.text) for cell in row] for row in rows]
    widths: dict[int, int] = {}
    for row_widths in cell_widths:
        for i, width in enumerate(row_widths):
            widths[i] = max(widths.get(i, 0), width)
    lines = []
    for row, row_widths in zip(rows, cell_widths, strict=True):
        parts = []
        for i, (cell, width) in enumerate(zip(row, row_widths, strict=True)):
            pad = " " * (widths[i] - width)
            parts.append(pad + cell.paint(cell.text) if i in right else cell.paint(cell.text) + pad)
        lines.append("  ".join(parts).rstrip())
    return lines


def format_duration(ms: int | None) -> str:
    """A short human duration.

    >>> format_duration(1234), format_duration(75_000), format_duration(None)
    ('1.2s', '1m15s', '')
    """
    if ms is None:
        return ""
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_cost(cost: float | None, source: str | None = "reported") -> str:
    """`$0.1234`, `~$0.1234` for an estimate (azsd priced the tokens), or "" for no cost."""
    if not cost:
        return ""
    return f"{'~' if source == 'estimated' else ''}${cost:.4f}"


def one_line(text: str, limit: int = LINE_MAX) -> str:
    """`text` on one line (line breaks shown as ⏎), cut to `limit` characters."""
    flat = " ⏎ ".join(part.strip() for part in text.strip().splitlines()) if "\n" in text else text.strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_tokens(n: int) -> str:
    """A token count in a few characters.

    >>> format_tokens(950), format_tokens(12_345), format_tokens(4_100_000)
    ('950', '12.3k', '4.1M')
    """
    for limit, unit in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if n >= limit:
            return f"{n / limit:.1f}{unit}"
    return str(n)


def format_size(n: int) -> str:
    """A byte count for people.

    >>> format_size(512), format_size(12_300), format_size(4_500_000)
    ('512 B', '12.3 kB', '4.5 MB')
    """
    for limit, unit in ((10**9, "GB"), (10**6, "MB"), (10**3, "kB")):
        if n >= limit:
            return f"{n / limit:.1f} {unit}"
    return f"{n} B"
