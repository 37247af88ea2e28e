"""The Codex budget, auto-continue and compaction prompts.

Spec: /work/shared/spec/store-format.md §5.3-§5.4 and §6 (compaction prompt). Every expected string
below is written out by hand from the spec text.
"""

from __future__ import annotations

import pytest

from azsd.context import (
    ContextPayload,
    auto_continue_prompt,
    build_compaction_prompt,
    build_context_prompt,
    fit_codex_budget,
    sanitize,
    strip,
    strip_injected_context_from_events,
)
from azsd.events import AssistantText, Event, Init
from tests.context_helpers import AUTO_CONTINUE, BUDGET, CLOSE, NOTICE, OPEN, A, U, nbytes

# -- Codex budget (§5.3) --------------------------------------------------------------------------

# A small hand-checkable body: three long old lines, then a blank line and the newest user block.
_OLD = "x" * 400
_REST = f"\n## User\n{_OLD}\n{_OLD}\n{_OLD}\n\n## User\nnew\n"
_TAIL = f"{CLOSE}\n\nP"
_SUMMARY_PART = "\n[Previous conversation summary]\nSUM\n\n[Conversation continues]\n\n"


@pytest.mark.parametrize(
    ("room", "recent"),
    [
        (0, ""),
        (3, ""),  # the end of the body is the only line start within 3 bytes
        (4, "new\n"),
        (11, "new\n"),
        (12, "## User\nnew\n"),
        (13, "\n## User\nnew\n"),
        (15, "\n## User\nnew\n"),
        (13 + len(_OLD), "\n## User\nnew\n"),
        (14 + len(_OLD), f"{_OLD}\n\n## User\nnew\n"),
        (14 + 2 * len(_OLD), f"{_OLD}\n\n## User\nnew\n"),
        (15 + 2 * len(_OLD), f"{_OLD}\n{_OLD}\n\n## User\nnew\n"),
    ],
)
def test_fit_codex_budget_without_summary(room: int, recent: str) -> None:
    prompt = OPEN + _REST + _TAIL
    budget = nbytes(OPEN) + nbytes(NOTICE) + nbytes(_TAIL) + room
    assert nbytes(prompt) > budget
    out = fit_codex_budget(prompt, budget)
    assert out == OPEN + NOTICE + recent + _TAIL
    assert nbytes(out) <= budget


@pytest.mark.parametrize(
    ("room", "recent"),
    [(0, ""), (12, "## User\nnew\n"), (13, "\n## User\nnew\n"), (100, "\n## User\nnew\n")],
)
def test_fit_codex_budget_keeps_summary_part(room: int, recent: str) -> None:
    body = _SUMMARY_PART + _REST[1:]  # a transcript with a summary has no blank line after the marker
    prompt = "lead " + OPEN + body + _TAIL
    fixed = nbytes("lead " + OPEN) + nbytes(_SUMMARY_PART) + nbytes(NOTICE) + nbytes(_TAIL)
    out = fit_codex_budget(prompt, fixed + room)
    assert out == "lead " + OPEN + _SUMMARY_PART + NOTICE + recent + _TAIL


def test_fit_codex_budget_fixed_parts_exactly_fit() -> None:
    prompt = OPEN + _REST + _TAIL
    budget = nbytes(OPEN) + nbytes(NOTICE) + nbytes(_TAIL)
    assert fit_codex_budget(prompt, budget) == OPEN + NOTICE + _TAIL


def test_fit_codex_budget_fixed_parts_too_big_is_untrimmed() -> None:
    prompt = OPEN + _REST + _TAIL
    budget = nbytes(OPEN) + nbytes(NOTICE) + nbytes(_TAIL) - 1
    assert fit_codex_budget(prompt, budget) == prompt


@pytest.mark.parametrize(
    "prompt",
    [
        pytest.param("x\n" * (BUDGET // 2 + 10), id="no-tags"),
        pytest.param(OPEN + "\n" + "x\n" * (BUDGET // 2 + 10), id="no-close"),
        pytest.param("x\n" * (BUDGET // 2 + 10) + CLOSE + "\n\nP", id="no-open"),
        pytest.param(CLOSE + "\n" + "x\n" * (BUDGET // 2 + 10) + OPEN, id="close-before-open"),
    ],
)
def test_fit_codex_budget_missing_tag_is_untrimmed(prompt: str) -> None:
    assert nbytes(prompt) > BUDGET
    assert fit_codex_budget(prompt) == prompt


def _big_events(count: int, text: str = "y" * 80) -> list[Event]:
    return [A(f"msg {i:05d} {text}") for i in range(count)]


def _transcript_of(events: list[Event]) -> str:
    # "## Assistant\n{text}\n" + "\n" per event, trim_end'ed: written out here from §5.2
    return "".join(f"## Assistant\n{e.text}\n\n" for e in events if isinstance(e, AssistantText)).rstrip("\n")


def _expected_codex(summary: str | None, transcript_after_summary: str, prompt: str) -> str:
    """§5.3 re-derived: fixed parts plus the longest line-start suffix of the body that fits."""
    summary_part = (
        ""
        if summary is None
        else f"\n[Previous conversation summary]\n{summary}\n\n[Conversation continues]\n\n"
    )
    rest = ("\n" if summary is None else "") + transcript_after_summary + "\n"
    tail = f"{CLOSE}\n\n{prompt}"
    room = BUDGET - nbytes(OPEN + summary_part + NOTICE + tail)
    assert room >= 0
    starts = [0] + [i + 1 for i, ch in enumerate(rest) if ch == "\n"]
    recent = next(rest[s:] for s in starts if nbytes(rest[s:]) <= room)
    return OPEN + summary_part + NOTICE + recent + tail


def test_codex_budget_untouched_when_under() -> None:
    events = _big_events(100)
    payload = ContextPayload("S", events)
    expected = f"{OPEN}\n[Previous conversation summary]\nS\n\n[Conversation continues]\n\n"
    expected += _transcript_of(events) + f"\n{CLOSE}\n\ngo"
    assert build_context_prompt(payload, "go", codex=True) == expected


def test_codex_budget_boundary_is_inclusive() -> None:
    events = _big_events(1500)
    payload = ContextPayload(None, events)
    base = nbytes(f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n")
    assert base < BUDGET
    exact = "p" * (BUDGET - base)
    at_budget = build_context_prompt(payload, exact, codex=True)
    assert at_budget == f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n{exact}"
    assert nbytes(at_budget) == BUDGET
    over = exact + "p"
    trimmed = build_context_prompt(payload, over, codex=True)
    assert trimmed == _expected_codex(None, _transcript_of(events), over)
    assert nbytes(trimmed) <= BUDGET


def test_codex_budget_trims_with_summary() -> None:
    events = _big_events(3000)
    summary = "Summary line one.\nSummary line two."
    payload = ContextPayload(summary, events)
    out = build_context_prompt(payload, "do it", codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(summary, _transcript_of(events), "do it")
    head = (
        f"{OPEN}\n[Previous conversation summary]\n{summary}\n\n[Conversation continues]\n\n"
        "\n[Azureal omitted older raw session context here to keep the Codex input under its prompt budget. "
        "Use the previous summary above and the recent context below.]\n\n"
    )
    assert out.startswith(head)
    assert out.endswith(f"## Assistant\nmsg 02999 {'y' * 80}\n{CLOSE}\n\ndo it")
    assert "msg 00000 " not in out


def test_codex_budget_trims_without_summary() -> None:
    events = _big_events(3000)
    out = build_context_prompt(ContextPayload(None, events), "do it", codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, _transcript_of(events), "do it")
    assert out.startswith(OPEN + NOTICE)
    assert "[Previous conversation summary]" not in out


def test_codex_budget_counts_bytes_not_chars() -> None:
    events = _big_events(1000, "é" * 100)
    transcript = _transcript_of(events)
    full = f"{OPEN}\n{transcript}\n{CLOSE}\n\nnext"
    assert len(full) < BUDGET < nbytes(full)
    out = build_context_prompt(ContextPayload(None, events), "next", codex=True)
    assert out != full
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, transcript, "next")


def test_codex_budget_multibyte_cut_lands_on_line_boundary() -> None:
    # lines of 3-byte characters: a byte-level cut falls inside a character; the tail must still start
    # at a line start and decode cleanly
    events: list[Event] = [A("\u4e2d" * 99 + f"{i}") for i in range(800)]
    transcript = _transcript_of(events)
    out = build_context_prompt(ContextPayload(None, events), "q", codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, transcript, "q")


def test_codex_fixed_parts_too_big_sends_untrimmed() -> None:
    events = _big_events(10)
    prompt = "p" * (BUDGET + 1)
    expected = f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n{prompt}"
    assert build_context_prompt(ContextPayload(None, events), prompt, codex=True) == expected


def test_codex_huge_summary_sends_untrimmed() -> None:
    summary = "s" * (BUDGET + 1)
    events = _big_events(10)
    expected = (
        f"{OPEN}\n[Previous conversation summary]\n{summary}\n\n[Conversation continues]\n\n"
        f"{_transcript_of(events)}\n{CLOSE}\n\ngo"
    )
    assert build_context_prompt(ContextPayload(summary, events), "go", codex=True) == expected


def test_claude_is_never_trimmed() -> None:
    events = _big_events(3000)
    expected = f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\ngo"
    assert nbytes(expected) > BUDGET
    assert build_context_prompt(ContextPayload(None, events), "go") == expected
    assert build_context_prompt(ContextPayload(None, events), "go", codex=False) == expected


def test_codex_trimmed_prompt_still_strips_to_the_prompt() -> None:
    out = build_context_prompt(ContextPayload("S", _big_events(3000)), "my prompt", codex=True)
    assert strip(out) == "my prompt"


# -- auto-continue (§5.4) and compaction (§6) -----------------------------------------------------


def test_auto_continue_prompt_wraps_context() -> None:
    out = auto_continue_prompt(ContextPayload(None, [U("q")]))
    assert out == f"{OPEN}\n## User\nq\n{CLOSE}\n\n{AUTO_CONTINUE}"
    assert sanitize(out) is None
    assert strip_injected_context_from_events([U(out)]) == []


def test_auto_continue_prompt_without_context_is_bare() -> None:
    assert auto_continue_prompt(None) == AUTO_CONTINUE
    assert auto_continue_prompt(ContextPayload(None, [])) == AUTO_CONTINUE


def test_auto_continue_prompt_codex_budget() -> None:
    events = _big_events(3000)
    out = auto_continue_prompt(ContextPayload(None, events), codex=True)
    assert nbytes(out) <= BUDGET
    assert out == _expected_codex(None, _transcript_of(events), AUTO_CONTINUE)
    claude = auto_continue_prompt(ContextPayload(None, events))
    assert claude == f"{OPEN}\n{_transcript_of(events)}\n{CLOSE}\n\n{AUTO_CONTINUE}"


def test_build_compaction_prompt() -> None:
    payload = ContextPayload("S", [U("q"), Init(cwd="/w", model="m"), A("a")])
    out = build_compaction_prompt(payload)
    transcript = (
        "[Previous conversation summary]\nS\n\n[Conversation continues]\n\n## User\nq\n\n## Assistant\na"
    )
    block = f"<transcript>\n{transcript}\n</transcript>"
    assert out.count(block) == 1
    before, after = out.split(block)
    assert before.strip()  # an instruction paragraph comes first
    assert "Output ONLY the summary text" in after
    assert "2000" in after
    assert "4000" in after


def test_build_compaction_prompt_without_summary_is_not_budgeted() -> None:
    events = _big_events(3000)
    out = build_compaction_prompt(ContextPayload(None, events))
    assert f"<transcript>\n{_transcript_of(events)}\n</transcript>" in out
    assert "Output ONLY the summary text" in out
    assert NOTICE not in out
