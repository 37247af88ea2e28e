"""Claude Code JSONL: the live `stream-json` output and the on-disk session transcripts.

Both carry the same API messages; they differ in the envelope (spec/store-format.md §4.2, §4.3b;
agent-formats.md §1, §2):

- **stream-json** (`claude -p --output-format stream-json --verbose`): `system/init` first,
  `result` last with the run's cost, duration and usage. User lines carry tool results; their text
  blocks are prompts too.
- **session** (`~/.claude/projects/<slug>/<id>.jsonl`, 1.0.x and 2.x, sub-agent files): prompts
  are user lines with string content; `isMeta` lines, slash-command wrappers, local-command output,
  hook progress and compaction summaries each map to their own event.

One API message may be split over several lines with the same `message.id`: each line's blocks
are emitted at once (for live display), and usage is regrouped by `message.id` (its output count
is the maximum seen, the rest counted once).

Beyond AZUREAL (docs/agents.md lists every line type by version):

- a thinking block is kept as a ``Hook`` named ``thinking`` (AZUREAL keeps only the hook reminders in
  it): shown, searched, never rendered into a context;
- the lines Claude Code writes itself into the user's place are never prompts: the continuation
  after a compaction is `Compacting` (as in a transcript), ``[Request interrupted by user…]`` a Hook
  ``interrupted``, any other `isSynthetic` (or harness-written) line a Hook ``synthetic``, and a
  stream's `system/api_retry` a Hook ``retry``;
- an API error Claude shows as a reply (`isApiErrorMessage`, a `<synthetic>` message) fails the turn:
  a transcript's run ends at its `cost-state` line (2.1.3xx), which gives the turn's `Complete` with
  the run's own duration and cost (the line's totals less the previous line's of the same process);
- bookkeeping lines (`attachment`, `api-request`, …) are counted as ignored, not skipped.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec

from azsd.context import sanitize
from azsd.events import (
    AssistantText,
    Command,
    Compacted,
    Compacting,
    Complete,
    Event,
    Hook,
    Init,
    Plan,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd.ingest.parsers.base import LineParser, message_text
from azsd.ingest.parsers.claude_lines import (
    clamp,
    file_path,
    hooks_in,
    is_prompt_hook,
    looks_like_error,
    retry_text,
    usd_of,
)
from azsd.ingest.parsers.claude_usage import ClaudeUsage
from azsd.model import Cost

__all__ = ["ClaudeSessionParser", "ClaudeStreamParser"]

_CONTINUED: Final = "This session is being continued from a previous conversation"
_INTERRUPTED: Final = "[Request interrupted by user"
_COMMAND_NAME: Final = re.compile(r"\s*<command-name>(.*?)</command-name>", re.DOTALL)
_SUBAGENT_TOOLS: Final = frozenset({"Agent", "agent", "Task", "task"})
_PLAN_PATH: Final = re.compile(r"/\.claude/plans/([^/]+)\.md$")
#: Tool calls remembered for naming their results; past this many the oldest is forgotten
#: (a sub-agent's call is kept until its result).
TOOL_CALLS_KEPT: Final = 4096


@dataclass
class _ToolUse:
    name: str
    file_path: str | None
    plan: Plan | None = None


class _ClaudeParser(LineParser):
    """What both Claude formats share: assistant blocks, tool results, usage by message id."""

    def __init__(self) -> None:
        super().__init__()
        # Both are bounded (oldest forgotten first), so a parser following a huge file stays small:
        # a result comes soon after its call, and the lines of one message are adjacent.
        self._tools: OrderedDict[str, _ToolUse] = OrderedDict()
        self._open_subagents: set[str] = set()
        self._usage = ClaudeUsage(self.report)
        #: Whether the current turn met an API error (Claude showed it as a reply).
        self._failed = False

    # -- assistant ---------------------------------------------------------------------------

    def _assistant(self, obj: dict[str, Any]) -> list[Event]:
        message = obj.get("message")
        if not isinstance(message, dict):
            return []
        self._usage.note(message, obj.get("requestId"), obj.get("costUSD"), obj.get("timestamp"))
        if obj.get("isApiErrorMessage") is True or obj.get("is_api_error_message") is True:
            self._failed = True
        events: list[Event] = []
        for block in message.get("content") or []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text" and isinstance(block.get("text"), str):
                events.append(AssistantText(text=block["text"]))
            elif kind == "tool_use":
                events.append(self._tool_call(block))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                events.extend(hooks_in(block["thinking"]))
                if block["thinking"].strip():
                    events.append(Hook(name="thinking", output=block["thinking"]))
        return events

    def _tool_call(self, block: dict[str, Any]) -> ToolCall:
        tool_id, name = str(block.get("id", "")), str(block.get("name", ""))
        tool_input = block.get("input")
        path = file_path(tool_input)
        use = _ToolUse(name, path)
        if name in ("Write", "write") and path and isinstance(tool_input, dict):
            match = _PLAN_PATH.search(path)
            content = tool_input.get("content")
            if match and isinstance(content, str):
                use.plan = Plan(name=match.group(1), content=content)
        self._tools[tool_id] = use
        if name in _SUBAGENT_TOOLS:
            self._open_subagents.add(tool_id)
        if len(self._tools) > TOOL_CALLS_KEPT:
            self._forget_oldest_tool()
        return ToolCall(tool_use_id=tool_id, tool_name=name, file_path=path, input=tool_input)

    def _forget_oldest_tool(self) -> None:
        """Forget the oldest call, but not a sub-agent still running (its result may be far off)."""
        for tool_id in self._tools:
            if tool_id not in self._open_subagents:
                del self._tools[tool_id]
                return

    # -- user --------------------------------------------------------------------------------

    def _tool_results(self, content: list[Any], strict_is_error: bool) -> list[Event]:
        events: list[Event] = []
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "tool_result":
                continue
            tool_id = str(block.get("tool_use_id", ""))
            use = self._tools.get(tool_id, _ToolUse("Unknown", None))
            self._open_subagents.discard(tool_id)
            text = message_text(block.get("content"))
            flag = block.get("is_error")
            is_error = flag if isinstance(flag, bool) else (not strict_is_error and looks_like_error(text))
            events.append(
                ToolResult(
                    tool_use_id=tool_id,
                    tool_name=use.name,
                    file_path=use.file_path,
                    content=text,
                    is_error=is_error,
                )
            )
            if use.plan is not None and not is_error:
                events.append(use.plan)
        return events

    def _prompt(self, text: str, *, subagent_line: bool = False, synthetic: bool = False) -> list[Event]:
        """A user's string content (§4.2 rules 1-4, 6); `synthetic`: Claude Code wrote it itself."""
        clean = sanitize(text)
        if clean is None or "<local-command-caveat>" in text or "<task-notification>" in text:
            return []
        if clean.startswith(_CONTINUED):
            return [Compacting()]
        if clean.startswith(_INTERRUPTED):
            return [Hook(name="interrupted", output=clean.strip())]
        if synthetic and "<local-command-stdout>" not in text and not _COMMAND_NAME.match(text):
            return [Hook(name="synthetic", output=clean)]
        if "<local-command-stdout>" in text:
            return [Compacted()] if "Compacted" in text else []
        command = _COMMAND_NAME.match(text)
        if command:
            return [Command(name=command.group(1).strip())]
        if self._open_subagents or subagent_line:
            return []  # the prompt Claude gave a sub-agent, not the user's
        self._failed = False
        return [UserMessage(content=clean)]


class ClaudeStreamParser(_ClaudeParser):
    """`claude -p --output-format stream-json --verbose` (§4.3b)."""

    format = "claude-stream-json"

    def __init__(self) -> None:
        super().__init__()
        #: Whether the run's `result` line came (its totals are then the run's, and final).
        self.resulted = False

    def reconcile(self, transcript: Iterable[bytes]) -> bool:
        """A run that ended early (no `result`: Ctrl-C, a crash) has of each message only the output
        count the stream had reached (`output_tokens: 1` on each streamed line). Claude's own
        transcript of the session (`lines`) holds the final count of each message it finished: those
        of this run's messages are raised to it. Whether the run's usage changed."""
        if self.resulted:
            return False
        report, before = self.report, self.report.usage
        for raw in transcript:
            if b'"assistant"' not in raw:
                continue
            try:
                obj = msgspec.json.decode(raw)
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                continue
            if not isinstance(obj, dict) or obj.get("type") != "assistant":
                continue
            message = obj.get("message")
            if isinstance(message, dict) and self._usage.owns(message.get("id")):
                self._usage.note(message, obj.get("requestId"), obj.get("costUSD"), obj.get("timestamp"))
        if report.usage == before:
            return False
        report.tally.follow(report.usage, report.model, None, report.priced)
        return True

    def handle(self, obj: dict[str, Any]) -> list[Event] | None:
        match obj.get("type"):
            case "system":
                return self._system(obj)
            case "assistant":
                message = obj.get("message")
                if not isinstance(message, dict) or "id" not in message:
                    return []
                return self._assistant(obj)
            case "user":
                return self._user(obj)
            case "result":
                return self._result(obj)
            case "stream_event" | "control_request" | "control_response" | "rate_limit_event" as kind:
                return self._ignore(kind)
            case _:
                return None

    def _system(self, obj: dict[str, Any]) -> list[Event]:
        if isinstance(obj.get("session_id"), str):
            self.report.agent_session_id = obj["session_id"]
        match obj.get("subtype"):
            case "init":
                model = obj.get("model") if isinstance(obj.get("model"), str) else "unknown"
                self.report.model = model
                return [Init(cwd=str(obj.get("cwd", "")), model=model or "unknown")]
            case "hook_response":
                name = str(obj.get("hook_name") or obj.get("hook_event") or "hook")
                output = obj.get("output") or obj.get("stdout") or ""
                return [Hook(name=name, output=str(output))] if output else []
            case "api_retry":
                return [Hook(name="retry", output=retry_text(obj))]
            case subtype:
                return self._ignore(f"system/{subtype}")

    def _user(self, obj: dict[str, Any]) -> list[Event]:
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        subagent = obj.get("parent_tool_use_id") is not None
        synthetic = obj.get("isSynthetic") is True
        if isinstance(content, str):
            return self._prompt(content, subagent_line=subagent, synthetic=synthetic)
        if not isinstance(content, list):
            return []
        events = self._tool_results(content, strict_is_error=True)
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str):
                events.extend(self._prompt(block["text"], subagent_line=subagent, synthetic=synthetic))
        return events

    def _result(self, obj: dict[str, Any]) -> list[Event]:
        if not isinstance(obj.get("session_id"), str):
            return []
        self.resulted = True
        self.report.agent_session_id = obj["session_id"]
        reported = "total_cost_usd" in obj or "cost_usd" in obj
        cost = self._usage.result(
            obj, usd_of(obj.get("total_cost_usd", obj.get("cost_usd"))) if reported else None
        )
        duration = clamp(obj.get("duration_ms", 0))
        failed = obj.get("is_error") is True or obj.get("subtype", "success") != "success" or self._failed
        self._failed = False
        return [Complete(success=not failed, duration_ms=duration, cost_usd=cost)]


class ClaudeSessionParser(_ClaudeParser):
    """Claude Code's on-disk transcripts, 1.0.x and 2.x, main and sub-agent files (§4.2)."""

    format = "claude-session"

    #: Line types left out on purpose: the program's own bookkeeping, and what is read elsewhere
    #: (the request shapes and blobs are what was sent, already stored as the prompt and results).
    _IGNORED: ClassVar = frozenset(
        {
            "summary", "file-history-snapshot", "queue-operation", "last-prompt", "custom-title",
            "attachment", "api-request", "api-request-blob", "api-request-shape", "atis-latch",
            "tools-used", "mode", "agent-name", "pr-link", "ai-title",
        }
    )  # fmt: skip

    def __init__(self) -> None:
        super().__init__()
        self._prompt_time_by_parent: dict[str, str] = {}
        self._summaries: dict[str, str] = {}  # Claude's summaries, by the message they end at
        self._titles: dict[str, str] = {}  # the latest custom (`/rename`) and AI title, by kind
        self._uuids: set[str] = set()  # the messages of this file (a summary may be another's)

    def handle(self, obj: dict[str, Any]) -> list[Event] | None:
        if isinstance(obj.get("sessionId"), str):
            self.report.agent_session_id = obj["sessionId"]
        if self._summaries and isinstance(uuid := obj.get("uuid"), str):
            self._uuids.add(uuid)
        kind = obj.get("type")
        match kind:
            case "summary":
                summary, leaf = obj.get("summary"), obj.get("leafUuid")
                if isinstance(summary, str) and summary.strip() and isinstance(leaf, str):
                    self._summaries[leaf] = summary
                return self._ignore(kind)
            case "user":
                return self._user(obj)
            case "assistant":
                return self._assistant(obj)
            case "system":
                return self._system(obj)
            case "progress":
                return self._progress(obj)
            case "result":
                return self._result(obj)
            case "cost-state":
                return self._cost_state(obj)
            case "custom-title" | "ai-title":  # the user's own name for it (/rename), Claude's
                title = obj.get("customTitle" if kind == "custom-title" else "aiTitle")
                if isinstance(title, str) and title.strip():
                    self._titles[kind] = title  # (the last one wins, as Claude Code reads them)
                return self._ignore(kind)
            case str() if kind in self._IGNORED:
                return self._ignore(kind)
            case _:
                return None

    def finish(self) -> list[Event]:
        """The held events, and the session's own title: the one its user gave it (`/rename`), else
        Claude's AI title, else Claude's summary of a conversation that ends in this file (the latest;
        a summary of another session, which a resumed file carries, is not this one's)."""
        out = super().finish()
        ours = [summary for leaf, summary in self._summaries.items() if leaf in self._uuids]
        named = self._titles.get("custom-title") or self._titles.get("ai-title") or (ours[-1] if ours else "")
        if named.strip():
            self.report.title = named.strip()
        return out

    def _user(self, obj: dict[str, Any]) -> list[Event]:
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        text = message_text(content)
        clean = sanitize(text)
        if clean is not None and clean.startswith(_CONTINUED):
            return [Compacting()]
        hooks = hooks_in(text)
        if obj.get("isMeta") is True:
            return list(hooks)
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            events = self._tool_results(content, strict_is_error=False)
            first = [h for h in hooks if not is_prompt_hook(h)]
            last = [h for h in hooks if is_prompt_hook(h)]
            return first + events + last
        if not isinstance(content, str | list):
            return hooks
        # A string prompt; or (an improvement on AZUREAL, which drops them) a prompt written as
        # text blocks, e.g. beside an image. Lines the program wrote itself are not prompts.
        synthetic = obj.get("isSynthetic") is True or obj.get("rowSource") == "harness"
        prompt = self._prompt(text, synthetic=synthetic)
        if prompt and isinstance(prompt[0], UserMessage) and not self._newest_for_parent(obj):
            return list(hooks)
        return [*hooks, *prompt]

    def _newest_for_parent(self, obj: dict[str, Any]) -> bool:
        """§4.2 rule 5: of two prompts answering the same parent (an edit), keep the later."""
        parent, stamp = obj.get("parentUuid"), obj.get("timestamp")
        if not isinstance(parent, str) or not isinstance(stamp, str):
            return True
        seen = self._prompt_time_by_parent.get(parent)
        if seen is not None and stamp < seen:
            return False
        self._prompt_time_by_parent[parent] = stamp
        return True

    def _system(self, obj: dict[str, Any]) -> list[Event]:
        if obj.get("subtype") == "local_command":
            command = _COMMAND_NAME.match(str(obj.get("content", "")))
            if command:
                return [Command(name=command.group(1).strip())]
        return []

    def _cost_state(self, obj: dict[str, Any]) -> list[Event]:
        """2.1.3xx's end of a run: its totals since the process started (a resumed session's
        process carries them on); the turn's `Complete` gets what this run added."""
        duration, cost = self._usage.cost_state(obj)
        failed, self._failed = self._failed, False
        return [Complete(success=not failed, duration_ms=clamp(duration), cost_usd=cost)]

    def _progress(self, obj: dict[str, Any]) -> list[Event]:
        data = obj.get("data")
        if not isinstance(data, dict) or data.get("type") != "hook_progress":
            return []
        name = str(data.get("hookName") or data.get("hookEvent") or "hook")
        command = data.get("command")
        output = f"[{name}]"
        if isinstance(command, str) and command.startswith("echo "):
            said = command[5:].split(">", 1)[0].strip().strip("'\"")
            output = said or output
        return [Hook(name=name, output=output)]

    def _result(self, obj: dict[str, Any]) -> list[Event]:
        duration = obj.get("durationMs")
        if not isinstance(duration, int | float):
            return []
        cost = usd_of(obj.get("costUsd", obj.get("costUSD", 0.0)))
        if "costUsd" in obj or "costUSD" in obj:
            self.report.cost_usd = Cost(cost, "reported")
        elif self.report.cost_usd is not None:
            cost = self.report.cost_usd.usd
        return [Complete(success=True, duration_ms=clamp(duration), cost_usd=cost)]
