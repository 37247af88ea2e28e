"""`azs web` in a real browser: Debian's headless Chromium, driven by Playwright (never its own browser
download), checking what a person sees. One browser for the module (tests/browser_fixture.py);
screenshots are kept as artefacts (the directory is printed at the end of the run;
`AZSD_WEB_SCREENSHOTS=DIR` chooses it).

Skipped with a reason when Chromium or Playwright is missing, except under CI=true, where that fails.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from azsd.events import AssistantText, ToolCall, ToolResult
from tests.browser_fixture import USAGE_FILE, World, _fresh_problems, _go, _last_seq, world
from tests.conftest import CORPUS
from tests.daemon_fixture import DaemonProc, start_daemon
from tests.test_run import CLAUDE as CLAUDE_RUN
from tests.test_run import FAKE_AGENT
from tests.test_usage_prices import assistant, user, write
from tests.web_fixture import HOSTILE, Made

__all__ = ["_fresh_problems", "world"]  # the fixtures, re-exported for pytest


def test_the_token_url_opens_the_sessions_list(world: World) -> None:
    _, web, made, browser = world
    page = browser.page
    page.goto(web.url)
    assert "token=" not in page.url
    rows = page.locator("table.sessions tbody tr")
    assert rows.count() >= 4
    assert page.locator(f'tr[data-session="{made.tools}"] td.badge').inner_text() == "✗"
    assert page.locator(f'tr[data-session="{made.tools}"] meter').is_visible()
    browser.shot("sessions")
    page.select_option("select[name=state]", "failed")
    page.click("form.filters button")
    page.wait_for_url("**state=failed**")
    assert page.locator("table.sessions tbody tr").count() == 1
    assert not browser.problems, browser.problems


def test_a_transcript_folds_tool_calls_until_opened(world: World) -> None:
    _, web, made, browser = world
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={made.tools}")
    result = page.locator("#seq-4")
    assert not result.is_visible()  # folded into the call at seq 3
    page.locator("#seq-3 summary").click()
    assert result.is_visible() and "a.py" in result.inner_text()
    assert "✗ error" in page.locator("#seq-5 summary").inner_text()
    assert page.locator("#seq-8.boundary").is_visible()  # the agent's own compaction marker
    marker = page.locator("#compacted")  # azs compact's, found after the first screen
    page.locator("#meter").wait_for(state="visible", timeout=10_000)
    with world[0].client() as client:
        chars = client.context_meter(made.root, made.tools).chars
    assert page.locator("#meter .meter-text").inner_text() == f"{chars} of 400,000 chars (0%)"
    assert page.eval_on_selector("#meter meter", "m => m.value") == chars
    marker.wait_for(state="visible", timeout=10_000)
    assert marker.get_attribute("data-after") == "7" and "seqs 1–7 are summarised" in marker.inner_text()
    assert page.evaluate("document.getElementById('compacted').nextElementSibling.id") == "seq-8"
    assert page.locator(".lineage a").first.inner_text() == f"S{made.fork}"
    browser.shot("transcript")
    assert not browser.problems, browser.problems


def test_an_appended_event_appears_live(world: World) -> None:
    daemon, web, made, browser = world
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={made.tools}")
    page.wait_for_function("document.querySelectorAll('#transcript [data-seq]').length > 0")
    shown = _last_seq(browser)
    counted = int(page.locator("#event-count").inner_text().replace(",", ""))
    with daemon.client() as client:
        time.sleep(0.3)  # the page's event stream is open
        call = ToolCall(tool_use_id="live1", tool_name="Bash", input={"command": "make test"})
        client.append_events(made.root, made.tools, [AssistantText(text="watching <live>"), call])
        page.locator(f"#seq-{shown + 2}").wait_for(state="visible", timeout=10_000)
        assert "watching <live>" in page.locator(f"#seq-{shown + 1}").inner_text()
        answer = ToolResult(tool_use_id="live1", tool_name="Bash", content="all passed", is_error=False)
        client.append_events(made.root, made.tools, [answer])
        page.locator(f"#seq-{shown + 2} .result").wait_for(state="attached", timeout=10_000)
    assert page.locator(f"#seq-{shown + 2} .outcome").inner_text() == "✓"  # folded into its call
    assert page.locator("#last-seq").inner_text() == str(shown + 3)
    # the header counts what the page shows (it said 4 events while 14 were shown live)
    assert int(page.locator("#event-count").inner_text().replace(",", "")) == counted + 3
    browser.shot("live")
    assert not browser.problems, browser.problems


def test_a_search_hit_opens_the_transcript_at_its_seq(world: World) -> None:
    _, web, made, browser = world
    page = browser.page
    _go(browser, web, "/search?q=wombat30")
    hit = page.locator("ol.hits a").first
    assert hit.inner_text() == f"S{made.long} · seq 62"
    hit.click()
    page.wait_for_url("**#seq-62")
    target = page.locator("#seq-62")
    assert target.is_visible() and "wombat30" in target.inner_text()
    assert page.evaluate("document.querySelector(':target').id") == "seq-62"
    box, header = target.bounding_box(), page.locator("header.top").bounding_box()
    assert box is not None and header is not None
    assert header["y"] + header["height"] <= box["y"] < 860  # scrolled to it, below the sticky header
    browser.shot("search-hit")
    assert not browser.problems, browser.problems


@pytest.mark.skipif(not USAGE_FILE.is_file(), reason=f"the shared corpus is not at {CORPUS}")
def test_the_usage_chart_draws_the_daemons_totals(world: World) -> None:
    daemon, web, made, browser = world
    with daemon.client() as client:
        days = client.usage(made.root, by="day", by_model=True)
        total = client.usage(made.root).total
    assert days.periods, "the imported run recorded usage"
    page = browser.page
    _go(browser, web, "/usage")
    page.wait_for_function("window.Chart && Chart.getChart(document.getElementById('chart-days'))")
    drawn = page.evaluate(
        """() => {
        const chart = Chart.getChart(document.getElementById('chart-days'));
        const kinds = Chart.getChart(document.getElementById('chart-kinds'));
        const sum = (xs) => xs.reduce((a, b) => a + b, 0);
        return {
            cost: sum(chart.data.datasets.map((d) => sum(d.data))),
            models: chart.data.datasets.map((d) => d.label),
            days: chart.data.labels,
            tokens: kinds.data.datasets[0].data,
            painted: chart.canvas.width > 0 && chart.getDatasetMeta(0).data.length > 0,
        };
    }"""
    )
    assert drawn["painted"]
    assert drawn["cost"] == pytest.approx(sum(p.usage.cost_usd for p in days.periods), abs=1e-5)
    assert drawn["cost"] == pytest.approx(total.cost_usd, abs=1e-5)
    assert sorted(drawn["models"]) == sorted({p.model or "(unnamed)" for p in days.periods})
    assert drawn["days"] == sorted({p.period for p in days.periods})
    kinds = [total.input, total.output, total.cache_read, total.cache_write, total.reasoning]
    assert drawn["tokens"] == kinds
    assert f"${total.cost_usd:.4f}" in page.locator("#total").inner_text()
    browser.shot("usage")
    assert not browser.problems, browser.problems


def test_a_hostile_transcript_is_inert(world: World) -> None:
    _, web, made, browser = world
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={made.hostile}")
    page.locator("#seq-3 summary").click()
    assert page.title() != "pwned" and "azs web" in page.title()
    assert page.locator("#transcript img, #transcript script, #transcript textarea").count() == 0
    links = page.eval_on_selector_all("a", "els => els.map((a) => a.getAttribute('href'))")
    assert not [href for href in links if href and "javascript" in href.lower()]
    text = page.locator("#seq-1").inner_text()
    assert "<script>document.title='pwned'</script>" in text and "</textarea>" in text
    assert "␛[31mred␛[0m" in text  # the escape is shown as a symbol
    assert page.locator("#seq-3 summary code").inner_text().startswith(HOSTILE[:20])
    page.hover("#seq-1 .text")
    browser.shot("hostile")
    assert not browser.problems, browser.problems  # no dialog, no script error, no CSP violation


@pytest.mark.skipif(CLAUDE_RUN is None, reason=f"no Claude stream-json file in the corpus at {CORPUS}")
def test_a_turn_run_in_a_terminal_is_watched_in_the_browser(world: World, tmp_path: Path) -> None:
    daemon, web, made, browser = world
    assert CLAUDE_RUN is not None
    with daemon.client() as client:
        sid = client.create_session(made.root, "watched", worktree="main").session.id
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={sid}")
    time.sleep(0.3)  # the page's event stream is open
    config = tmp_path / "azsd.toml"
    agent = [sys.executable, str(FAKE_AGENT), "--replay", str(CLAUDE_RUN), "--delay", "0.05"]
    config.write_text(f"claude-command = {json.dumps(agent)}\n")
    argv = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir),
            "--root", made.root, "run", "-s", str(sid), "--backend", "claude", "watch this turn"]  # fmt: skip
    done = subprocess.run(
        argv, env={**daemon.env, "AZSD_CONFIG": str(config)}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    page.locator("#transcript .user-message", has_text="watch this turn").wait_for(timeout=10_000)
    with daemon.client() as client:
        stored = [e.seq for e in client.get_events(made.root, sid)]
        state = client.get_session(made.root, sid).session.state
    page.locator(f"#seq-{stored[-1]}").wait_for(state="attached", timeout=10_000)
    assert _last_seq(browser) == stored[-1]  # every event the turn stored, in the page
    deadline = time.monotonic() + 10
    while page.locator("#state-word").inner_text() != state and time.monotonic() < deadline:
        time.sleep(0.05)
    assert page.locator("#state-word").inner_text() == state == "succeeded"
    assert page.locator("#state").inner_text() == "✓"
    browser.shot("azs-run-watched")
    assert not browser.problems, browser.problems


def test_a_search_is_plain_text_and_a_fork_copy_is_one_hit_also_in(world: World) -> None:
    """Issue 25's search: every word as written (punctuation, any case) unless FTS5 is asked for, and
    an event a fork copied is one hit whose "also in" opens the copy at the same seq."""
    _, web, made, browser = world
    page = browser.page
    _go(browser, web, "/search")
    page.fill("input[name=q]", "LS -la")
    page.fill("input[name=worktree]", "feature/x")  # the branch of the session and its fork
    page.press("input[name=q]", "Enter")
    page.wait_for_url("**q=LS+-la**")
    assert page.locator("#count").inner_text().startswith("1 hit")
    hit = page.locator("li.hit")
    [copy] = hit.locator(".also a").all()
    shown, copied = int(hit.locator("a").first.inner_text().split()[0][1:]), int(copy.inner_text()[1:])
    assert {shown, copied} == {made.tools, made.fork} and hit.locator(".also").inner_text().startswith(
        "also in"
    )
    browser.shot("search-also-in")
    copy.click()
    page.wait_for_url("**#seq-3")
    assert (
        page.locator("h1").inner_text().endswith(f"S{copied} · " + ("a fork" if copied == made.fork else ""))
    )
    assert "ls -la" in page.locator(":target").inner_text()
    _go(browser, web, "/search?q=wombat30+OR+quokka")  # plain text: OR is a word to find
    assert page.locator("#count").inner_text().startswith("0 hits")
    page.check("input[name=fts]")
    page.click("form.filters button")
    page.wait_for_url("**fts=1**")
    assert page.locator("li.hit").count() == 2 and page.locator(".warn").count() == 0
    assert not browser.problems, browser.problems


def test_a_failed_turn_of_azs_run_shows_as_a_failure(world: World, tmp_path: Path) -> None:
    """Issue 25: `azs run` stores how a turn failed (an "Error: …" answer, a failed Complete); the
    transcript, watched live, shows both in red, and the badge turns ✗."""
    daemon, web, made, browser = world
    with daemon.client() as client:
        sid = client.create_session(made.root, "failing", worktree="main").session.id
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={sid}")
    time.sleep(0.3)  # the page's event stream is open
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"this is not JSON <b>bold</b>\n")
    done = _azs_run(
        daemon, made, sid, tmp_path, garbage, "say something", "--stderr", "warning: <odd> output"
    )
    assert done.returncode == 1, done.stderr
    said = page.locator("#transcript section.assistant-text.failed")
    said.wait_for(timeout=10_000)
    assert said.locator("h2").inner_text().startswith("✗ Error")
    text = said.locator(".text").inner_text()
    assert "Error: the agent printed no result (exit status 0)" in text and "warning: <odd> output" in text
    end = page.locator("#transcript .complete.failed")
    end.wait_for(timeout=10_000)
    assert end.inner_text().startswith("✗ Turn failed")
    red = page.evaluate("getComputedStyle(document.querySelector('.complete.failed .line')).color")
    assert page.evaluate("(e) => getComputedStyle(e).color", said.element_handle()) == red != "rgb(0, 0, 0)"
    deadline = time.monotonic() + 10
    while page.locator("#state").inner_text() != "✗" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert page.locator("#state").inner_text() == "✗"
    browser.shot("failed-turn")
    _go(browser, web, f"/session?root={made.root}&id={sid}")  # the same, read back
    assert page.locator("#transcript section.assistant-text.failed h2").inner_text().startswith("✗ Error")
    assert not browser.problems, browser.problems


def _azs_run(
    daemon: DaemonProc, made: Made, sid: int, tmp_path: Path, replay: Path, prompt: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """`azs run` of session `sid` in a terminal, its agent the fake one replaying `replay`."""
    config = tmp_path / "azsd.toml"
    agent = [sys.executable, str(FAKE_AGENT), "--replay", str(replay), "--delay", "0.05", *options]
    config.write_text(f"claude-command = {json.dumps(agent)}\n")
    argv = [sys.executable, "-m", "azsd_client.cli", "--runtime-dir", str(daemon.runtime_dir),
            "--root", made.root, "run", "-s", str(sid), "--backend", "claude", prompt]  # fmt: skip
    env = {**daemon.env, "AZSD_CONFIG": str(config)}
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)


def test_the_usage_page_shows_the_active_blocks_burn_and_unpriced_costs_as_unknown(
    world: World, tmp_path: Path
) -> None:
    """The daemon's 5-hour block (burn rate, projection) as `azs usage --by block --active` has it, and
    a model without a price costing "?" (never $0)."""
    daemon, web, made, browser = world
    now = datetime.now(UTC)

    def at(minutes: int) -> str:
        return (now - timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.000Z")

    priced = {"input_tokens": 1000, "output_tokens": 2000}
    mixed = [
        user("go", at=at(40)),
        assistant(901, "claude-sonnet-4-5", priced, at=at(30)),
        assistant(902, "claude-2", {"input_tokens": 300, "output_tokens": 700}, at=at(10)),
    ]
    unknown = [
        user("again", at=at(9)),
        assistant(903, "claude-2", {"input_tokens": 5, "output_tokens": 5}, at=at(8)),
    ]
    with daemon.client() as client:
        sid = client.create_session(made.root, "a block", worktree="main").session.id
        client.ingest_file(made.root, sid, write(tmp_path / "mixed.jsonl", mixed))
        only = client.create_session(made.root, "unpriced only", worktree="main").session.id
        client.ingest_file(made.root, only, write(tmp_path / "unknown.jsonl", unknown))
        [block] = client.usage(made.root, by="block", active=True).periods
        total = client.usage(made.root).total
    assert block.active and block.projected_tokens > block.total_tokens and total.unpriced_tokens == 1010
    page = browser.page
    _go(browser, web, "/usage")
    assert page.locator("#block p").first.inner_text().startswith("active since")
    burn = page.locator("#burn").inner_text()
    assert f"{block.total_tokens:,} tokens" in burn and f"{block.tokens_per_minute:,.0f} tokens/min" in burn
    assert f"${block.usd_per_hour:.4f}+?/h" in burn  # partly unpriced
    projection = page.locator("#projection").inner_text()
    found = re.search(
        r"projected at \d\d:\d\d: ([\d,]+) tokens · ~\$([\d.]+)\+\? if the rate holds", projection
    )
    assert found is not None, projection  # (the page asked a moment later: a few minutes' tokens less)
    assert int(found[1].replace(",", "")) == pytest.approx(block.projected_tokens, rel=0.01)
    assert float(found[2]) == pytest.approx(block.projected_usd, rel=0.01)
    assert page.locator("#total .cost").inner_text() == f"~${total.cost_usd:.4f}+?"
    assert "1,010 tokens are of models without a price" in page.locator("#unpriced").inner_text()
    row = page.locator("tr", has_text=f"S{only} unpriced only")
    assert row.locator("td").last.inner_text() == "?"  # unknown, not $0
    page.locator("#block").scroll_into_view_if_needed()
    browser.shot("usage-block")
    assert not browser.problems, browser.problems


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")
def test_the_full_record_of_a_real_transcript_reads_as_the_agent_wrote_it(world: World) -> None:
    """Issue 36: claude-code-viewer's transcript (Claude Code 1.0.108: a MultiEdit, TodoWrite, Tasks
    whose sub-agents wrote into the same file) in the full view: the edit as a coloured diff, the
    todo list as a list, the sub-agent's work inside its Task call, Markdown rendered, a time on
    each message; a link to the tool call opens it."""
    daemon, web, made, browser = world
    source = CORPUS / "claude-session" / "claude-code-viewer__5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"
    with daemon.client() as client:
        sid = client.create_session(made.root, "claude-code-viewer's orchestrator run").session.id
        client.ingest_file(made.root, sid, source)
        deadline = time.monotonic() + 20
        while client.get_events_page(made.root, sid, limit=1, full=True).full is not True:
            assert time.monotonic() < deadline, "the daemon kept no full record"
            time.sleep(0.1)
        page_events = client.get_events_page(made.root, sid, limit=500, full=True).events
    multi = next(e.seq for e in page_events if e.kind == "ToolCall" and '"MultiEdit"' in e.data)
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={sid}&full=1#seq-{multi}")
    call = page.locator(f"#seq-{multi} details.tool")
    assert call.get_attribute("open") is not None  # the link opened the call it names
    removed, added = call.locator("pre.rows .del").first, call.locator("pre.rows .add").first
    assert removed.is_visible() and "Next.js 14" in removed.inner_text()
    assert "Next.js 15.5.2" in added.inner_text()
    colours = {
        page.eval_on_selector(f"#seq-{multi} pre.rows .{c}", "e => getComputedStyle(e).backgroundColor")
        for c in ("del", "add")
    }
    assert len(colours) == 2 and "rgba(0, 0, 0, 0)" not in colours  # red and green, not plain
    assert page.locator("pre.rows .todo").count() > 0 and page.locator("pre.rows .done").count() > 0
    nested = page.locator("details.tool .subagent").first
    nested.locator("xpath=..").evaluate("d => d.open = true")
    assert "package.json" in nested.inner_text()
    assert page.locator("section.assistant-text .md ul, section.assistant-text .md h2").count() > 0
    assert page.locator("time.at").count() >= len([e for e in page_events if e.kind == "UserMessage"])
    browser.shot("full-record")
    assert not browser.problems, browser.problems


def test_the_daemon_going_away_and_back_is_shown(world: World) -> None:
    """Last of the module: it stops the module's daemon and starts another on the same runtime dir."""
    daemon, web, made, browser = world
    page = browser.page
    _go(browser, web, f"/session?root={made.root}&id={made.tools}")
    banner = page.locator("#daemon")
    assert banner.is_hidden()
    daemon.stop()
    banner.wait_for(state="visible", timeout=10_000)
    assert "azsd is not answering" in banner.inner_text()
    assert page.locator("#transcript [data-seq]").count() > 0  # what was read stays on the page
    browser.shot("daemon-away")
    again = start_daemon(daemon.runtime_dir)
    try:
        banner.wait_for(state="hidden", timeout=15_000)
        shown = _last_seq(browser)
        with again.client() as client:
            client.append_events(made.root, made.tools, [AssistantText(text="after the restart")])
        page.locator(f"#seq-{shown + 1}").wait_for(state="visible", timeout=10_000)
        assert "after the restart" in page.locator(f"#seq-{shown + 1}").inner_text()
    finally:
        again.close()
    browser.problems = [p for p in browser.problems if "ERR_" not in p and "503" not in p]
    assert not browser.problems, browser.problems
