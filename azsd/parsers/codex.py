"""OpenAI Codex CLI JSONL: the live `codex exec --json` stream and the on-disk rollout files.

Mapping rules: spec/store-format.md §4.3 (what AZUREAL does), formats: agent-formats.md §3-§5.

**codex exec --json** (:class:`CodexExecParser`) has had three generations, told apart per line:

- *legacy* (before 0.44): a config line with human-style keys (``model``, ``provider``,
  ``sandbox``, ``workdir``, ``reasoning effort``…), a ``{"prompt":…}`` line, then protocol events
  ``{"id":…,"msg":{"type":…}}`` (``agent_message``, ``exec_command_begin/end``,
  ``patch_apply_begin/end``, ``mcp_tool_call_begin/end``, ``token_count``, ``task_complete``…);
- *experimental* (``--experimental-json``, about 0.41-0.43): ``session.created {session_id}`` and
  ``item.*`` events whose item kind is in ``item_type``, with ``assistant_message`` for text;
- *current* (0.44 and later): ``thread.started``, ``turn.*`` and ``item.*`` with the item kind in
  ``type`` and ``agent_message`` for text. ``turn.completed.usage`` is the thread's running total.

All three map to the same events. The stream carries no model: pass the one codex was started
with as ``model``.

**Rollouts** (:class:`CodexRolloutParser`, ``~/.codex/sessions/…/rollout-*.jsonl``) are envelopes
``{"timestamp","type","payload"}`` of kind ``session_meta``, ``turn_context``, ``response_item``,
``event_msg`` and ``compacted`` (0.40 to now). Files from before the envelope (mid-2025) start with
a bare header ``{id,timestamp,instructions}``, hold ``{"record_type":"state"}`` markers and carry
the response items bare; they map the same way. Prompts, assistant text and reasoning are written
twice (``event_msg`` and ``response_item``); a look-back over the recently emitted events drops the
second copy, as AZUREAL does.

Both parsers are pure: decoded lines in, events out, run totals in :attr:`LineParser.report`.
"""

from azsd.parsers.codex_exec import CodexExecParser
from azsd.parsers.codex_rollout import CodexRolloutParser
from azsd.parsers.codex_tools import (
    codex_cost_usd,
    codex_usage,
    describe_write_stdin,
    map_tool_call,
    normalize_tool_output,
)

__all__ = [
    "CodexExecParser",
    "CodexRolloutParser",
    "codex_cost_usd",
    "codex_usage",
    "describe_write_stdin",
    "map_tool_call",
    "normalize_tool_output",
]
