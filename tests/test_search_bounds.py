"""A snippet costs the same whatever one event's size (issue 37: one 10 MB agent line took a search to
1.4 GB): it is made from a window of the event around its first hit."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import msgspec
import pytest

from azsd.events import UserMessage
from azsd.ipc import protocol as p
from azsd.search import WINDOW_CHARS, make_snippet
from azsd.server import handlers
from azsd.store import Store

BIG = ("lorem ipsum dolor sit amet " * 400_000) + " the needle-word here " + ("more text " * 100)


@pytest.mark.parametrize(("query", "literal"), [('"needle"*', None), ("", ["Needle-Word"])])
def test_a_snippet_of_a_ten_megabyte_event_is_found_in_a_window(
    query: str, literal: list[str] | None
) -> None:
    tracemalloc.start()
    try:
        snippet, ranges = make_snippet(BIG, query, literal=literal)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * WINDOW_CHARS * 16  # a window's worth of tokens, not ten megabytes' (hundreds of MB)
    assert snippet.startswith("…") and snippet.endswith("…") and len(snippet) < 1000
    (first, *_) = ranges
    assert snippet[first[0] : first[1]].casefold().startswith("needle")


def test_a_short_event_is_snipped_as_before() -> None:
    snippet, ranges = make_snippet("a needle in a haystack", "needle")
    assert snippet == "a needle in a haystack" and ranges == [(2, 8)]


def test_a_search_out_of_time_answers_with_what_it_found_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(tmp_path) as store:
        sid = store.create_session("s").id
        store.append_events(sid, [UserMessage(content=f"find the wombat {i}") for i in range(20)])
        whole = store.search("wombat", limit=50, budget_s=60)
        assert whole.complete and len(whole) == 20
        cut = store.search("wombat", limit=50, budget_s=0)  # no time at all: nothing looked at
        assert not cut.complete and len(cut) < 20
        monkeypatch.setattr(handlers, "SEARCH_BUDGET_S", 0.0)
        reply = handlers.search(store, p.Search(root=str(tmp_path), query="wombat", limit=50)).reply
        assert isinstance(reply, p.SearchReply) and reply.partial is True
        monkeypatch.setattr(handlers, "SEARCH_BUDGET_S", 60.0)
        reply = handlers.search(store, p.Search(root=str(tmp_path), query="wombat", limit=50)).reply
        assert isinstance(reply, p.SearchReply) and reply.partial is msgspec.UNSET and len(reply.hits) == 20
