"""Plain-text search of the full record: what the compact events cut (whole tool outputs, written
files, edits) and thinking, found where the agent wrote it.

Each chunk is read in turn, newest first, and skipped unless its bytes hold every word (in ASCII
case; a word with other letters is looked for after decoding). A chunk that may match is parsed
with a fresh parser of its agent's format, and each event it makes is a hit when its text holds
every word as written (:func:`~azsd.search.literal_match`) and the compact event made of it does
not (the index finds that one already, so no hit is given twice). A hit carries the compact event's
JSON (the full one may be megabytes; `azs show --full` gives it), the seq of the first event its
chunk made, and a score of the same shape as the index's (BM25 over the hit's own text: lower is
better), so both kinds of hit sort into one ranking.
"""

from __future__ import annotations

import io
import math
import time
from collections.abc import Iterator, Sequence
from typing import Final

from azsd.compact import compact_event
from azsd.events import REASONING_HOOKS, Event, Hook, encode_event, event_kind
from azsd.ingest.full_opencode import opencode_events
from azsd.ingest.full_record import parser_for
from azsd.ingest.parsers import iter_lines
from azsd.model import SearchResult
from azsd.search import literal_match, make_snippet, search_text
from azsd.store import Store

__all__ = ["full_hits"]

#: BM25's constants, as FTS5 uses them, and the text length it scores against.
_K1: Final = 1.2
_B: Final = 0.75
_AVERAGE_CHARS: Final = 2000


def full_hits(
    store: Store,
    words: Sequence[str],
    *,
    sessions: Sequence[int] | None,
    worktrees: Sequence[str] | None,
    kinds: Sequence[str] | None,
    limit: int,
    deadline: float,
) -> tuple[list[SearchResult], bool]:
    """Up to `limit` hits of the full record for `words` (every one must appear), and whether every
    chunk was looked at before `deadline` (`time.monotonic()`)."""
    needles = [w.casefold().encode() for w in words if w.isascii()]
    found: list[SearchResult] = []
    for chunk_id, session_id, agent in store.full_chunk_refs(sessions, worktrees):
        if time.monotonic() > deadline:
            return found, False
        chunk = store.full_chunk(chunk_id)
        if chunk is None or chunk.data is None:
            continue
        if needles and not all(n in chunk.data.lower() for n in needles):
            continue
        for event in _events(chunk.data, agent):
            hit = _hit(event, words, kinds)
            if hit is not None:
                text, kind = hit
                snippet, spans = make_snippet(text, "", literal=list(words))
                found.append(
                    SearchResult(
                        session_id=session_id,
                        seq=max(chunk.first_seq, 1),
                        kind=kind,
                        rank=_score(text, words),
                        snippet=snippet,
                        highlights=spans,
                        json=encode_event(compact_event(event)).decode(),
                        full=True,
                    )
                )
                if len(found) >= limit:
                    return found, True
    return found, True


def _events(raw: bytes, agent: str) -> Iterator[Event]:
    if agent == "opencode":
        yield from (event for event, _ in opencode_events(raw))
        return
    parser = parser_for(raw, agent)
    for line in iter_lines(io.BytesIO(raw), stop=len(raw)):
        yield from parser.feed(line)
    yield from parser.finish()


def _hit(event: Event, words: Sequence[str], kinds: Sequence[str] | None) -> tuple[str, str] | None:
    """The event's text and kind when it matches and its compact event does not."""
    kind = event_kind(event)
    if isinstance(event, Hook):
        if event.name not in REASONING_HOOKS:
            return None
        text: str | None = event.output
    else:
        text = search_text(event)
    if text is None or (kinds is not None and kind not in kinds) or not literal_match(text, words):
        return None
    compact = search_text(compact_event(event)) if not isinstance(event, Hook) else None
    if compact is not None and literal_match(compact, words):
        return None  # the index finds the compact event itself
    return text, kind


def _score(text: str, words: Sequence[str]) -> float:
    """BM25 of `text` for `words` (each word's inverse document frequency taken as 1), negated as
    FTS5's is: lower is better."""
    folded = text.casefold()
    scale = 1 - _B + _B * len(text) / _AVERAGE_CHARS
    total = 0.0
    for word in words:
        tf = folded.count(word.casefold())
        total += tf * (_K1 + 1) / (tf + _K1 * scale)
    return -total * math.log(2)
