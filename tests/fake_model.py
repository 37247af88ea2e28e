"""A fake model server on 127.0.0.1 for the real agent programs: only the model is faked.

It speaks the three wire protocols the CLIs use, streamed as server-sent events:

- **Anthropic Messages** (``POST /v1/messages``, Claude Code): thinking, text and tool_use blocks,
  ``message_start`` usage (input and cache) and ``message_delta`` usage (output);
- **OpenAI Responses** (``POST /v1/responses``, Codex with ``wire_api = "responses"``): reasoning,
  messages and function calls, usage on ``response.completed``;
- **OpenAI Chat Completions** (``POST /v1/chat/completions``, Aider and OpenCode), streamed or not:
  :mod:`tests.fake_chat`.

A test scripts what the model answers: :meth:`FakeModel.script` queues :class:`Reply` objects (one
per request, in order; a request that finds the queue empty gets a plain ``ok``), and a reply may
be a failure: an HTTP 529 or 500, a stream dropped halfway, or a slow stream to interrupt. Every
reply the server sent is kept in :attr:`FakeModel.sent` with its id and usage, so a test can assert
that azsd stored exactly what the model produced, and every request in :attr:`FakeModel.requests`.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

from tests.fake_chat import chat_completion

__all__ = ["Block", "FakeModel", "Reply", "Sent", "fake_model", "text", "thinking", "tool"]

Failure = Literal["529", "500", "drop", "slow"]


@dataclass(frozen=True)
class Block:
    """One output block: ``thinking`` (reasoning), ``text``, or ``tool`` (a call with its input)."""

    kind: Literal["thinking", "text", "tool"]
    text: str = ""
    name: str = ""
    input: dict[str, Any] = field(default_factory=dict)


def text(value: str) -> Block:
    return Block("text", value)


def thinking(value: str) -> Block:
    return Block("thinking", value)


def tool(name: str, **arguments: Any) -> Block:
    return Block("tool", name=name, input=arguments)


@dataclass
class Reply:
    """What the model answers to one request.

    `input_tokens`, `cache_read` and `cache_write` are the request's (cache_write is Anthropic's
    cache creation; Codex's cached tokens are `cache_read`, part of `input_tokens`); `output_tokens`
    the answer's, `reasoning_tokens` the part of it that was reasoning (OpenAI). `fail` makes it a
    failure instead: ``"529"`` (overloaded), ``"500"``, ``"drop"`` (the stream stops after the first
    block, without its end), ``"slow"`` (each word of the text a second apart: a turn to interrupt).
    """

    blocks: list[Block] = field(default_factory=lambda: [text("ok")])
    input_tokens: int = 100
    output_tokens: int = 10
    cache_read: int = 0
    cache_write: int = 0
    reasoning_tokens: int = 0
    fail: Failure | None = None
    #: Seconds between the words of a "slow" reply's text.
    word_delay: float = 1.0
    #: An answer the program keeps no usage of (OpenCode's titles): not in :attr:`FakeModel.sent`.
    aside: bool = False


@dataclass(frozen=True)
class Sent:
    """A reply the server streamed to its end (failures are not in :attr:`FakeModel.sent`)."""

    api: Literal["anthropic", "openai", "chat"]
    id: str
    model: str
    reply: Reply


class FakeModel:
    """The server; use :func:`fake_model` to run one for a test."""

    def __init__(self) -> None:
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self.sent: list[Sent] = []
        self.failed: list[Reply] = []
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        #: The title OpenCode's title requests get (they never take a scripted reply: OpenCode asks for
        #: one beside the session's first step, in an order of its own), and those requests.
        self.title = "A fake title"
        self.title_requests: list[dict[str, Any]] = []
        handler = type("Handler", (_Handler,), {"model": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-model", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply) -> None:
        """Queue replies, answered in order, one per request."""
        with self._lock:
            self._queue.extend(replies)

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def next_reply(self, body: dict[str, Any], path: str) -> Reply:
        with self._lock:
            if _asks_title(body):
                self.title_requests.append(body)
                return Reply([text(self.title)], input_tokens=50, output_tokens=5, aside=True)
            self.requests.append(body)
            self.paths.append(path)
            return self._queue.popleft() if self._queue else Reply()

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}_fake{next(self._ids):04d}"

    def record(self, sent: Sent) -> None:
        with self._lock:
            if not sent.reply.aside:
                self.sent.append(sent)

    def record_failure(self, reply: Reply) -> None:
        with self._lock:
            self.failed.append(reply)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _asks_title(body: dict[str, Any]) -> bool:
    """Whether a Chat Completions request is OpenCode's for a session's title (no tools; its system
    prompt says so)."""
    messages = body.get("messages")
    if "tools" in body or not isinstance(messages, list) or not messages:
        return False
    first = messages[0]
    content = first.get("content") if isinstance(first, dict) else None
    return isinstance(content, str) and content.startswith("You are a title generator")


@contextmanager
def fake_model() -> Iterator[FakeModel]:
    server = FakeModel()
    server.start()
    try:
        yield server
    finally:
        server.stop()


class _Dropped(Exception):
    """The scripted end of a dropped stream."""


class _Handler(BaseHTTPRequestHandler):
    model: FakeModel
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._json(404, {"error": {"type": "not_found_error", "message": self.path}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._json(400, {"error": {"type": "invalid_request_error", "message": "bad json"}})
            return
        path = self.path.split("?", 1)[0]
        if path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": 100})
            return
        if not path.endswith(("/messages", "/responses", "/chat/completions")):
            self._json(404, {"error": {"type": "not_found_error", "message": path}})
            return
        api: Literal["anthropic", "openai", "chat"] = (
            "anthropic" if path.endswith("/messages") else "openai" if path.endswith("/responses") else "chat"
        )
        reply = self.model.next_reply(body, path)
        if reply.fail in ("529", "500"):
            self.model.record_failure(reply)
            self._error(api, int(reply.fail))
            return
        if api == "chat":
            self._chat(reply, str(body.get("model") or "unknown"), stream=body.get("stream") is True)
            return
        self._stream_start()
        model = str(body.get("model") or "unknown")
        try:
            if api == "anthropic":
                sent = self._anthropic(reply, model)
            else:
                sent = self._openai(reply, model)
        except (_Dropped, BrokenPipeError, ConnectionResetError):
            self.model.record_failure(reply)
            return
        self.model.record(sent)

    def _stream_start(self) -> None:
        """The headers of a server-sent event stream, the connection closed at its end."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def _chat(self, reply: Reply, model: str, *, stream: bool) -> None:
        """A Chat Completions answer (:mod:`tests.fake_chat`): streamed, or one JSON body."""
        parts: list[bytes] = []

        def send(data: bytes) -> None:
            if stream:
                self.wfile.write(data)
                self.wfile.flush()
            else:
                parts.append(data)

        if stream:
            self._stream_start()
        try:
            found = chat_completion(
                reply, model, stream=stream, new_id=self.model.new_id, send=send,
                words=lambda value: self._words(reply, value), pause=lambda: self._pause(reply),
                dropped=_Dropped,
            )  # fmt: skip
        except (_Dropped, BrokenPipeError, ConnectionResetError):
            self.model.record_failure(reply)
            return
        if not stream:
            data = b"".join(parts)
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        self.model.record(Sent("chat", found, model, reply))

    # -- helpers -------------------------------------------------------------------------------

    def _json(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, api: str, status: int) -> None:
        if api == "anthropic":
            kind = "overloaded_error" if status == 529 else "api_error"
            message = "Overloaded" if status == 529 else "Internal server error"
            self._json(status, {"type": "error", "error": {"type": kind, "message": message}})
        else:
            message = "The server is overloaded" if status == 529 else "The server had an error"
            self._json(status, {"error": {"type": "server_error", "message": message, "code": None}})

    def _event(self, name: str, data: dict[str, Any]) -> None:
        self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()

    def _words(self, reply: Reply, value: str) -> list[str]:
        if reply.fail != "slow":
            return [value]
        words = value.split(" ")
        return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]

    def _pause(self, reply: Reply) -> None:
        if reply.fail == "slow":
            time.sleep(reply.word_delay)

    # -- Anthropic Messages --------------------------------------------------------------------

    def _anthropic(self, reply: Reply, model: str) -> Sent:
        message_id = self.model.new_id("msg")
        usage = {
            "input_tokens": reply.input_tokens,
            "cache_creation_input_tokens": reply.cache_write,
            "cache_read_input_tokens": reply.cache_read,
            "output_tokens": 1,
        }
        message: dict[str, Any] = {
            "id": message_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": usage,
        }  # fmt: skip
        self._event("message_start", {"type": "message_start", "message": message})
        stop_reason = "end_turn"
        for index, block in enumerate(reply.blocks):
            if reply.fail == "drop" and index == 1:
                raise _Dropped
            if block.kind == "thinking":
                start: dict[str, Any] = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [{"type": "thinking_delta", "thinking": w} for w in self._words(reply, block.text)]
                deltas.append({"type": "signature_delta", "signature": "ZmFrZS1zaWduYXR1cmU="})
            elif block.kind == "text":
                start = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": w} for w in self._words(reply, block.text)]
            else:
                stop_reason = "tool_use"
                start = {
                    "type": "tool_use",
                    "id": self.model.new_id("toolu"),
                    "name": block.name,
                    "input": {},
                }
                deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block.input)}]
            self._event(
                "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
            )
            for delta in deltas:
                self._event(
                    "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
                )
                self._pause(reply)
            self._event("content_block_stop", {"type": "content_block_stop", "index": index})
        if reply.fail == "drop":
            raise _Dropped
        final = {"output_tokens": reply.output_tokens}
        ending: dict[str, Any] = {"stop_reason": stop_reason, "stop_sequence": None}
        self._event("message_delta", {"type": "message_delta", "delta": ending, "usage": final})
        self._event("message_stop", {"type": "message_stop"})
        return Sent("anthropic", message_id, model, reply)

    # -- OpenAI Responses ----------------------------------------------------------------------

    def _openai(self, reply: Reply, model: str) -> Sent:
        response_id = self.model.new_id("resp")
        response: dict[str, Any] = {
            "id": response_id, "object": "response", "created_at": int(time.time()), "status": "in_progress",
            "model": model, "output": [],
        }  # fmt: skip
        self._oevent("response.created", {"response": response})
        output: list[dict[str, Any]] = []
        for index, block in enumerate(reply.blocks):
            if reply.fail == "drop" and index == 1:
                raise _Dropped
            item_id = self.model.new_id(
                "rs" if block.kind == "thinking" else "msg" if block.kind == "text" else "fc"
            )
            if block.kind == "thinking":
                item: dict[str, Any] = {
                    "type": "reasoning", "id": item_id,
                    "summary": [{"type": "summary_text", "text": block.text}], "content": [],
                    "encrypted_content": None,
                }  # fmt: skip
                self._oevent(
                    "response.output_item.added", {"output_index": index, "item": {**item, "summary": []}}
                )
                for word in self._words(reply, block.text):
                    self._oevent(
                        "response.reasoning_summary_text.delta",
                        {"output_index": index, "item_id": item_id, "summary_index": 0, "delta": word},
                    )
                    self._pause(reply)
            elif block.kind == "text":
                item = {
                    "type": "message", "id": item_id, "role": "assistant", "status": "completed",
                    "content": [{"type": "output_text", "text": block.text, "annotations": []}],
                }  # fmt: skip
                added = {**item, "status": "in_progress", "content": []}
                self._oevent("response.output_item.added", {"output_index": index, "item": added})
                for word in self._words(reply, block.text):
                    self._oevent(
                        "response.output_text.delta",
                        {"output_index": index, "item_id": item_id, "content_index": 0, "delta": word},
                    )
                    self._pause(reply)
            else:
                item = {
                    "type": "function_call", "id": item_id, "call_id": self.model.new_id("call"),
                    "name": block.name, "arguments": json.dumps(block.input), "status": "completed",
                }  # fmt: skip
                self._oevent("response.output_item.added", {"output_index": index, "item": item})
            self._oevent("response.output_item.done", {"output_index": index, "item": item})
            output.append(item)
        if reply.fail == "drop":
            raise _Dropped
        usage = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": reply.cache_read},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": reply.reasoning_tokens},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
        done = {**response, "status": "completed", "output": output, "usage": usage}
        self._oevent("response.completed", {"response": done})
        return Sent("openai", response_id, model, reply)

    def _oevent(self, name: str, data: dict[str, Any]) -> None:
        self._event(name, {"type": name, **data})
