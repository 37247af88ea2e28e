"""`azs show` and `azs log`: a session's transcript, at any size, and its turns one a line.

Both read the session page by page and write each event as it comes (one plain string per event,
:func:`~azsd_client.render.events.event_text`), so that 100 000 events stream about as fast as their
JSON and the first screen shows at once. On a terminal the output goes through a pager as git's does
(:mod:`.pager`). `--last N`, `--from SEQ` and `--to SEQ` choose the events.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Final

from azsd.errors import UsageError
from azsd.ipc.protocol import WireEvent
from azsd_client.render.events import event_lines
from azsd_client.render.sessions import session_header
from azsd_client.render.turns import Turn, turn_table, turns

from . import shapes
from .invocation import Invocation
from .pager import paged

__all__ = ["log", "seq_range", "show"]

#: Events of the first page: few, so that the first screen comes at once; then bigger pages.
_FIRST_PAGE: Final = 100
_PAGE: Final = 2000


def seq_range(last_seq: int, last: int | None, start: int | None, end: int | None) -> tuple[int, int]:
    """The seqs `[first, final]` that `--last N`, `--from SEQ` and `--to SEQ` choose of a session whose
    newest event is `last_seq` (`--last` counts back from `--to`, or the end).

    >>> seq_range(100, 10, None, None), seq_range(100, None, 5, 7), seq_range(100, 3, None, 50)
    ((91, 100), (5, 7), (48, 50))
    """
    final = last_seq if end is None else min(end, last_seq)
    first = 1 if start is None else start
    if last is not None:
        first = max(first, final - last + 1)
    if start is not None and end is not None and start > end:
        raise UsageError(f"--from {start} is after --to {end}: nothing to show")
    return max(first, 1), final


def _events(run: Invocation, sid: int, first: int, final: int) -> Iterator[WireEvent]:
    """The session's events from `first` to `final`, a page at a time (the first one small)."""
    seq, size = first, _FIRST_PAGE
    while seq <= final:
        page = run.client.get_events_page(run.root, sid, from_seq=seq, limit=min(size, final - seq + 1))
        yield from itertools.takewhile(lambda e: e.seq <= final, page.events)
        if page.next_seq is None:
            return
        seq, size = page.next_seq, _PAGE


def show(run: Invocation) -> int:
    """The session's header, then each event beside its seq; with ``--json`` one object:
    ``{"session", "events"}`` (the chosen events)."""
    a = run.args
    sid: int = a.session
    view = run.client.get_session(run.root, sid, with_meter=True).session
    first, final = seq_range(view.event_count, a.last, a.from_seq, a.to_seq)
    events = _events(run, sid, first, final)
    if run.out.json:
        run.out.emit({"session": shapes.plain(view), "events": [shapes.event(e) for e in events]})
        return 0
    threshold = run.config.compaction_threshold
    with paged(run):
        run.out.result(view, lambda v, style: session_header(v, style, threshold=threshold))
        if first > 1:
            run.out.note(f"… {first - 1:,} earlier events (`--from 1` shows them)")
        for event in events:
            run.out.result(event, event_lines)
    return 0


def log(run: Invocation) -> int:
    """`azs log S3`: one line per turn (seqs, the prompt's first line, outcome, duration, cost);
    ``--json``: one object per turn."""
    a = run.args
    sid: int = a.session
    view = run.client.get_session(run.root, sid).session
    found: list[Turn] = list(turns(_events(run, sid, 1, view.event_count)))
    if found and found[-1].outcome == "none" and view.state == "running":
        found[-1].outcome = "running"
    if a.last is not None:
        found = found[-a.last :]
    with paged(run):
        run.out.results(found, turn_table, shape=shapes.plain)
    if not found:
        run.out.hint(f"S{sid} has no turns yet")
    return 0
