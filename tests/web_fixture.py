"""`azs web`'s real server on a free port of 127.0.0.1, in a thread of its own, over a real daemon; and
the sessions the web tests look at (one with hostile text, tool calls, a failed turn, a compaction, a
fork, and a long one that needs paging), made through the real client."""

from __future__ import annotations

import asyncio
import http.client
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from azsd.config import resolve_config
from azsd.events import (
    AssistantText,
    Compacted,
    Complete,
    Event,
    Init,
    ToolCall,
    ToolResult,
    UserMessage,
)
from azsd_client import Client
from azsd_client.web import serve
from azsd_client.web.security import cookie_name, csrf_token
from tests.daemon_fixture import DaemonProc

#: What an agent might write to attack a page: script, a link to javascript:, a textarea closed
#: early, ANSI colour and a bidi override, an attribute broken out of.
HOSTILE = (
    "<script>document.title='pwned'</script> [click](javascript:alert(1)) "
    '<a href="javascript:alert(2)">x</a> </textarea><img src=x onerror=alert(3)> '
    "\x1b[31mred\x1b[0m \u202eevil \" onmouseover='alert(4)"
)
LONG = 450


@dataclass
class Made:
    """The sessions made for the web tests, by id."""

    root: str
    hostile: int
    tools: int
    fork: int
    long: int


def make_sessions(client: Client, root: Path) -> Made:
    """The web tests' sessions, in `root`'s store."""
    hostile = client.create_session(root, HOSTILE, worktree="main").session.id
    client.append_events(
        root,
        hostile,
        [
            UserMessage(content=HOSTILE),
            AssistantText(text=HOSTILE),
            ToolCall(tool_use_id=HOSTILE, tool_name="Bash", input={"command": HOSTILE}),
            ToolResult(tool_use_id=HOSTILE, tool_name="Bash", content=HOSTILE, is_error=False),
        ],
    )
    tools = client.create_session(root, "tools and a failed turn", worktree="feature/x").session.id
    turn: list[Event] = [
        Init(cwd=str(root), model="claude-sonnet-4-5"),
        UserMessage(content="list the files"),
        ToolCall(tool_use_id="t1", tool_name="Bash", input={"command": "ls -la"}),
        ToolResult(tool_use_id="t1", tool_name="Bash", content="a.py\nb.py", is_error=False),
        ToolCall(tool_use_id="t2", tool_name="Read", input={"file_path": "/nope"}),
        ToolResult(tool_use_id="t2", tool_name="Read", content="no such file", is_error=True),
        Complete(success=False, duration_ms=2500, cost_usd=0.5),
        Compacted(),
        UserMessage(content="try again, quokka"),
        AssistantText(text="done"),
    ]
    client.append_events(root, tools, turn)
    client.store_compaction(root, tools, 7, "the summary of seqs 1-7")  # as `azs compact` does
    fork = client.fork_session(root, tools, 4, name="a fork").session.id
    long = client.create_session(root, "a long one", worktree="main").session.id
    events: list[Event] = []
    for i in range(LONG // 2):
        events += [UserMessage(content=f"prompt {i}"), AssistantText(text=f"answer {i} wombat{i}")]
    for start in range(0, len(events), 200):
        client.append_events(root, long, events[start : start + 200])
    return Made(str(root), hostile, tools, fork, long)


class WebServer:
    """`azs web` serving in a thread; `url` is the one it printed, with the token."""

    def __init__(self, daemon: DaemonProc, roots: list[str]) -> None:
        self.config = resolve_config(
            environ={"XDG_STATE_HOME": str(daemon.runtime_dir.parent / "state")},
            config_file=None,
            runtime_dir=os.fspath(daemon.runtime_dir),
        )
        self.roots = roots
        self.url = ""
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()

            def ready(url: str) -> None:
                self.url = url
                self._ready.set()

            await serve(self.config, self.roots, on_ready=ready, stop=self._stop)

        asyncio.run(main())

    def start(self) -> WebServer:
        self._thread.start()
        assert self._ready.wait(20), "azs web did not start"
        return self

    def close(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    @classmethod
    def at(cls, host: str, token: str) -> WebServer:
        """A handle on a server started elsewhere (`azs web` in a subprocess), for its requests."""
        server = cls.__new__(cls)
        server.url = f"http://{host}/?token={token}"
        return server

    @property
    def host(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def cookie(self) -> str:
        """The Cookie header of a logged-in browser (named after the port; its value the token's HMAC)."""
        return f"{cookie_name(int(self.host.rsplit(':', 1)[1]))}={csrf_token(self.token, 'login cookie')}"

    @property
    def token(self) -> str:
        return urlsplit(self.url).query.removeprefix("token=")

    def get(
        self, path: str, headers: dict[str, str] | None = None, *, method: str = "GET", cookie: bool = True
    ) -> tuple[int, dict[str, str], str]:
        """One request (with the token's cookie unless `cookie` is False): status, headers, body."""
        conn = http.client.HTTPConnection(self.host, timeout=20)
        sent = {"Host": self.host, **(headers or {})}
        if cookie:
            sent.setdefault("Cookie", self.cookie)
        conn.request(method, path, headers=sent)
        response = conn.getresponse()
        body = response.read().decode()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body


@contextmanager
def web_server(daemon: DaemonProc, roots: list[str]) -> Iterator[WebServer]:
    server = WebServer(daemon, roots).start()
    try:
        yield server
    finally:
        server.close()
