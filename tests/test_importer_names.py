"""The names an import gives: Claude's project slugs (as JavaScript hashes a long path) and a new
session's name from its first prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from azsd.events import AssistantText, Event, UserMessage
from azsd.ingest.claude_slug import SLUG_MAX, _js_hash, claude_slug
from azsd.ingest.names import first_prompt_name

# -- claude_slug --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "slug"),
    [
        ("/home/me/repo", "-home-me-repo"),
        ("/Users/alex/project/.worktrees/feat_x", "-Users-alex-project--worktrees-feat-x"),
        ("/tmp/a b+c@d", "-tmp-a-b-c-d"),
        ("C:\\work\\repo", "C--work-repo"),
        ("/srv/été", "-srv--t-"),
        ("/x/\U0001f600", "-x---"),  # outside the BMP: two UTF-16 units, two dashes
    ],
)
def test_claude_slug(path: str, slug: str) -> None:
    assert claude_slug(path) == slug
    assert claude_slug(Path(path)) == slug


def test_claude_slug_of_a_long_path_is_cut_and_hashed() -> None:
    path = "/" + "/".join(["abcdefghij"] * 30)
    slug = claude_slug(path)
    assert slug.startswith(path.replace("/", "-")[:SLUG_MAX] + "-")
    assert slug[SLUG_MAX + 1 :].isalnum() and slug[SLUG_MAX + 1 :].islower()
    assert len(claude_slug("/" + "a" * (SLUG_MAX - 1))) == SLUG_MAX  # exactly 200: not cut


def test_js_hash_wraps_like_javascript() -> None:
    assert _js_hash("abc") == 96354  # Java's String.hashCode, which the JS loop computes
    assert _js_hash("polygenelubricants") == -(2**31)


# -- first_prompt_name --------------------------------------------------------------------------


def test_first_prompt_name_skips_non_prompts() -> None:
    events: list[Event] = [
        AssistantText(text="not a prompt"),
        UserMessage(content="  \n\t "),
        UserMessage(content="<azureal-session-context>\nold\n"),  # malformed wrapper: nothing left
        UserMessage(content="\n\n  fix\tthe \u3000 parser  \nthen the tests"),
        UserMessage(content="later"),
    ]
    assert first_prompt_name(events) == "fix the parser"
    assert first_prompt_name(events[:3]) is None
    assert first_prompt_name([]) is None


def test_first_prompt_name_cuts_to_the_limit() -> None:
    assert first_prompt_name([UserMessage(content="x" * 60)]) == "x" * 60
    cut = first_prompt_name([UserMessage(content="y" * 61)])
    assert cut == "y" * 59 + "…" and len(cut) == 60
    assert first_prompt_name([UserMessage(content="ab cd ef")], limit=4) == "ab…"  # no space before …
    assert first_prompt_name([UserMessage(content="abc")], limit=1) == "…"
    with pytest.raises(ValueError, match="limit"):
        first_prompt_name([UserMessage(content="abc")], limit=0)


def test_first_prompt_name_uses_rust_whitespace_and_drops_control_characters() -> None:
    # U+001C is whitespace to Python but not to Rust; as a control character it goes anyway
    assert first_prompt_name([UserMessage(content="a\x1cb   c")]) == "ab c"
    assert first_prompt_name([UserMessage(content="\x15/exit\x1b[31m")]) == "/exit[31m"
    assert first_prompt_name([UserMessage(content="a\u2003\u2003b")]) == "a b"  # em spaces: Rust whitespace
