"""The arguments of `azs` commands: the types that parse them, and the specs the command table lists.

A spec is data (an :class:`Arg`, or a :class:`OneOf` of them) so that each command's whole interface is
one row of :data:`azsd_client.commands.COMMANDS`; :func:`add_arguments` turns the specs into argparse
calls.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable, Mapping
from datetime import date
from typing import Any, Final, NamedTuple, TypeAlias

__all__ = [
    "BACKEND",
    "FORMAT",
    "INGEST_FORMATS",
    "NEW_SESSION_OPTION",
    "NO_PAGER",
    "PROMPT",
    "PRUNE",
    "RANGE",
    "SESSION",
    "SESSION_OPTION",
    "SINCE",
    "WORKTREE_OPTIONS",
    "Arg",
    "OneOf",
    "RemoteRef",
    "Spec",
    "add_arguments",
    "arg",
    "count",
    "day",
    "fork_point",
    "seconds",
    "session_id",
    "session_or_ref",
    "token_limit",
    "worktree_options",
]

_SESSION: Final = re.compile(r"[Ss]?([0-9]+)")
_ID_MAX: Final = 2**63 - 1
#: A remote session as the user names it: @ and at least 4 characters of its UUID.
_UUID_PREFIX: Final = re.compile(r"@?[0-9a-fA-F][0-9a-fA-F-]{3,35}")


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


class RemoteRef(str):
    """A session of the sync database, as the user names it: ``@`` and a UUID prefix (or a UUID)."""


def session_or_ref(text: str) -> int | RemoteRef:
    """A local session (``S3``, ``3``) or a remote one (``@1a2b3c4d``, or a whole UUID).

    >>> session_or_ref("S3"), session_or_ref("@1a2b3c4d")
    (3, '@1a2b3c4d')
    """
    text = text.strip()
    if text.startswith("@") or (len(text) == 36 and text.count("-") == 4):
        if not _UUID_PREFIX.fullmatch(text):
            raise argparse.ArgumentTypeError(
                f"not a remote session: {text!r} (expected @ and the first 4 or more characters of its UUID, "
                "as `azs ls --remote` shows them)"
            )
        return RemoteRef(text)
    return session_id(text)


def token_limit(text: str) -> int | str:
    """`--token-limit`: a positive number of tokens, or ``max`` (the most any finished block held).

    >>> token_limit("500000"), token_limit("MAX")
    (500000, 'max')
    """
    if text.strip().lower() == "max":
        return "max"
    try:
        value = int(text.replace(",", "").replace("_", ""))
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"not a token limit: {text!r} (a positive number, or max)")
    return value


def day(text: str) -> str:
    """A local day, ``YYYY-MM-DD`` or ``YYYYMMDD`` (as given: the daemon reads it).

    >>> day("2025-10-02"), day("20251002")
    ('2025-10-02', '20251002')
    """
    compact = text.strip()
    if len(compact) == 8 and compact.isdigit():
        compact = f"{compact[:4]}-{compact[4:6]}-{compact[6:]}"
    try:
        date.fromisoformat(compact)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a day: {text!r} (expected YYYY-MM-DD or YYYYMMDD)") from None
    return text


def seconds(text: str) -> float:
    """A timeout: more than 0 seconds, less than a day."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value < 86_400:
        raise argparse.ArgumentTypeError(f"not a timeout in seconds: {text!r}")
    return value


def count(text: str) -> int:
    """A positive whole number."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a positive number: {text!r}")
    return int(text)


def fork_point(text: str) -> int:
    """`fork --at`: a seq (``12``), or ``-N`` for all but the session's last N events.

    >>> fork_point("12"), fork_point("-2")
    (12, -2)
    """
    digits = text[1:] if text.startswith("-") else text
    if not digits.isdigit() or int(digits) < 1:
        raise argparse.ArgumentTypeError(
            f"not a seq or -N: {text!r} (12: up to seq 12; -2: all but the last 2)"
        )
    return int(text)


class Arg(NamedTuple):
    """One ``add_argument`` call: the argument's names, and its options."""

    names: tuple[str, ...]
    options: Mapping[str, Any]


class OneOf(NamedTuple):
    """Arguments of which at most one may be given (an argparse mutually exclusive group)."""

    args: tuple[Arg, ...]


Spec: TypeAlias = Arg | OneOf


def arg(*names: str, **options: Any) -> Arg:
    """The spec of ``parser.add_argument(*names, **options)``."""
    return Arg(names, options)


def add_arguments(parser: argparse.ArgumentParser, specs: Iterable[Spec]) -> None:
    """Add each spec's arguments to `parser`, in order."""
    for spec in specs:
        if isinstance(spec, OneOf):
            group = parser.add_mutually_exclusive_group()
            for one in spec.args:
                group.add_argument(*one.names, **one.options)
        else:
            parser.add_argument(*spec.names, **spec.options)


def worktree_options(every: str) -> OneOf:
    """``--branch B`` or ``--all-branches`` (whose help says `every`); AZUREAL calls the label a
    worktree, and ``--worktree``/``--all-worktrees`` are the same options by their older names."""
    return OneOf(
        (
            arg("--branch", "--worktree", dest="worktree", metavar="B", help="sessions of branch B only"),
            arg("--all-branches", "--all-worktrees", dest="all_worktrees", action="store_true", help=every),
        )
    )


#: A session named by position (``azs show S3``).
#: `azs prune`: what to drop the full record of (one of the two; the command says when neither).
PRUNE: Final = (
    arg("--full-before", metavar="DATE", help="of sessions last active before DATE (YYYY-MM-DD)"),
    arg("--session", type=session_id, metavar="SESSION", help="of this session, whatever its age"),
)
SESSION: Final = arg("session", type=session_id, metavar="SESSION")
#: The session an agent file goes into (``-s S3``).
SESSION_OPTION: Final = arg("-s", "--session", type=session_id, metavar="SESSION", required=True)
#: The session a finished agent file goes into; without it, a new one.
NEW_SESSION_OPTION: Final = arg(
    "-s", "--session", type=session_id, metavar="SESSION", help="default: a new session, named after the file"
)
#: The formats of agent files the daemon reads (:data:`azsd.ingest.parsers.FORMATS`, named here so
#: that `azs` need not load the parsers to check an argument), and OpenCode's (a session of its store).
INGEST_FORMATS: Final = (
    "claude-stream-json",
    "claude-session",
    "codex-exec-json",
    "codex-rollout",
    "aider",
    "opencode",
)
#: An agent file's format.
FORMAT: Final = arg("--format", choices=INGEST_FORMATS, help="the file's format (default: detected)")
#: The agent a context or a turn is for.
BACKEND: Final = arg("--backend", choices=("claude", "codex"), default="claude")
#: Which sessions `ls` lists.
WORKTREE_OPTIONS: Final = worktree_options("every session in the store")
#: Which events `show` prints.
RANGE: Final = (
    arg("--last", type=count, metavar="N", help="the last N events only"),
    arg("--from", dest="from_seq", type=count, metavar="SEQ", help="from seq SEQ on"),
    arg("--to", dest="to_seq", type=count, metavar="SEQ", help="up to seq SEQ"),
)
#: Straight to the terminal.
NO_PAGER: Final = arg("--no-pager", action="store_true", help="never through a pager")
#: The sessions active since a day (`ls`, `search`).
SINCE: Final = arg(
    "--since",
    type=day,
    metavar="DATE",
    help="sessions active on this day (YYYY-MM-DD, UTC) or after only (by their latest turn, else creation)",
)
#: What `azs run` asks: the prompt, ``-`` for stdin, or ``--file F``.
PROMPT: Final = OneOf(
    (
        arg(
            "prompt",
            nargs="?",
            help="what to ask the agent (stored as given; the context is added for the agent); - reads it "
            "from stdin",
        ),
        arg("--file", metavar="F", help="read the prompt from file F"),
    )
)
