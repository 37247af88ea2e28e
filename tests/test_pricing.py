"""Cost that tells the truth: the price list, estimates labelled as such, Codex durations, Init lines."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from azsd.config import resolve_config
from azsd.errors import ConfigError
from azsd.events import Complete, Init
from azsd.ingest.parsers.claude import ClaudeSessionParser
from azsd.ingest.parsers.codex_rollout import CodexRolloutParser
from azsd.ipc.protocol import WireEvent
from azsd.model import Usage
from azsd.pricing import LONG_CONTEXT_TOKENS, Price, Tier, default_table, load_price_file
from azsd_client import Client
from azsd_client.render.events import event_lines
from azsd_client.render.term import plain_lines
from azsd_client.render.text import Style
from tests.conftest import corpus_files, requires_corpus
from tests.test_cli import Azs, azs
from tests.test_client import client, daemon, worktree

__all__ = ["azs", "client", "daemon", "worktree"]  # the fixtures, re-exported for pytest

TABLE = default_table()
MILLION = Usage(input=1_000_000, output=1_000_000, cache_read=1_000_000, cache_write=1_000_000)
SONNET_LONG = Tier(6.0, 22.5, 0.6, 7.5)


def test_the_shipped_list_says_where_its_prices_come_from() -> None:
    assert TABLE.source and TABLE.date.startswith("20")
    assert TABLE.lookup("claude-sonnet-4-5") == Price(3.0, 15.0, 0.3, 3.75, above_200k=SONNET_LONG)


def test_a_model_is_found_by_exact_name_then_by_family() -> None:
    assert TABLE.lookup("gpt-5-codex") == Price(1.25, 10.0, 0.125, 0.0)
    assert TABLE.lookup("claude-sonnet-4-5-20250929") == TABLE.lookup("claude-sonnet-4-5")
    assert TABLE.lookup("claude-opus-4-1-20250805") == Price(15.0, 75.0, 1.5, 18.75)
    assert TABLE.lookup("gpt-5.1-codex-max") == TABLE.lookup("gpt-5.1-codex")
    assert TABLE.lookup("anthropic/claude-haiku-4-5") == TABLE.lookup("claude-haiku-4-5")
    # the longest family wins: gpt-5-mini is not priced as gpt-5
    assert TABLE.lookup("gpt-5-mini-2025-08-07") == TABLE.lookup("gpt-5-mini") != TABLE.lookup("gpt-5")
    assert TABLE.estimate("claude-opus-4-1", MILLION) == pytest.approx(15 + 75 + 1.5 + 18.75)


@pytest.mark.parametrize(
    "model", ["claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-4-7-20260416"]
)
def test_opus_4_5_and_later_cost_a_third_of_opus_4(model: str) -> None:
    # the family rule once read claude-opus-4-7 as claude-opus-4 ($15/$75)
    price = TABLE.lookup(model)
    assert price is not None and (price.input, price.output, price.cache_read, price.cache_write) == (
        5.0, 25.0, 0.5, 6.25,
    )  # fmt: skip


@pytest.mark.parametrize(
    "model",
    ["claude-sonnet-4-6", "claude-haiku-4-5-20251001", "gpt-5.2", "gpt-5.2-codex", "gpt-5.1-codex-max"],
)
def test_every_current_model_has_a_price_of_its_own(model: str) -> None:
    assert TABLE.lookup(model) is not None
    assert model.split("-2025")[0] in TABLE.prices


@pytest.mark.parametrize(
    ("model", "newest"),
    [
        ("claude-opus-4-8", "claude-opus-4-7"),
        ("claude-opus-5-5", "claude-opus-4-7"),  # Claude Code 2.1.332's default (issue 33)
        ("claude-sonnet-4-7", "claude-sonnet-4-6"),
        ("claude-haiku-5", "claude-haiku-4-5"),
        ("gpt-5-codex-max", "gpt-5.1-codex-max"),
        ("gpt-5.3-codex", "gpt-5.2-codex"),
        ("gpt-5.5", "gpt-5.2"),
        ("gpt-5.5-turbo", "gpt-5.2"),  # a variant the list lacks: the plain model
        ("claude-opus-4-9-20270101", "claude-opus-4-7"),
    ],
)
def test_a_model_the_list_lacks_is_priced_as_its_familys_newest_never_an_older_prefix(
    model: str, newest: str
) -> None:
    """Issue 33: today's default model had no price and showed `?`. A newer version or variant is
    never priced as the older name it starts with (claude-opus-4-8 is not claude-opus-4), but as the
    family's newest listed model, and said to be (`priced_as`, shown by `azs usage --prices`)."""
    assert TABLE.lookup(model) == TABLE.prices[newest]
    assert TABLE.priced_as(model) == newest
    assert TABLE.priced_as(newest) is None and TABLE.priced_as("claude-opus-4-7-20260416") is None


@pytest.mark.parametrize(
    "model", ["o9-mini", "gpt-4.1-nano", "gemini-3-pro", "claude-2", "claude-3-opus-next"]
)
def test_a_model_of_no_known_family_has_no_price(model: str) -> None:
    assert TABLE.lookup(model) is None and TABLE.priced_as(model) is None


def test_a_long_request_bills_at_the_long_context_prices() -> None:
    short = Usage(input=10, cache_read=LONG_CONTEXT_TOKENS - 10, output=1000)
    long = Usage(input=11, cache_read=LONG_CONTEXT_TOKENS - 10, output=1000)
    assert TABLE.message_cost("claude-sonnet-4-5", short) == pytest.approx(
        (10 * 3 + (LONG_CONTEXT_TOKENS - 10) * 0.3 + 1000 * 15) / 1e6
    )
    assert TABLE.message_cost("claude-sonnet-4-5", long) == pytest.approx(
        (11 * 6 + (LONG_CONTEXT_TOKENS - 10) * 0.6 + 1000 * 22.5) / 1e6
    )
    # a model without long-context prices costs the same at any length
    assert TABLE.message_cost("claude-haiku-4-5", long) == TABLE.estimate("claude-haiku-4-5", long)


def test_hour_long_cache_writes_bill_at_twice_the_input_and_fast_at_its_factor() -> None:
    writes = Usage(cache_write=1_000_000)
    assert TABLE.message_cost("claude-opus-4-7", writes) == pytest.approx(6.25)
    assert TABLE.message_cost("claude-opus-4-7", writes, cache_write_1h=400_000) == pytest.approx(
        0.6 * 6.25 + 0.4 * 10.0
    )
    fast = TABLE.message_cost("claude-opus-4-7", MILLION, fast=True)
    assert fast == pytest.approx(6 * (5 + 25 + 0.5 + 6.25))
    before_ga = datetime(2026, 3, 1, tzinfo=UTC).timestamp()  # (Opus 4.6's premium ended on 2026-03-13)
    long_and_fast = TABLE.message_cost("claude-opus-4-6", MILLION, fast=True, at=before_ga)
    assert long_and_fast == pytest.approx(6 * (10 + 37.5 + 1 + 12.5))
    assert TABLE.message_cost("claude-sonnet-4-5", MILLION, fast=True) == TABLE.message_cost(
        "claude-sonnet-4-5", MILLION
    )


def test_a_named_price_file_replaces_the_list_in_ours_or_litellms_format() -> None:
    ours = b'{"source": "mine", "date": "2026-01-01", "models": {"m": {"input": 1.0, "output": 2.0}}}'
    table = load_price_file(ours, "p.json")
    assert (table.source, table.date, table.lookup("m")) == ("mine", "2026-01-01", Price(1.0, 2.0))
    litellm = {
        "claude-x": {
            "input_cost_per_token": 3e-6, "output_cost_per_token": 15e-6, "cache_read_input_token_cost": 3e-7,
            "cache_creation_input_token_cost": 3.75e-6, "input_cost_per_token_above_200k_tokens": 6e-6,
            "output_cost_per_token_above_200k_tokens": 22.5e-6, "provider_specific_entry": {"fast": 6},
        },
        "sample_spec": {"max_tokens": 1},
    }  # fmt: skip
    price = load_price_file(json.dumps(litellm).encode(), "l.json").lookup("claude-x")
    assert price is not None and price.fast == 6 and price.above_200k is not None
    assert (price.input, price.output, price.above_200k.input) == pytest.approx((3.0, 15.0, 6.0))
    for bad in (b"[1]", b"{", b"{}"):
        with pytest.raises(ValueError, match=r"l\.json"):
            load_price_file(bad, "l.json")


@pytest.mark.parametrize("model", ["", "codex", "gpt-4.5-preview-x", "mistral-large-3", "llama-3"])
def test_an_unknown_model_gets_no_estimate(model: str) -> None:
    assert TABLE.lookup(model) is None
    assert TABLE.estimate(model, MILLION) is None


def test_the_config_file_overrides_and_adds_prices(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[pricing."gpt-5-codex"]\ninput = 2.0\noutput = 20.0\ncache-read = 0.5\n\n'
        '[pricing."my-model"]\ninput = 1.0\noutput = 2.0\n'
    )
    resolved = resolve_config(environ={"AZSD_RUNTIME_DIR": str(tmp_path)}, config_file=config)
    table = TABLE.with_overrides(resolved.pricing)
    assert table.lookup("gpt-5-codex-20250915") == Price(2.0, 20.0, 0.5, 0.0)
    assert table.estimate("my-model", Usage(input=1_000_000, output=1_000_000)) == pytest.approx(3.0)
    assert table.lookup("claude-sonnet-4-5") == TABLE.lookup("claude-sonnet-4-5")  # the rest stays
    config.write_text('[pricing."x"]\ninput = -1.0\noutput = 1.0\n')
    with pytest.raises(ConfigError, match=r'pricing\."x"'):
        resolve_config(environ={"AZSD_RUNTIME_DIR": str(tmp_path)}, config_file=config)
    config.write_text('[pricing."x"]\ninput = 1.0\n')
    with pytest.raises(ConfigError, match="output"):
        resolve_config(environ={"AZSD_RUNTIME_DIR": str(tmp_path)}, config_file=config)


def _line(timestamp: str, kind: str, **payload: object) -> bytes:
    return json.dumps({"timestamp": timestamp, "type": kind, "payload": payload}).encode()


def test_a_codex_turn_lasts_from_its_first_to_its_last_timestamp() -> None:
    p = CodexRolloutParser()
    lines = [
        _line("2025-09-25T21:12:10.000Z", "session_meta", id="t1", cwd="/w"),
        _line("2025-09-25T21:12:14.126Z", "event_msg", type="task_started"),
        _line("2025-09-25T21:12:15.000Z", "event_msg", type="user_message", message="hi"),
        _line("2025-09-25T21:12:21.626Z", "event_msg", type="task_complete", last_agent_message="done"),
        _line("2025-09-25T21:13:00.000Z", "event_msg", type="user_message", message="again"),
        _line("2025-09-25T21:13:02.500Z", "event_msg", type="task_complete", last_agent_message="ok"),
    ]
    done = [e for e in p.feed_all(lines) if isinstance(e, Complete)]
    assert [e.duration_ms for e in done] == [7500, 2500]  # task_started → task_complete; then line → line


def _render(event: Init | Complete) -> str:
    from azsd.events import encode_event, event_kind

    wire = WireEvent(seq=1, kind=event_kind(event), data=encode_event(event).decode())
    return "\n".join(line[6:] for line in plain_lines(event_lines(wire, Style(color=False))))


def test_an_init_prints_only_the_fields_it_has() -> None:
    assert _render(Init(cwd="", model="")) == "  · session started"
    assert _render(Init(cwd="/w", model="")) == "  · session started: cwd /w"
    assert _render(Init(cwd="/w", model="gpt-5")) == "  · session started: model gpt-5, cwd /w"
    assert "0.0s" not in _render(Complete(success=True, duration_ms=0, cost_usd=0.0))


@requires_corpus
def test_an_ingested_codex_rollout_shows_an_estimated_cost(azs: Azs, client: Client, worktree: Path) -> None:
    [source] = [f for f in corpus_files("codex-rollout") if f.name.startswith("agentcmd__rollout-")]
    sid = client.create_session(worktree).session.id
    azs.ok("ingest", str(source), "-s", str(sid))
    [report] = azs.json("usage", str(sid))
    [row] = report["sessions"]
    assert row["usage"]["cost_source"] == "estimated" and row["usage"]["cost_usd"] > 0
    parser = CodexRolloutParser()
    parser.feed_all(source.read_bytes().splitlines())
    assert row["usage"]["cost_usd"] == pytest.approx(TABLE.estimate("gpt-5-codex", parser.report.usage))
    assert report["total"]["cost_source"] == "estimated"
    [listed] = [s for s in azs.json("ls") if s["id"] == sid]
    assert listed["cost_source"] == "estimated"
    line = next(x for x in azs.ok("ls").splitlines() if f"S{sid} " in x)
    assert "~$" in line
    assert "total:" in azs.ok("usage", str(sid)) and "~$" in azs.ok("usage", str(sid))


@requires_corpus
def test_a_claude_run_keeps_its_reported_cost(azs: Azs, client: Client, worktree: Path) -> None:
    source = next(f for f in corpus_files("claude-stream-json") if "total_cost_usd" in f.read_text())
    objs = [json.loads(x) for x in source.read_text().splitlines() if x.strip()]
    reported = [o["total_cost_usd"] for o in objs if o.get("type") == "result" and "total_cost_usd" in o]
    sid = client.create_session(worktree).session.id
    azs.ok("ingest", str(source), "-s", str(sid))
    [report] = azs.json("usage", str(sid))
    [row] = report["sessions"]
    assert row["usage"]["cost_source"] == "reported"
    assert row["usage"]["cost_usd"] == pytest.approx(reported[-1])
    line = next(x for x in azs.ok("ls").splitlines() if f"S{sid} " in x)
    assert "~$" not in line


def test_a_price_carries_the_day_from_which_it_applies() -> None:
    """Issue 34: Opus 4.6 and Sonnet 4.6 requests over 200k after their 1M-context general availability
    (2026-03-13) still got the long-context premium (a 237k request $0.36875, not $0.19375)."""
    request = Usage(input=37_000, cache_read=200_000, output=500)
    before, after = (
        datetime(2026, 3, 12, 12, tzinfo=UTC).timestamp(),
        datetime(2026, 3, 13, tzinfo=UTC).timestamp(),
    )
    for model, base, premium in (("claude-opus-4-6", (5.0, 0.5, 25.0), (10.0, 1.0, 37.5)),
                                 ("claude-sonnet-4-6", (3.0, 0.3, 15.0), (6.0, 0.6, 22.5))):  # fmt: skip

        def priced(rates: tuple[float, float, float]) -> float:
            return (37_000 * rates[0] + 200_000 * rates[1] + 500 * rates[2]) / 1e6

        assert TABLE.message_cost(model, request, at=before) == pytest.approx(priced(premium))
        assert TABLE.message_cost(model, request, at=after) == pytest.approx(priced(base))
        assert TABLE.message_cost(model, request) == pytest.approx(priced(base))  # now
    # a date that is not one is refused where the prices are read
    with pytest.raises(ValueError, match="since: '13 March' is not a date"):
        load_price_file(
            b'{"source": "s", "date": "d", "models": {"m": {"input": 1, "output": 1, "since": "13 March"}}}',
            "p.json",
        )


def test_the_config_file_dates_a_price_too(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[pricing."m"]\ninput = 1.0\noutput = 2.0\nsince = "2026-01-01"\n[pricing."m".before]\n'
                      'input = 3.0\noutput = 4.0\n')  # fmt: skip
    [price] = resolve_config(environ={"AZSD_RUNTIME_DIR": "/tmp/x"}, config_file=config).pricing.values()
    assert price.at(datetime(2025, 6, 1, tzinfo=UTC).timestamp()).input == 3.0 and price.at(None).input == 1.0
    config.write_text('[pricing."m"]\ninput = 1.0\noutput = 2.0\nsince = "soon"\n')
    with pytest.raises(ConfigError, match="since 'soon' is not a date"):
        resolve_config(environ={"AZSD_RUNTIME_DIR": "/tmp/x"}, config_file=config)


def test_a_claude_messages_price_is_the_one_of_its_day() -> None:
    at = "2026-03-01T10:00:00.000Z"
    usage = {"input_tokens": 37_000, "cache_read_input_tokens": 200_000, "output_tokens": 500}
    message = {"id": "m1", "model": "claude-opus-4-6", "role": "assistant", "content": [], "usage": usage}
    line = {"type": "assistant", "timestamp": at, "sessionId": "s", "message": message}
    parser = ClaudeSessionParser()
    parser.feed(json.dumps(line).encode())
    later = ClaudeSessionParser()
    later.feed(json.dumps({**line, "timestamp": "2026-04-01T10:00:00.000Z"}).encode())
    assert parser.report.cost_usd is not None and later.report.cost_usd is not None
    assert parser.report.cost_usd.usd == pytest.approx((37_000 * 10 + 200_000 * 1 + 500 * 37.5) / 1e6)
    assert later.report.cost_usd.usd == pytest.approx((37_000 * 5 + 200_000 * 0.5 + 500 * 25) / 1e6)
