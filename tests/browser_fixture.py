"""The harness of tests/test_web_browser.py: Debian's headless Chromium driven by Playwright (never its
own browser download), one browser for the test module, the daemon and `azs web` it looks at.

Skipped with a reason when Chromium or Playwright is missing, except under CI=true, where that fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CORPUS
from tests.daemon_fixture import DaemonProc, daemon_in_tmpdir, short_tmpdir
from tests.web_fixture import Made, WebServer, make_sessions, web_server

CHROMIUM = os.environ.get("AZSD_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
USAGE_FILE = CORPUS / "claude-session" / "agentcmd__full-session-two.jsonl"


def _missing() -> str | None:
    if not Path(CHROMIUM).is_file():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium chromium-driver)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[dev]')"
    return None


def _require_browser() -> None:
    why = _missing()
    if why is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the browser tests cannot run under CI: {why}")
    pytest.skip(why)


class Browser:
    """One Chromium (a fresh profile) for the module, its page, and what the page complained about."""

    def __init__(self, profile: Path, shots: Path) -> None:
        from playwright.sync_api import sync_playwright

        self.shots = shots
        self._playwright = sync_playwright().start()
        self.context = self._playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=FLAGS, headless=True,
            viewport={"width": 1280, "height": 860},
        )  # fmt: skip
        self.page = self.context.pages[0] if self.context.pages else self.context.new_page()
        self.problems: list[str] = []  # CSP violations, script errors, dialogs
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.problems.append(f"page error: {exc}"))
        self.page.on("dialog", self._dialog)

    def _console(self, message: Any) -> None:
        if message.type == "error":
            self.problems.append(f"console: {message.text}")

    def _dialog(self, dialog: Any) -> None:
        self.problems.append(f"dialog: {dialog.message}")
        dialog.dismiss()

    def shot(self, name: str) -> Path:
        path = self.shots / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=False)
        return path

    def close(self) -> None:
        self.context.close()
        self._playwright.stop()


World = tuple[DaemonProc, WebServer, Made, "Browser"]


@pytest.fixture(scope="module")
def world(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[DaemonProc, WebServer, Made, Browser]]:
    _require_browser()
    chosen = os.environ.get("AZSD_WEB_SCREENSHOTS")
    shots = Path(chosen) if chosen else tmp_path_factory.mktemp("web-screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    base = short_tmpdir()
    try:
        with daemon_in_tmpdir() as daemon:
            root = base / "wt"
            root.mkdir()
            with daemon.client() as client:
                made = make_sessions(client, root)
                if USAGE_FILE.is_file():
                    usage = client.create_session(root, "imported claude run", worktree="main").session.id
                    client.ingest_file(root, usage, USAGE_FILE)
            with web_server(daemon, [str(root)]) as web:
                browser = Browser(tmp_path_factory.mktemp("chromium-profile"), shots)
                try:
                    browser.page.goto(web.url)  # the token, traded for the cookie
                    yield daemon, web, made, browser
                finally:
                    browser.close()
    finally:
        shutil.rmtree(base, ignore_errors=True)
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            print(f"\nazs web screenshots: {shots}")


@pytest.fixture(autouse=True)
def _fresh_problems(world: World) -> None:
    world[3].problems.clear()


def _last_seq(browser: Browser) -> int:
    """The highest seq on the page (a tool result folded into its call counts)."""
    seqs = browser.page.eval_on_selector_all("#transcript [data-seq]", "ns => ns.map((n) => +n.dataset.seq)")
    return max(seqs, default=0)


def _go(browser: Browser, web: WebServer, path: str) -> None:
    browser.page.goto(f"http://{web.host}{path}")
