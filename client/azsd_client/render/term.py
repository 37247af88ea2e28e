"""The terminal `azs` writes to: a rich console set up once, from the stream and the environment.

Colour only on a terminal, never with ``NO_COLOR`` or ``TERM=dumb``. Width: ``COLUMNS`` when set, else
the terminal's; on a pipe (no ``COLUMNS``) lines are not cut at all, so that ``azs ls | grep`` sees
whole names. rich is imported here only when a console is made (see :mod:`.text`).
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from rich.console import Console

    from .text import Line

__all__ = ["console", "plain_lines", "terminal_width", "wants_color", "write"]

#: The width of a pipe's "terminal": wide enough that nothing is cut.
_UNLIMITED: Final = 10_000
#: Spaces at the end of a line, before the colour codes that may close it.
_TRAILING: Final = re.compile(r" +((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)
#: What a terminal would act on, in text shown to people: C0 controls but tab and newline, an escape
#: that does not begin a colour (SGR) sequence, DEL and the C1 controls (0x9b is a CSI of its own).
_UNSAFE: Final = re.compile("[\x00-\x08\x0b-\x1a\x1c-\x1f\x7f-\x9f]|\x1b(?!\\[[0-9;]*m)")
#: What a JSON line holds raw that a terminal may act on (msgspec escapes the C0 controls itself).
_JSON_UNSAFE: Final = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0))}


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return chr(0x2400 + code) if code < 0x20 else "\u2421" if code == 0x7F else "\ufffd"


def terminal_safe(text: str) -> str:
    r"""`text` as a terminal may be given it: colours (SGR sequences, ours) kept, and every other control
    character shown as a symbol, whoever wrote it (a session's name, a branch, a model, an agent's
    text, a teammate's row): no screen clear, clipboard write, title change or link gets through.

    >>> terminal_safe("\x1b[1mS3\x1b[0m fix \x1b]52;c;cHduZWQ=\x07 \x1b[2J\r\x9b")
    '\x1b[1mS3\x1b[0m fix ␛]52;c;cHduZWQ=␇ ␛[2J␍\ufffd'
    """
    return _UNSAFE.sub(_visible, text) if _UNSAFE.search(text) else text


def json_safe(line: str) -> str:
    """A JSON line with DEL and the C1 controls escaped (``\u009b``): the same JSON, nothing raw that
    a terminal would act on."""
    return line.translate(_JSON_UNSAFE)


def _isatty(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def wants_color(stream: Any, environ: Mapping[str, str]) -> bool:
    """Colour on `stream`: a terminal, with neither ``NO_COLOR`` (any value) nor ``TERM=dumb``.

    >>> wants_color(io.StringIO(), {})
    False
    """
    return _isatty(stream) and not environ.get("NO_COLOR") and environ.get("TERM") != "dumb"


def terminal_width(stream: Any, environ: Mapping[str, str]) -> int:
    """The width of the terminal `stream` is (``COLUMNS`` first); on a pipe, wide enough for anything."""
    return _width(stream, environ)


def _width(stream: Any, environ: Mapping[str, str]) -> int:
    columns = environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    if _isatty(stream):
        try:
            return os.get_terminal_size(stream.fileno()).columns or 80
        except (OSError, ValueError, AttributeError):
            return 80
    return _UNLIMITED


def console(stream: Any, environ: Mapping[str, str], *, color: bool | None = None) -> Console:
    """A rich console on `stream` (no markup, no highlighting: text is printed as it is given)."""
    from rich.console import Console

    colored = wants_color(stream, environ) if color is None else color
    return Console(
        file=stream,
        width=_width(stream, environ),
        color_system="auto" if colored else None,
        force_terminal=colored,
        no_color=not colored,
        markup=False,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )


def write(term: Console, line: Line) -> None:
    """Print `line` on `term`, without the spaces rich pads table cells with at the ends of lines."""
    with term.capture() as captured:
        term.print(line)
    term.file.write(terminal_safe(_TRAILING.sub(r"\1", captured.get())))


def plain_lines(lines: Iterable[Line], width: int = 200) -> list[str]:
    """What `lines` look like on a terminal `width` columns wide, without colour (for tests).

    >>> plain_lines(["a", "b"])
    ['a', 'b']
    """
    out = io.StringIO()
    term = console(out, {"COLUMNS": str(width)}, color=False)
    for line in lines:
        write(term, line)
    return out.getvalue().splitlines()
