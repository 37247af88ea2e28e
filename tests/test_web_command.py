"""The `azs web` command: its URL, loopback and Unix-socket serving, Ctrl-C, `--open`'s private file,
the repository's other worktrees, and Aider and OpenCode sessions named and dated by their histories.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from azsd.histories import source_dir
from azsd_client.commands.web import git_worktrees
from azsd_client.web.security import csrf_token
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir
from tests.opencode_fixture import OpenCodeBuilder
from tests.test_cli import Azs, Lines
from tests.test_cli_json import check
from tests.test_web import AIDER, _Stream, made, setup
from tests.web_fixture import Made, WebServer, web_server

__all__ = ["made", "setup"]  # the fixtures, re-exported for pytest


# -- the command ------------------------------------------------------------------------------------


class _UnixHTTP(http.client.HTTPConnection):
    """HTTP over a Unix socket."""

    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=20)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def test_azs_web_prints_its_url_serves_on_loopback_and_stops_on_ctrl_c(
    setup: tuple[DaemonProc, WebServer, Made], made: Made, tmp_path: Path
) -> None:
    daemon = setup[0]
    runner = Azs(daemon, Path(made.root), None)  # type: ignore[arg-type]
    lines = Lines(runner.spawn("web"))
    stream: _Stream | None = None
    try:
        line = lines.wait_for(lambda text: "serving on" in text, timeout=20)
        url = urlsplit(line.split("serving on ", 1)[1].split()[0])
        assert url.hostname is not None and url.hostname.startswith("127.")  # a loopback address of its own
        assert url.query.startswith("token=") and len(url.query) > 40
        conn = http.client.HTTPConnection(url.netloc, timeout=20)
        conn.request("GET", f"/?{url.query}", headers={"Host": url.netloc})
        response = conn.getresponse()
        assert response.status == 303
        cookie = (response.getheader("Set-Cookie") or "").split(";", 1)[0]
        response.read()
        conn.request("GET", "/", headers={"Host": url.netloc, "Cookie": cookie})
        page = conn.getresponse().read().decode()
        conn.close()
        assert f'data-session="{made.tools}"' in page
        stream = _Stream(WebServer.at(url.netloc, url.query.removeprefix("token=")), "/live/daemon")
        assert cookie.startswith(f"azs_web_{url.port}=")
        assert stream.next("daemon") == '{"up":true}'  # an open stream does not keep it from stopping
    finally:
        code = lines.stop()
        if stream is not None:
            stream.close()
        assert code == 0
    sock = str(short_tmpdir() / "web.sock")
    lines = Lines(runner.spawn("--json", "web", "--unix", sock))
    try:
        said = json.loads(lines.wait_for(lambda text: text.startswith("{"), timeout=20))
        check("web", [said])  # the shape docs/cli-json.md shows
        assert said["unix"] == sock
        token = said["url"].split("token=", 1)[1]
        assert oct(os.stat(sock).st_mode & 0o777) == "0o600"
        conn = _UnixHTTP(sock)
        login = csrf_token(token, "login cookie")  # the cookie a browser is given: the token's HMAC
        conn.request("GET", "/usage", headers={"Host": "localhost", "Cookie": f"azs_web={login}"})
        assert conn.getresponse().status == 200
        conn.close()
    finally:
        assert lines.stop() == 0
        shutil.rmtree(os.path.dirname(sock), ignore_errors=True)


def test_open_hands_the_browser_a_private_file_not_the_token(
    setup: tuple[DaemonProc, WebServer, Made], made: Made, tmp_path: Path
) -> None:
    """Every user can read a process's command line: the browser gets a file only this user can read,
    which leads on to the URL with the token."""
    daemon = setup[0]
    seen = tmp_path / "browser.json"
    recorder = tmp_path / "browser.py"
    recorder.write_text(
        "import json, os, sys\n"
        "path = sys.argv[1].removeprefix('file://')\n"
        "seen = {'argv': sys.argv[1:], 'mode': os.stat(path).st_mode & 0o777, 'text': open(path).read()}\n"
        f"json.dump(seen, open({str(seen)!r} + '.part', 'w'))\n"
        f"os.replace({str(seen)!r} + '.part', {str(seen)!r})\n"
    )
    runner = Azs(daemon, Path(made.root), None)  # type: ignore[arg-type]
    command = [sys.executable, "-m", "azsd_client.cli", *runner.argv("--json", "web", "--open")]
    browser = {**daemon.env, "BROWSER": f"{sys.executable} {recorder} %s"}
    pipe, nothing = subprocess.PIPE, subprocess.DEVNULL
    lines = Lines(subprocess.Popen(command, env=browser, stdin=nothing, stdout=pipe, stderr=pipe, text=True))
    try:
        url = json.loads(lines.wait_for(lambda text: text.startswith("{"), timeout=20))["url"]
        deadline = time.monotonic() + 20
        while not seen.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        opened = json.loads(seen.read_text())
        token = url.split("token=", 1)[1]
        assert token not in " ".join(opened["argv"]) and opened["argv"][0].startswith("file://")
        assert opened["mode"] == 0o600 and f'content="0;url={url}"' in opened["text"]
        page = Path(opened["argv"][0].removeprefix("file://"))
        assert page.parent == daemon.runtime_dir
    finally:
        assert lines.stop() == 0
    assert not page.exists()  # removed when azs web stops


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_the_other_worktrees_of_the_repository_are_found(tmp_path: Path) -> None:
    main, other = tmp_path / "main", tmp_path / "other"
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    for argv in (
        ["init", "-q", str(main)],
        ["-C", str(main), "commit", "-q", "--allow-empty", "-m", "first"],
        ["-C", str(main), "worktree", "add", "-q", "-b", "feature", str(other)],
    ):
        subprocess.run(["git", *argv], check=True, env=env, capture_output=True)
    assert [os.path.realpath(p) for p in git_worktrees(str(main))] == [os.path.realpath(other)]
    assert [os.path.realpath(p) for p in git_worktrees(str(other))] == [os.path.realpath(main)]
    assert git_worktrees(str(tmp_path)) == []  # not in git


def test_aider_and_opencode_sessions_are_named_and_dated_by_their_histories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27's agents in the sessions list: the agent each was imported from (their models name
    no agent), and the real time of their latest turn rather than when the import made them."""
    base = short_tmpdir()
    try:
        root = base / "wt"
        root.mkdir()
        shutil.copyfile(AIDER / "aider__v0.47-request-cost.md", root / ".aider.chat.history.md")
        data = tmp_path / "xdg"
        oc = OpenCodeBuilder(data / "opencode")
        oc.session("ses_a", root, "fix main")
        oc.turn("ses_a", 1)
        monkeypatch.setenv("XDG_DATA_HOME", str(data))  # where the view (this process) finds OpenCode
        with daemon_in_tmpdir() as daemon:
            with daemon.client() as client:
                imported: dict[str, int | None] = {}
                for agent in ("aider", "opencode"):
                    found = client.import_sources(root, agent, source_dir(agent, os.environ), root).sources
                    client.import_sessions(root, agent, [s.path for s in found])
                    again = client.import_sources(root, agent, source_dir(agent, os.environ), root).sources
                    imported.update({s.path: s.session for s in again})
                views = client.list_sessions(root, None, with_usage=True).sessions
                typed = client.create_session(root, "by hand").session.id
            with web_server(daemon, [str(root)]) as web:
                page = web.get("/")[2]
                only = web.get("/?agent=opencode")[2]
    finally:
        shutil.rmtree(base, ignore_errors=True)
    rows = dict(
        re.findall(r'<tr class="[^"]*" data-session="(\d+)".*?<td class="agent">([^<]*)</td>', page, re.S)
    )
    expected = {str(sid): ("opencode" if "opencode" in path else "aider") for path, sid in imported.items()}
    assert len(expected) == 3 and {k: rows[k] for k in expected} == expected and rows[str(typed)] == ""
    for v in views:  # dated by the agent's own times, where it wrote any
        assert v.last_activity is not None, v
        assert f'title="{v.last_activity} UTC"' in page
    assert re.findall(r'data-session="(\d+)"', only) == [k for k, a in expected.items() if a == "opencode"]
