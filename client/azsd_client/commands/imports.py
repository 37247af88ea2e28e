"""`azs import claude|codex|aider|opencode`: bring the agent histories of a project on this machine
into its store.

The client finds where the agent keeps them (``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, ``$CODEX_HOME``
or ``~/.codex``, ``$XDG_DATA_HOME/opencode`` or ``~/.local/share/opencode``, or ``--data-dir``;
Aider's chat history is in the project); the daemon lists the project's sources there (a file, an
Aider run, an OpenCode session) and imports each one that changed, as a session of its own. They go
in batches (`ImportSessions`: the small ones many in each transaction of the daemon's, where one
commit per source was most of the time), a big file alone. A source that fails is reported and
skipped; the exit status is then 1.

`import claude|codex --all` does so for every project the agent ran in on this machine
(:func:`azsd_client.histories.projects`), each into the store of its own directory when that
directory is still there, and the rest, whose directory is gone, into the current worktree's store;
it says where each went.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from azsd.errors import RemoteError
from azsd.histories import projects, source_dir
from azsd.ipc.protocol import ImportReply, SourceView
from azsd_client._shared import Backend, HistoryAgent
from azsd_client.render.reports import import_summary
from azsd_client.render.term import terminal_safe
from azsd_client.render.text import one_line, plural

from .invocation import Invocation, UsageError

__all__ = [
    "BATCH_BYTES",
    "BATCH_FILES",
    "BATCH_SOURCES",
    "batches",
    "import_all",
    "import_into",
    "import_sessions",
]

#: A batch of small files holds at most this many files and bytes; a file this big goes alone.
BATCH_FILES: Final = 64
BATCH_BYTES: Final = 4 << 20
#: A batch of Aider runs or OpenCode sessions (whose `size` is no byte count) holds this many.
BATCH_SOURCES: Final = 100


def batches(sources: Sequence[SourceView], *, sized: bool = True) -> list[list[SourceView]]:
    """`sources` in order, cut into batches of small files (a big one is a batch of its own); not
    `sized` (their sizes are no byte counts), :data:`BATCH_SOURCES` at a time.

    >>> sizes = [10, 10, 5 << 20, 10]
    >>> [[s.size for s in b] for b in batches([SourceView(path="/p", agent="claude", size=n) for n in sizes])]
    [[10, 10], [5242880], [10]]
    """
    if not sized:
        return [list(sources[i : i + BATCH_SOURCES]) for i in range(0, len(sources), BATCH_SOURCES)]
    out: list[list[SourceView]] = []
    size = 0
    for source in sources:
        alone = source.size >= BATCH_BYTES
        if (
            alone
            or not out
            or len(out[-1]) >= BATCH_FILES
            or size + source.size > BATCH_BYTES
            or (out[-1][0].size >= BATCH_BYTES)
        ):
            out.append([source])
            size = source.size
        else:
            out[-1].append(source)
            size += source.size
    return out


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
    if run.args.all:
        if run.args.agent not in ("claude", "codex") or getattr(run.args, "data_dir", None):
            raise UsageError("import --all reads the projects of Claude's and Codex's own directories")
        return import_all(run)  # the whole machine: each project into its own store
    agent: HistoryAgent = run.args.agent
    root = run.new_root
    project = os.path.realpath(run.args.project) if run.args.project else root
    given = getattr(run.args, "data_dir", None)
    where = Path(given).absolute() if given else source_dir(agent, run.environ)
    with run.creating_store(root):
        return _import(run, agent, root, project, where)


def import_all(run: Invocation) -> int:
    """Each project's sessions into its own directory's store; those of a directory gone, into this
    worktree's. One summary line per store."""
    agent: Backend = run.args.agent
    here = run.new_root
    where = source_dir(agent, run.environ)
    failed = 0
    summaries: list[dict[str, Any]] = []
    gone: list[str] = []
    for cwd in sorted(projects(agent, run.environ)):
        root = os.path.realpath(cwd)
        if not os.path.isdir(root):
            gone.append(cwd)
            root = here
        with run.creating_store(root):
            summary, code = import_into(run, agent, root, cwd, where)
        failed |= code
        summaries.append({**summary, "root": root})
    if run.out.json:
        for summary in summaries:
            run.out.emit(summary)
    else:
        for s in summaries:
            said = f"{s['created']} new, {s['updated']} updated, {s['current']} current"
            sys.stdout.write(f"{s['project']} → {s['root']}: {said}\n")
        if gone:
            sys.stdout.write(
                f"{len(gone)} project(s) whose directory is gone went into this worktree's store ({here}): "
                + ", ".join(gone)
                + "\n"
            )
    return 1 if failed else 0


def _import(run: Invocation, agent: HistoryAgent, root: str, project: str, where: Path) -> int:
    summary, code = import_into(run, agent, root, project, where)
    said = (
        import_summary(summary["created"], summary["updated"], summary["current"], summary["events"])
        if summary["sources"]
        else f"no {agent} sessions of {project} under {where}"
    )
    run.out.result(summary, lambda _, __: [said])
    return code


def import_into(
    run: Invocation, agent: HistoryAgent, root: str, project: str, where: Path
) -> tuple[dict[str, Any], int]:
    """Import every source of `project` that is not current into `root`'s store: the summary, and
    the exit status (1 when a source failed, each said on stderr)."""
    sources = run.client.import_sources(root, agent, where, project).sources
    todo = [source for source in sources if not source.current]
    tally = _Tally(current=len(sources) - len(todo))
    progress = _Progress(sys.stderr, run.environ)
    done = 0
    try:
        for batch in batches(todo, sized=agent in ("claude", "codex")):
            progress.show(done, len(todo), Path(batch[0].path.rpartition("#")[0] or batch[0].path).name)
            done += len(batch)
            try:
                if len(batch) == 1:
                    one = run.client.import_session(root, agent, batch[0].path, worktree=run.branch)
                    replies, failed = [one], []
                else:
                    paths = [source.path for source in batch]
                    reply = run.client.import_sessions(root, agent, paths, worktree=run.branch)
                    replies, failed = reply.imports, [(f.path, f.error) for f in reply.failed]
            except RemoteError as exc:
                replies, failed = [], [(source.path, exc.message) for source in batch]
            for path, error in failed:
                progress.clear()
                said = error.removeprefix(f"{path}: ")  # (the daemon's errors name the file already)
                sys.stderr.write(terminal_safe(f"azs: {path}: {said}") + "\n")
                tally.failed.append((path, error))
            for reply_ in replies:
                tally.add(reply_)
    finally:
        progress.clear()
    if tally.failed:
        n = len(tally.failed)
        sys.stderr.write(f"azs: {n:,} of {plural(len(sources), 'source')} failed to import\n")
    return tally.summary(agent, project, len(sources)), 1 if tally.failed else 0
