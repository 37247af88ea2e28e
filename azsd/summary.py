"""The summary a compaction agent wrote (spec §6): its assistant text, concatenated and trimmed.

The agent's output is the JSONL it writes on stdout, in the format of its backend; the same parsers
that store a turn read it, so what counts as assistant text is what a stored turn shows as
`AssistantText`: Claude's `text` blocks of `type:assistant` lines; Codex's `agent_message` items.
Tool calls, thinking and the final `result` line are not part of the summary.

>>> line = '{"type":"assistant","message":{"id":"m%d","content":[{"type":"text","text":"%s"}]}}\\n'
>>> out = (line % (1, "  The user ") + line % (2, "fixed the parser. ")).encode()
>>> compaction_summary(out, "claude-stream-json")
'The user fixed the parser.'
>>> compaction_summary(b'{"type":"item.completed","item":{"type":"agent_message","text":"Done."}}',
...                    "codex-exec-json")
'Done.'
>>> compaction_summary(b"not json\\n", "codex-exec-json")
''
"""

from __future__ import annotations

from azsd.events import AssistantText
from azsd.ingest.parsers import make_parser, split_lines
from azsd.rusttext import trim

__all__ = ["compaction_summary"]


def compaction_summary(output: bytes, fmt: str) -> str:
    """The assistant text of an agent's whole output in `fmt`, concatenated and `trim`med ("" when
    it wrote none: the caller retries once, as AZUREAL does)."""
    lines, rest = split_lines(output)
    if rest.strip():
        lines.append(rest)  # the agent has exited: a last line without its newline is whole
    events = make_parser(fmt).feed_all(lines)
    return trim("".join(e.text for e in events if isinstance(e, AssistantText)))
