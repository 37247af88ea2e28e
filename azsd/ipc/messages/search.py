"""Full-text search of a store: the query, its hits, and the search index (rebuilding it, and how
far it is behind the events)."""

from __future__ import annotations

import msgspec

from azsd.ipc.messages.base import _Data, _KeyedReq, _StoreReq, _Versioned

__all__ = ["IndexStatus", "IndexStatusReply", "Reindex", "ReindexReply", "Search", "SearchHit", "SearchReply"]


class SearchHit(_Data, frozen=True):
    """An event that matched: its session and seq, its rank (lower is better), the event's JSON, and a
    snippet of its text where it matched, with the `[start, end)` character range of each hit.
    `also_in`: the other sessions holding the same event at the same seq (copies made by forks), which
    are not hits of their own."""

    session: int
    data: str
    seq: int = 0
    kind: str = ""
    rank: float = 0.0
    snippet: str = ""
    highlights: list[tuple[int, int]] = []  # noqa: RUF012 (msgspec copies it: not shared)
    session_name: str = ""
    also_in: list[int] = []  # noqa: RUF012 (msgspec copies it: not shared)
    #: True for a hit of the full record (what the agent wrote, beside the compact events): `seq` is
    #: the first event its part of the record made, `data` the compact event, `snippet` the agent's
    #: own text (encoded only when set).
    full: bool | msgspec.UnsetType = msgspec.UNSET


class Search(_StoreReq, frozen=True):
    """Full-text search, best match first. `query` is FTS5 syntax (``a AND b``, ``"a phrase"``,
    ``pre*``), or with `words` plain text: every whitespace-separated word must appear as written
    (punctuation too, any case, from the start of a word: ``claude-clean``, ``main.go``, ``unwrap()``).
    `words` is False here for older clients; `azs search`, the bridge and the Neovim plugin default to
    plain text. Each filter left None matches
    everything; `worktree` is the older single-worktree form of `worktrees`. `kinds` takes variant
    names or the aliases user, assistant, tool, call, result, plan."""

    query: str
    worktree: str | None = None
    limit: int = 50
    worktrees: list[str] | None = None
    sessions: list[int] | None = None
    kinds: list[str] | None = None
    words: bool = False


class Reindex(_KeyedReq, frozen=True):
    """Rebuild a store's search index from its events."""


class IndexStatus(_StoreReq, frozen=True):
    """How far a store's search index is behind its events: rows another program (AZUREAL) wrote
    wait to be indexed, in the background or by the next search. `azs search` asks this first, and
    while many rows wait, shows their progress instead of waiting in silence. With `stale`, the
    reply counts the index's entries of rows that are gone too (`azs doctor` asks: it reads the
    whole index)."""

    stale: bool = False


class SearchReply(_Versioned, frozen=True):
    hits: list[SearchHit]
    #: True when the search's time ran out before every candidate was looked at: the hits are the
    #: best of those it saw, and there may be more (unset: it saw them all; encoded only when set).
    partial: bool | msgspec.UnsetType = msgspec.UNSET


class ReindexReply(_Versioned, frozen=True):
    indexed: int


class IndexStatusReply(_Versioned, frozen=True):
    """`pending`: the event rows not yet in the search index (a search indexes them first).
    `stale` (when asked for): entries of rows another program deleted, which the index still counts
    in its ranking until the background removes them (0 when not asked for)."""

    pending: int
    stale: int = 0
