"""The building blocks of `azs`'s human output: styled text, tables that fit the terminal, numbers.

The drawing is rich's (``rich.text.Text``, ``rich.table.Table``): this module and :mod:`.term` are the
only ones that import it, and only inside functions, so that ``--json`` and the commands that print
plain lines never load it (it costs about 15 ms of start-up). A renderer returns *lines*: a plain
``str`` is written as it is; anything else (styled text, a table) is printed by a rich console that
knows the terminal's width and whether colour is wanted (:func:`.term.console`).

Numbers, one format everywhere: counts in full with thousands separators (``12,345 events``); the
compact ``12.3k``/``4.1M`` only in the token column of `azs ls`, where space is short.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, TypeAlias

from azsd_client.costs import format_cost

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
    from rich.text import Text

__all__ = [
    "LINE_MAX",
    "Ansi",
    "AnsiStyle",
    "Cell",
    "Line",
    "Style",
    "count",
    "format_cost",
    "format_duration",
    "format_size",
    "format_time",
    "format_tokens",
    "gutter",
    "join",
    "one_line",
    "plural",
    "table",
    "wrap_ansi",
]

#: The longest line :func:`one_line` makes by default.
LINE_MAX: Final = 160

#: One line of human output: plain text, or something rich draws (styled text, a table).
Line: TypeAlias = "str | RenderableType"


class Ansi(str):
    """Text already made for the terminal (its colours as ANSI codes, its lines as they are to be
    shown): written as it is, never fitted by rich. Made by :class:`AnsiStyle`'s users."""

    __slots__ = ()


#: The SGR codes of the styles :class:`Style` paints with.
_SGR: Final = {"bold": "1", "dim": "2", "red": "31", "green": "32", "yellow": "33", "cyan": "36"}


@dataclass(frozen=True)
class Style:
    """How to show things to people. With `color` off (a pipe, ``NO_COLOR``, ``--json``) each style is
    the plain text itself, so nothing needs rich; with it on, a ``rich.text.Text`` in that style."""

    color: bool = False
    #: Times relative to now (``3 min ago``), for a person at a terminal; else as stored.
    relative: bool = False
    #: The terminal's width, that long lines of a transcript are wrapped at; None on a pipe (not wrapped).
    width: int | None = None

    def paint(self, text: str, style: str) -> str | Text:
        if not self.color or not text:
            return text
        from rich.text import Text

        return Text(text, style=style)

    def bold(self, text: str) -> str | Text:
        return self.paint(text, "bold")

    def dim(self, text: str) -> str | Text:
        return self.paint(text, "dim")

    def red(self, text: str) -> str | Text:
        return self.paint(text, "red")

    def green(self, text: str) -> str | Text:
        return self.paint(text, "green")

    def yellow(self, text: str) -> str | Text:
        return self.paint(text, "yellow")

    def cyan(self, text: str) -> str | Text:
        return self.paint(text, "cyan")

    def highlight(self, text: str) -> str | Text:
        return self.paint(text, "bold yellow")


@dataclass(frozen=True)
class AnsiStyle(Style):
    """A :class:`Style` that paints with ANSI codes in plain strings, for output written a line at a
    time without rich (transcripts of any size: one rich object per event costs a millisecond)."""

    def paint(self, text: str, style: str) -> str:
        if not self.color or not text:
            return text
        codes = ";".join(_SGR[name] for name in style.split())
        return f"\x1b[{codes}m{text}\x1b[0m"


#: An ANSI escape sequence (the colours :class:`AnsiStyle` paints with).
_ESCAPE: Final = re.compile(r"\x1b\[[0-9;]*m")


def _cells(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return cell_len(text)


def wrap_ansi(line: str, width: int, indent: str) -> str:
    r"""`line` (colours as ANSI codes) broken into lines at most `width` columns wide, each further one
    after `indent`, its colour carried over.

    >>> wrap_ansi("abcdefgh", 5, "  ")
    'abcde\n  fgh'
    >>> wrap_ansi("\x1b[2mabcdef\x1b[0m", 4, "")
    '\x1b[2mabcd\x1b[0m\n\x1b[2mef\x1b[0m'
    """
    if _cells(_ESCAPE.sub("", line)) <= width:
        return line
    out, col, active, room = [], 0, "", width
    for piece in _pieces(line):
        if piece.startswith("\x1b["):
            active = "" if piece == "\x1b[0m" else active + piece
            out.append(piece)
            continue
        for char in piece:
            wide = _cells(char)
            if col + wide > room and col > 0:
                out.append(("\x1b[0m" if active else "") + "\n" + indent + active)
                col, room = 0, max(1, width - _cells(indent))
            out.append(char)
            col += wide
    return "".join(out)


def _pieces(line: str) -> list[str]:
    """`line` as its text and its escape sequences, in order."""
    pieces, at = [], 0
    for match in _ESCAPE.finditer(line):
        pieces += [line[at : match.start()], match.group()]
        at = match.end()
    return [*pieces, line[at:]]


def join(*parts: str | Text) -> str | Text:
    """The parts side by side: a plain ``str`` when none is styled.

    >>> join("S3", " ", "fix")
    'S3 fix'
    """
    if all(isinstance(part, str) for part in parts):
        return "".join(parts)  # type: ignore[arg-type]
    from rich.text import Text

    return Text.assemble(*parts)


def _plain(text: str) -> str | Text:
    return text


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, and how to paint it (one of :class:`Style`'s methods)."""

    text: str
    paint: Callable[[str], str | Text] = _plain


@dataclass(frozen=True)
class _Table:
    """Rows in columns two spaces apart, as wide as the terminal allows (rich's protocol).

    When the rows are wider than the terminal, the columns in `optional` are left out, first one
    first, as long as the `flex` column (a name, a snippet, a path: what the row is about) would get
    less than half the width (8 columns, when it is itself optional); then it is cut with an
    ellipsis. No line is wider than the terminal, and each row stays on one line. A row's note
    (`notes`, one per row or None) is a line of its own right under it.
    """

    rows: Sequence[Sequence[Cell]]
    right: frozenset[int]
    flex: int | None
    optional: tuple[int, ...]
    header: Sequence[Cell] | None
    indent: int = 0
    compact: Sequence[Sequence[Cell]] | None = None
    notes: Sequence[Line | None] = ()

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.padding import Padding
        from rich.table import Table
        from rich.text import Text

        rows = [*([self.header] if self.header else []), *self.rows]
        widths = _widths(rows)
        room = options.max_width - self.indent
        filled = _widths(self.rows)
        shown = [i for i in range(len(filled)) if filled[i]]  # a column empty in every row: no gap
        wide = self.flex not in self.optional
        if self.compact is not None and _needed(widths, shown, self.flex, room, wide=wide) > room:
            rows = [*([self.header] if self.header else []), *self.compact]
            widths, filled = _widths(rows), _widths(self.compact)
            shown = [i for i in range(len(filled)) if filled[i]]
        for drop in self.optional:
            if _needed(widths, shown, self.flex, room, wide=wide) <= room:
                break
            if drop in shown:
                shown.remove(drop)
        fixed = sum(widths[i] for i in shown if i != self.flex) + 2 * (len(shown) - 1)
        sized = [(i, max(1, min(widths[i], room - fixed)) if i == self.flex else widths[i]) for i in shown]

        def part() -> Table:  # the rows up to a note: every part has the same columns
            table = Table(
                box=None, show_header=False, pad_edge=False, padding=(0, 2, 0, 0), collapse_padding=True
            )
            for i, width in sized:
                table.add_column(
                    justify="right" if i in self.right else "left",
                    no_wrap=True,
                    overflow="ellipsis",
                    min_width=width,
                    max_width=width,
                )
            return table

        notes = [None] * (len(rows) - len(self.rows)) + list(self.notes or [None] * len(self.rows))
        table = part()
        for row, note in zip(rows, notes, strict=True):
            table.add_row(*(row[i].paint(row[i].text) if i < len(row) else "" for i in shown))
            if note is not None:
                line = Text(note) if isinstance(note, str) else note  # never read as markup
                yield Padding(table, (0, 0, 0, self.indent)) if self.indent else table
                yield Padding(line, (0, 0, 0, self.indent)) if self.indent else line
                table = part()
        if table.rows:
            yield Padding(table, (0, 0, 0, self.indent)) if self.indent else table


def _widths(rows: Sequence[Sequence[Cell]]) -> list[int]:
    from rich.cells import cell_len

    widths: list[int] = []
    for row in rows:
        for i, cell in enumerate(row):
            if i == len(widths):
                widths.append(0)
            widths[i] = max(widths[i], cell_len(cell.text))
    return widths


def _needed(
    widths: Sequence[int], shown: Sequence[int], flex: int | None, room: int, *, wide: bool = True
) -> int:
    """Columns of the rows with only `shown` columns, the `flex` one (what the row is about: a name, a
    match) cut to half the `room` (the columns that help less go before it is cut shorter); not
    `wide` (the flex column is itself one of the optional ones: it helps least), cut to 8."""
    least = max(8, room // 2) if wide else 8
    return sum(min(widths[i], least) if i == flex else widths[i] for i in shown) + 2 * (len(shown) - 1)


def table(
    rows: Sequence[Sequence[Cell]],
    right: frozenset[int] = frozenset(),
    *,
    flex: int | None = None,
    optional: Iterable[int] = (),
    header: Sequence[Cell] | None = None,
    indent: int = 0,
    compact: Sequence[Sequence[Cell]] | None = None,
    notes: Sequence[Line | None] = (),
) -> list[Line]:
    """Rows aligned in columns two spaces apart; columns in `right` are right-aligned. It fits the
    terminal: the `compact` rows (the same cells, shorter: ``12.3M`` for ``12,345,678``) replace the
    rows when these do not fit whole, then the `optional` columns go (in that order), then the `flex`
    one is cut with ``…``. One line of output (rich draws it at the width it is given); a row's note
    (`notes`: one per row, or None) is drawn on a line of its own right under that row.

    >>> from azsd_client.render.term import plain_lines
    >>> plain_lines(table([[Cell("S3"), Cell("x")], [Cell("S12"), Cell("yy")]], right=frozenset({0})))
    [' S3  x', 'S12  yy']
    >>> rows = [[Cell("S3"), Cell("a long name"), Cell("2 events")]]
    >>> plain_lines(table(rows, flex=1, optional=(2,)), width=20), plain_lines(table(rows, flex=1), width=20)
    (['S3  a long name'], ['S3  a lon…  2 events'])
    """
    return [_Table(rows, right, flex, tuple(optional), header, indent, compact, notes)] if rows else []


@dataclass(frozen=True)
class _Gutter:
    """Lines with a label in a dim left margin (a seq), wrapped at the terminal's width beside it."""

    label: str
    lines: Sequence[Line]
    width: int = field(default=5)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.table import Table

        grid = Table.grid(padding=(0, 1, 0, 0))
        grid.add_column(justify="right", width=max(self.width, len(self.label)), style="dim", no_wrap=True)
        grid.add_column(overflow="fold")
        for i, line in enumerate(self.lines):
            grid.add_row(self.label if i == 0 else "", line)
        yield grid


def gutter(label: str, lines: Sequence[Line], width: int = 5) -> Line:
    """`lines` beside `label` in a left margin `width` columns wide (`azs show`'s seqs).

    >>> from azsd_client.render.term import plain_lines
    >>> plain_lines([gutter("12", ["» fix it", "  please"])])
    ['   12 » fix it', '        please']
    """
    return _Gutter(label, lines, width)


def plural(n: int, word: str, words: str | None = None) -> str:
    """`n` and the word, in the singular for 1 (counts with thousands separators).

    >>> plural(1, "event"), plural(12345, "event"), plural(2, "match", "matches")
    ('1 event', '12,345 events', '2 matches')
    """
    return f"{n:,} " + (word if n == 1 else words or word + "s")


def count(n: int) -> str:
    """A count in full, with thousands separators: the one way `azs` writes counts.

    >>> count(865396)
    '865,396'
    """
    return f"{n:,}"


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


def format_time(stamp: str, now: datetime | None = None, *, relative: bool = True) -> str:
    """A stored UTC time (``2025-01-01 10:00:00``) for people: ``3 min ago`` within a month (with
    `relative`), else the date and minute; a stamp that is not a time as it is.

    >>> now = datetime(2025, 1, 2, 10, 0, tzinfo=UTC)
    >>> [format_time(t, now) for t in ("2025-01-02 09:59:30", "2025-01-02 09:57:00", "2025-01-01 10:00:00")]
    ['just now', '3 min ago', '1 day ago']
    >>> format_time("2024-06-01 08:30:00", now), format_time("2025-01-02 09:57:00", now, relative=False)
    ('2024-06-01 08:30', '2025-01-02 09:57')
    """
    try:
        then = datetime.fromisoformat(stamp).replace(tzinfo=UTC)
    except ValueError:
        return stamp
    age = int(((now or datetime.now(UTC)) - then).total_seconds())
    if not relative or not 0 <= age < 30 * 86_400:
        return then.strftime("%Y-%m-%d %H:%M")
    if age < 60:
        return "just now"
    if age < 3_600:
        return f"{age // 60} min ago"
    if age < 86_400:
        return f"{age // 3_600} h ago"
    return f"{plural(age // 86_400, 'day')} ago"


def one_line(text: str, limit: int = LINE_MAX) -> str:
    """`text` on one line (line breaks shown as ⏎), cut to `limit` characters."""
    flat = " ⏎ ".join(part.strip() for part in text.strip().splitlines()) if "\n" in text else text.strip()
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def format_tokens(n: int) -> str:
    """A token count in a few characters, for the one column that is short of space (`azs ls`).

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
