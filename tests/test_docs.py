"""The front door (issue 38): every command the README and docs/ show exists with the options shown,
every relative link resolves, the generated reference and man page are current, and the completion
scripts complete commands and options in a real shell."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.cli import _parser as azsd_parser
from azsd_client.commands.parser import parser as azs_parser
from azsd_client.commands.reference import main as reference_main

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_SHELLS = ("", "sh", "bash", "console", "shell")


def _commands(page: Path) -> Iterator[tuple[int, list[str]]]:
    """Each `azs …` / `azsd …` command in the page's shell blocks: (line number, its words)."""
    text = page.read_text()
    for block in _FENCE.finditer(text):
        if block.group(1) not in _SHELLS:
            continue
        first = text.count("\n", 0, block.start(2)) + 1
        for offset, line in enumerate(block.group(2).splitlines()):
            line = line.removeprefix("$ ").strip()
            for part in re.split(r"&&|\|\||;|\|", line.split(" #", 1)[0]):
                try:
                    words = shlex.split(part, comments=True)
                except ValueError:
                    continue
                cut = next((i for i, w in enumerate(words) if w.startswith(("<", ">", "2>"))), len(words))
                words = words[:cut]  # (a redirection, and what it names)
                if any(w.startswith("[") or "|" in w or "…" in w for w in words):
                    continue  # a synopsis (`azs import claude|codex [--all]`), not a command
                if words and words[0] in ("azs", "azsd", ".venv/bin/azs", ".venv/bin/azsd"):
                    yield first + offset, words


def _parses(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    """None when `parser` takes `argv`, else what it said."""
    try:
        parser.parse_args(argv)
    except SystemExit as exc:
        return f"exit {exc.code}"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_shown_exists_with_its_options(page: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = []
    for line, words in _commands(page):
        parser = azsd_parser() if words[0].endswith("azsd") else azs_parser()
        argv = ["--help"] if words[1:] in ([], ["--help"]) else words[1:]
        if argv == ["--help"] or "--help" in argv or "--version" in argv:
            continue
        said = _parses(parser, argv)
        if said is not None:
            wrong.append(f"{page.name}:{line}: {' '.join(words)}: {capsys.readouterr().err.strip()}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in _LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{page.name}: links to nothing: {broken}"


def test_the_readme_is_read_in_five_minutes_with_a_quick_start_up_front() -> None:
    text = (ROOT / "README.md").read_text()
    lines = text.splitlines()
    assert len(lines) <= 300
    start = next(i for i, line in enumerate(lines) if line.startswith("## Quick start"))
    assert start < 80
    for command in ("azs ls", "azs show", "azs search", "azs usage", "azs statusline", "azs web"):
        assert command in text, command


def test_the_cli_reference_and_man_page_are_what_the_parser_makes() -> None:
    assert reference_main(["--check"]) == 0, "docs/cli.md or docs/azs.1 is out of date: run `make docs`"
    text = (ROOT / "docs" / "cli.md").read_text()
    for action in azs_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name in action.choices:
                assert f"### azs {name}" in text


@pytest.mark.skipif(shutil.which("man") is None, reason="man is not installed")
def test_man_reads_the_man_page() -> None:
    done = subprocess.run(
        ["man", "-l", str(ROOT / "docs" / "azs.1")],
        capture_output=True,
        text=True,
        env={"MANPAGER": "cat", "PAGER": "cat", "MANWIDTH": "100", "PATH": "/usr/bin:/bin"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "azs show" in done.stdout and "--full" in done.stdout and "completion" in done.stdout


def _azs(*args: str) -> str:
    return subprocess.run(
        [sys.executable, "-m", "azsd_client", *args], capture_output=True, text=True, check=True, timeout=60
    ).stdout


def _bash_completes(script: Path, words: list[str]) -> list[str]:
    line = " ".join(words)
    program = (
        f"source {shlex.quote(str(script))}; COMP_WORDS=({' '.join(map(shlex.quote, words))}); "
        f"COMP_CWORD={len(words) - 1}; COMP_LINE={shlex.quote(line)}; COMP_POINT={len(line)}; "
        "_shtab_azs azs; printf '%s\\n' \"${COMPREPLY[@]}\""
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash is not installed")
def test_bash_completes_commands_and_options(tmp_path: Path) -> None:
    script = tmp_path / "azs.bash"
    script.write_text(_azs("completion", "bash"))
    assert {"show", "status", "search"} <= set(_bash_completes(script, ["azs", "s"]))
    assert "--full" in _bash_completes(script, ["azs", "show", "--fu"])
    assert set(_bash_completes(script, ["azs", "completion", ""])) >= {"bash", "zsh", "fish"}


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_scripts_name_every_command_and_parse(shell: str, tmp_path: Path) -> None:
    script = _azs("completion", shell)
    for name in ("show", "prune", "completion", "web"):
        assert (f"-a {name} " if shell == "fish" else name) in script
    if shell == "fish":
        assert "__fish_seen_subcommand_from show' -l full" in script
    else:
        assert script.startswith("#compdef azs") and "--full" in script
    if shutil.which(shell) is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{shell} is not installed (.ci/run installs it)")
        pytest.skip(f"{shell} is not installed: only the script's text is checked")
    path = tmp_path / f"azs.{shell}"
    path.write_text(script)
    check = [shell, "-n", str(path)] if shell == "zsh" else [shell, "--no-execute", str(path)]
    done = subprocess.run(check, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    if shell == "fish":  # fish completes a command line given to it: the real completion
        for line, wanted in (("azs sh", "show"), ("azs show --fu", "--full"), ("azs completion ", "zsh")):
            said = subprocess.run(
                ["fish", "-c", f"source {shlex.quote(str(path))}; complete -C {shlex.quote(line)}"],
                capture_output=True, text=True, timeout=60, check=True,
            ).stdout  # fmt: skip
            assert wanted in [row.split("\t", 1)[0] for row in said.splitlines()], (line, said)
