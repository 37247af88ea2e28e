"""Where every `azs` command's output goes: with ``--json`` one JSON object a line, else text for people.

A command hands each result to :meth:`Output.result` together with the function that renders it for
people (most of :mod:`azsd_client.render` takes ``(value, style)``, so it can be passed as it is) and,
where the value is not already its documented JSON shape, the function that makes it one
(:mod:`.shapes`; by default the value less the protocol's ``op`` and ``protocol`` fields). Which of
the two is written is decided here, once. Lines meant only for people go through :meth:`Output.note`
and :meth:`Output.hint`, which say nothing with ``--json``.

Human lines that are plain text on a pipe are written as they are; everything else (styles, tables,
anything at all on a terminal) is printed by a rich console that fits it to the terminal's width,
made on first use (:mod:`azsd_client.render.term`).

>>> out = Output(json=True)
>>> out.result({"session": 3}, lambda value, style: [f"S{value['session']}"])
{"session":3}
>>> Output().result({"session": 3}, lambda value, style: [f"S{value['session']}"])
S3
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any, TypeVar

import msgspec

from azsd_client.render.term import json_safe, terminal_safe
from azsd_client.render.text import Ansi, Line, Style

from .shapes import plain

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["Output"]

_T = TypeVar("_T")


class Output:
    """The output of one `azs` run.

    Args:
        json: ``--json``: results as compact JSON objects, one a line, and nothing else on stdout.
        tty: stdout is a terminal (hints are shown there only).
        style: the colours of human output.
        environ: the environment (``COLUMNS``, ``NO_COLOR``) the console is made for.
    """

    def __init__(
        self,
        *,
        json: bool = False,
        tty: bool = False,
        style: Style | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.json = json
        self.tty = tty
        self.style = style if style is not None else Style()
        self.environ: Mapping[str, str] = os.environ if environ is None else environ
        self._console: Console | None = None

    def result(
        self,
        value: _T,
        human: Callable[[_T, Style], Iterable[Line]],
        *,
        shape: Callable[[_T], Any] = plain,
        flush: bool = False,
    ) -> None:
        """`shape(value)` as one JSON line with ``--json``; else each line `human(value, style)` renders."""
        if self.json:
            self.emit(shape(value), flush=flush)
        else:
            self._say(human(value, self.style), flush)

    def results(
        self,
        values: Sequence[_T],
        human: Callable[[Sequence[_T], Style], Iterable[Line]],
        *,
        shape: Callable[[_T], Any] = plain,
    ) -> None:
        """Each of `values` as a JSON line with ``--json``; else the lines `human(values, style)` renders
        (a table, say)."""
        if self.json:
            for value in values:
                self.emit(shape(value))
        else:
            self._say(human(values, self.style), False)

    def text(self, value: Any, text: str) -> None:
        """`value` as a JSON line with ``--json``; else `text` exactly as it is, ended by a newline (a
        prompt, a document: nothing is wrapped, cut or styled)."""
        if self.json:
            self.emit(plain(value))
        else:
            text = terminal_safe(text) if self.tty else text  # a document: exact on a pipe
            sys.stdout.write(text if text.endswith("\n") else text + "\n")

    def note(self, text: str, *, flush: bool = False) -> None:
        """A dim line for people (nothing with ``--json``)."""
        if not self.json:
            self._say([self.style.dim(text)], flush)

    def hint(self, text: str) -> None:
        """A dim line for a person at a terminal: nothing with ``--json`` or on a pipe."""
        if self.tty:
            self.note(text)

    @contextlib.contextmanager
    def redirected(self, stream: IO[str], width: int) -> Iterator[None]:
        """Within: human output goes to `stream` (a pager's stdin), drawn `width` columns wide."""
        saved = self._console, self.environ
        self._console, self.environ = None, {**self.environ, "COLUMNS": str(width)}
        try:
            with contextlib.redirect_stdout(stream):
                yield
                stream.flush()
        finally:
            self._console, self.environ = saved

    def aside(self, text: str) -> None:
        """A line on stderr, whatever the mode and wherever stdout goes: what a person must not miss
        (sessions or hits a filter hid) even when the results go to a pipe or are JSON."""
        sys.stdout.flush()
        sys.stderr.write(f"azs: {terminal_safe(text)}\n")
        sys.stderr.flush()

    def emit(self, value: Any, *, flush: bool = False) -> None:
        """One JSON line, whatever the mode (a shape is the caller's)."""
        sys.stdout.write(json_safe(msgspec.json.encode(value).decode()) + "\n")
        if flush:
            sys.stdout.flush()

    def _say(self, lines: Iterable[Line], flush: bool) -> None:
        for line in lines:
            if isinstance(line, Ansi) or (isinstance(line, str) and not self.tty):
                sys.stdout.write(terminal_safe(line) + "\n")
            else:
                from azsd_client.render.term import write

                write(self.console(), line)
        if flush:
            sys.stdout.flush()

    def console(self) -> Console:
        """The rich console on stdout (made, and rich imported, on first use)."""
        if self._console is None or self._console.file is not sys.stdout:
            from azsd_client.render.term import console

            self._console = console(sys.stdout, self.environ, color=self.style.color)
        return self._console
