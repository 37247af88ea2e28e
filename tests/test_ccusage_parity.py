"""`azs import claude` then `azs usage` counts what ccusage counts, on the corpus's Claude sessions.

The corpus's session files are laid out as Claude writes them, ``<config>/projects/<slug>/<id>.jsonl``,
one project each, and one of them given a sub-agent with usage in 2.1.x's
``<id>/subagents/agent-<x>.jsonl`` (a corpus session file put there). `azs import claude --project …`
brings each project in through the real daemon; ccusage 18 (`session --json --offline`) reads the
same directory. Per project and model, input, cache read and cache write must be equal. Output may
be larger on our side, never smaller: ccusage keeps a message's first streamed line, whose
`output_tokens` is often a snapshot, and we keep the largest (the final count).

ccusage is found at `$AZSD_CCUSAGE_DIR/node_modules/.bin/ccusage` (where `.ci/run` installs it), or
on PATH, or installed with npm into that directory (default ``~/.cache/azsd/ccusage``). Without
node, npm or the network the test is skipped, except under `CI=true`, where it fails.
Set `AZSD_CCUSAGE_TABLE=FILE` to have the per-file comparison written there as a Markdown table.

A second test holds each case where azs and ccusage once differed, written line by line: a session's
`--resume` copy, an orphaned sub-agent file, Opus 4.7, a model without a price and a `<synthetic>`
line; azs is checked against the lines themselves, and against ccusage where ccusage is right (all
but the unpriced model, which ccusage prices at $0).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from azsd.ingest.importer import claude_slug
from tests.conftest import CORPUS, requires_corpus
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree
from tests.test_usage_counted import prompt
from tests.test_usage_prices import assistant, write

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest

pytestmark = [pytest.mark.corpus, requires_corpus]

SESSIONS = CORPUS / "claude-session"
#: The corpus file put under another session's `subagents/` (and not imported as a session).
SUBAGENT = "claudeless__v2.1.29_hook-stop__d266fdf5.jsonl"
PARENT = "claudeless__v2.1.29_compact-command__8aa54c1d.jsonl"
CORPUS_SUBAGENT = (
    "claudeless__v2.1.29_compact-command__8aa54c1d__subagents__agent-aprompt_suggestion-029c25.jsonl"
)
VERSION = "18"
OPUS_4_7 = "claude-opus-4-7"
INSTALL_TIMEOUT_S = 180


def unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"ccusage is needed in CI: {reason}")
    pytest.skip(reason)


def ccusage() -> list[str]:
    """The command that runs ccusage (installed with npm into its cache directory when missing)."""
    cache = Path(os.environ.get("AZSD_CCUSAGE_DIR") or Path.home() / ".cache" / "azsd" / "ccusage")
    installed = cache / "node_modules" / ".bin" / "ccusage"
    if not installed.exists() and shutil.which("ccusage"):
        return [str(shutil.which("ccusage"))]
    if not shutil.which("node"):
        unavailable("node is not installed")
    if not installed.exists():
        npm = shutil.which("npm") or ""
        if not npm:
            unavailable("npm is not installed (ccusage comes from the npm registry)")
        command = [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(cache)]
        try:
            done = subprocess.run(
                [*command, f"ccusage@{VERSION}"], capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S,
                check=False,
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            unavailable(f"npm install ccusage@{VERSION} took over {INSTALL_TIMEOUT_S} s (no network?)")
        if done.returncode != 0 or not installed.exists():
            unavailable(f"npm install ccusage@{VERSION} failed (no network?): {done.stderr.strip()[-300:]}")
    return [str(installed)]


def session_id_of(path: Path) -> str:
    lines = path.read_text().splitlines()
    return str(next(json.loads(line)["sessionId"] for line in lines if '"sessionId"' in line))


def lay_out(config: Path, projects: Path) -> dict[str, str]:
    """The corpus sessions under `config/projects/`, one project directory each; the slug of each
    corpus file (sub-agent files by their parent's slug)."""
    slugs: dict[str, str] = {}
    for source in sorted(SESSIONS.glob("*.jsonl")):
        if source.name in (SUBAGENT, CORPUS_SUBAGENT):
            continue
        project = projects / source.stem.replace(".", "-")
        project.mkdir(parents=True)
        slug = claude_slug(project)
        directory = config / "projects" / slug
        directory.mkdir(parents=True)
        uuid = session_id_of(source)
        shutil.copyfile(source, directory / f"{uuid}.jsonl")
        slugs[source.name] = slug
        if source.name == PARENT:
            subagents = directory / uuid / "subagents"
            subagents.mkdir(parents=True)
            shutil.copyfile(SESSIONS / CORPUS_SUBAGENT, subagents / "agent-aprompt_suggestion-029c25.jsonl")
            shutil.copyfile(SESSIONS / SUBAGENT, subagents / "agent-a1b2c3d4.jsonl")
            slugs[SUBAGENT] = slugs[CORPUS_SUBAGENT] = slug
    return slugs


Counts = dict[str, int]


def ours(azs: Azs, projects: Path, slugs: dict[str, str]) -> dict[tuple[str, str], Counts]:
    """What `azs import claude` then `azs usage --by session --by-model` count, by (slug, model)."""
    by_session: dict[int, str] = {}
    for project in sorted(projects.iterdir()):
        (summary,) = azs.json("import", "claude", "--project", str(project))
        by_session.update({r["session"]: claude_slug(project) for r in summary["imported"]})
    assert sorted(set(by_session.values())) == sorted(set(slugs.values()))
    (reply,) = azs.json("usage", "--by", "session", "--by-model", "--all-worktrees")
    found: dict[tuple[str, str], Counts] = {}
    for period in reply["periods"]:
        u = period["usage"]
        found[(by_session[period["session"]], period["model"])] = {
            "input": u["input"], "output": u["output"], "cache_read": u["cache_read"],
            "cache_write": u["cache_write"],
        }  # fmt: skip
    return found


def theirs(config: Path) -> dict[tuple[str, str], Counts]:
    """What `ccusage session --json` counts, by (slug, model): a 2.1.x sub-agent file is its own
    "session" (named `subagents`, its project `<slug>/<id>`), counted here with its parent's slug."""
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "TZ": "UTC", "NO_COLOR": "1"}
    done = subprocess.run(
        [*ccusage(), "session", "--json", "--offline"], capture_output=True, text=True, env=env, timeout=60,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    found: dict[tuple[str, str], Counts] = {}
    for session in json.loads(done.stdout)["sessions"]:
        slug = (
            session["projectPath"].split("/")[0]
            if session["sessionId"] == "subagents"
            else session["sessionId"]
        )
        for model in session["modelBreakdowns"]:
            counts = found.setdefault(
                (slug, model["modelName"]), dict.fromkeys(("input", "output", "cache_read", "cache_write"), 0)
            )
            counts["input"] += model["inputTokens"]
            counts["output"] += model["outputTokens"]
            counts["cache_read"] += model["cacheReadTokens"]
            counts["cache_write"] += model["cacheCreationTokens"]
    return found


def test_import_then_usage_counts_what_ccusage_counts(azs: Azs, tmp_path: Path, monkeypatch: Any) -> None:
    config, projects = tmp_path / "claude", tmp_path / "projects"
    slugs = lay_out(config, projects)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    mine, peer = ours(azs, projects, slugs), theirs(config)
    assert peer, "ccusage found no usage: the layout is not what it reads"
    with_tokens = {key for key, counts in mine.items() if any(counts.values())}
    assert with_tokens == set(peer), "not the same projects and models"
    for key in sorted(peer):
        for kind in ("input", "cache_read", "cache_write"):
            assert mine[key][kind] == peer[key][kind], (
                f"{key}: {kind} {mine[key][kind]} != ccusage's {peer[key][kind]}"
            )
        assert mine[key]["output"] >= peer[key]["output"], f"{key}: output below ccusage's first snapshot"
    table = os.environ.get("AZSD_CCUSAGE_TABLE")
    if table:
        Path(table).write_text(markdown(slugs, mine, peer))


def markdown(
    slugs: dict[str, str], mine: dict[tuple[str, str], Counts], peer: dict[tuple[str, str], Counts]
) -> str:
    """The per-file comparison, one row per (project, model): azs / ccusage in each cell."""
    lines = [
        "| file | model | input (azs / ccusage) | cache read | cache write | output |",
        "|---|---|---|---|---|---|",
    ]
    for name, slug in sorted(slugs.items()):
        if name in (SUBAGENT, CORPUS_SUBAGENT):
            continue  # counted with their parent's project
        label = f"{name} + its sub-agents" if name == PARENT else name
        for (s, model), counts in sorted(mine.items()):
            if s == slug and any(counts.values()):
                other = peer.get((s, model), {})
                kinds = ("input", "cache_read", "cache_write", "output")
                cells = [f"{counts[k]:,} / {other.get(k, 0):,}" for k in kinds]
                lines.append(f"| {label} | {model} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


# -- where azs and ccusage once differed ------------------------------------------------------------

A, B = "aaaaaaaa-1111-4000-8000-000000000001", "bbbbbbbb-1111-4000-8000-000000000002"
GONE = "cccccccc-1111-4000-8000-000000000003"
UNPRICED = "acme-coder-9"
NOTHING = {"input_tokens": 0, "output_tokens": 0}


def differences(slug: Path) -> list[Path]:
    """A project directory holding each case: a session on Opus 4.7, its `--resume` copy (the same
    message ids and request ids, then one more turn), an orphaned 2.0.x sub-agent file, a model
    without a price, and a `<synthetic>` line (Claude's own made-up reply: no tokens)."""
    usage = {"input_tokens": 1200, "output_tokens": 300, "cache_read_input_tokens": 40_000,
             "cache_creation_input_tokens": 2_000}  # fmt: skip
    original = write(slug / f"{A}.jsonl", [
        prompt(A, "one", "2026-05-02T10:00:00Z"), assistant(1, OPUS_4_7, usage, sessionId=A),
        prompt(A, "two", "2026-05-02T10:01:00Z"),
        assistant(2, OPUS_4_7, {**usage, "input_tokens": 50}, at="2026-05-02T10:01:05Z", sessionId=A),
        assistant(3, "<synthetic>", NOTHING, at="2026-05-02T10:02:00Z", sessionId=A),
    ])  # fmt: skip
    copied = [{**json.loads(line), "sessionId": B} for line in original.read_text().splitlines()]
    resumed = write(slug / f"{B}.jsonl", [
        *copied, prompt(B, "three", "2026-05-02T12:00:00Z"),
        assistant(4, UNPRICED, {"input_tokens": 77, "output_tokens": 7}, at="2026-05-02T12:00:05Z",
                  sessionId=B),
    ])  # fmt: skip
    orphan = write(slug / "agent-0f0f0f0f.jsonl", [
        prompt(GONE, "task", "2026-05-02T13:00:00Z"),
        assistant(5, OPUS_4_7, {"input_tokens": 900, "output_tokens": 90}, at="2026-05-02T13:00:05Z",
                  sessionId=GONE),
    ])  # fmt: skip
    for n, path in enumerate((original, resumed, orphan)):
        os.utime(path, (1_700_000_000 + n, 1_700_000_000 + n))
    return [original, resumed, orphan]


def test_copies_orphans_new_models_and_synthetic_lines_count_as_billed(
    azs: Azs, tmp_path: Path, monkeypatch: Any
) -> None:
    project, config = tmp_path / "proj", tmp_path / "claude"
    project.mkdir()
    slug = config / "projects" / claude_slug(project)
    slug.mkdir(parents=True)
    files = differences(slug)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    (summary,) = azs.json("import", "claude", "--project", str(project))
    assert summary["created"] == 3, "the orphaned sub-agent is a session of its own"
    (reply,) = azs.json("usage", "--by", "day", "--by-model", "--all-worktrees", "--timezone", "UTC")
    mine = {p["model"]: p["usage"] for p in reply["periods"]}
    # against the lines themselves: each message id once, nothing of <synthetic>
    per_model: dict[str, dict[str, dict[str, int]]] = {}
    for path in files:
        for obj in map(json.loads, path.read_text().splitlines()):
            message = obj.get("message") or {}
            if obj["type"] != "assistant" or message["model"] == "<synthetic>":
                continue
            per_model.setdefault(message["model"], {}).setdefault(message["id"], message["usage"])
    assert set(mine) == set(per_model) == {OPUS_4_7, UNPRICED}
    for model, messages in per_model.items():
        assert mine[model]["input"] == sum(u["input_tokens"] for u in messages.values())
        read = sum(u.get("cache_read_input_tokens", 0) for u in messages.values())
        assert mine[model]["cache_read"] == read
    opus = mine[OPUS_4_7]
    fresh = opus["input"] * 5 + opus["output"] * 25
    cached = opus["cache_read"] * 0.5 + opus["cache_write"] * 6.25
    at_list_prices = fresh + cached
    assert opus["cost_usd"] == pytest.approx(at_list_prices / 1e6)  # $5/$25, not Opus 4's $15/$75
    assert mine[UNPRICED]["cost_source"] == "unpriced" and reply["total"]["unpriced_tokens"] == 84
    # against ccusage, which dedups across files, counts the orphan and prices Opus 4.7 alike
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "TZ": "UTC", "NO_COLOR": "1"}
    done = subprocess.run(
        [*ccusage(), "daily", "--json", "--offline", "--breakdown"], capture_output=True, text=True, env=env,
        timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    theirs_ = {
        b["modelName"]: b for day in json.loads(done.stdout)["daily"] for b in day["modelBreakdowns"]
        if b["inputTokens"] or b["outputTokens"]
    }  # fmt: skip
    assert set(theirs_) == set(mine)
    for model, counts in mine.items():
        peer = theirs_[model]
        assert (counts["input"], counts["cache_read"], counts["cache_write"]) == (
            peer["inputTokens"], peer["cacheReadTokens"], peer["cacheCreationTokens"]
        )  # fmt: skip
        assert counts["output"] >= peer["outputTokens"]
    assert opus["cost_usd"] == pytest.approx(theirs_[OPUS_4_7]["cost"])
    assert theirs_[UNPRICED]["cost"] == 0  # ccusage's $0 for a model it cannot price; ours says "?"
