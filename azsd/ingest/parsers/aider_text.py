"""The text of Aider's own lines: run headers, token reports, and its input history's prompts
(:mod:`azsd.ingest.parsers.aider` reads the chat history with them)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Final

from azsd.model import Usage

__all__ = ["HEADER", "parse_input_history", "parse_tokens", "segment_time"]

#: The line that opens each Aider run.
HEADER: Final = "# aider chat started at "

_TOKENS: Final = re.compile(
    r"^Tokens: (.*? received)\.(?:\s*Cost: \$([\d.,]+) (?:message|request), \$([\d.,]+) session\.)?"
)
_COUNT: Final = re.compile(r"^([\d.,]+)([kKmM]?) (sent|received|cache write|cache hit|cached)$")


def parse_input_history(data: bytes) -> list[tuple[float, str]]:
    """The prompts of an `.aider.input.history` (prompt_toolkit's: ``# <local time>`` then the
    prompt's lines, each after ``+``), as (Unix time, text), oldest first; unreadable entries skipped.

    >>> parse_input_history(b"\\n# 2024-08-05 19:33:40.5\\n+fix\\n+it\\n")[0][1]
    'fix\\nit'
    """
    out: list[tuple[float, str]] = []
    at: float | None = None
    lines: list[str] = []

    def done() -> None:
        if at is not None and lines:
            out.append((at, "\n".join(lines)))

    for raw in data.decode("utf-8", errors="replace").splitlines():
        if raw.startswith("# "):
            done()
            lines = []
            try:
                at = datetime.strptime(raw[2:].strip(), "%Y-%m-%d %H:%M:%S.%f").astimezone().timestamp()
            except ValueError:
                at = None
        elif raw.startswith("+"):
            lines.append(raw[1:])
    done()
    out.sort(key=lambda entry: entry[0])
    return out


def segment_time(header: str) -> datetime | None:
    """The local time a run started at, from its header line (None when unreadable).

    >>> segment_time("# aider chat started at 2024-08-05 19:33:02").replace(tzinfo=None)
    datetime.datetime(2024, 8, 5, 19, 33, 2)
    """
    try:
        return datetime.strptime(header[len(HEADER) :].strip(), "%Y-%m-%d %H:%M:%S").astimezone()
    except ValueError:
        return None


def parse_tokens(text: str) -> tuple[Usage, float | None] | None:
    """The usage (and the message's reported cost) of a ``Tokens:`` report, or None.

    Whether `sent` holds the cached tokens differs by version and provider: when it is at least
    the cached ones it is taken to hold them (fresh input is what is left), else to be fresh input.
    ``cached`` (Aider 0.50) is read from the cache.

    >>> report = "13k sent, 1.2k cache write, 2.3k cache hit, 312 received"
    >>> parse_tokens(f"Tokens: {report}. Cost: $0.02 message, $0.15 session.")
    (Usage(input=9500, output=312, cache_read=2300, cache_write=1200, reasoning=0), 0.02)
    >>> parse_tokens("Tokens: 5,244 sent, 604 received.")
    (Usage(input=5244, output=604, cache_read=0, cache_write=0, reasoning=0), None)
    >>> parse_tokens("Tokens: 194 sent, 9,474 cache hit, 7 received.")[0].input
    194
    """
    match = _TOKENS.match(text)
    if match is None:
        return None
    counts: dict[str, int] = {}
    for item in match.group(1).split(", "):
        part = _COUNT.match(item.strip())
        if part is None:
            return None
        number = float(part.group(1).replace(",", ""))
        scale = {"k": 1_000, "m": 1_000_000}.get(part.group(2).lower(), 1)
        counts[part.group(3)] = round(number * scale)
    hit, write = counts.get("cache hit", 0) + counts.get("cached", 0), counts.get("cache write", 0)
    sent = counts.get("sent", 0)
    usage = Usage(
        input=sent - hit - write if sent >= hit + write and not counts.get("cached") else sent,
        output=counts.get("received", 0),
        cache_read=hit,
        cache_write=write,
    )
    cost = float(match.group(2).replace(",", "")) if match.group(2) else None
    return usage, cost
