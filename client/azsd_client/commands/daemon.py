"""The `azs` commands about the daemon itself: status, protocol, and doctor (does the daemon answer in
this protocol, does the store open, does its search index answer).

Each takes its :class:`~.invocation.Invocation` and returns its exit status.
"""

from __future__ import annotations

import contextlib
import shlex
import stat
from pathlib import Path
from typing import Any, Final

import msgspec

from azsd.errors import AzsdError, DaemonUnavailable, NoReply, RemoteError
from azsd.ipc.protocol import PROTOCOL_VERSION, json_schema
from azsd_client.render.status import recent_follows, status_lines
from azsd_client.render.text import Line, Style, format_size, join, plural

from . import shapes
from .invocation import Invocation, ignore_advice

__all__ = ["doctor", "protocol", "status"]

#: Where AZUREAL keeps a worktree's store (spec/store-format.md); `doctor` only looks whether it exists.
_STORE_FILE: Final = Path(".azureal") / "sessions.azs"


#: `azs status`'s exit status when the daemon is not running (as `systemctl status` of a stopped unit).
NOT_RUNNING: Final = 3


def status(run: Invocation) -> int:
    """What the daemon has open and follows (follows that ended more than 10 minutes ago only with
    ``--all``); exit status 3 when it is not running (``--json``:
    ``{"running": false, "endpoint", "reason", "start"}``)."""
    endpoint = run.config.rpc_endpoint
    try:
        reply = run.client.status()
    except NoReply:
        raise
    except DaemonUnavailable as exc:
        said = str(exc)
        down = {"running": False, "endpoint": endpoint, "reason": said, "start": _START}
        run.out.result(down, lambda _, __: [said])
        return NOT_RUNNING
    shown = reply if run.args.all else msgspec.structs.replace(reply, follows=recent_follows(reply.follows))
    hidden = len(reply.follows) - len(shown.follows)
    up: dict[str, Any] = {"running": True, "endpoint": endpoint, **shapes.plain(shown)}
    full: list[Line] = []
    if (Path(run.root) / _STORE_FILE).is_file():  # this worktree's store: what its full record costs
        with contextlib.suppress(RemoteError):
            up["full_record"] = shapes.plain(run.client.full_status(run.root))
            full = [f"full record of {run.root}: {full_record_said(run)}"]
    run.out.result(
        shown, lambda r, style: [*status_lines(r, endpoint, style, hidden=hidden), *full], shape=lambda _: up
    )
    return 0


_START: Final = "systemctl --user start azsd  # or: azsd run"


def _pretty_json(value: Any, _style: object) -> list[str]:
    return [msgspec.json.format(msgspec.json.encode(value), indent=2).decode()]


def protocol(run: Invocation) -> int:
    """The protocol version; with `--schema` the JSON Schema of every message (indented for people)."""
    if run.args.schema:
        run.out.result(json_schema(), _pretty_json)
    else:
        run.out.result({"protocol": PROTOCOL_VERSION}, lambda _, __: [f"protocol {PROTOCOL_VERSION}"])
    return 0


def _finding(run: Invocation, check: str, ok: bool, detail: str) -> bool:
    def human(_: object, style: Style) -> list[Line]:
        return [join(style.green("✓") if ok else style.red("✗"), f" {check}: {detail}")]

    run.out.result({"check": check, "ok": ok, "detail": detail}, human)
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
            f"{path}: {plural(total, 'session')}"
            if exists
            else f"no store at {path} yet (the first session makes it)"
        )
        _finding(run, "store", True, said)
        if exists:
            healthy = _check_private(run, path) and healthy
            healthy = _check_git(run) and healthy
            healthy = _check_search(run) and healthy
            healthy = _check_stale(run) and healthy
            _finding(run, "full record", True, full_record_said(run))
    if run.args.reindex:
        indexed = run.client.reindex(run.root).indexed
        _finding(run, "reindex", True, f"search index rebuilt: {plural(indexed, 'event')}")
    return 0 if healthy else 1


def _check_private(run: Invocation, path: Path) -> bool:
    """Whether only the user can read the store (azsd makes it 0600 in a 0700 directory; an older
    azsd, AZUREAL or a copy may have left it readable by others)."""
    try:
        modes = [(p, stat.S_IMODE(p.stat().st_mode)) for p in (path, path.parent)]
    except OSError as exc:
        return _finding(run, "permissions", False, f"{path}: {exc.strerror or exc}")
    loose = [f"{p} is {m:o}" for p, m in modes if m & 0o077]
    if not loose:
        return _finding(run, "permissions", True, "only you can read the store")
    fix = f"chmod 600 {shlex.quote(str(path))}* && chmod 700 {shlex.quote(str(path.parent))}"
    return _finding(run, "permissions", False, f"other users can read it ({'; '.join(loose)}): {fix}")


def _check_git(run: Invocation) -> bool:
    """Whether git leaves the store alone (azsd's ``.azureal/.gitignore`` sees to it; a store made
    by another program, or an emptied ``.gitignore``, may not)."""
    advice = ignore_advice(run.root)
    if advice is None:
        return _finding(run, "git", True, "git does not see the store (or this is no git worktree)")
    return _finding(run, "git", False, advice)


def full_record_said(run: Invocation) -> str:
    """What the store's full record holds and costs, in a line."""
    try:
        cost = run.client.full_status(run.root)
    except RemoteError as exc:  # a daemon from before the full record
        return f"not known: {exc}"
    if not run.config.full_record:
        state = "off (`full-record = false`): nothing more is kept"
    elif cost.waiting_bytes:
        state = f"{format_size(cost.waiting_bytes)} of agents' files to keep (the daemon does when idle)"
    else:
        state = "up to date"
    if not cost.source_bytes:
        return f"none kept yet; {state}"
    ratio = cost.stored_bytes / cost.source_bytes
    return (
        f"{format_size(cost.stored_bytes)} for {format_size(cost.source_bytes)} the agents wrote "
        f"({ratio:.2f} bytes a byte) in {plural(cost.sessions, 'session')}; {state} "
        "(`azs prune --full-before DATE` drops old ones)"
    )


def _check_search(run: Invocation) -> bool:
    try:
        run.client.search(run.root, "azsd doctor probe", limit=1, words=True)
    except RemoteError as exc:
        return _finding(run, "search", False, f"{exc} (`azs doctor --reindex` rebuilds the index)")
    return _finding(run, "search", True, "the index answers")


def _check_stale(run: Invocation) -> bool:
    """Entries of the index whose rows another program deleted (they skew the ranking until the
    daemon's background upkeep rebuilds the index without them)."""
    try:
        stale = run.client.index_status(run.root, stale=True).stale
    except RemoteError as exc:  # a daemon from before the count
        return _finding(run, "index", True, f"entries of deleted rows not counted: {exc}")
    if not stale:
        return _finding(run, "index", True, "no entries of deleted rows")
    entries = plural(stale, "index entry", "index entries")
    return _finding(
        run,
        "index",
        bool(run.args.reindex),
        f"{entries} of rows another program deleted still count in the ranking (azsd removes them in "
        "the background; `azs doctor --reindex` now)",
    )
