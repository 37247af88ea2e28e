"""`azs show` and `azs log`: a session's transcript, at any size, and its turns one a line.

Both read the session page by page and write each event as it comes (one plain string per event,
:func:`~azsd_client.render.events.event_text`), so that 100 000 events stream about as fast as their
JSON and the first screen shows at once. On a terminal the output goes through a pager as git's does
(:mod:`.pager`). `--last N`, `--from SEQ` and `--to SEQ` choose the events.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator, Sequence
from typing import Final

from azsd.errors import UsageError
from azsd.ipc.protocol import SessionView, WireEvent
from azsd_client.render.events import event_lines, full_event_lines
from azsd_client.render.sessions import session_header
from azsd_client.render.text import Ansi, AnsiStyle, Line, Style, plural, wrap_ansi
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


def _events(
    run: Invocation, sid: int, first: int, final: int, unreadable: list[int] | None = None
) -> Iterator[WireEvent]:
    """The session's events from `first` to `final`, a page at a time (the first one small); the next
    page is asked for while this one is shown (by a thread of its own, the only user of the client
    until the iteration ends), so that the daemon reads and the terminal draws at the same time."""
    pages: queue.Queue[Sequence[WireEvent] | BaseException | None] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def fetch() -> None:
        seq, size = first, _FIRST_PAGE
        try:
            while seq <= final and not stop.is_set():
                limit = min(size, final - seq + 1)
                page = run.client.get_events_page(run.root, sid, from_seq=seq, limit=limit)
                if unreadable is not None:
                    unreadable[0] += page.skipped
                pages.put([e for e in page.events if e.seq <= final])
                if page.next_seq is None:
                    break
                seq, size = page.next_seq, _PAGE
        except BaseException as exc:
            pages.put(exc)
            return
        pages.put(None)

    fetcher = threading.Thread(target=fetch, name="azs-pages", daemon=True)
    fetcher.start()
    try:
        while (got := pages.get()) is not None:
            if isinstance(got, BaseException):
                raise got
            yield from got
    finally:
        stop.set()
        with contextlib.suppress(queue.Empty):
            while True:  # let a fetch waiting to put its page end
                pages.get_nowait()
        fetcher.join()


def show(run: Invocation) -> int:
    """The session's header, then each event beside its seq; with ``--json`` one object:
    ``{"session", "events"}`` (the chosen events)."""
    a = run.args
    sid: int = a.session
    view = run.client.get_session(run.root, sid, with_meter=True).session
    if getattr(a, "full", False) and (full := _full_events(run, sid)) is not None:
        return _show_full(run, view, full)
    first, final = seq_range(view.event_count, a.last, a.from_seq, a.to_seq)
    lost = [0]
    events = _events(run, sid, first, final, lost)
    if run.out.json:
        run.out.emit({"session": shapes.plain(view), "events": [shapes.event(e) for e in events]})
        say_unreadable(run, lost[0])
        return 0
    threshold = run.config.compaction_threshold
    earlier = f"… {first - 1:,} earlier events (`--from 1` shows them)"

    def header(v: SessionView, style: Style) -> list[Line]:  # without rich: it loads slower than a screen
        said = session_header(v, plain(style), threshold=threshold)
        said += [plain(style).dim(earlier)] if first > 1 else []
        return [Ansi(wrap_ansi(str(line), style.width, "") if style.width else str(line)) for line in said]

    with paged(run):
        run.out.result(view, header)
        for event in events:
            run.out.result(event, event_lines)
    say_unreadable(run, lost[0])
    return 0


def _full_events(run: Invocation, sid: int) -> tuple[list[WireEvent], int] | None:
    """The session's full record as events, and how many of its chunks could not be read; None
    (said on stderr) when none is kept."""
    events: list[WireEvent] = []
    unreadable, seq = 0, 1
    while True:
        page = run.client.get_events_page(run.root, sid, from_seq=seq, limit=_PAGE, full=True)
        if page.full is not True:
            run.out.aside(
                f"S{sid} has no full record (imported before azsd kept one and its history is gone, "
                "pruned, or `full-record` is off): its compact events follow"
            )
            return None
        events += page.events
        unreadable += page.skipped
        if page.next_seq is None:
            return events, unreadable
        seq = page.next_seq


def _show_full(run: Invocation, view: SessionView, full: tuple[list[WireEvent], int]) -> int:
    """`show --full`: the header, then the full record's events, numbered by their place in it."""
    a = run.args
    events, unreadable = full
    first, final = seq_range(len(events), a.last, a.from_seq, a.to_seq)
    chosen = events[first - 1 : final]
    if run.out.json:
        run.out.emit(
            {"session": shapes.plain(view), "full": True, "events": [shapes.event(e) for e in chosen]}
        )
    else:
        threshold = run.config.compaction_threshold

        def header(v: SessionView, style: Style) -> list[Line]:
            said = session_header(v, plain(style), threshold=threshold)
            said.append(
                plain(style).dim(f"the full record: {plural(len(events), 'event')}, as the agent wrote them")
            )
            return [Ansi(str(line)) for line in said]

        with paged(run):
            run.out.result(view, header)
            for event in chosen:
                run.out.result(event, full_event_lines)
    if unreadable:
        run.out.aside(
            f"{plural(unreadable, 'chunk')} of the full record could not be read and "
            f"{'is' if unreadable == 1 else 'are'} left out"
        )
    return 0


def say_unreadable(run: Invocation, count: int) -> None:
    """On stderr, whatever the output: events left out because their rows could not be read."""
    if count:
        verb = "is" if count == 1 else "are"
        run.out.aside(
            f"{plural(count, 'event')} could not be read and {verb} left out (a corrupt row, or one over "
            "the size an event may hold, written by another program or a teammate)"
        )


def plain(style: Style) -> AnsiStyle:
    """`style` painting with ANSI codes in plain strings."""
    return AnsiStyle(color=style.color, relative=style.relative, width=style.width)


def log(run: Invocation) -> int:
    """`azs log S3`: one line per turn (seqs, the prompt's first line, outcome, duration, cost);
    ``--json``: one object per turn."""
    a = run.args
    sid: int = a.session
    view = run.client.get_session(run.root, sid).session
    found: list[Turn] = list(turns(_events(run, sid, 1, view.event_count)))
    if view.usage is not None and view.usage.cost_source == "estimated":  # (Codex reports no cost)
        for turn in found:
            turn.cost_source = "estimated"
    if found and found[-1].outcome == "none" and view.state == "running":
        found[-1].outcome = "running"
    if a.last is not None:
        found = found[-a.last :]
    with paged(run):
        run.out.results(found, turn_table, shape=shapes.plain)
    if not found:
        run.out.hint(f"S{sid} has no turns yet")
    return 0
