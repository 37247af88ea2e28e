"""The `azs` reference, written once: from the argument parser to the CLI reference of the docs
(docs/cli.md), the man page (docs/azs.1) and fish's completions (bash's and zsh's come from shtab).

``python -m azsd_client.commands.reference`` writes both files (`make docs` runs it); with
``--check`` it fails when either is not what the parser makes now (tests/test_docs.py).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Option", "Page", "fish", "markdown", "pages", "roff"]

_DOCS: Final = Path(__file__).resolve().parents[3] / "docs"


@dataclass(frozen=True)
class Option:
    """One argument of a command: its flags (none for a positional), what it takes, its help."""

    flags: tuple[str, ...]
    metavar: str
    help: str
    choices: tuple[str, ...]
    takes_value: bool

    @property
    def shown(self) -> str:
        if not self.flags:
            return self.metavar
        value = f" {self.metavar}" if self.takes_value else ""
        return ", ".join(self.flags) + value


@dataclass(frozen=True)
class Page:
    """One command (or `azs` itself, named ""): its help, description, usage and arguments."""

    name: str
    help: str
    description: str
    usage: str
    options: tuple[Option, ...]


def pages(parser: argparse.ArgumentParser) -> list[Page]:
    """`azs` itself, then each command in the order `azs --help` lists them."""
    top = _page("", parser.description or "", parser)
    found = [top]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, sub in action.choices.items():
                found.append(_page(name, helps.get(name, ""), sub))
    return found


def _page(name: str, help_: str, parser: argparse.ArgumentParser) -> Page:
    options = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        metavar = (
            action.metavar
            if isinstance(action.metavar, str)
            else (action.dest.upper() if action.option_strings else action.dest)
        )
        takes = action.nargs != 0
        choices = (
            tuple(str(c) for c in action.choices)
            if action.choices and not isinstance(action.choices, dict)
            else ()
        )
        options.append(Option(tuple(action.option_strings), str(metavar), _help(action), choices, takes))
    usage = " ".join(parser.format_usage().split())
    usage = usage.removeprefix("usage: ")
    return Page(name, help_, parser.description or help_, usage, tuple(options))


def _help(action: argparse.Action) -> str:
    text = action.help or ""
    if "%(" in text:
        text = text % {
            "default": action.default,
            "prog": "azs",
            "choices": ", ".join(map(str, action.choices or ())),
        }
    return " ".join(text.split())


# -- the CLI reference (Markdown) --------------------------------------------------------------------


def markdown(parser: argparse.ArgumentParser) -> str:
    """docs/cli.md: every command, its usage and its options."""
    top, *commands = pages(parser)
    out = [
        "# Command-line reference",
        "",
        "<!-- Generated from azs's argument parser by `make docs` (python -m azsd_client.commands.reference);"
        " do not edit. -->",
        "",
        top.description,
        "",
        "## Global options",
        "",
        "They go before or after the command (`azs --json ls`, `azs ls --json`).",
        "",
        *_option_table([o for o in top.options if o.flags]),
        "",
        "## Commands",
        "",
        "| command | what it does |",
        "|---|---|",
        *(f"| [`azs {c.name}`](#azs-{c.name}) | {_cell(c.help)} |" for c in commands),
    ]
    shared = {o.flags for o in top.options}
    for command in commands:
        own = [o for o in command.options if o.flags not in shared]
        out += [
            "",
            f"### azs {command.name}",
            "",
            _cell(command.description),
            "",
            "```",
            command.usage,
            "```",
        ]
        if own:
            out += ["", *_option_table(own)]
    out.append("")
    return "\n".join(out)


def _option_table(options: Sequence[Option]) -> list[str]:
    rows = ["| argument | meaning |", "|---|---|"]
    for option in options:
        choices = f" (one of: {', '.join(option.choices)})" if option.choices else ""
        rows.append(f"| `{_cell(option.shown)}` | {_cell(option.help)}{_cell(choices)} |")
    return rows


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


# -- the man page (roff) -----------------------------------------------------------------------------


def roff(parser: argparse.ArgumentParser, version: str) -> str:
    """azs(1): the same pages, as man reads them."""
    top, *commands = pages(parser)
    out = [
        f'.TH AZS 1 "" "azs {_esc(version)}" "User Commands"',
        ".ad l",
        ".SH NAME",
        "azs \\- " + _esc(top.description.rstrip(".")),
        ".SH SYNOPSIS",
        ".B azs",
        "[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR]",
        ".SH DESCRIPTION",
        _esc(parser.epilog or ""),
        ".SH OPTIONS",
    ]
    for option in top.options:
        if option.flags:
            out += [".TP", f"\\fB{_esc(option.shown)}\\fR", _esc(option.help)]
    out.append(".SH COMMANDS")
    shared = {o.flags for o in top.options}
    for command in commands:
        out += [
            ".SS " + _esc(f"azs {command.name}"),
            _esc(command.description),
            ".PP",
            f"\\fB{_esc(command.usage)}\\fR",
        ]
        for option in command.options:
            if option.flags in shared:
                continue
            choices = f" (one of: {', '.join(option.choices)})" if option.choices else ""
            out += [".TP", f"\\fB{_esc(option.shown)}\\fR", _esc(option.help + choices)]
    out += [
        ".SH FILES",
        ".TP",
        "\\fI<worktree>/.azureal/sessions.azs\\fR",
        "a worktree's session store (AZUREAL's format; azsd is its only writer)",
        ".TP",
        "\\fI$XDG_CONFIG_HOME/azsd/config.toml\\fR",
        "the settings of azsd and azs",
        ".SH SEE ALSO",
        "\\fBazsd\\fR, the documentation in docs/ (docs/reference.md, docs/cli.md)",
        "",
    ]
    return "\n".join(out)


def _esc(text: str) -> str:
    text = " ".join(text.split()).replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text)


# -- fish's completions --------------------------------------------------------------------------------


def fish(parser: argparse.ArgumentParser) -> str:
    """A fish completion script: the commands, then each command's options."""
    top, *commands = pages(parser)
    names = " ".join(c.name for c in commands)
    out = [
        "# azs completions for fish (azs completion fish > ~/.config/fish/completions/azs.fish)",
        "complete -c azs -f",
    ]
    shared = {o.flags for o in top.options}
    for option in top.options:
        if option.flags:
            out.append(_fish_option("", option))
    for command in commands:
        when = f"'not __fish_seen_subcommand_from {names}'"
        out.append(f"complete -c azs -n {when} -a {command.name} -d {_fish_quote(command.help)}")
        for option in command.options:
            if option.flags and option.flags not in shared:
                out.append(_fish_option(command.name, option))
            elif not option.flags and option.choices:  # a positional of a few words (a shell)
                when = f"'__fish_seen_subcommand_from {command.name}'"
                words = _fish_quote(" ".join(option.choices))
                out.append(f"complete -c azs -n {when} -a {words} -d {_fish_quote(option.help[:80])}")
    out.append("")
    return "\n".join(out)


def _fish_option(command: str, option: Option) -> str:
    when = f" -n '__fish_seen_subcommand_from {command}'" if command else ""
    parts = [f"complete -c azs{when}"]
    for flag in option.flags:
        parts.append(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}")
    if option.takes_value:
        parts.append("-r")
        if option.choices:
            parts.append("-a " + _fish_quote(" ".join(option.choices)))
    parts.append("-d " + _fish_quote(option.help[:80]))
    return " ".join(parts)


def _fish_quote(text: str) -> str:
    return "'" + " ".join(text.split()).replace("\\", "\\\\").replace("'", "\\'") + "'"


def main(argv: Sequence[str] | None = None) -> int:
    """Write docs/cli.md and docs/azs.1 (``--check``: say which is out of date, exit 1)."""
    from azsd_client._version import __version__

    from .parser import parser

    check = "--check" in (argv if argv is not None else sys.argv[1:])
    made = {_DOCS / "cli.md": markdown(parser()), _DOCS / "azs.1": roff(parser(), __version__)}
    stale = [path for path, text in made.items() if not path.is_file() or path.read_text() != text]
    if check:
        for path in stale:
            print(f"{path} is out of date: run `make docs`", file=sys.stderr)
        return 1 if stale else 0
    for path in stale:
        path.write_text(made[path])
    return 0


if __name__ == "__main__":
    sys.exit(main())
