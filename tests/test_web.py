"""`azs web` over HTTP: its safety (token, Host, Origin, CSP, read-only), hostile agent text rendered
inert, and what each page says, against the real daemon and the real server.

The live stream: tests/test_web_live.py; the command itself: tests/test_web_command.py.
"""

from __future__ import annotations

import html
import http.client
import json
import re
import shutil
import time
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlencode

import pytest

from azsd.events import AssistantText, UserMessage
from azsd_client.web.pages import PAGE_SESSIONS
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir
from tests.web_fixture import LONG, Made, WebServer, make_sessions, web_server

AIDER = Path(__file__).parent / "data" / "aider"


@pytest.fixture(scope="module")
def setup() -> Iterator[tuple[DaemonProc, WebServer, Made]]:
    base = short_tmpdir()
    with daemon_in_tmpdir() as daemon:
        root = base / "wt"
        root.mkdir()
        with daemon.client() as client:
            made = make_sessions(client, root)
        with web_server(daemon, [str(root)]) as web:
            yield daemon, web, made
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def web(setup: tuple[DaemonProc, WebServer, Made]) -> WebServer:
    return setup[1]


@pytest.fixture
def made(setup: tuple[DaemonProc, WebServer, Made]) -> Made:
    return setup[2]


class _Tags(HTMLParser):
    """Every start tag of a page, with its attributes: what a browser would build."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def tags(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Tags()
    parser.feed(page)
    return parser.tags


class _Stream:
    """A server-sent event stream, read event by event."""

    def __init__(self, web: WebServer, path: str) -> None:
        self.conn = http.client.HTTPConnection(web.host, timeout=20)
        self.conn.request("GET", path, headers={"Host": web.host, "Cookie": web.cookie})
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        assert self.response.getheader("Content-Type", "").startswith("text/event-stream")

    def next(self, kind: str, within: float = 15.0) -> str:
        deadline = time.monotonic() + within
        event = ""
        while time.monotonic() < deadline:
            line = self.response.fp.readline().decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: ") and event == kind:
                return line[6:]
        raise AssertionError(f"no {kind} event within {within} s")

    def close(self) -> None:
        self.conn.close()


# -- safe by default --------------------------------------------------------------------------------


def test_the_token_is_needed_and_traded_for_a_cookie(web: WebServer) -> None:
    status, _, body = web.get("/", cookie=False)
    assert status == 403 and "token" in body
    status, _, _ = web.get("/", {"Cookie": web.cookie.split("=")[0] + "=wrong"})
    assert status == 403
    status, headers, _ = web.get(f"/?token={web.token}&q=x", cookie=False)
    assert status == 303
    assert headers["location"] == "/?q=x"  # the token leaves the address bar
    cookie = headers["set-cookie"]
    assert web.cookie in cookie and web.cookie.startswith("azs_web_")  # one cookie per port
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    assert web.get("/")[0] == 200


def test_other_hosts_and_origins_are_refused(web: WebServer) -> None:
    port = web.host.rsplit(":", 1)[1]
    assert web.get("/", {"Host": f"evil.example:{port}"})[0] == 403  # DNS rebinding
    assert web.get("/", {"Host": "127.0.0.1"})[0] == 403  # another port's
    assert web.get("/", {"Host": f"localhost:{port}"})[0] == 403  # not the view's own address
    assert web.get("/", {"Host": web.host})[0] == 200
    assert web.get("/", {"Origin": "http://evil.example"})[0] == 403
    assert web.get("/", {"Origin": f"http://{web.host}"})[0] == 200
    assert web.get("/", {"Sec-Fetch-Site": "cross-site"})[0] == 403


def test_the_login_is_a_cookie_of_the_views_own_address_that_never_holds_the_token(web: WebServer) -> None:
    host = web.host.rsplit(":", 1)[0]
    assert host.startswith("127.") and host != "127.0.0.1"  # a loopback address no other server answers at
    status, headers, _ = web.get(f"/?token={web.token}", cookie=False)
    assert status == 303 and headers["location"] == "/"
    cookie = headers["set-cookie"]
    assert web.token not in cookie  # another server given the cookie cannot log in with the URL
    assert (
        "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Max-Age=" in cookie
    )  # kept past a restart
    assert web.get("/", {"Cookie": cookie.split(";", 1)[0]}, cookie=False)[0] == 200
    assert web.get("/", {"Cookie": f"{cookie.split('=', 1)[0]}={web.token}"}, cookie=False)[0] == 403


def test_the_login_redirect_never_leaves_the_view(web: WebServer) -> None:
    for path in ("//evil.example/", "/\\evil.example/", "//evil.example/a?b=1"):
        status, headers, _ = web.get(
            f"{path}?token={web.token}" if "?" not in path else f"{path}&token={web.token}"
        )
        location = headers.get("location", "")
        assert status == 303 and location.startswith("/") and not location.startswith(("//", "/\\")), location


def test_numbers_out_of_range_are_400_not_500(web: WebServer, made: Made) -> None:
    for query in ("id=99999999999999999999999", "id=1&at=-99999999999999999999", "id=1&from=1e400"):
        assert web.get(f"/session?root={made.root}&{query}")[0] == 400, query
    assert web.get("/?page=123456789012345678901234567890")[0] == 400


def test_it_is_read_only(web: WebServer) -> None:
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert web.get("/", method=method)[0] == 405


def test_every_response_has_a_strict_csp_and_no_inline_script_or_style(web: WebServer, made: Made) -> None:
    for path in ("/", f"/session?root={made.root}&id={made.tools}", "/search?q=quokka", "/usage", "/nope"):
        _, headers, body = web.get(path)
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
        assert "frame-ancestors 'none'" in csp
        assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"
        for tag, attrs in tags(body):
            assert "style" not in attrs, (path, tag)
            assert not any(name.startswith("on") for name in attrs), (path, tag, attrs)
            if tag == "script":
                src = attrs.get("src") or ""
                assert src.startswith("/static/") or attrs.get("type") == "application/json"
    assert web.get("/static/vendor/chartjs/chart.umd.min.js")[0] == 200
    assert web.get("/static/../security.py")[0] == 404


def test_hostile_agent_text_is_inert(web: WebServer, made: Made) -> None:
    pages = [
        web.get(f"/session?root={made.root}&id={made.hostile}")[2],
        web.get("/?q=click")[2],
        web.get("/search?q=textarea&words=1")[2],
    ]
    for page in pages:
        assert "onerror" not in [name for _, attrs in tags(page) for name in attrs]
        assert not [t for t, _ in tags(page) if t == "img"]
        links = [attrs.get("href") or "" for tag, attrs in tags(page) if tag == "a"]
        assert not [link for link in links if "javascript" in link.lower()]
        scripts = [attrs for tag, attrs in tags(page) if tag == "script"]
        assert all((a.get("src") or "").startswith("/static/") for a in scripts)
        assert "</textarea>" not in page and "\x1b" not in page and "\u202e" not in page
    transcript = pages[0]
    assert "&lt;script&gt;document.title=" in transcript  # shown, as text
    assert "␛[31mred␛[0m" in transcript  # the ANSI escape is seen, not obeyed
    assert "&#34; onmouseover=&#39;alert(4)" in transcript
    assert "hit" in pages[2] and "&lt;/textarea&gt;" in pages[2]


# -- the pages --------------------------------------------------------------------------------------


def test_the_sessions_page_lists_filters_and_links(web: WebServer, made: Made) -> None:
    page = web.get("/")[2]
    mine = f'data-root="{made.root}"'  # (another test adds a store of its own)
    rows = re.findall(rf'<tr class="state-(\w+)" data-session="(\d+)" {mine}>', page)
    assert [int(s) for _, s in rows] == [made.long, made.fork, made.tools, made.hostile]
    assert dict((int(s), state) for state, s in rows)[made.tools] == "failed"
    assert f"fork of S{made.tools}@4" in page  # the fork's lineage, a link to its parent at seq 4
    assert f"/session?root={made.root.replace('/', '%2F')}&amp;id={made.tools}&amp;at=4" in page
    assert "<meter" in page and "$0.5000" in page
    only = web.get("/?worktree=feature%2Fx")[2]  # the fork keeps its parent's label
    assert re.findall(r'data-session="(\d+)"', only) == [str(made.fork), str(made.tools)]
    failed = web.get("/?state=failed")[2]
    assert re.findall(r'data-session="(\d+)"', failed) == [str(made.tools)]
    text = web.get("/?q=a+long")[2]
    assert re.findall(r'data-session="(\d+)"', text) == [str(made.long)]


def test_every_store_the_daemon_has_open_is_shown(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer, made: Made
) -> None:
    other = Path(made.root).parent / "other"
    other.mkdir(exist_ok=True)
    with setup[0].client() as client:
        sid = client.create_session(other, "in another worktree").session.id  # the daemon opens it
        client.append_events(other, sid, [UserMessage(content="numbat in another store")])
    page = web.get("/")[2]
    stores = re.search(r"in (\d+) stores", page)
    assert "in another worktree" in page and stores is not None and int(stores[1]) >= 2
    link = f"/session?root={str(other.resolve()).replace('/', '%2F')}&amp;id={sid}"
    assert link in page
    assert web.get(f"/session?root={other.resolve()}&id={sid}")[0] == 200
    assert link + "&amp;at=1#seq-1" in web.get("/search?q=numbat")[2]


def test_the_sessions_page_pages_by_a_hundred(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer, made: Made
) -> None:
    many = Path(made.root).parent / "many"
    many.mkdir(exist_ok=True)
    with setup[0].client() as client:
        made_ids = [client.create_session(many, f"bulk {i}").session.id for i in range(PAGE_SESSIONS + 1)]
    first = web.get("/?q=bulk")[2]
    shown = [int(i) for i in re.findall(r'data-session="(\d+)"', first)]
    assert shown == made_ids[::-1][:PAGE_SESSIONS]  # newest first
    assert 'page=1">older →</a>' in first and "← newer" not in first
    second = web.get("/?q=bulk&page=1")[2]
    assert [int(i) for i in re.findall(r'data-session="(\d+)"', second)] == [made_ids[0]]
    assert "← newer" in second and "older →" not in second


def test_a_transcript_folds_tool_calls_and_marks_failures_and_boundaries(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer, made: Made
) -> None:
    page = web.get(f"/session?root={made.root}&id={made.tools}")[2]
    call = page[page.index('id="seq-3"') : page.index('id="seq-5"')]
    assert "<details" in call and 'id="seq-4"' in call and "a.py\nb.py" in call  # result folded in
    failed = page[page.index('id="seq-5"') :]
    assert failed.startswith('id="seq-5"') and "✗ error" in page
    assert 'class="event complete failed"' in page
    assert 'boundary" id="seq-8"' in page  # the agent's own compaction marker
    status, _, body = web.get(f"/session/context?root={made.root}&id={made.tools}")
    with setup[0].client() as client:
        chars = client.context_meter(made.root, made.tools).chars  # of seqs 8.. (after the compaction)
    assert status == 200 and json.loads(body) == {"after": 7, "chars": chars, "threshold": 400_000}
    assert json.loads(web.get(f"/session/context?root={made.root}&id={made.long}")[2])["after"] == 0
    assert "seq 10" in page
    assert f'forks: <a href="/session?root={made.root.replace("/", "%2F")}&amp;id={made.fork}">' in page
    fork = web.get(f"/session?root={made.root}&id={made.fork}")[2]
    parent = f"/session?root={made.root.replace('/', '%2F')}&amp;id={made.tools}&amp;at=4"
    assert f'forked from <a href="{parent}"' in fork


def test_a_long_transcript_opens_at_its_end_and_pages(web: WebServer, made: Made) -> None:
    page = web.get(f"/session?root={made.root}&id={made.long}")[2]
    seqs = [int(s) for s in re.findall(r'data-seq="(\d+)"', page)]
    assert seqs == list(range(LONG - 199, LONG + 1))
    assert 'rel="prev"' in page and 'data-live="/live/session?' in page
    first = web.get(f"/session?root={made.root}&id={made.long}&from=1")[2]
    assert [int(s) for s in re.findall(r'data-seq="(\d+)"', first)] == list(range(1, 201))
    assert 'rel="next"' in first and 'data-live="/live/daemon"' in first  # not the end: not live
    at = web.get(f"/session?root={made.root}&id={made.long}&at=300")[2]
    assert 'data-at="300"' in at and 'id="seq-300"' in at


def test_search_finds_what_azs_search_finds_and_links_to_the_seq(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer, made: Made
) -> None:
    daemon = setup[0]
    with daemon.client() as client:
        expected = client.search(made.root, "wombat17 OR quokka").hits
    page = web.get("/search?q=wombat17+OR+quokka&fts=1")[2]  # FTS5 syntax, as `azs search --fts`
    found = re.findall(r"id=(\d+)&amp;at=(\d+)#seq-(\d+)", page)
    assert [(int(s), int(q)) for s, q, _ in found] == [(h.session, h.seq) for h in expected]
    assert all(q == anchor for _, q, anchor in found)
    assert "<mark>quokka</mark>" in page and 'name="fts" value="1" checked' in page
    bad = web.get("/search?q=%22unclosed&fts=1")
    assert bad[0] == 200 and "bad_request" in bad[2]


def test_search_is_plain_text_by_default_as_azs_search(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer, made: Made
) -> None:
    """Issue 25: `azs search` takes every word literally (punctuation too, any case) unless --fts; the
    web view's search is the same, and an event copied by a fork is one hit, "also in" the copy."""
    with setup[0].client() as client:
        plain = client.search(made.root, "LS -la", words=True).hits
    assert len(plain) == 1 and {plain[0].session, *plain[0].also_in} == {made.tools, made.fork}
    page = web.get("/search?q=LS+-la")[2]
    assert 'id="count">1 hit,' in page and 'name="fts" value="1" checked' not in page
    [(sid, seq)] = re.findall(r'<li class="hit"><a href="[^"]*id=(\d+)&amp;at=(\d+)', page)
    assert (int(sid), int(seq)) == (plain[0].session, plain[0].seq)
    [copy] = plain[0].also_in
    assert re.search(rf'also in <a href="[^"]*id={copy}&amp;at={seq}#seq-{seq}">S{copy}</a>', page)
    for query in ("%22unclosed", "claude-clean", "unwrap()", "wombat17+OR+quokka"):  # FTS5 errors
        status, _, body = web.get(f"/search?q={query}")
        assert status == 200 and "bad_request" not in body and 'class="warn"' not in body, query
    assert 'id="count">0 hits' in web.get("/search?q=wombat17+OR+quokka")[2]  # OR is a word here
    # a branch narrows the hits and says how many the others hold (`azs search`'s "more on other branches")
    narrowed = web.get("/search?q=ls+-la&worktree=main")[2]
    assert 'id="count">0 hits' in narrowed
    assert "1 more hit on other branches" in narrowed and 'href="/search?q=ls+-la"' in narrowed
    assert 'id="hidden"' not in web.get("/search?q=ls+-la&worktree=feature/x")[2]


def test_unknown_stores_and_sessions_are_404(web: WebServer, made: Made) -> None:
    assert web.get("/session?root=/etc&id=1")[0] == 404
    assert web.get(f"/session?root={made.root}&id=999")[0] == 404
    assert web.get(f"/session?root={made.root}&id=x")[0] == 400


def test_a_huge_event_is_folded_and_the_whole_of_it_is_a_link_away(
    setup: tuple[DaemonProc, WebServer, Made], web: WebServer
) -> None:
    daemon, _, made = setup
    huge = "wombat " * 300_000  # 2.1 MB of an agent's text
    with daemon.client(timeout=20) as client:
        sid = client.create_session(made.root, "huge", worktree="main").session.id
        client.append_events(made.root, sid, [UserMessage(content="go"), AssistantText(text=huge)])
    status, _, page = web.get(f"/session?{urlencode({'root': made.root, 'id': sid})}")
    assert status == 200 and len(page) < 200_000  # not the event's 2 MB
    assert "characters; the first 20,000 are shown" in page
    (href,) = re.findall(r'href="(/session/event\?[^"]+)"', page)
    status, headers, whole = web.get(html.unescape(href))
    assert status == 200 and headers["content-type"].startswith("text/plain")
    assert json.loads(whole) == {"AssistantText": {"text": huge}}
