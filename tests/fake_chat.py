"""The OpenAI Chat Completions side of the fake model (:mod:`tests.fake_model`): what Aider (through
litellm) and OpenCode (through ``@ai-sdk/openai-compatible``) send to an OpenAI-compatible server.

``POST /v1/chat/completions``, streamed as server-sent ``data:`` chunks ending with ``[DONE]`` or
not streamed (one JSON object): text as ``content``, reasoning as ``reasoning_content`` (the field
OpenAI-compatible servers use for it), tool calls as ``tool_calls``, and the usage (prompt, cached,
completion and reasoning tokens) in a last chunk of no choices, as OpenAI sends it when asked by
``stream_options.include_usage`` (and always here: a client that did not ask ignores it).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

__all__ = ["chat_completion"]


def _usage(reply: Any) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
        "prompt_tokens_details": {"cached_tokens": reply.cache_read},
        "completion_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
    }


def chat_completion(
    reply: Any,
    model: str,
    *,
    stream: bool,
    new_id: Callable[[str], str],
    send: Callable[[bytes], None],
    words: Callable[[str], list[str]],
    pause: Callable[[], None],
    dropped: type[Exception],
) -> str:
    """Answer one request with `reply` (a :class:`tests.fake_model.Reply`); its id. `send` writes the
    body (the headers are the caller's: ``text/event-stream`` when `stream`, else JSON)."""
    completion_id = new_id("chatcmpl")
    created = int(time.time())
    calls = [
        {"id": new_id("call"), "type": "function",
         "function": {"name": block.name, "arguments": json.dumps(block.input)}}
        for block in reply.blocks if block.kind == "tool"
    ]  # fmt: skip
    finish = "tool_calls" if calls else "stop"
    if not stream:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": "".join(b.text for b in reply.blocks if b.kind == "text") or None,
        }
        reasoning = "".join(b.text for b in reply.blocks if b.kind == "thinking")
        if reasoning:
            message["reasoning_content"] = reasoning
        if calls:
            message["tool_calls"] = calls
        body = {
            "id": completion_id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}], "usage": _usage(reply),
        }  # fmt: skip
        send(json.dumps(body).encode())
        return completion_id

    def chunk(delta: dict[str, Any] | None, reason: str | None = None, **more: Any) -> None:
        choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": reason}]
        data = {
            "id": completion_id, "object": "chat.completion.chunk", "created": created, "model": model,
            "choices": choices, **more,
        }  # fmt: skip
        send(f"data: {json.dumps(data)}\n\n".encode())

    chunk({"role": "assistant", "content": ""})
    call = 0
    for index, block in enumerate(reply.blocks):
        if reply.fail == "drop" and index == 1:
            raise dropped
        if block.kind == "tool":
            tool_call = {"index": call, **calls[call]}
            chunk({"tool_calls": [tool_call]})
            call += 1
            continue
        field = "reasoning_content" if block.kind == "thinking" else "content"
        for word in words(block.text):
            chunk({field: word})
            pause()
    if reply.fail == "drop":
        raise dropped
    chunk({}, finish)
    chunk(None, usage=_usage(reply))
    send(b"data: [DONE]\n\n")
    return completion_id
