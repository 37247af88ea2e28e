"""`azs`: the sessions of AZUREAL stores, through the azsd daemon, for people and for scripts.

Exit status: 0 done, 1 an error (one line on stderr, ``azs: <message>``), 2 a usage error.

Which store: ``--root DIR`` names the worktree; by default it is the top level of the git worktree
around the current directory (``git rev-parse --show-toplevel``), else the current directory.

Which sessions ``azs ls`` shows: a store lives in one worktree, and AZUREAL labels each session with
the branch it was made on. By default ``ls`` shows the sessions labelled with the current branch
(``git rev-parse --abbrev-ref HEAD``) *and* the unlabelled ones (worktree ``""``: made outside git,
on a detached HEAD, or by a tool that named none), because those belong to whoever opens the store
and would otherwise show up nowhere. ``--worktree W`` shows exactly W's, ``--all-worktrees`` all.
``azs new`` labels a session with the current branch (``--worktree`` to choose).

``--json`` prints one JSON object a line (the protocol's own structs: session views, events,
replies, notifications), for scripts and for editor plugins that cannot link ZeroMQ. ``azs tail -f
--json`` streams a session's events (``{"seq", "kind", "data"}``) and its changes (``sessionchanged``
notifications; it ends after ``deleted``). ``azs watch --json`` streams every notification of a store,
with ``{"op": "gap", "missed": N, ...}`` when the daemon's PUB socket dropped some.

``azs run [-s S3] [--backend claude|codex] [--model M] PROMPT`` runs one agent turn (the agents'
command lines come from the config's ``claude-command`` / ``codex-command``): the clean prompt is
stored first, the agent's JSONL is followed live by the daemon and shown as it is stored (``--json``:
each stored event, ``{"seq", "kind", "data"}``). Exit status 0 when the turn succeeded, 1 when it
failed, 130 after Ctrl-C. ``azs follow FILE -s S3`` / ``azs unfollow FILE`` follow any agent file.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import Final

from azsd.errors import AzsdError
from azsd.ipc.protocol import PROTOCOL_VERSION

from ._commands import COMMANDS
from ._invocation import Invocation, UsageError

__all__ = ["main", "session_id"]

_SESSION: Final = re.compile(r"[Ss]?([0-9]+)")
_ID_MAX: Final = 2**63 - 1


def session_id(text: str) -> int:
    """A session as the user names it: ``S3``, ``s3`` or ``3``.

    >>> session_id("S3"), session_id("12")
    (3, 12)
    """
    match = _SESSION.fullmatch(text.strip())
    number = int(match.group(1)) if match else 0
    if not 0 < number <= _ID_MAX:
        raise argparse.ArgumentTypeError(f"not a session: {text!r} (expected S3 or 3)")
    return number


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"not a timeout in seconds: {text!r}")
    return value


def _count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return int(text)


def _add_globals(parser: argparse.ArgumentParser, *, here: bool) -> None:
    """The global options, accepted before and after the command (`azs ls --json` works too)."""
    default = None if here else argparse.SUPPRESS
    parser.add_argument(
        "--root",
        metavar="DIR",
        default=default,
        help="worktree whose store to use (default: the git top level here, else .)",
    )
    parser.add_argument(
        "--runtime-dir",
        metavar="DIR",
        default=default,
        help="where azsd's sockets are (default: $AZSD_RUNTIME_DIR, the config, $XDG_RUNTIME_DIR/azsd)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        default=False if here else argparse.SUPPRESS,
        help="one JSON object a line",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        metavar="S",
        default=5.0 if here else argparse.SUPPRESS,
        help="seconds to wait for a reply (default: 5)",
    )


_Add = Callable[..., argparse.ArgumentParser]

_LS_DESCRIPTION: Final = (
    "Sessions of this worktree's store, latest activity first. By default: those labelled with the "
    "current branch, and the unlabelled ones (made outside git or by a tool that named no worktree)."
)


def _session_commands(add: _Add) -> None:
    show = add("show", "a session and its events")
    show.add_argument("session", type=session_id, metavar="SESSION")
    rename = add("rename", "rename a session")
    rename.add_argument("session", type=session_id, metavar="SESSION")
    rename.add_argument("name")
    rm = add("rm", "delete a session (asks first)")
    rm.add_argument("session", type=session_id, metavar="SESSION")
    rm.add_argument("-y", "--yes", action="store_true", help="do not ask")
    context = add("context", "print the exact context-injected prompt for a next turn")
    context.add_argument("session", type=session_id, metavar="SESSION")
    context.add_argument("prompt")
    context.add_argument("--backend", choices=("claude", "codex"), default="claude")
    ingest = add("ingest", "store a finished agent JSONL file in a session")
    ingest.add_argument("file")
    ingest.add_argument("-s", "--session", type=session_id, metavar="SESSION", required=True)
    ingest.add_argument("--format", help="the file's format (default: detected)")
    follow = add("follow", "have azsd follow an agent JSONL file live into a session")
    follow.add_argument("file")
    follow.add_argument("-s", "--session", type=session_id, metavar="SESSION", required=True)
    follow.add_argument("--format", help="the file's format (default: detected)")
    unfollow = add("unfollow", "stop following a file, after storing what it holds now")
    unfollow.add_argument("file")
    tail = add("tail", "print a session's events; -f keeps following")
    tail.add_argument("session", type=session_id, metavar="SESSION")
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing new events")
    tail.add_argument("-n", "--lines", type=_count, metavar="N", help="start with the last N events")


def _store_commands(add: _Add) -> None:
    add("status", "is azsd running, and what it has open")
    ls = add("ls", "sessions of this worktree, latest activity first", _LS_DESCRIPTION)
    which = ls.add_mutually_exclusive_group()
    which.add_argument("--worktree", metavar="W", help="sessions labelled W only")
    which.add_argument("--all-worktrees", action="store_true", help="every session in the store")
    new = add("new", "create a session")
    new.add_argument("name", nargs="?", default=None)
    new.add_argument("--worktree", metavar="W", help="label (default: the current branch)")


_RUN_DESCRIPTION: Final = (
    "Run one agent turn: build the session's context into the prompt, store the clean prompt, start the "
    "agent (claude-command / codex-command in the config), and store and show its output live. Without "
    "-s, a new session named after the prompt. Exit status: 0 the turn succeeded, 1 it failed, 130 "
    "interrupted (the agent is stopped; what it wrote stays stored, marked failed)."
)


def _run_command(add: _Add) -> None:
    run = add("run", "run an agent turn in a session, stored and shown live", _RUN_DESCRIPTION)
    run.add_argument(
        "prompt", help="what to ask the agent (stored as given; the context is added for the agent)"
    )
    run.add_argument("-s", "--session", type=session_id, metavar="SESSION", help="default: a new session")
    run.add_argument("--backend", choices=("claude", "codex"), default="claude")
    run.add_argument("--model", metavar="M", help="the model to ask the agent for")
    run.add_argument("--worktree", metavar="W", help="label of a new session (default: the current branch)")


def _other_commands(add: _Add) -> None:
    search = add("search", "prompts and answers containing a text")
    search.add_argument("query")
    search.add_argument("--worktree", metavar="W", help="sessions labelled W only (default: all)")
    search.add_argument("--limit", type=_count, default=50)
    add("watch", "follow every change to the store")
    proto = add("protocol", "the wire protocol version; --schema its JSON Schema")
    proto.add_argument("--schema", action="store_true", help="print the JSON Schema of every message")


class _Version(argparse.Action):
    """`--version`: the version is looked up only when asked for (reading package metadata is slow)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        from ._version import __version__

        sys.stdout.write(f"azs {__version__} (protocol {PROTOCOL_VERSION})\n")
        parser.exit()


def parser() -> argparse.ArgumentParser:
    """The `azs` argument parser."""
    top = argparse.ArgumentParser(
        prog="azs",
        description="Sessions of AI coding agents in AZUREAL stores, through the azsd daemon.",
        epilog="Sessions are named S3 or 3. Exit status: 0 ok, 1 error, 2 usage.",
    )
    top.add_argument("--version", action=_Version, nargs=0, help="show the version and exit")
    _add_globals(top, here=True)
    common = argparse.ArgumentParser(add_help=False)
    _add_globals(common, here=False)
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help: str, description: str | None = None) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=description or help, parents=[common])

    _store_commands(add)
    _session_commands(add)
    _run_command(add)
    _other_commands(add)
    return top


def _fail(message: str, status: int) -> None:
    sys.stderr.write(f"azs: {' '.join(message.split())}\n")
    sys.exit(status)


def main(argv: Sequence[str] | None = None) -> None:
    """Run `azs` with `argv` (default: the command line); exits with a status other than 0 on failure."""
    args = parser().parse_args(argv)
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    run = Invocation(args)
    try:
        status = COMMANDS[args.command](run)
    except UsageError as exc:
        _fail(str(exc), 2)
    except AzsdError as exc:
        _fail(str(exc), 1)
    except KeyboardInterrupt:
        status = 130
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at exit
        status = 1
    finally:
        run.close()
    if status:
        sys.exit(status)


if __name__ == "__main__":
    main()
