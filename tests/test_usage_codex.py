"""Codex usage people can bill by: a `codex exec --json` run (which never names its model) priced at
the model its command line or Codex's config started it with, and `azs usage --by model` showing
the input as ccusage's Codex report counts it (cached included) in a column of its own.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import msgspec
import pytest

from azsd.pricing import default_table
from tests.conftest import CORPUS, requires_corpus
from tests.test_run import World, daemon, world

__all__ = ["daemon", "world"]  # the fixtures, re-exported for pytest

pytestmark = [pytest.mark.corpus, requires_corpus]

EXEC = CORPUS / "codex-exec-json" / "rust-claude-codes__multi_command.jsonl"


def exec_usage(path: Path) -> tuple[int, int, int]:
    """The input (cached included), the cached part and the output of a `codex exec --json` file."""
    usage = {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0}
    for line in path.read_bytes().splitlines():
        obj = msgspec.json.decode(line)
        if obj.get("type") == "turn.completed":
            for key in usage:
                usage[key] += obj["usage"].get(key, 0)
    return usage["input_tokens"], usage["cached_input_tokens"], usage["output_tokens"]


def test_a_codex_exec_run_is_priced_at_the_model_its_config_names(world: World, tmp_path: Path) -> None:
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text('model = "gpt-5.1-codex-mini"\n')
    world.configure(replay=EXEC, options=("--delay", "0.01"))
    done = subprocess.run(
        world.argv("run", "--backend", "codex", "go"), cwd=world.root,
        env={**world.env, "CODEX_HOME": str(home)},
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, world.explain(done)
    listed = subprocess.run(
        world.argv("--json", "usage", "--by", "model"), env=world.env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    (row,) = msgspec.json.decode(listed.stdout)["periods"]
    assert row["period"] == row["model"] == "gpt-5.1-codex-mini"
    total_in, cached, out = exec_usage(EXEC)
    u = row["usage"]
    assert (u["input"] + u["cache_read"], u["cache_read"], u["output"]) == (total_in, cached, out)
    assert u["cost_source"] == "estimated"
    price = default_table().lookup("gpt-5.1-codex-mini")
    assert price is not None
    want = ((total_in - cached) * price.input + cached * price.cache_read + out * price.output) / 1e6
    assert u["cost_usd"] == pytest.approx(want)
    table = subprocess.run(
        world.argv("usage", "--by", "model"), env={**world.env, "COLUMNS": "200"}, capture_output=True,
        text=True, timeout=60, check=False,
    ).stdout.splitlines()  # fmt: skip
    assert table[0].split()[-1] == "in+cached"
    assert table[1].split()[0] == "gpt-5.1-codex-mini" and table[1].split()[-1] == f"{total_in:,}"
