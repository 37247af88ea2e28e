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
    term.file.write(_TRAILING.sub(r"\1", captured.get()))


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
