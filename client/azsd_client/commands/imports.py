"""`azs import claude|codex|aider|opencode`: bring the agent histories of a project on this machine
into its store.

The client finds where the agent keeps them (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, ``$CODEX_HOME``
or ``~/.codex``, ``$XDG_DATA_HOME/opencode`` or ``~/.local/share/opencode``, or ``--data-dir``;
Aider's chat history is in the project); the daemon lists the project's sources there (a file, an
Aider run, an OpenCode session) and imports each one that changed, as a session of its own. A source
that fails is reported and skipped; the exit status is then 1.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from azsd.errors import RemoteError
from azsd.ipc.protocol import ImportReply
from azsd_client.render.reports import import_summary
from azsd_client.render.text import one_line, plural

from .invocation import Invocation

__all__ = ["import_sessions", "source_dir"]


def source_dir(agent: str, environ: Mapping[str, str]) -> Path:
    """Where `agent` keeps its histories: its own variable, else the default under ``$HOME``
    (OpenCode's data directory follows XDG; Aider keeps its history in the project itself).

    >>> str(source_dir("claude", {"HOME": "/h"})), str(source_dir("codex", {"CODEX_HOME": "/c"}))
    ('/h/.claude', '/c')
    >>> str(source_dir("opencode", {"HOME": "/h"})), str(source_dir("opencode", {"XDG_DATA_HOME": "/x"}))
    ('/h/.local/share/opencode', '/x/opencode')
    """
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    if agent in ("opencode", "aider"):
        data = environ.get("XDG_DATA_HOME")
        return (Path(data).absolute() if data else home / ".local" / "share") / agent
    variable, default = ("CLAUDE_CONFIG_DIR", ".claude") if agent == "claude" else ("CODEX_HOME", ".codex")
    given = environ.get(variable)
    if given:
        return Path(given).absolute()
    return Path(environ.get("HOME") or os.path.expanduser("~")) / default


class _Progress:
    """A progress bar on a terminal's stderr (rich's, made on the first file); nothing on a pipe."""

    def __init__(self, stream: TextIO, environ: Mapping[str, str]) -> None:
        self.stream, self.environ = stream, environ
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(isatty and isatty())
        self._bar: Any = None
        self._task: Any = None

    def show(self, done: int, total: int, name: str) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            from azsd_client.render.term import console

            self._bar = Progress(
                TextColumn("importing"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.description}", style="dim"),
                console=console(self.stream, self.environ), transient=True,
            )  # fmt: skip
            self._bar.start()
            self._task = self._bar.add_task("", total=total)
        self._bar.update(self._task, completed=done, description=one_line(name, 50))

    def clear(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@dataclass
class _Tally:
    created: int = 0
    updated: int = 0
    current: int = 0
    events: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    imported: list[dict[str, Any]] = field(default_factory=list)

    def add(self, reply: ImportReply) -> None:
        self.imported.append(
            {"path": reply.path, "session": reply.session.id, "created": reply.created,
             "appended": reply.appended, "lines": reply.lines, "skipped": reply.skipped}
        )  # fmt: skip
        if reply.created:
            self.created += 1
        elif reply.appended:
            self.updated += 1
        else:
            self.current += 1
        self.events += reply.appended

    def summary(self, agent: str, project: str, sources: int) -> dict[str, Any]:
        return {
            "agent": agent, "project": project, "sources": sources, "created": self.created,
            "updated": self.updated, "current": self.current, "events": self.events,
            "imported": self.imported,
            "failed": [{"path": path, "error": error} for path, error in self.failed],
        }  # fmt: skip


def import_sessions(run: Invocation) -> int:
    """Import every source of the project that is not current, labelled with the current branch."""
    agent: str = run.args.agent
    root = run.new_root
    project = os.path.realpath(run.args.project) if run.args.project else root
    given = getattr(run.args, "data_dir", None)
    where = Path(given).absolute() if given else source_dir(agent, run.environ)
    with run.creating_store(root):
        return _import(run, agent, root, project, where)


#: Sources sent in one `ImportSessions` request (the progress bar moves once per batch).
BATCH: Final = 100


def _import(run: Invocation, agent: str, root: str, project: str, where: Path) -> int:
    sources = run.client.import_sources(root, run.args.agent, where, project).sources
    todo = [source.path for source in sources if not source.current]
    tally = _Tally(current=len(sources) - len(todo))
    progress = _Progress(sys.stderr, run.environ)
    try:
        for start in range(0, len(todo), BATCH):
            batch = todo[start : start + BATCH]
            progress.show(start, len(todo), Path(batch[0].rpartition("#")[0] or batch[0]).name)
            try:
                reply = run.client.import_sessions(root, run.args.agent, batch, worktree=run.branch)
            except RemoteError as exc:  # the whole batch failed (the store itself)
                progress.clear()
                sys.stderr.write(f"azs: {batch[0]}…: {exc.message}\n")
                tally.failed += [(path, exc.message) for path in batch]
                continue
            for done in reply.imports:
                tally.add(done)
            for failure in reply.failed:
                progress.clear()
                sys.stderr.write(f"azs: {failure.path}: {failure.error}\n")
                tally.failed.append((failure.path, failure.error))
    finally:
        progress.clear()
    said = (
        import_summary(tally.created, tally.updated, tally.current, tally.events)
        if sources
        else f"no {agent} sessions of {project} under {where}"
    )
    run.out.result(tally.summary(agent, project, len(sources)), lambda _, __: [said])
    if tally.failed:
        n = len(tally.failed)
        sys.stderr.write(f"azs: {n:,} of {plural(len(sources), 'source')} failed to import\n")
        return 1
    return 0
