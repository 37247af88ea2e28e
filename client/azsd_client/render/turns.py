"""`azs log`: a session's turns, one a line. A turn is a prompt and what followed it up to the next
prompt; its outcome is its last `Complete` (and, for a turn `azs run` saw fail, the ``Error:`` line it
stored: the exit status, the signal, or that the agent printed no result).

Pure functions from stored events to turns and lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Final

import msgspec

from azsd.events import AssistantText, Complete, EventDecodeError, UserMessage, decode_event
from azsd.ipc.protocol import WireEvent

from .text import Cell, Line, Style, format_cost, format_duration, one_line, table

__all__ = ["ERROR_PREFIX", "Turn", "turn_table", "turns"]

#: How a failure is stored as an `AssistantText`, as AZUREAL stores a failed Codex turn (spec §4.3).
ERROR_PREFIX: Final = "Error: "


class Turn(msgspec.Struct, kw_only=True):
    """One turn: its seqs, its prompt's first line, and how it ended."""

    first_seq: int
    last_seq: int
    prompt: str
    #: succeeded, failed, running (the session's last turn, followed now), or none (no `Complete`).
    outcome: str = "none"
    #: The turn's own word on its failure (its last ``Error:`` line), "" when none.
    error: str = ""
    duration_ms: int | None = None
    cost_usd: float | None = None
    #: Where the cost comes from: "reported" by the agent, or "estimated" by azsd from its usage.
    cost_source: str = "reported"


def turns(events: Iterable[WireEvent]) -> Iterator[Turn]:
    """The turns of a session's events, in order (events before the first prompt are a turn of their
    own, its prompt "")."""
    turn: Turn | None = None
    for event in events:
        if event.kind == "UserMessage" or turn is None:
            if turn is not None:
                yield turn
            prompt = _decoded(event)
            text = prompt.content.strip() if isinstance(prompt, UserMessage) else ""
            turn = Turn(first_seq=event.seq, last_seq=event.seq, prompt=text.split("\n", 1)[0])
            continue
        turn.last_seq = event.seq
        if event.kind == "Complete":
            done = _decoded(event)
            if isinstance(done, Complete):
                turn.outcome = "succeeded" if done.success else "failed"
                turn.duration_ms = done.duration_ms or None  # 0: not measured (Codex)
                turn.cost_usd = done.cost_usd or None
        elif event.kind == "AssistantText":
            said = _decoded(event)
            if isinstance(said, AssistantText) and said.text.startswith(ERROR_PREFIX):
                turn.error = said.text[len(ERROR_PREFIX) :].strip().split("\n", 1)[0]
    if turn is not None:
        yield turn


def _decoded(event: WireEvent) -> object:
    try:
        return decode_event(event.data)
    except EventDecodeError:
        return None


_OUTCOMES: Final = {"succeeded": "✓", "failed": "✗", "none": "○", "running": "●"}
#: Columns left out on a narrow terminal, in order (the prompt is what a row is about: cut last).
_OPTIONAL: Final = (5, 4, 3)


def turn_table(found: Sequence[Turn], style: Style) -> list[Line]:
    """One row per turn: outcome mark, seqs, prompt's first line, the error or "no result", time, cost."""
    rows = []
    for t in found:
        mark = _OUTCOMES[t.outcome]
        paint = {"✓": style.green, "✗": style.red}.get(mark, style.dim)
        word = t.error or ("no result" if t.outcome == "none" else "")
        rows.append(
            [
                Cell(mark, paint),
                Cell(f"{t.first_seq}-{t.last_seq}", style.dim),
                Cell(one_line(t.prompt, 200) or "(no prompt)"),
                Cell(one_line(word, 120), style.red if t.error else style.dim),
                Cell(format_duration(t.duration_ms)),
                Cell(format_cost(t.cost_usd, t.cost_source)),
            ]
        )
    header = [Cell(name, style.dim) for name in ("", "seqs", "prompt", "", "took", "cost")]
    return table(
        rows,
        right=frozenset({1, 4, 5}),
        flex=2,
        optional=_OPTIONAL,
        header=header if style.relative and rows else None,
    )
