"""A snippet costs the same whatever one event's size (issue 37: one 10 MB agent line took a search to
1.4 GB): it is made from a window of the event around its first hit."""

from __future__ import annotations

import tracemalloc

import pytest

from azsd.search import WINDOW_CHARS, make_snippet

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
