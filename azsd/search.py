"""What the full-text search index holds and how its answers read: pure functions, no SQL.

The store indexes one text per event (:func:`search_text`): the clean prompt of a `UserMessage`
(injected context removed), an `AssistantText`'s text, a `ToolCall`'s tool, file and the string
values of its input, a `ToolResult`'s tool, file and output, a `Plan`. Other events hold no prose and
are not indexed. Queries use SQLite FTS5 syntax (``panic AND unwrap``, ``"exact phrase"``,
``pars*``, ``NEAR(a b)``), or are plain text: every whitespace-separated word must appear in the
event's text as it is written, punctuation and all, in any case (``claude-clean``, ``main.go``,
``unwrap()``), and from the start of a word of the text (``pars`` finds parser). For plain text,
:func:`words_query` makes the FTS5 query that finds the candidates (each word's tokens as a phrase,
the last one a prefix) and :func:`literal_match` keeps those that hold every word literally.

>>> search_text(AssistantText(text="fixed the panic"))
'fixed the panic'
>>> words_query('unwrap() on main.go')
'"unwrap"* "on"* "main go"*'
>>> literal_match("see main.go", ["MAIN.GO"]), literal_match("see main_go", ["main.go"])
(True, False)
>>> make_snippet("it was a Panic in parse", "panic OR pars*")
('it was a Panic in parse', [(9, 14), (18, 23)])
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

from azsd.context import sanitize
from azsd.errors import BadRequestError
from azsd.events import AssistantText, Event, Plan, ToolCall, ToolResult, UserMessage

__all__ = [
    "KIND_ALIASES",
    "SEARCHABLE_KINDS",
    "event_kinds",
    "literal_match",
    "make_snippet",
    "query_terms",
    "search_text",
    "words_query",
]

#: The event kinds the index holds.
SEARCHABLE_KINDS: Final = ("UserMessage", "AssistantText", "ToolCall", "ToolResult", "Plan")

#: Short names for `--kind` (the variant names work too).
KIND_ALIASES: Final = {
    "user": ("UserMessage",),
    "prompt": ("UserMessage",),
    "assistant": ("AssistantText",),
    "answer": ("AssistantText",),
    "tool": ("ToolCall", "ToolResult"),
    "call": ("ToolCall",),
    "result": ("ToolResult",),
    "plan": ("Plan",),
}

#: A token as FTS5's unicode61 tokenizer sees one: a run of letters and digits.
_TOKEN: Final = re.compile(r"[^\W_]+")
#: The parts of an FTS5 query: a quoted string, a column filter, a NEAR distance, or a bareword (with a
#: prefix `*`).
_QUERY_PART: Final = re.compile(r'"((?:[^"]|"")*)"|\b\w+\s*:|,\s*\d+\s*\)|([^\W_]+)(\*?)')
_OPERATORS: Final = frozenset({"AND", "OR", "NOT", "NEAR"})
#: Tokens of context a snippet shows around its hits.
SNIPPET_TOKENS: Final = 24


def search_text(event: Event) -> str | None:
    """The text the index holds for `event`, or None when it holds nothing for it."""
    match event:
        case UserMessage(content=content):
            text = sanitize(content)
        case AssistantText(text=text):
            pass
        case ToolCall(tool_name=name, file_path=path, input=tool_input):
            text = " ".join(filter(None, (name, path, *_strings(tool_input))))
        case ToolResult(tool_name=name, file_path=path, content=content):
            text = " ".join(filter(None, (name, path, content)))
        case Plan(name=name, content=content):
            text = f"{name}\n{content}"
        case _:
            return None
    if text is None or not text.strip():
        return None
    return text


def _strings(value: Any) -> Iterator[str]:
    """The string leaves of a tool input (its values, not its keys), in order, at any depth."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            pending.extend(reversed(item.values()))
        elif isinstance(item, list):
            pending.extend(reversed(item))


def event_kinds(names: Iterable[str]) -> list[str]:
    """The variant names meant by `--kind` values (aliases or variant names); ValueError otherwise.

    >>> event_kinds(["user", "ToolResult"])
    ['UserMessage', 'ToolResult']
    """
    kinds: list[str] = []
    for name in names:
        found = KIND_ALIASES.get(name.lower()) or next(
            ((k,) for k in SEARCHABLE_KINDS if k.lower() == name.lower()), None
        )
        if found is None:
            known = ", ".join([*KIND_ALIASES, *SEARCHABLE_KINDS])
            raise BadRequestError(f"unknown event kind {name!r} (known: {known})")
        kinds.extend(k for k in found if k not in kinds)
    return kinds


def words_query(text: str) -> str:
    """The FTS5 query that finds the candidates for plain text `text`: for each whitespace-separated
    word, its tokens as a phrase whose last token is a prefix (``claude-clean`` is ``"claude clean"*``);
    a word without letters or digits (``->``) adds nothing. "" when no word has any."""
    phrases = (" ".join(_TOKEN.findall(word)) for word in text.split())
    return " ".join(f'"{phrase}"*' for phrase in phrases if phrase)


def literal_match(text: str, words: Iterable[str]) -> bool:
    """Whether `text` holds every one of `words` as it is written, in any case (``rg -F -i`` per word)."""
    folded = text.casefold()
    return all(word.casefold() in folded for word in words)


def _literal_spans(text: str, words: Iterable[str]) -> list[tuple[int, int]]:
    """Where each of `words` occurs in `text` (in any case), in order."""
    spans = [
        (m.start(), m.end())
        for word in dict.fromkeys(words)
        for m in re.finditer(re.escape(word), text, re.IGNORECASE)
    ]
    return sorted(spans)


def _fold(token: str) -> str:
    """A token as the index compares it: case-folded, diacritics removed."""
    decomposed = unicodedata.normalize("NFKD", token.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def query_terms(query: str) -> list[tuple[str, bool]]:
    """The terms of an FTS5 query as `(folded token, is_prefix)`; operators and column names left out.

    >>> query_terms('"Crash report" AND pars* NOT text:x')
    [('crash', False), ('report', False), ('pars', True), ('x', False)]
    """
    terms: list[tuple[str, bool]] = []
    for match in _QUERY_PART.finditer(query):
        quoted, word, star = match.groups()
        if quoted is not None:
            terms += [(_fold(t), False) for t in _TOKEN.findall(quoted.replace('""', '"'))]
        elif word is not None and word not in _OPERATORS:
            terms.append((_fold(word), bool(star)))
    return terms


def make_snippet(
    text: str, query: str, width: int = SNIPPET_TOKENS, *, literal: Sequence[str] | None = None
) -> tuple[str, list[tuple[int, int]]]:
    """The part of `text` around the query's hits (about `width` tokens, on one line), and the
    `(start, end)` character range of each hit in it: the FTS5 `query`'s terms, or with `literal` the
    places where those words occur as written. A long text (an agent's 10 MB line) is cut first to
    :data:`WINDOW_CHARS` around its first hit, so a snippet costs the same whatever the event's size."""
    if len(text) > WINDOW_CHARS:
        return _windowed(text, query, width, literal)
    tokens = list(_TOKEN.finditer(text))
    if literal is not None:
        spans = _literal_spans(text, literal)
    else:
        terms = query_terms(query)
        exact = {t for t, prefix in terms if not prefix}
        prefixes = tuple(t for t, prefix in terms if prefix)
        spans = [
            (token.start(), token.end())
            for token in tokens
            if (folded := _fold(token.group())) in exact or (prefixes and folded.startswith(prefixes))
        ]
    starts = [token.start() for token in tokens]
    hits = [max(0, bisect.bisect_right(starts, start) - 1) for start, _ in spans]  # each span's token
    first = 0
    if hits:  # the window holding the most hits, starting a little before its first
        best, most, end = 0, 0, 0
        for k, start in enumerate(hits):  # two pointers: hits[k:end] are within `width` of hits[k]
            end = max(end, k)
            while end < len(hits) and hits[end] < start + width:
                end += 1
            if end - k > most:
                best, most = k, end - k
        first = max(0, hits[best] - width // 4)
    last = min(len(tokens), first + width)
    start = tokens[first].start() if first else 0
    end = tokens[last].start() if last < len(tokens) else len(text)
    body = text[start:end].translate(_ONE_LINE).rstrip()
    prefix = "…" if start else ""
    ranges = [
        (len(prefix) + a - start, len(prefix) + min(b, start + len(body)) - start)
        for a, b in spans
        if start <= a < start + len(body)
    ]
    return prefix + body + ("…" if end < len(text) else ""), ranges


#: The most characters of an event a snippet is made from (about a thousand times its width).
WINDOW_CHARS: Final = 64 * 1024


def _windowed(
    text: str, query: str, width: int, literal: Sequence[str] | None
) -> tuple[str, list[tuple[int, int]]]:
    """:func:`make_snippet` of the :data:`WINDOW_CHARS` of a long `text` around its first hit (found
    by one scan: a literal word, else any of the query's terms as a word or a word's start)."""
    if literal is not None:
        words = [w for w in literal if w]
        pattern = "|".join(re.escape(w) for w in words) if words else None
    else:
        terms = query_terms(query)
        parts = [re.escape(t) + (r"\w*" if prefix else r"\b") for t, prefix in terms if t]
        pattern = r"\b(?:" + "|".join(parts) + ")" if parts else None
    found = re.search(pattern, text, re.IGNORECASE) if pattern else None
    anchor = found.start() if found else 0
    start = max(0, min(anchor - WINDOW_CHARS // 4, len(text) - WINDOW_CHARS))
    part = text[start : start + WINDOW_CHARS]
    snippet, ranges = make_snippet(part, query, width, literal=literal)
    if start and not snippet.startswith("…"):
        snippet, ranges = "…" + snippet, [(a + 1, b + 1) for a, b in ranges]
    if start + WINDOW_CHARS < len(text) and not snippet.endswith("…"):
        snippet += "…"
    return snippet, ranges


_ONE_LINE: Final = str.maketrans({c: " " for c in "\n\r\t\v\f\x85\u2028\u2029"})
