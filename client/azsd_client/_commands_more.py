"""The `azs` commands over a whole store or a session's life: search, doctor, fork, archive, export,
backup, usage. Each takes its :class:`Invocation` and returns its exit status."""

from __future__ import annotations

import contextlib
import os
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from azsd.errors import AzsdError, RemoteError
from azsd.ipc.protocol import ExportReply

from ._invocation import Invocation
from .render import table
from .render_reports import backup_line, format_size, search_row, usage_lines

__all__ = [
    "archive",
    "backup",
    "doctor",
    "export",
    "fork",
    "search",
    "unarchive",
    "usage",
    "worktree_scope",
]

#: Where AZUREAL keeps a worktree's store (spec/store-format.md); `doctor` only looks whether it exists.
_STORE_FILE: Final = Path(".azureal") / "sessions.azs"


def worktree_scope(run: Invocation) -> list[str] | None:
    """The worktrees a command covers: `--worktree W`, all with `--all-worktrees` (None), else like
    `ls`: the current branch's sessions and the unlabelled ones."""
    if run.args.all_worktrees:
        return None
    if run.args.worktree is not None:
        return [run.args.worktree]
    return list(dict.fromkeys([run.branch, ""]))


def search(run: Invocation) -> int:
    """Ranked full-text search; a query the index cannot parse is the daemon's `bad_request` (exit 1)."""
    a = run.args
    named = a.sessions and a.worktree is None  # sessions named outright are searched wherever they are
    reply = run.client.search(
        run.root, a.query, limit=a.limit, worktrees=None if named else worktree_scope(run),
        sessions=a.sessions, kinds=a.kinds, words=a.words,
    )  # fmt: skip
    if run.json:
        for hit in reply.hits:
            run.emit(hit)
        return 0
    run.say(table([search_row(hit, run.style) for hit in reply.hits]))
    if run.tty and not reply.hits:
        hint = (
            "" if a.all_worktrees else " in this worktree's sessions (`--all-worktrees` searches every one)"
        )
        run.say([run.style.dim("no matches" + hint)])
    return 0


# -- doctor -----------------------------------------------------------------------------------------


def _finding(run: Invocation, check: str, ok: bool, detail: str) -> bool:
    if run.json:
        run.emit({"check": check, "ok": ok, "detail": detail})
    else:
        mark = run.style.green("✓") if ok else run.style.red("✗")
        run.say([f"{mark} {check}: {detail}"])
    return ok


def doctor(run: Invocation) -> int:
    """Does the daemon answer in this protocol, does the store open, does its search index answer."""
    try:
        status = run.client.status()
    except AzsdError as exc:
        _finding(run, "daemon", False, str(exc))
        return 1
    detail = (
        f"azsd {status.version} (protocol {status.protocol}), pid {status.pid}, {run.config.rpc_endpoint}"
    )
    healthy = _finding(run, "daemon", True, detail)
    path = Path(run.root) / _STORE_FILE
    try:
        total = run.client.list_sessions(run.root, None, limit=1, archived="include").total
    except RemoteError as exc:
        healthy = _finding(run, "store", False, f"{path}: {exc}")
    else:
        exists = path.is_file()
        said = (
            f"{path}: {total} sessions" if exists else f"no store at {path} yet (the first session makes it)"
        )
        _finding(run, "store", True, said)
        if exists:
            healthy = _check_search(run) and healthy
    if run.args.reindex:
        reply = run.client.reindex(run.root)
        if run.json:
            run.emit(reply)
        else:
            run.say([f"{run.style.green('✓')} search index rebuilt: {reply.indexed} events"])
    return 0 if healthy else 1


def _check_search(run: Invocation) -> bool:
    try:
        run.client.search(run.root, "azsd doctor probe", limit=1, words=True)
    except RemoteError as exc:
        return _finding(run, "search", False, f"{exc} (`azs doctor --reindex` rebuilds the index)")
    return _finding(run, "search", True, "the index answers")


# -- a session's life -------------------------------------------------------------------------------


def fork(run: Invocation) -> int:
    a = run.args
    view = run.client.fork_session(run.root, a.session, a.at, a.name).session
    if run.json:
        run.emit(view)
    else:
        at = view.fork_seq if view.fork_seq is not None else a.at
        named = f" “{view.name}”" if view.name else ""
        run.say([f"forked S{a.session} at seq {at} into S{view.id}{named}"])
    return 0


def _set_archived(run: Invocation, archived: bool) -> int:
    view = run.client.archive_session(run.root, run.args.session, archived).session
    if run.json:
        run.emit(view)
    else:
        run.say([f"{'archived' if archived else 'unarchived'} S{view.id} “{view.display_name}”"])
    return 0


def archive(run: Invocation) -> int:
    return _set_archived(run, True)


def unarchive(run: Invocation) -> int:
    return _set_archived(run, False)


# -- export and backup ------------------------------------------------------------------------------


def export(run: Invocation) -> int:
    """The document on stdout, or in `-o FILE` (written whole or not at all); the masking report on
    stderr; with `-o` and `--json`, a summary object on stdout."""
    a = run.args
    pages = run.client.export(run.root, a.session, format=a.format, redact=a.redact)
    masked: Counter[str] = Counter()
    path, size = None, 0
    if a.output is None:
        for page in pages:
            sys.stdout.write(page.text)
            masked.update(page.masked)
        sys.stdout.flush()
    else:
        path = Path(a.output).absolute()
        size = _write_atomically(path, pages, masked)
    if a.redact:
        counts = ", ".join(f"{name}: {n}" for name, n in sorted(masked.items()))
        total = sum(masked.values())
        sys.stderr.write(
            f"masked {total} secret{'' if total == 1 else 's'}{f' ({counts})' if counts else ''}\n"
        )
    if path is not None:
        if run.json:
            summary = {"session": a.session, "format": a.format, "bytes": size, "path": str(path)}
            run.emit({**summary, "masked": dict(masked)})
        else:
            run.say([f"exported S{a.session} as {a.format} to {path} ({format_size(size)})"])
    return 0


def _write_atomically(path: Path, pages: Iterable[ExportReply], masked: Counter[str]) -> int:
    """Write the pages to a temporary file beside `path`, then rename it over `path`; the bytes written."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    size = 0
    try:
        with open(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), "wb") as out:
            for page in pages:
                data = page.text.encode()
                out.write(data)
                size += len(data)
                masked.update(page.masked)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise AzsdError(f"cannot write {path}: {exc.strerror or exc}") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return size


def backup(run: Invocation) -> int:
    dest = None if run.args.dest is None else os.path.abspath(run.args.dest)
    reply = run.client.backup(run.root, dest)
    if run.json:
        run.emit(reply)
    else:
        run.say([backup_line(reply, run.style)])
    if reply.integrity != "ok":
        raise AzsdError(f"the backup at {reply.path} failed its integrity check: {reply.integrity}")
    return 0


# -- usage ------------------------------------------------------------------------------------------


def usage(run: Invocation) -> int:
    """Tokens and cost per session and per worktree; a session named alone is looked up in any worktree."""
    a = run.args
    scoped = a.session is None or a.worktree is not None
    reply = run.client.usage(run.root, a.session, worktrees=worktree_scope(run) if scoped else None)
    if run.json:
        run.emit(reply)
        return 0
    run.say(usage_lines(reply.sessions, reply.worktrees, reply.total, run.style))
    if run.tty and not reply.sessions:
        run.say([run.style.dim("no token usage recorded in these sessions")])
    return 0
