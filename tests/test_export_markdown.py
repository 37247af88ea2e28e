"""Session export to Markdown: the exact transcript of a hand-built session, its seq markers, title
and metadata, fences, inline code, parameter blocks and the other events.
"""

from __future__ import annotations

from azsd.events import (
    AssistantText,
    Complete,
    Filtered,
    Hook,
    MayBeCompacting,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.export import render
from tests.export_helpers import EVENTS, INFO, md_outside_fences, md_seqs, numbered, session

EXPECTED_MD = """\
# S12 — fix parser

`/home/me/proj` · created 2025-05-06T07:08:09Z · succeeded · 14 events · 1 min 23 s · $0.1234

*Session start in* `/home/me/proj` · model `claude-sonnet-4` · seq 1

## You · seq 2

The parser panics on empty input. Fix it and add a test.

## Assistant · seq 3

Let me look at the parser first.

**Bash** `grep -n 'fn parse' src/parser.rs` — Find the parser · seq 4

**Bash** output · seq 5

```
12:pub fn parse(input: &str) -> Ast {
```

**Edit** `src/parser.rs` · seq 6

```diff
-let first = input[0];
+let first = input.first()?;
```

**Edit** ✗ error · seq 7

```
String not found in file
```

## Plan: fix · seq 8

1. Guard against empty input
2. Add a regression test

**Command** `/compact` · seq 9

*Compacting the context…* · seq 10

*Context compacted* · seq 11

*Model switched to* `claude-opus-4` · seq 12

**Hook** `PostToolUse` · seq 13

```
formatted 1 file
```

**✓ Turn complete** · 1 min 23 s · $0.1234 · seq 14
"""


# -- Markdown --------------------------------------------------------------------------------------


def test_markdown_transcript():
    assert render("md", INFO, numbered(EVENTS)) == EXPECTED_MD


def test_markdown_markers_match_the_seqs():
    events = numbered(EVENTS, start=40)
    assert md_seqs(render("md", INFO, events)) == [s.seq for s in events]


def test_markdown_title_and_metadata():
    info = session(name="", event_count=1, parent=3, fork_seq=9, archived=True, completed=False, cost_usd=0.5)
    head = render("md", info, []).split("\n")
    assert head[:3] == [
        "# S12",
        "",
        "`/home/me/proj` · created 2025-05-06T07:08:09Z · failed · 1 event · $0.5000"
        " · forked from S3 at seq 9 · archived",
    ]
    assert render("md", session(name="a *bold* [link]"), []).startswith("# S12 — a \\*bold\\* \\[link\\]\n")


def test_markdown_fences_are_longer_than_any_backtick_run():
    nasty = "before\n```\n## You · seq 99\n```\n````python\nx = 1\n`````\nafter"
    events = numbered(
        [
            ToolResult(tool_use_id="t", tool_name="Read", content=nasty, is_error=False),
            ToolCall(tool_use_id="u", tool_name="Write", input={"file_path": "a.md", "content": nasty}),
            Hook(name="h", output="``"),
            UserMessage(content="next"),
        ]
    )
    md = render("md", INFO, events)
    assert "\n``````\nbefore\n" in md  # six backticks: one more than the longest run inside
    assert md_seqs(md) == [1, 2, 3, 4]
    outside = md_outside_fences(md)
    assert "## You · seq 99" not in outside
    assert "## You · seq 4" in outside


def test_markdown_closes_a_fence_left_open_in_free_text():
    events = numbered(
        [
            AssistantText(text="Here is the start:\n```rust\nfn main() {"),
            UserMessage(content="and?"),
        ]
    )
    md = render("md", INFO, events)
    assert md_seqs(md) == [1, 2]
    assert "fn main() {\n```\n" in md


def test_markdown_inline_code_with_backticks():
    call = ToolCall(tool_use_id="t", tool_name="Bash", input={"command": "echo `date` ``x``"})
    md = render("md", INFO, numbered([call]))
    assert "**Bash** ``` echo `date` ``x`` ``` · seq 1" in md


def test_markdown_multiline_and_long_parameters_get_a_block():
    script = "cat <<EOF > a.txt\nhello\nEOF"
    events = numbered(
        [
            ToolCall(tool_use_id="t", tool_name="Bash", input={"command": script, "timeout_ms": 5000}),
            ToolCall(tool_use_id="u", tool_name="Grep", input={"pattern": "x", "glob": "*.py", "-n": True}),
            ToolCall(
                tool_use_id="v", tool_name="TodoWrite", input={"todos": [{"content": "a", "status": "done"}]}
            ),
            ToolCall(tool_use_id="w", tool_name="apply_patch", input="*** Begin Patch\n*** End Patch"),
        ]
    )
    md = render("md", INFO, events)
    assert "**Bash** `cat <<EOF > a.txt…` · timeout\\_ms `5000` · seq 1\n\n```sh\n" + script + "\n```\n" in md
    assert "**Grep** `x` · glob `*.py` · -n `true` · seq 2\n" in md
    assert '**TodoWrite** · seq 3\n\n```json\n{\n  "todos": [\n' in md
    assert "**apply\\_patch** `*** Begin Patch…` · seq 4\n\n```\n*** Begin Patch\n*** End Patch\n```\n" in md


def test_markdown_other_events():
    md = render(
        "md",
        INFO,
        numbered(
            [
                Complete(success=False, duration_ms=4_000_000, cost_usd=2.0),
                MayBeCompacting(),
                Filtered(),
                AssistantText(text=""),
            ]
        ),
    )
    assert "**✗ Turn failed** · 1 h 6 min · $2.0000 · seq 1\n" in md
    assert "*Maybe compacting…* · seq 2\n" in md
    assert "*Filtered* · seq 3\n" in md
    assert "## Assistant · seq 4\n\n*(empty)*\n" in md
