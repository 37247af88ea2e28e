"""The block going now: `azs usage --by block --active` with its burn rate and projection, a token
limit (`N` or `max`, the biggest finished block), and `azs statusline` (one line for a prompt, tmux
or Claude Code's statusLine hook).

The transcripts are written with timestamps relative to now, so the active block, its rate and the
minutes left are worked out here from the lines' own times.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import msgspec
import pytest

from azsd.config import resolve_config
from azsd_client import Client
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree
from tests.test_usage_counted import prompt, reply
from tests.test_usage_prices import write

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

SESSION = "ffffffff-0000-4000-8000-000000000006"


def stamp(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@pytest.fixture
def live(client: Client, worktree: Path, tmp_path: Path) -> tuple[float, float, Path]:
    """Yesterday's block (10 000 input tokens), and one going now: turns 40 and 10 minutes ago."""
    now = time.time()
    first, last = now - 40 * 60, now - 10 * 60
    old = now - 86_400
    path = write(tmp_path / "live.jsonl", [
        prompt(SESSION, "old", stamp(old)), reply(SESSION, 30, stamp(old + 5), 10_000),
        prompt(SESSION, "a", stamp(first - 5)), reply(SESSION, 31, stamp(first), 1000),
        prompt(SESSION, "b", stamp(last - 5)), reply(SESSION, 32, stamp(last), 2000),
    ])  # fmt: skip
    sid = client.create_session(worktree, "live").session.id
    client.ingest_file(worktree, sid, path)
    return first, last, path


def test_the_active_block_has_its_burn_rate_and_projection(azs: Azs, live: tuple[float, float, Path]) -> None:
    first, last, _ = live
    (reply_,) = azs.json("usage", "--by", "block", "--active")
    (block,) = reply_["periods"]
    tokens = (1000 + 100 + 2000) + (2000 + 200 + 4000)  # in, out, cache read of the two turns
    assert block["active"] and block["total_tokens"] == tokens
    assert block["tokens_per_minute"] == pytest.approx(tokens / ((last - first) / 60), rel=1e-3)
    end = datetime.fromisoformat(block["end"]).timestamp()
    assert end == int(first // 3600) * 3600 + 5 * 3600
    left = (end - time.time()) / 60
    assert block["remaining_minutes"] == pytest.approx(left, abs=1.0)
    assert block["projected_tokens"] == pytest.approx(tokens + block["tokens_per_minute"] * left, rel=0.01)
    hours = (last - first) / 3600
    assert block["usd_per_hour"] == pytest.approx(block["usage"]["cost_usd"] / hours, rel=1e-3)
    assert reply_["max_block_tokens"] == 10_000 + 1000 + 20_000  # yesterday's finished block
    text = azs.ok("usage", "--by", "block", "--active", "--token-limit", "max").splitlines()
    assert "active" in text[0] and "left" in text[0]
    assert text[-1].startswith(f"  limit {31_000:,} tokens: {tokens / 31_000:.0%} used")
    code, _, err = azs("usage", "--active", "--token-limit", "lots")
    assert code == 2 and "not a token limit" in err


def test_statusline_shows_today_the_block_and_the_context(azs: Azs, live: tuple[float, float, Path]) -> None:
    _, _, path = live
    hook = {"session_id": SESSION, "transcript_path": str(path), "model": {"id": "claude-sonnet-4-5"}}
    done = subprocess.run(
        [sys.executable, "-m", "azsd_client.cli", *azs.argv("statusline")], input=msgspec.json.encode(hook),
        capture_output=True, env=azs.daemon.env, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.decode().splitlines()
    today, block, context = line.split(" · ")
    assert re.fullmatch(r"(~\$[0-9.]+|\$0) today", today)  # $0 only in the first minutes after midnight
    assert block.startswith("block ~$") and "left" in block and "/h)" in block
    assert context == f"ctx {2000 + 4000:,} (3%)"  # the latest message's input and cache read, of 200k


def test_statusline_where_there_is_no_store_yet(
    azs: Azs, client: Client, worktree: Path, tmp_path: Path, live: tuple[float, float, Path]
) -> None:
    """Today's cost and the block are the account's (issue 34: in project B, `$0 today` and no block
    while project A's turns ran): a directory with no store shows every other store's."""
    empty = tmp_path / "empty"
    empty.mkdir()

    def statusline(root: Path) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "azsd_client.cli", *azs.argv("--root", str(root), "statusline")],
            capture_output=True, env=azs.daemon.env, timeout=30, check=False, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout.decode().strip()

    there = statusline(empty)
    here = statusline(worktree).split(" · S")[0]  # (without this worktree's context meter)
    # the same figures (the minutes left may tick over between the two runs)
    assert there.split(" left")[0][:-8] == here.split(" left")[0][:-8] and "block" in there
    today = time.strftime("%Y-%m-%d")
    stores = resolve_config(environ=azs.daemon.env, config_file=None).stores_path.read_text().split()
    assert str(worktree) in stores  # the daemon notes each store it opens
    spent = sum(client.usage(root, since=today, until=today).total.cost_usd for root in stores)
    # (just after midnight the fixture's turns were yesterday: nothing spent today, said as `$0`)
    assert there.startswith(f"~${spent:.4f} today" if spent else "$0 today")


def test_no_active_block_is_said_in_one_clear_line(
    azs: Azs, client: Client, worktree: Path, tmp_path: Path
) -> None:
    """Issue 34: `azs usage --active` printed nothing at all when no block was going."""
    old = time.time() - 86_400
    path = write(
        tmp_path / "old.jsonl", [prompt(SESSION, "old", stamp(old)), reply(SESSION, 40, stamp(old + 5))]
    )
    client.ingest_file(worktree, client.create_session(worktree, "old").session.id, path)
    code, out, err = azs("usage", "--active")
    assert code == 0 and "no active block: no turn in the last 5 hours" in out + err
    assert azs.json("usage", "--active") == [{**azs.json("usage", "--active")[0], "periods": []}]


def test_active_with_all_is_the_accounts_block(
    azs: Azs, client: Client, worktree: Path, tmp_path: Path, live: tuple[float, float, Path]
) -> None:
    """Issue 34: `azs usage --active --all` ignored `--active`; the 5-hour block is the account's, so
    another project's turns in it count with this one's."""
    other = tmp_path / "project-b"
    other.mkdir()
    now = time.time()
    path = write(tmp_path / "b.jsonl", [prompt(SESSION[:-1] + "7", "b", stamp(now - 300)),
                                        reply(SESSION[:-1] + "7", 50, stamp(now - 290), 500)])  # fmt: skip
    client.ingest_file(other, client.create_session(other, "b").session.id, path)
    # every store the daemon knows (this module's daemon serves the other tests' worktrees too)
    roots = {str(worktree), str(other), *client.status().stores}
    going = [b for root in roots for b in client.usage(root, by="block", active=True).periods]
    assert len(going) >= 2
    [merged] = azs.json("--root", str(other), "usage", "--active", "--all")
    assert merged["total_tokens"] == sum(b.total_tokens for b in going)
    assert merged["start"] == min(b.start for b in going) and merged["active"]
    text = azs.ok("usage", "--active", "--all")
    assert f"{sum(b.total_tokens for b in going):,} tokens" in text
