"""`azs`: the sessions of AZUREAL stores, through the azsd daemon, for people and for scripts.

Exit status: 0 done, 1 an error (one line on stderr, ``azs: <message>``), 2 a usage error (a bad
argument, a bad date, an unknown format, outside a git worktree without ``--root``), 3 ``azs status``
when azsd is not running, 128 + N after signal N (130: Ctrl-C).

Which store: ``--root DIR`` names the worktree; by default it is the top level of the git worktree
around the current directory (``git rev-parse --show-toplevel``), else the current directory.

Which sessions ``azs ls`` shows: a store lives in one worktree, and AZUREAL labels each session with
the branch it was made on. By default ``ls`` shows the sessions labelled with the current branch
(``git rev-parse --abbrev-ref HEAD``) *and* the unlabelled ones (worktree ``""``: made outside git,
on a detached HEAD, or by a tool that named none), because those belong to whoever opens the store
and would otherwise show up nowhere; how many sessions other branches hold is said on stderr.
``--branch B`` shows exactly B's, ``--all-branches`` all (``--worktree``/``--all-worktrees``, AZUREAL's
name for the label, are the same options). ``azs new`` labels a session with the current branch
(``--branch`` to choose).

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

``azs search`` and ``azs usage`` cover the same sessions as ``ls`` by default (``--branch B``,
``--all-branches``); a search is plain text (every word as written), FTS5 syntax with ``--fts``.
``azs show`` and ``azs log`` go through a pager on a terminal (``$AZS_PAGER``, ``$PAGER``, less).
``azs fork S3 --at 12`` copies a session's first events into a new one;
``archive``/``unarchive`` hide and show a session; ``rm`` keeps its forks unless ``--with-forks``.
``azs export S3 [-o FILE]`` writes a document (stdout holds it, so reports go to stderr). ``azs backup``,
``azs import claude|codex`` and ``azs doctor [--reindex]`` look after the store.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Sequence
from typing import Final

from azsd.errors import (
    AzsdError,
    ConfigError,
    DaemonUnavailable,
    IngestError,
    NoReply,
    ProtocolError,
    RemoteError,
    UsageError,
)

from .commands import COMMANDS
from .commands.arguments import session_id
from .commands.parser import parser

__all__ = ["main", "parser", "session_id"]


def _code(exc: AzsdError) -> str:
    """The ``code`` of an error in ``--json`` output: the daemon's own, else what kind of failure."""
    if isinstance(exc, RemoteError):
        return exc.code
    for kind, code in _CODES:
        if isinstance(exc, kind):
            return code
    return "error"


_CODES: Final = (
    (UsageError, "usage"),
    (NoReply, "no_reply"),
    (DaemonUnavailable, "not_running"),
    (ConfigError, "config"),
    (IngestError, "ingest_error"),
    (ProtocolError, "protocol"),
)


def _fail(exc: AzsdError, status: int, json: bool) -> None:
    """One line for people on stderr (``azs: …``), or with ``--json`` the error object on stdout."""
    message = " ".join((exc.message if isinstance(exc, RemoteError) else str(exc)).split())
    if json:
        import msgspec

        from .commands.shapes import error

        sys.stdout.write(msgspec.json.encode(error(_code(exc), message)).decode() + "\n")
    else:
        from .render.term import terminal_safe

        sys.stderr.write(f"azs: {terminal_safe(message)}\n")
    sys.exit(status)


def main(argv: Sequence[str] | None = None) -> None:
    """Run `azs` with `argv` (default: the command line); exits with a status other than 0 on failure."""
    args = parser().parse_args(argv)
    from .commands.invocation import Invocation  # the client: not needed for --help or a usage error

    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(errors="backslashreplace")
    run = Invocation(args)
    try:
        status = next(c for c in COMMANDS if c.name == args.command).run(run)
    except UsageError as exc:
        _fail(exc, 2, args.json)
    except AzsdError as exc:
        _fail(exc, 1, args.json)
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
