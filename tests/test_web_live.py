"""`azs web`'s live transcript stream over HTTP: appended events arrive rendered, and the daemon going
away and coming back is shown; against the real daemon and the real server.
"""

from __future__ import annotations

import shutil

from azsd.events import AssistantText, ToolCall, ToolResult
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon
from tests.test_web import _Stream, made, setup, web
from tests.web_fixture import Made, WebServer, web_server

__all__ = ["made", "setup", "web"]  # the fixtures, re-exported for pytest


# -- live -------------------------------------------------------------------------------------------


def test_a_transcript_stream_sends_appended_events_rendered(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer, made: Made
) -> None:
    daemon = setup[0]
    stream = _Stream(web, f"/live/session?root={made.root}&id={made.tools}&after=10")
    try:
        assert stream.next("daemon") == '{"up":true}'
        with daemon.client() as client:
            client.append_events(
                made.root,
                made.tools,
                [
                    AssistantText(text="live <b>bold</b>"),
                    ToolCall(tool_use_id="t9", tool_name="Bash", input={"command": "pwd"}),
                ],
            )
            data = stream.next("events")
            assert '"seq":11' in data and "live &lt;b&gt;bold&lt;/b&gt;" in data and '"seq":12' in data
            result = ToolResult(tool_use_id="t9", tool_name="Bash", content="/w", is_error=False)
            client.append_events(made.root, made.tools, [result])
            data = stream.next("events")
            assert '"tool":"t9"' in data and '"fold":' in data and '"seq":13' in data
    finally:
        stream.close()


def test_the_daemon_going_away_and_back_is_shown() -> None:
    base = short_tmpdir()
    (base / "run").mkdir(mode=0o700)
    daemon = start_daemon(base / "run")
    root = base / "wt"
    root.mkdir()
    with daemon.client() as client:
        sid = client.create_session(root, "s").session.id
        client.append_events(root, sid, [AssistantText(text="before")])
    with web_server(daemon, [str(root)]) as web:
        stream = _Stream(web, f"/live/session?root={root}&id={sid}&after=1")
        try:
            assert stream.next("daemon") == '{"up":true}'
            daemon.close()
            assert stream.next("daemon") == '{"up":false}'
            status, _, body = web.get("/")
            assert status == 503 and "azsd is not answering" in body and 'data-reload="1"' in body
            late = _Stream(web, f"/live/session?root={root}&id={sid}&after=1")  # opened meanwhile
            assert late.next("daemon") == '{"up":false}'
            late.close()
            daemon = start_daemon(base / "run")
            assert stream.next("daemon") == '{"up":true}'
            with daemon.client() as client:
                client.append_events(root, sid, [AssistantText(text="after the restart")])
            assert "after the restart" in stream.next("events")
            assert web.get("/")[0] == 200
        finally:
            stream.close()
            daemon.close()
            shutil.rmtree(base, ignore_errors=True)
