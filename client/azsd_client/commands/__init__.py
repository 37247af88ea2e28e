"""The `azs` commands: the one table of them (:data:`COMMANDS`), and what each does, by subject.

- :mod:`.sessions`: ls, new, show, rename, rm, fork, archive, unarchive, context.
- :mod:`.live`: tail, watch, and the agent files the daemon reads (ingest, follow, unfollow).
- :mod:`.turn`: `azs run`, one agent turn stored and shown live; :mod:`.agent`, the agent's process;
  :mod:`.compaction`: `azs compact` (and `azs run`'s compaction before a turn).
- :mod:`.store`: search, usage, export, backup; :mod:`.imports`: `azs import`.
- :mod:`.daemon`: status, protocol, doctor; :mod:`.bridge`: `azs bridge`, JSON lines for editors.
- :mod:`.web`: `azs web`, the local web view.
- :mod:`.remote`: the sync database: sync status, ls --remote, show @REF, search --remote, pull.
- :mod:`.invocation`: what the commands of one run share; :mod:`.output`: ``--json`` or text;
  :mod:`.arguments`: argument types and specs.

A command is a function from its :class:`~.invocation.Invocation` to an exit status, and one row of
:data:`COMMANDS`: its name, its one-line help, that function, its arguments and (for some) a longer
description. `azs --help` lists them in the table's order. The table names each function
(:class:`Lazy`) and imports its module when the command runs, so that a run loads only its own
command's code (tests/test_cli_start.py holds `azs --version`, `ls` and `search` to that).
"""

from __future__ import annotations

import argparse
from typing import Final

from .arguments import (
    BACKEND,
    FORMAT,
    NEW_SESSION_OPTION,
    NO_PAGER,
    PROMPT,
    PRUNE,
    RANGE,
    SESSION,
    SESSION_OPTION,
    SINCE,
    WORKTREE_OPTIONS,
    OneOf,
    arg,
    count,
    day,
    fork_point,
    seconds,
    session_id,
    session_or_ref,
    token_limit,
    worktree_options,
)
from .descriptions import (
    BRIDGE_DESCRIPTION,
    COMPACT_DESCRIPTION,
    COMPLETION_DESCRIPTION,
    EXPORT_DESCRIPTION,
    FULL_HELP,
    IMPORT_DESCRIPTION,
    LS_DESCRIPTION,
    RUN_DESCRIPTION,
    SEARCH_DESCRIPTION,
    SHOW_DESCRIPTION,
    WEB_DESCRIPTION,
)
from .table import Command, Either, Lazy

__all__ = ["COMMANDS", "Command", "Either", "Lazy"]

_REMOTE: Final = arg("--remote", action="store_true", help="in the sync database (every machine's sessions)")
_KINDS: Final = ("user", "assistant", "tool", "call", "result", "plan")
_FILE: Final = arg("file")

#: Every `azs` command, in the order `azs --help` lists them.
COMMANDS: Final = (
    Command(
        "status",
        "is azsd running, and what it has open",
        Lazy("daemon", "status"),
        (arg("--all", action="store_true", help="follows that ended more than 10 minutes ago too"),),
    ),
    Command(
        "ls",
        "sessions of this worktree, latest activity first",
        Either(Lazy("sessions", "ls"), Lazy("remote", "ls")),
        (
            WORKTREE_OPTIONS,
            _REMOTE,
            OneOf(
                (
                    arg("--archived", action="store_true", help="archived sessions only"),
                    arg("--all", action="store_true", help="archived sessions too (marked)"),
                )
            ),
            arg("-n", "--limit", type=count, metavar="N", help="the N latest only"),
            SINCE,
        ),
        LS_DESCRIPTION,
    ),
    Command(
        "new",
        "create a session",
        Lazy("sessions", "new"),
        (
            arg("name", nargs="?", default=None),
            arg(
                "--branch", "--worktree", dest="worktree", metavar="B", help="its branch (default: this one)"
            ),
        ),
    ),
    Command(
        "show",
        "a session and its events (@REF: one of the sync database)",
        Either(Lazy("transcript", "show"), Lazy("remote", "show")),
        (
            arg("session", type=session_or_ref, metavar="SESSION|@REF"),
            *RANGE,
            arg("--full", action="store_true", help=FULL_HELP),
            NO_PAGER,
        ),
        SHOW_DESCRIPTION,
    ),
    Command(
        "log",
        "a session's turns, one a line: seqs, prompt, outcome, time, cost",
        Lazy("transcript", "log"),
        (SESSION, arg("--last", type=count, metavar="N", help="the last N turns only"), NO_PAGER),
    ),
    Command("rename", "rename a session", Lazy("sessions", "rename"), (SESSION, arg("name"))),
    Command(
        "rm",
        "delete a session (asks first); its forks stay unless --with-forks",
        Lazy("sessions", "rm"),
        (
            SESSION,
            arg("-y", "--yes", action="store_true", help="do not ask"),
            arg("--with-forks", action="store_true", help="delete the sessions forked from it too"),
        ),
    ),
    Command(
        "context",
        "print the exact context-injected prompt for a next turn",
        Lazy("sessions", "context"),
        (SESSION, arg("prompt"), BACKEND),
    ),
    Command(
        "ingest",
        "store a finished agent JSONL file in a session (default: a new one)",
        Lazy("live", "ingest"),
        (_FILE, NEW_SESSION_OPTION, FORMAT),
    ),
    Command(
        "follow",
        "have azsd follow an agent JSONL file live into a session",
        Lazy("live", "follow"),
        (_FILE, SESSION_OPTION, FORMAT),
    ),
    Command(
        "unfollow",
        "stop following a file, after storing what it holds now",
        Lazy("live", "unfollow"),
        (_FILE,),
    ),
    Command(
        "tail",
        "print a session's last events; -f keeps following",
        Lazy("live", "tail"),
        (
            SESSION,
            arg("-f", "--follow", action="store_true", help="keep printing new events"),
            OneOf(
                (
                    arg(
                        "-n",
                        "--lines",
                        type=count,
                        metavar="N",
                        default=10,
                        help="start with the last N events (default: 10)",
                    ),
                    arg("--from", dest="from_seq", type=count, metavar="SEQ", help="start at seq SEQ"),
                )
            ),
        ),
    ),
    Command(
        "run",
        "run an agent turn in a session, stored and shown live",
        Lazy("turn", "run_turn"),
        (
            PROMPT,
            arg("-s", "--session", type=session_id, metavar="SESSION", help="default: a new session"),
            BACKEND,
            arg("--model", metavar="M", help="the model to ask the agent for"),
            arg(
                "--branch",
                "--worktree",
                dest="worktree",
                metavar="B",
                help="branch of a new session (default: the current one)",
            ),
            arg(
                "--no-compact",
                action="store_true",
                help="do not compact the session first, even when its context is over compaction-threshold",
            ),
        ),
        RUN_DESCRIPTION,
    ),
    Command(
        "compact",
        "summarise a session's older turns so later turns get a shorter context",
        Lazy("compaction", "compact"),
        (SESSION, BACKEND, arg("--model", metavar="M", help="the model to ask the agent for")),
        COMPACT_DESCRIPTION,
    ),
    Command(
        "fork",
        "a new session continuing a session from one of its events",
        Lazy("sessions", "fork"),
        (
            SESSION,
            arg(
                "--at",
                type=fork_point,
                metavar="SEQ",
                required=True,
                help="the last event to copy; -N: all but the last N events",
            ),
            arg("--name", help="the new session's name"),
        ),
    ),
    Command("archive", "hide a session from `azs ls` (kept)", Lazy("sessions", "archive"), (SESSION,)),
    Command("unarchive", "list it again", Lazy("sessions", "unarchive"), (SESSION,)),
    Command(
        "export",
        "a session as Markdown, JSONL or HTML",
        Lazy("store", "export"),
        (
            SESSION,
            arg("--format", choices=("md", "jsonl", "html"), default="md"),
            arg("--redact", action="store_true", help="mask secrets (keys, tokens, passwords)"),
            arg("--full", action="store_true", help="the full record: what the agent wrote, whole"),
            arg("-o", "--output", metavar="FILE", help="write to FILE instead of stdout"),
        ),
        EXPORT_DESCRIPTION,
    ),
    Command(
        "search",
        "full-text search, best match first",
        Either(Lazy("store", "search"), Lazy("remote", "search")),
        (
            arg("query", nargs="?"),
            arg(
                "-i",
                "--interactive",
                action="store_true",
                help="search as you type on the terminal, and open the hit you pick in `azs show`",
            ),
            _REMOTE,
            worktree_options("every session in the store (default: this branch's and the unlabelled ones)"),
            arg(
                "-s",
                "--session",
                dest="sessions",
                type=session_id,
                action="append",
                metavar="SESSION",
                help="in this session only (repeatable; on any branch unless --branch)",
            ),
            arg(
                "--kind",
                dest="kinds",
                choices=_KINDS,
                action="append",
                help="events of this kind only (repeatable)",
            ),
            arg("-e", "--fts", action="store_true", help="QUERY is SQLite FTS5 syntax, not plain text"),
            arg("--words", action="store_true", help=argparse.SUPPRESS),  # plain text: the default now
            arg("-C", "--context", type=count, metavar="N", help="N events before and after each hit"),
            arg("-n", "--limit", type=count, default=50, metavar="N", help="at most N hits (default: 50)"),
            SINCE,
        ),
        SEARCH_DESCRIPTION,
    ),
    Command("watch", "follow every change to the store", Lazy("live", "watch")),
    Command(
        "protocol",
        "the wire protocol version; --schema its JSON Schema",
        Lazy("daemon", "protocol"),
        (arg("--schema", action="store_true", help="print the JSON Schema of every message"),),
    ),
    Command(
        "prune",
        "drop the full record of old sessions (their compact events stay)",
        Lazy("store", "prune"),
        PRUNE,
    ),
    Command(
        "completion",
        "print a completion script for bash, zsh or fish",
        Lazy("completion", "completion"),
        (arg("shell", choices=("bash", "zsh", "fish"), help="the shell to complete azs in"),),
        COMPLETION_DESCRIPTION,
    ),
    Command(
        "doctor",
        "check the daemon, the store and its search index",
        Lazy("daemon", "doctor"),
        (arg("--reindex", action="store_true", help="rebuild the search index"),),
    ),
    Command(
        "backup",
        "a verified copy of the store",
        Lazy("store", "backup"),
        (
            arg(
                "dest",
                nargs="?",
                metavar="DEST",
                help="a directory or a FILE.azs (default: <root>/.azureal/backups/)",
            ),
        ),
    ),
    Command(
        "import",
        "import an agent's own histories of this project",
        Lazy("imports", "import_sessions"),
        (
            arg("agent", choices=("claude", "codex", "aider", "opencode")),
            arg("--project", metavar="DIR", help="the project the agent ran in (default: the root)"),
            arg(
                "--all",
                action="store_true",
                help="every project of the machine, each into its own directory's store (gone ones: here)",
            ),
            arg(
                "--data-dir",
                metavar="DIR",
                help="where the agent keeps its histories (default: its own variable, else its default)",
            ),
        ),
        IMPORT_DESCRIPTION,
    ),
    Command(
        "usage",
        "tokens and cost per session, per worktree, in total, and by period",
        Lazy("remote_usage", "usage"),
        (
            arg("session", type=session_id, metavar="SESSION", nargs="?"),
            worktree_options(
                "every session in the store (default: this branch's and the unlabelled ones; "
                "a SESSION alone: any)"
            ),
            arg(
                "--by",
                choices=("day", "week", "month", "session", "block", "model", "person", "repository"),
                help="a table by local day, ISO week, month, session, Claude's 5-hour block, or model; "
                "with --remote also by person (database role) or repository",
            ),
            arg(
                "--remote",
                action="store_true",
                help="the team's usage in the sync database (by person unless --by says)",
            ),
            arg("--by-model", action="store_true", help="one row per model in each period"),
            arg("--since", type=day, metavar="DATE", help="only the usage of this local day and after"),
            arg("--until", type=day, metavar="DATE", help="only the usage of this local day and before"),
            arg("--timezone", metavar="TZ", help="local time of this IANA zone (default: the daemon's)"),
            arg(
                "--exclude-removed",
                action="store_true",
                help="leave out the usage of sessions removed with `azs rm` (kept by default: money spent)",
            ),
            arg("--sessions", action="store_true", help="with --by: the per-session list too (--json)"),
            arg("--all", action="store_true", help="every store of this machine's Claude and Codex projects"),
            arg("--instances", action="store_true", help="with --all: one row per project"),
            arg("--project", metavar="TEXT", help="with --all: only the projects whose path holds TEXT"),
            arg(
                "--active",
                action="store_true",
                help="the 5-hour block still going: burn rate and projection to its end (implies --by block)",
            ),
            arg(
                "--token-limit",
                type=token_limit,
                metavar="N|max",
                help="with blocks: how much of N tokens (or of the biggest finished block) each uses",
            ),
            arg(
                "--prices",
                action="store_true",
                help="the prices in force (shipped list, config's price-file and [pricing]), and their date",
            ),
        ),
    ),
    Command(
        "statusline",
        "one short line: today's cost, the active 5-hour block, the context meter (Claude Code's statusLine)",
        Lazy("statusline", "statusline"),
        (),
    ),
    Command(
        "sync",
        "sync to PostgreSQL: `azs sync status` shows each store's pushing, `azs sync verify` compares "
        "each session with the database and pushes what it lacks",
        Lazy("remote", "sync"),
        (
            arg("action", choices=("status", "verify")),
            arg("--no-repair", action="store_true", help="verify: only compare, push nothing"),
        ),
    ),
    Command(
        "pull",
        "copy a session of the sync database into this worktree's store",
        Lazy("remote", "pull"),
        (arg("ref", metavar="@REF"), arg("--name", help="the new session's name (default: the original's)")),
    ),
    Command(
        "web",
        "a local web view of every session, live, with search and usage (docs/web.md)",
        Lazy("web", "web"),
        (
            arg("--port", type=int, default=0, help="the port on 127.0.0.1 (default: any free one)"),
            arg("--unix", metavar="PATH", help="listen on this Unix socket instead"),
            arg("--open", action="store_true", help="open the URL in the browser"),
            arg(
                "--store",
                dest="roots",
                action="append",
                default=[],
                metavar="DIR",
                help="show this worktree's store too (repeatable); the current one is always shown",
            ),
        ),
        WEB_DESCRIPTION,
    ),
    Command(
        "bridge",
        "serve an editor JSON lines on stdin/stdout (docs/bridge.md)",
        Lazy("bridge", "bridge"),
        (
            arg(
                "--heartbeat",
                type=seconds,
                metavar="S",
                default=2.0,
                help="seconds between checks that the daemon is there (default: 2)",
            ),
        ),
        BRIDGE_DESCRIPTION,
    ),
)
