"""`azs web`: its pages' first byte over the real daemon, and an append seen in a real browser.

Figures (median of repeated runs, in ms):

- `web_sessions_first_byte`: GET / (the sessions page) of a store holding 10 000 sessions, from the
  request to its first byte (the page is sent whole once rendered: status, headers and body together).
  Baseline: the `ListSessions` of every session the page makes (limit 100 000), through the daemon
  with the asyncio client, in the same run (the page then reads the usage and context meter of the
  200 rows it shows, and the sessions' agents). Target: ≤ 100 ms and ≤ 2× the baseline.
- `web_transcript_first_screen`: GET /session of a 100 000-event session (it opens on its last 200
  events) to its last byte. Baseline: the `GetEvents` page of those 200 events. Target: ≤ 300 ms.
- `web_full_record_first_screen` (with the corpus): GET /session with `full=1` of a 774 KB Claude
  transcript (claude-code-viewer's session of the corpus, six times over with fresh uuids: the size
  of the newcomer's session of issue 36) to its last byte: its first 200 events as the agent wrote
  them, parsed again from the full record. Baseline: the `GetEvents` page of those 200 (`full`),
  through the daemon. Target: ≤ 1 s (claude-code-log 1.7 showed its page in 2.2–2.7 s).
- `web_search_full` (with the corpus): GET /search for a word only the full record of that session
  holds (`addTodo(`), to its last byte. Baseline: the `Search` through the daemon. Target: ≤ 200 ms.
- `web_append_visible` (only with `python -m bench web`, not `--quick`, and only where Debian's
  Chromium and Playwright are installed): an `AppendEvents` sent to the daemon until the new event is
  in the page's DOM (a MutationObserver notes the time in the browser; same clock), p50 of 25.
  Baseline: the same append until a plain SUB socket gets its `EventsAppended` notification.
  Target: p50 ≤ 100 ms.

Run alone: `python -m bench.web [--quick]`.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import http.client
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote, urlsplit

import msgspec

from azsd.config import ResolvedConfig
from azsd.events import AssistantText, Complete, Event, UserMessage
from azsd.ipc.protocol import EventsAppended
from azsd.store import Store
from azsd_client import AsyncClient, Client
from azsd_client.web.security import cookie_name, csrf_token
from bench.common import (
    corpus_like_events,
    daemon_config,
    installed_env,
    median_of,
    percentile,
    report,
    running_daemon,
)

SESSIONS = 10_000
EVENTS = 100_000
APPENDS = 25
CHROMIUM = "/usr/bin/chromium"


def _fill(list_root: Path, long_root: Path, events: int) -> int:
    with Store.open(list_root) as store, store.atomic(create=True):
        for i in range(SESSIONS):
            sid = store.create_session(f"session {i}", "main" if i % 2 else "feat").id
            turn: list[Event] = [UserMessage(content=f"prompt {i}"), AssistantText(text="done " * 20)]
            if i % 4:
                turn.append(Complete(success=i % 5 != 0, duration_ms=1000 + i, cost_usd=0.01))
            store.append_events(sid, turn)
    with Store.open(long_root) as store:
        sid = store.create_session("long", "main").id
        all_events = corpus_like_events(events)
        for i in range(0, events, 2000):
            store.append_events(sid, all_events[i : i + 2000])
    return sid


@contextmanager
def _web(run_dir: Path, state_dir: Path, roots: list[str]) -> Iterator[str]:
    """`azs web` as users run it, a process of its own; yields the URL it printed (with the token)."""
    env = installed_env({"AZSD_RUNTIME_DIR": str(run_dir), "XDG_STATE_HOME": str(state_dir)})
    argv = [sys.executable, "-m", "azsd_client.cli", "--json", "--root", roots[0], "web"]
    for root in roots[1:]:
        argv += ["--store", root]
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("azs web did not start")
        yield str(msgspec.json.decode(line)["url"])
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(15)


def _first_byte(url: str, path: str, whole: bool = False) -> float:
    parts = urlsplit(url)
    token = parts.query.removeprefix("token=")
    conn = http.client.HTTPConnection(parts.netloc, timeout=60)
    start = time.perf_counter()
    login = csrf_token(token, "login cookie")  # (the cookie is the token's HMAC, never the token)
    conn.request("GET", path, headers={"Host": parts.netloc, "Cookie": f"{cookie_name(parts.port)}={login}"})
    response = conn.getresponse()
    took = time.perf_counter() - start
    body = response.read()
    if whole:
        took = time.perf_counter() - start
    conn.close()
    if response.status != 200:
        raise RuntimeError(f"GET {path}: {response.status} {body[:300]!r}")
    return took


def _async_median(runs: int, config: ResolvedConfig, make: object) -> float:
    async def main() -> float:
        async with AsyncClient(config, timeout=60) as client:
            await make(client)  # type: ignore[operator]
            times = []
            for _ in range(runs):
                start = time.perf_counter()
                await make(client)  # type: ignore[operator]
                times.append(time.perf_counter() - start)
            return statistics.median(times)

    return asyncio.run(main())


def _browser_append(url: str, config: ResolvedConfig, root: Path, sid: int) -> tuple[float, float] | None:
    """p50 of append → in the page's DOM, and of append → notification on a SUB; None without a browser."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("# web: append_visible skipped: Playwright is not installed", file=sys.stderr)
        return None
    if not Path(CHROMIUM).is_file():
        print(f"# web: append_visible skipped: no Chromium at {CHROMIUM}", file=sys.stderr)
        return None
    host = urlsplit(url).netloc
    seen: list[float] = []
    bare: list[float] = []
    with (
        tempfile.TemporaryDirectory() as profile,
        sync_playwright() as pw,
        Client(config, timeout=30) as client,
    ):
        context = pw.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"],
        )  # fmt: skip
        page = context.new_page()
        page.goto(url)
        page.goto(f"http://{host}/session?root={quote(str(root))}&id={sid}")
        page.evaluate(
            """() => { window.seen = {}; new MutationObserver((records) => {
                for (const r of records) for (const n of r.addedNodes)
                    if (n.dataset && n.dataset.seq) window.seen[n.dataset.seq] = Date.now();
            }).observe(document.getElementById('transcript'), {childList: true}); }"""
        )
        time.sleep(1.0)  # the event stream is open
        for i in range(APPENDS):
            sent = time.time() * 1000
            seq = client.append_events(root, sid, [AssistantText(text=f"live {i}")]).events[0].seq
            seen.append(_noted(page, seq) - sent)
            time.sleep(0.05)
        context.close()
        with client.subscribe(root, sid) as sub:
            time.sleep(0.3)
            for i in range(APPENDS):
                start = time.perf_counter()
                client.append_events(root, sid, [AssistantText(text=f"bare {i}")])
                while not isinstance(sub.recv(timeout=10), EventsAppended):
                    pass
                bare.append((time.perf_counter() - start) * 1000)
    return percentile(seen, 50), percentile(bare, 50)


def _noted(page: object, seq: int) -> float:
    """When the page's MutationObserver saw `seq` added (polled from here: the time is the page's own;
    a `wait_for_function` would need eval, which the page's CSP forbids)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        at = page.evaluate("(seq) => window.seen[seq] ?? null", str(seq))  # type: ignore[attr-defined]
        if at is not None:
            return float(at)
        time.sleep(0.01)
    raise RuntimeError(f"seq {seq} did not appear in the page")


CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
#: The session of the corpus that the full-record figures read, made into a transcript of 774 KB.
TRANSCRIPT = CORPUS / "claude-session" / "claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
TRANSCRIPT_BYTES = 774_000


def _big_transcript(path: Path) -> None:
    """The corpus session repeated, each copy's uuids made its own, up to :data:`TRANSCRIPT_BYTES`."""
    lines = TRANSCRIPT.read_bytes().splitlines(keepends=True)
    out, copy = bytearray(), 0
    while len(out) < TRANSCRIPT_BYTES:
        for line in lines:
            out += re.sub(
                rb'("(?:uuid|parentUuid|leafUuid)":")([0-9a-f-]{8})', rb"\g<1>%02d%s" % (copy, b"x" * 6), line
            )
        copy += 1
    path.write_bytes(bytes(out))


def _full_figures(url: str, config: ResolvedConfig, root: Path, base: Path, runs: int) -> tuple[float, ...]:
    """(full view first screen, its GetEvents page, full-record search page, its Search), in seconds."""
    history = base / "big.jsonl"
    _big_transcript(history)
    with Client(config, timeout=120) as client:
        sid = client.create_session(root, "774 KB").session.id
        client.ingest_file(root, sid, history)
        deadline = time.monotonic() + 120
        while (status := client.full_status(root)).waiting_bytes or not status.source_bytes:
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon kept no full record in 2 minutes")
            time.sleep(0.05)
    path = f"/session?root={quote(str(root))}&id={sid}&full=1"
    screen = median_of(runs, lambda: _first_byte(url, path, whole=True))
    page = _async_median(runs, config, lambda c: c.get_events_page(root, sid, limit=200, full=True))
    search = median_of(runs, lambda: _first_byte(url, "/search?q=addTodo%28", whole=True))
    asked = _async_median(runs, config, lambda c: c.search(root, "addTodo(", words=True))
    return screen, page, search, asked


def main(*, quick: bool = False, browser: bool | None = None) -> None:
    runs = 7 if quick else 21
    events = EVENTS
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        list_root, long_root, full_root = base / "list", base / "long", base / "full"
        list_root.mkdir()
        long_root.mkdir()
        full_root.mkdir()
        sid = _fill(list_root, long_root, events)
        run_dir = base / "run"
        config = dataclasses.replace(daemon_config(run_dir), state_dir=base / "state")
        roots = [str(list_root), str(long_root), str(full_root)]
        with running_daemon(run_dir), _web(run_dir, base / "state", roots) as url:
            sessions_s = median_of(runs, lambda: _first_byte(url, "/"))
            list_s = _async_median(
                runs, config,
                lambda c: c.list_sessions(list_root, None, limit=100_000),
            )  # fmt: skip
            path = f"/session?root={quote(str(long_root))}&id={sid}"
            screen_s = median_of(runs, lambda: _first_byte(url, path, whole=True))
            page_s = _async_median(
                runs, config, lambda c: c.get_events_page(long_root, sid, from_seq=events - 199, limit=200)
            )
            full = _full_figures(url, config, full_root, base, runs) if TRANSCRIPT.is_file() else None
            wanted = not quick if browser is None else browser
            live = _browser_append(url, config, long_root, sid) if wanted else None
    print(f"# web: {SESSIONS} sessions; a {events}-event transcript")
    report("web_sessions_first_byte", sessions_s * 1e3, "ms", list_s * 1e3)
    report("web_transcript_first_screen", screen_s * 1e3, "ms", page_s * 1e3)
    if full is None:
        print(f"# web: no corpus at {TRANSCRIPT.parent}: the full-record figures are left out")
    else:
        report("web_full_record_first_screen", full[0] * 1e3, "ms", full[1] * 1e3)
        report("web_search_full", full[2] * 1e3, "ms", full[3] * 1e3)
    if live is not None:
        report("web_append_visible", live[0], "ms", live[1])


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--browser", action="store_true", help="measure append → visible even with --quick")
    args = parser.parse_args()
    main(quick=args.quick, browser=True if args.browser else None)
