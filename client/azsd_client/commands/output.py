"""Where every `azs` command's output goes: with ``--json`` one JSON object a line, else text for people.

A command hands each result to :meth:`Output.result` together with the function that renders it for
people (most of :mod:`azsd_client.render` takes ``(value, style)``, so it can be passed as it is); which
of the two is written is decided here, once. Lines meant only for people go through :meth:`Output.note`
and :meth:`Output.hint`, which say nothing with ``--json``.

>>> out = Output(json=True)
>>> out.result({"session": 3}, lambda value, style: [f"S{value['session']}"])
{"session":3}
>>> Output().result({"session": 3}, lambda value, style: [f"S{value['session']}"])
S3
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import msgspec

from azsd_client.render.text import Style

__all__ = ["Output"]

_T = TypeVar("_T")


class Output:
    """The output of one `azs` run.

    Args:
        json: ``--json``: results as compact JSON objects, one a line, and nothing else on stdout.
        tty: stdout is a terminal (hints are shown there only).
        style: the colours of human output.
    """

    def __init__(self, *, json: bool = False, tty: bool = False, style: Style | None = None) -> None:
        self.json = json
        self.tty = tty
        self.style = style if style is not None else Style()

    def result(
        self,
        value: _T,
        human: Callable[[_T, Style], Iterable[str]],
        *,
        flush: bool = False,
        end: str = "\n",
    ) -> None:
        """`value` as one JSON line with ``--json``; else each line `human(value, style)` renders, ended by
        `end` (``""`` writes a document exactly as it is)."""
        if self.json:
            self._emit(value, flush)
        else:
            self._say(human(value, self.style), flush, end)

    def results(self, values: Sequence[_T], human: Callable[[Sequence[_T], Style], Iterable[str]]) -> None:
        """Each of `values` as a JSON line with ``--json``; else the lines `human(values, style)` renders
        (a table, say)."""
        if self.json:
            for value in values:
                self._emit(value, False)
        else:
            self._say(human(values, self.style), False, "\n")

    def note(self, text: str, *, flush: bool = False) -> None:
        """A dim line for people (nothing with ``--json``)."""
        if not self.json:
            self._say([self.style.dim(text)], flush, "\n")

    def hint(self, text: str) -> None:
        """A dim line for a person at a terminal: nothing with ``--json`` or on a pipe."""
        if self.tty:
            self.note(text)

    def _say(self, lines: Iterable[str], flush: bool, end: str) -> None:
        for line in lines:
            sys.stdout.write(line + end)
        if flush:
            sys.stdout.flush()

    def _emit(self, value: Any, flush: bool) -> None:
        sys.stdout.write(msgspec.json.encode(value).decode() + "\n")
        if flush:
            sys.stdout.flush()
