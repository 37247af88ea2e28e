"""Nothing another program, an agent or a teammate wrote acts on the user's terminal (issue 37): every
human line `azs` prints goes through one filter (azsd_client.render.term.terminal_safe), which keeps
azs's own colours and shows every other control character as a symbol; JSON lines escape the C1
controls that JSON leaves raw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from azsd_client.render.term import terminal_safe
from tests.test_cli import Azs, azs
from tests.test_client import daemon, worktree

__all__ = ["azs", "daemon", "worktree"]  # the fixtures, re-exported for pytest

#: A clipboard write (OSC 52), a screen clear, a link (OSC 8) to a script, a bell, a carriage
#: return that would hide what is before it, and C1's CSI.
EVIL = "fix \x1b]52;c;cHduZWQ=\x07 \x1b[2J\x1b]8;;javascript:alert(1)\x1b\\click\x1b]8;;\x1b\\ \rok\x9b31m"
RAW = ("\x1b]", "\x1b[2J", "\x07", "\r", "\x9b")


def raw_in(text: str) -> list[str]:
    return [r for r in RAW if r in text]


@pytest.mark.parametrize("color", ["never", "always"])
def test_names_reach_the_terminal_harmless(azs: Azs, worktree: Path, color: str) -> None:
    code, _, err = azs("new", EVIL)
    assert code == 0, err
    for command in (["ls"], ["ls", "--all-worktrees"], ["show", "1"], ["usage", "--by", "session"]):
        code, out, err = azs("--color", color, *command)
        assert code == 0, err
        assert not raw_in(out) and not raw_in(err), (command, out)
        assert "␛]52;c;cHduZWQ=␇" in out or "␛]52" in out or command[0] == "usage", (command, out)
    code, out, err = azs("show", "S999")  # an error message names what it was given
    assert not raw_in(err)


def test_json_lines_hold_the_name_exactly_and_nothing_raw(azs: Azs, worktree: Path) -> None:
    azs("new", EVIL)
    code, out, _ = azs("--json", "ls")
    assert code == 0 and not raw_in(out)
    (row,) = [json.loads(line) for line in out.splitlines()]
    assert row["name"] == EVIL  # the value itself is kept: a program reading the JSON gets it whole


def test_our_own_colours_pass() -> None:
    assert terminal_safe("\x1b[1;33mS3\x1b[0m") == "\x1b[1;33mS3\x1b[0m"
    assert terminal_safe("tab\tand\nnewline") == "tab\tand\nnewline"
