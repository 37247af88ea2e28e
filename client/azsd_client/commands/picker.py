"""`azs search -i`: search as you type, on a terminal, and open the hit you pick in `azs show` at its
seq (as atuin and fzf pick from a history).

Each key searches again (plain text: every word from the start of a word, so a word half typed
already finds); Up/Down (Ctrl-P/Ctrl-N) move, Enter opens, Esc or Ctrl-C leaves (exit 130). The list
is drawn on the terminal's alternate screen, and the terminal is put back as it was whatever happens.
Text an agent wrote is made harmless before it is drawn.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import termios
import tty
from collections.abc import Callable, Iterator, Sequence
from typing import Final

from azsd.errors import RemoteError, UsageError
from azsd.ipc.protocol import SearchHit
from azsd_client.render.events import harmless
from azsd_client.render.reports import KIND_NAMES, highlighted

from .invocation import Invocation

__all__ = ["pick"]

#: Events shown before the one picked, so that it is seen in its place.
_BEFORE: Final = 2


@contextlib.contextmanager
def _raw(fd: int) -> Iterator[None]:
    """The terminal in raw mode on the alternate screen, put back as it was on the way out."""
    saved = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        _write("\x1b[?1049h\x1b[H")
        yield
    finally:
        _write("\x1b[?1049l")
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _keys(fd: int) -> Iterator[str]:
    """The keys typed: a character, or ``up``, ``down``, ``enter``, ``back``, ``quit``."""
    pending = b""
    while True:
        pending += os.read(fd, 64)
        while pending:
            if pending.startswith((b"\x1b[A", b"\x1bOA")):
                key, pending = "up", pending[3:]
            elif pending.startswith((b"\x1b[B", b"\x1bOB")):
                key, pending = "down", pending[3:]
            elif pending.startswith(b"\x1b[") and len(pending) >= 3:
                key, pending = "", pending[3:]  # another key: nothing to do
            elif pending == b"\x1b" or pending[:1] in (b"\x03", b"\x07"):
                key, pending = "quit", b""
            elif pending[:1] in (b"\r", b"\n"):
                key, pending = "enter", pending[1:]
            elif pending[:1] in (b"\x7f", b"\x08"):
                key, pending = "back", pending[1:]
            elif pending[:1] == b"\x10":
                key, pending = "up", pending[1:]
            elif pending[:1] == b"\x0e":
                key, pending = "down", pending[1:]
            elif pending[:1] == b"\x15":
                key, pending = "clear", pending[1:]
            else:
                try:
                    text = pending.decode()
                except UnicodeDecodeError:
                    break  # the rest of a character is still to come
                key, pending = "".join(c for c in text if c.isprintable()), b""
            yield key


def _line(hit: SearchHit, width: int, chosen: bool) -> str:
    """One hit on one line of `width` columns, the chosen one in reverse video."""
    snippet = harmless(str(highlighted(hit.snippet, hit.highlights, str)))
    text = f"S{hit.session:<4} {hit.seq:>6}  {KIND_NAMES.get(hit.kind, hit.kind):<9}  {snippet}"
    text = text[: max(1, width - 1)]
    return f"\x1b[7m{text}\x1b[0m" if chosen else text


def _draw(query: str, hits: Sequence[SearchHit], chosen: int, said: str) -> None:
    """The screen: what the search says on top, a hit a line below it, the query at the bottom."""
    columns, rows = shutil.get_terminal_size()
    lines = [_line(hit, columns, i == chosen) for i, hit in enumerate(hits[: max(0, rows - 2)])]
    status = said or f"{len(hits)} hits · ↑↓ choose · Enter open · Esc leave"
    body = "".join(f"\r\n{line}" for line in lines)
    prompt = f"> {harmless(query)}"[-(columns - 1) :]
    _write(f"\x1b[H\x1b[J\x1b[2m{status[: columns - 1]}\x1b[0m{body}\x1b[{rows};1H{prompt}")


def pick(run: Invocation, search: Callable[[str], Sequence[SearchHit]]) -> int:
    """Search as the query is typed; open the chosen hit in `azs show`. 130 when left without one."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()) or run.out.json:
        raise UsageError("search -i picks on a terminal: stdin and stdout must be one (and no --json)")
    fd = sys.stdin.fileno()
    query: str = run.args.query or ""
    hits: list[SearchHit] = []
    chosen, said = 0, ""
    picked: SearchHit | None = None
    with _raw(fd):

        def refresh() -> None:
            nonlocal hits, chosen, said
            chosen, said = 0, ""
            if not query.strip():
                hits, said = [], "type to search (every word, as written)"
                return
            try:
                hits = list(search(query))
            except RemoteError as exc:
                hits, said = [], exc.message
            if not hits and not said:
                said = "no matches"

        refresh()
        _draw(query, hits, chosen, said)
        for key in _keys(fd):
            if key == "quit":
                break
            if key == "enter":
                picked = hits[chosen] if hits else None
                if picked is not None:
                    break
            elif key in ("up", "down"):
                chosen = max(0, min(len(hits) - 1, chosen + (1 if key == "down" else -1)))
            else:
                query = "" if key == "clear" else query[:-1] if key == "back" else query + key
                refresh()
            _draw(query, hits, chosen, said)
    if picked is None:
        return 130
    from .transcript import show

    args = run.args
    args.session, args.from_seq = picked.session, max(1, picked.seq - _BEFORE)
    args.to_seq = args.last = None
    return show(run)
