"""Prices people can bill by: each message at its own model's price (never an older family's), its
length, cache lifetime and speed, a line's own `costUSD`; a model without a price shown as unknown
(`?`, "unpriced"), never as $0; and `usage --by day` at 80 columns still adding up.

Each session here is a Claude transcript written line by line, so every expected cost is worked out
from the lines themselves and the published prices (USD per million tokens).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from azsd.ingest.parsers import make_parser
from azsd.ingest.usage import usage_record
from azsd.ipc.protocol import UsagePeriodView, UsageView
from azsd_client import Client
from azsd_client.render.reports import period_lines
from azsd_client.render.term import plain_lines
from azsd_client.render.text import Style
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

SESSION = "5e55a0c1-0000-4000-8000-000000000001"


def assistant(
    n: int, model: str, usage: dict[str, Any], *, at: str = "2026-05-02T10:00:00Z", **line: Any
) -> dict[str, Any]:
    """An assistant line of message `msg_<n>` (request `req_<n>`)."""
    message = {
        "id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": f"reply {n}"}], "usage": usage,
    }  # fmt: skip
    return {
        "type": "assistant", "sessionId": SESSION, "uuid": f"u{n}", "parentUuid": None, "timestamp": at,
        "requestId": f"req_{n}", "message": message, **line,
    }  # fmt: skip


def user(text: str, at: str = "2026-05-02T09:59:00Z") -> dict[str, Any]:
    return {
        "type": "user", "sessionId": SESSION, "uuid": "u0", "parentUuid": None, "timestamp": at,
        "message": {"role": "user", "content": text},
    }  # fmt: skip


def write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def parts(lines: list[dict[str, Any]]) -> dict[str, tuple[float | None, str | None]]:
    """Each model's cost and cost source, as the run's usage record has them."""
    parser = make_parser("claude-session")
    parser.feed_all(json.dumps(line).encode() for line in lines)
    record = usage_record(parser.report, "/t/s.jsonl")
    assert record is not None
    return {
        p.model: (None if p.cost is None else p.cost.usd, None if p.cost is None else p.cost.source)
        for p in record.parts
    }


def test_opus_4_7_is_priced_as_opus_4_5_not_as_opus_4() -> None:
    usage = {"input_tokens": 1000, "output_tokens": 2000, "cache_read_input_tokens": 10_000}
    (cost, source), *_ = parts([user("hi"), assistant(1, "claude-opus-4-7", usage)]).values()
    assert source == "estimated"
    assert cost == pytest.approx((1000 * 5 + 2000 * 25 + 10_000 * 0.5) / 1e6)  # not 15/75/1.5


def test_each_message_is_priced_at_its_length_cache_lifetime_and_speed() -> None:
    long = {"input_tokens": 50_000, "cache_read_input_tokens": 160_000, "output_tokens": 1000}
    hour = {
        "input_tokens": 10, "output_tokens": 10, "cache_creation_input_tokens": 3000,
        "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 2000},
    }  # fmt: skip
    fast = {"input_tokens": 100, "output_tokens": 1000, "speed": "fast"}
    lines = [
        user("go"),
        assistant(1, "claude-sonnet-4-5-20250929", long),
        assistant(2, "claude-opus-4-5-20251101", hour, at="2026-05-02T10:01:00Z"),
        assistant(3, "claude-opus-4-6", fast, at="2026-05-02T10:02:00Z"),
    ]
    got = parts(lines)
    # above 200k input tokens, the whole request at Sonnet's long-context prices
    sonnet = (50_000 * 6 + 160_000 * 0.6 + 1000 * 22.5) / 1e6
    assert got["claude-sonnet-4-5-20250929"][0] == pytest.approx(sonnet)
    # 1-hour cache writes at 2x input ($10), 5-minute ones at 1.25x ($6.25)
    opus = (10 * 5 + 10 * 25 + 1000 * 6.25 + 2000 * 10) / 1e6
    assert got["claude-opus-4-5-20251101"][0] == pytest.approx(opus)
    assert got["claude-opus-4-6"][0] == pytest.approx(6 * (100 * 5 + 1000 * 25) / 1e6)  # fast: 6x


def test_a_lines_own_cost_is_kept_and_a_streamed_message_priced_once() -> None:
    first = {"input_tokens": 10, "output_tokens": 1}
    final = {"input_tokens": 10, "output_tokens": 500}
    lines = [
        user("go"),
        assistant(1, "claude-sonnet-4-5", {"input_tokens": 5, "output_tokens": 5}, costUSD=0.25),
        assistant(2, "claude-haiku-4-5", first, at="2026-05-02T10:01:00Z"),
        assistant(2, "claude-haiku-4-5", final, at="2026-05-02T10:01:01Z"),
    ]
    got = parts(lines)
    assert got["claude-sonnet-4-5"][1] == "reported" and got["claude-sonnet-4-5"][0] == pytest.approx(0.25)
    assert got["claude-haiku-4-5"][1] == "estimated"
    assert got["claude-haiku-4-5"][0] == pytest.approx((10 * 1 + 500 * 5) / 1e6)


def test_an_unpriced_model_is_shown_unknown_never_as_zero(
    azs: Azs, client: Client, worktree: Path, tmp_path: Path
) -> None:
    priced = {"input_tokens": 1000, "output_tokens": 1000}
    lines = [
        user("go"),
        assistant(1, "claude-sonnet-4-5", priced),
        assistant(2, "acme-coder-9", {"input_tokens": 300, "output_tokens": 700}, at="2026-05-02T10:01:00Z"),
        # Claude's own made-up reply: no API call, no tokens, no model to price
        assistant(3, "<synthetic>", {"input_tokens": 0, "output_tokens": 0}, at="2026-05-02T10:02:00Z"),
    ]
    sid = client.create_session(worktree, "mixed").session.id
    client.ingest_file(worktree, sid, write(tmp_path / "mixed.jsonl", lines))
    (reply,) = azs.json("usage", "--by", "day", "--by-model", "--timezone", "UTC")
    rows = {p["model"]: p["usage"] for p in reply["periods"]}
    assert set(rows) == {"claude-sonnet-4-5", "acme-coder-9"}  # nothing of <synthetic>
    assert rows["acme-coder-9"]["cost_source"] == "unpriced"
    assert rows["acme-coder-9"]["unpriced_tokens"] == 1000
    assert rows["claude-sonnet-4-5"]["cost_usd"] == pytest.approx((1000 * 3 + 1000 * 15) / 1e6)
    total = reply["total"]
    assert total["unpriced_tokens"] == 1000 and total["cost_usd"] == pytest.approx(0.018)
    assert total["input"] == 1300 and total["output"] == 1700
    text = azs.ok("usage", "--by", "day", "--by-model", "--timezone", "UTC").splitlines()
    (unknown,) = [line for line in text if "acme-coder-9" in line]
    assert unknown.split()[-1] == "?"
    assert text[-1].split()[-1] == "~$0.0180+?"
    assert "cost incomplete" in azs.ok("usage")
    (listed,) = [s for s in azs.json("ls") if s["id"] == sid]
    assert listed["usage"]["unpriced_tokens"] == 1000


def _day(n: int) -> UsagePeriodView:
    u = UsageView(
        input=12_345 * n, output=987_654 * n, cache_read=45_678_901 * n, cache_write=3_456_789 * n,
        cost_usd=123.45 * n, cost_source="estimated",
    )  # fmt: skip
    total = u.input + u.output + u.cache_read + u.cache_write
    models = ["claude-opus-4-7", "claude-sonnet-4-5-20250929"]
    return UsagePeriodView(
        period=f"2026-05-0{n}", start="", end="", usage=u, total_tokens=total, models=models
    )


@pytest.mark.parametrize("columns", [80, 200])
def test_usage_by_day_keeps_every_kind_of_token_and_adds_up(columns: int) -> None:
    days = [_day(1), _day(2)]
    kinds = ("input", "output", "cache_read", "cache_write", "cost_usd")
    total = UsageView(**{k: getattr(days[0].usage, k) + getattr(days[1].usage, k) for k in kinds})
    lines = plain_lines(period_lines("day", days, total, Style(color=False)), width=columns)
    assert max(len(line) for line in lines) <= columns
    header = lines[0].split()
    assert "total" in header and ("c.write" in header or "write" in header), lines[0]
    for line in lines[1:]:
        counts = [_number(cell) for cell in line.split()[-6:-1]]  # in, out, cache read, cache write, total
        assert sum(counts[:4]) == pytest.approx(counts[4], rel=0.01), line


def _number(cell: str) -> float:
    scale = {"k": 1e3, "M": 1e6, "G": 1e9}.get(cell[-1], 1.0)
    return float(cell.rstrip("kMG").replace(",", "")) * scale


def test_prices_shows_the_table_in_force_with_its_date_and_source(
    azs: Azs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (shipped,) = azs.json("usage", "--prices")
    assert shipped["date"].startswith("20") and "Anthropic" in shipped["source"]
    assert shipped["models"]["claude-opus-4-7"]["input"] == 5.0
    text = azs.ok("usage", "--prices")
    assert text.startswith(f"prices as of {shipped['date']}")
    assert any(line.split()[:3] == ["claude-opus-4-7", "5", "25"] for line in text.splitlines())
    # a price file the user names (LiteLLM's per-token format here), under the config's own prices
    prices = tmp_path / "prices.json"
    litellm = {"new-model": {"input_cost_per_token": 2e-6, "output_cost_per_token": 8e-6}}
    prices.write_text(json.dumps(litellm))
    config = tmp_path / "config.toml"
    config.write_text(f'price-file = "{prices}"\n\n[pricing."mine"]\ninput = 1.0\noutput = 2.0\n')
    monkeypatch.setenv("AZSD_CONFIG", str(config))
    (named,) = azs.json("usage", "--prices")
    assert str(prices) in named["source"]
    assert named["models"]["new-model"]["input"] == pytest.approx(2.0)
    assert named["models"]["mine"]["output"] == 2.0 and "claude-opus-4-7" in named["models"]
    prices.write_text("{not json")
    code, _, err = azs("usage", "--prices")
    assert code != 0 and "price-file" in err and str(prices) in err
