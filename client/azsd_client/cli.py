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

``azs search`` and ``azs usage`` cover the same sessions as ``ls`` by default (``--worktree W``,
``--all-worktrees``). ``azs fork S3 --at 12`` copies a session's first events into a new one;
``archive``/``unarchive`` hide and show a session; ``rm`` keeps its forks unless ``--with-forks``.
``azs export S3 [-o FILE]`` writes a document (stdout holds it, so reports go to stderr). ``azs backup``,
``azs import claude|codex`` and ``azs doctor [--reindex]`` look after the store.
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
    rm = add("rm", "delete a session (asks first); its forks stay unless --with-forks")
    rm.add_argument("session", type=session_id, metavar="SESSION")
    rm.add_argument("-y", "--yes", action="store_true", help="do not ask")
    rm.add_argument("--with-forks", action="store_true", help="delete the sessions forked from it too")
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
    archived = ls.add_mutually_exclusive_group()
    archived.add_argument("--archived", action="store_true", help="archived sessions only")
    archived.add_argument("--all", action="store_true", help="archived sessions too (marked)")
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


def _scope(parser: argparse.ArgumentParser, default: str) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--worktree", metavar="W", help="sessions labelled W only")
    which.add_argument("--all-worktrees", action="store_true", help=f"every session in the store ({default})")


_SEARCH_DESCRIPTION: Final = (
    "Full-text search of prompts, answers, tool calls and results and plans, best match first. QUERY is "
    'SQLite FTS5 syntax (panic AND unwrap, "exact phrase", pars*); --words takes it as plain words that '
    "must all appear. By default it searches the sessions `azs ls` shows: the current branch's and the "
    "unlabelled ones."
)
_KINDS: Final = ("user", "assistant", "tool", "call", "result", "plan")


def _other_commands(add: _Add) -> None:
    search = add("search", "full-text search, best match first", _SEARCH_DESCRIPTION)
    search.add_argument("query")
    _scope(search, "default: this branch's and the unlabelled ones")
    search.add_argument(
        "-s", "--session", dest="sessions", type=session_id, action="append", metavar="SESSION",
        help="in this session only (repeatable; in any worktree unless --worktree)",
    )  # fmt: skip
    search.add_argument(
        "--kind", dest="kinds", choices=_KINDS, action="append", help="events of this kind only (repeatable)"
    )
    search.add_argument("--words", action="store_true", help="QUERY is plain words, not FTS5 syntax")
    search.add_argument("--limit", type=_count, default=50)
    add("watch", "follow every change to the store")
    proto = add("protocol", "the wire protocol version; --schema its JSON Schema")
    proto.add_argument("--schema", action="store_true", help="print the JSON Schema of every message")


_EXPORT_DESCRIPTION: Final = (
    "Write a session as Markdown, JSONL (one event a line) or a self-contained HTML page: to stdout, or "
    "with -o to FILE (written to a temporary file and renamed, so FILE is whole or untouched). --redact "
    "masks secrets and reports on stderr how many. --json changes nothing without -o (the document is "
    'the output); with -o it prints {"session", "format", "bytes", "masked", "path"}.'
)
_IMPORT_DESCRIPTION: Final = (
    "Import the histories an agent keeps of this project ($CLAUDE_CONFIG_DIR or ~/.claude, $CODEX_HOME "
    "or ~/.codex), one session per file, labelled with the current branch. Running it again imports only "
    "what the files gained; the files are only read. --json: one importreply per file, then a summary."
)


def _session_life_commands(add: _Add) -> None:
    fork = add("fork", "a new session continuing a session from one of its events")
    fork.add_argument("session", type=session_id, metavar="SESSION")
    fork.add_argument("--at", type=_count, metavar="SEQ", required=True, help="the last event to copy")
    fork.add_argument("--name", help="the new session's name")
    for name, what in (("archive", "hide a session from `azs ls` (kept)"), ("unarchive", "list it again")):
        add(name, what).add_argument("session", type=session_id, metavar="SESSION")
    export = add("export", "a session as Markdown, JSONL or HTML", _EXPORT_DESCRIPTION)
    export.add_argument("session", type=session_id, metavar="SESSION")
    export.add_argument("--format", choices=("md", "jsonl", "html"), default="md")
    export.add_argument("--redact", action="store_true", help="mask secrets (keys, tokens, passwords)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")


def _maintenance_commands(add: _Add) -> None:
    doctor = add("doctor", "check the daemon, the store and its search index")
    doctor.add_argument("--reindex", action="store_true", help="rebuild the search index")
    backup = add("backup", "a verified copy of the store")
    backup.add_argument(
        "dest",
        nargs="?",
        metavar="DEST",
        help="a directory or a FILE.azs (default: <root>/.azureal/backups/)",
    )
    imports = add("import", "import an agent's own histories of this project", _IMPORT_DESCRIPTION)
    imports.add_argument("agent", choices=("claude", "codex"))
    imports.add_argument("--project", metavar="DIR", help="the project the agent ran in (default: the root)")
    usage = add("usage", "tokens and cost per session, per worktree, in total")
    usage.add_argument("session", type=session_id, metavar="SESSION", nargs="?")
    _scope(usage, "default: this branch's and the unlabelled ones; a SESSION alone: any")


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
    _session_life_commands(add)
    _other_commands(add)
    _maintenance_commands(add)
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
