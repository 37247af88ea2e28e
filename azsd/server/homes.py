"""The watch of the agents' homes: every Claude Code and Codex history kept current in its project's
store, by the daemon itself, with no command.

From its start the daemon watches where the agents keep their histories (Claude's ``projects/``,
Codex's ``sessions/``; the `watch-agents` setting narrows it or turns it off) with watchfiles. A
history that changed is imported into the store of the directory its agent ran in (its `cwd`, the
rule `azs import --all` follows), as `azs import` imports it: only what it gained since, a file
imported already being current. The import records are in the stores, so after a restart or a
kill -9 nothing is read twice. At the start every history is looked at once (a catch-up), in the
background.

Two kinds of history are another's: the agent's own record of a run azsd follows (`azs run`: its
Claude session id or Codex thread id is a live follow's, and the run owns the file when it ends),
and the record of azsd's own compaction run (its first prompt is azsd's compaction prompt; the
compaction owns it). Neither becomes a session of its own.

A history whose directory is gone, or that names none yet, is left until it changes again; a
failed import is logged and tried again on the next change. Memory is bounded: at most
:data:`IN_FLIGHT_MAX` imports are under way (a catch-up waits for its turn), and the watch keeps the
paths of those, nothing of their content.
"""

from __future__ import annotations

import logging
import os
import queue
import re
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Final

import watchfiles

from azsd.context import COMPACTION_PROMPT_START
from azsd.histories import head_cwd

__all__ = ["HISTORY_AGENTS", "AgentHomes", "branch_of", "exclude_from_git", "history_dirs"]

log = logging.getLogger("azsd.homes")

#: The agents whose homes can be watched.
HISTORY_AGENTS: Final = ("claude", "codex")
#: How long the watch gathers changes before it imports them (an agent writes a turn in bursts).
DEBOUNCE_MS: Final = 150
#: How often the watch looks again for an agent's home that does not exist yet.
RECHECK_MS: Final = 250
#: Imports the watch has under way at most (a catch-up over thousands of histories waits its turn,
#: so the daemon's memory and open stores stay bounded).
IN_FLIGHT_MAX: Final = 4
#: A Codex rollout first seen this recently waits so long before its first import: Codex names its
#: thread in the stream `azs run` follows at the moment it makes the rollout, and the run claims it
#: as soon as it has read that line (Claude is told its session id before it starts: no wait).
CLAIM_GRACE_S: Final = 0.6
#: Lines of a history read for azsd's compaction prompt.
_HEAD_LINES: Final = 30
_THREAD_ID: Final = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")

#: Schedules the import of (agent, history, root); the future completes once it is done.
Importer = Callable[[str, Path, str], "Future[Any]"]


def history_dirs(agents: Iterable[str], homes: dict[str, Path]) -> dict[str, Path]:
    """The directory watched for each agent: Claude's ``<config>/projects``, Codex's ``<home>/sessions``."""
    sub = {"claude": "projects", "codex": "sessions"}
    return {agent: homes[agent] / sub[agent] for agent in agents if agent in sub and agent in homes}


def branch_of(directory: Path) -> str:
    """The branch checked out where `directory` is (AZUREAL's worktree label), read from git's HEAD
    (a worktree's ``.git`` file names its git directory); "" outside git or on a detached HEAD."""
    gitdir = _git_dir(directory)
    try:
        head = (gitdir / "HEAD").read_text().strip() if gitdir is not None else ""
    except (OSError, UnicodeDecodeError):
        return ""
    return head.removeprefix("ref: refs/heads/") if head.startswith("ref: refs/heads/") else ""


def _git_dir(directory: Path) -> Path | None:
    """The git directory of the worktree `directory` is in (a linked worktree's own), or None."""
    for folder in (directory, *directory.parents):
        dotgit = folder / ".git"
        try:
            if dotgit.is_file():
                pointer = dotgit.read_text().split("gitdir:", 1)[1].strip()
                return Path(pointer) if os.path.isabs(pointer) else folder / pointer
            if dotgit.is_dir():
                return dotgit
        except (OSError, IndexError, UnicodeDecodeError):
            return None
    return None


def exclude_from_git(root: Path) -> bool:
    """Keep ``.azureal/`` (the store azsd made in `root`) out of git's view: added to the repository's
    ``info/exclude`` (local, never committed) unless it is there. Whether it was added."""
    gitdir = _git_dir(root)
    if gitdir is None or not (root / ".azureal").is_dir():
        return False
    try:
        shared = gitdir / "commondir"  # a linked worktree's: the repository's own directory
        common = gitdir / shared.read_text().strip() if shared.exists() else gitdir
        exclude = common / "info" / "exclude"
        text = exclude.read_text() if exclude.exists() else ""
        if any(line.strip().strip("/") == ".azureal" for line in text.splitlines()):
            return False
        exclude.parent.mkdir(parents=True, exist_ok=True)
        with exclude.open("a") as out:
            out.write(("\n" if text and not text.endswith("\n") else "") + ".azureal/\n")
    except OSError:
        return False
    return True


def agent_session_of(agent: str, path: Path) -> str:
    """The agent's own id of the session a history holds: Claude's file name, Codex's thread id."""
    if agent == "claude":
        return path.stem
    found = _THREAD_ID.search(path.stem)
    return found.group(1) if found else ""


def is_compaction_run(path: Path) -> bool:
    """Whether the history is azsd's own compaction run (its prompt is azsd's compaction prompt)."""
    marker = COMPACTION_PROMPT_START.encode()
    try:
        with path.open("rb") as stream:
            return any(marker in line for _, line in zip(range(_HEAD_LINES), stream, strict=False))
    except OSError:
        return False


class AgentHomes:
    """The watch (one thread): call :meth:`start`, and :meth:`stop` at the end."""

    def __init__(self, dirs: dict[str, Path], importer: Importer, claimed: Callable[[], set[str]]) -> None:
        self._dirs = dirs
        self._import = importer
        self._claimed = claimed
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._running: set[Path] = set()  # imports under way
        self._again: set[Path] = set()  # changed while their import ran: imported once more after
        self._slots = threading.BoundedSemaphore(IN_FLIGHT_MAX)
        #: Histories that changed while their import ran, for the watch's thread to import again
        #: (never the store's thread, which must not wait for a slot).
        self._retry: queue.SimpleQueue[tuple[str, Path]] = queue.SimpleQueue()
        self._first_seen: dict[Path, float] = {}  # young Codex rollouts, while they wait their grace
        self._aged_paths: set[Path] = set()  # rollouts past their grace (a path each: bounded by the home)
        self._heads: dict[Path, tuple[str, bool]] = {}  # each history's directory, and whether a compaction's
        self._thread = threading.Thread(target=self._run, name="azsd-homes", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    # -- the watch --------------------------------------------------------------------------------

    def _run(self) -> None:
        watched: dict[str, Path] = {}
        while not self._stop.is_set():
            present = {agent: d for agent, d in self._dirs.items() if d.is_dir()}
            if present != watched:
                for agent, directory in present.items():
                    if watched.get(agent) != directory:
                        self._catch_up(agent, directory)  # what changed while nobody watched
                watched = present
            if not watched:
                self._stop.wait(RECHECK_MS / 1000)
                continue
            try:
                self._watch(watched)
            except Exception:  # e.g. a watched directory removed: look again
                log.exception("watching the agents' homes failed; looking again")
                self._stop.wait(RECHECK_MS / 1000)

    def _watch(self, watched: dict[str, Path]) -> None:
        """Watch until one of the homes not watched yet appears (or the daemon stops)."""
        for changes in watchfiles.watch(
            *watched.values(), stop_event=self._stop, debounce=DEBOUNCE_MS, step=20,
            rust_timeout=RECHECK_MS, yield_on_timeout=True, recursive=True, raise_interrupt=False,
        ):  # fmt: skip
            for agent, path in self._histories(watched, {Path(p) for _, p in changes}):
                self._consider(agent, path)
            while not self._retry.empty():
                self._consider(*self._retry.get_nowait())
            if any(d.is_dir() and agent not in watched for agent, d in self._dirs.items()):
                return

    @staticmethod
    def _histories(watched: dict[str, Path], paths: set[Path]) -> Iterable[tuple[str, Path]]:
        """The histories `paths` changed: a Claude sub-agent's file stands for its session's."""
        found: dict[Path, str] = {}
        for path in paths:
            for agent, directory in watched.items():
                if path.suffix != ".jsonl" or not path.is_relative_to(directory):
                    continue
                if agent == "claude" and "subagents" in path.parts:
                    index = path.parts.index("subagents")
                    path = Path(*path.parts[: index - 1]) / f"{path.parts[index - 1]}.jsonl"
                found[path] = agent
        return [(agent, path) for path, agent in found.items()]

    def _catch_up(self, agent: str, directory: Path) -> None:
        pattern = "*/*.jsonl" if agent == "claude" else "**/rollout-*.jsonl"
        for path in sorted(directory.glob(pattern), key=_mtime):
            if self._stop.is_set():
                return
            self._consider(agent, path)

    # -- one history ------------------------------------------------------------------------------

    def _consider(self, agent: str, path: Path) -> None:
        """Import `path` into its project's store, unless it is another's or names no project."""
        try:
            if not path.is_file() or path.stat().st_size == 0:
                return
        except OSError:
            return
        if agent == "codex" and not self._aged(path):
            return  # a moment for a run that makes it to claim it (it comes back through the retries)
        if agent_session_of(agent, path) in self._claimed():
            return  # a run's: it owns the file when it ends
        head = self._heads.get(path)
        if head is None:  # what a history's first lines say never changes: read once
            cwd = head_cwd(path, agent=agent)
            if cwd is None:
                return  # no project named yet: the next change tells
            head = self._heads[path] = (cwd, is_compaction_run(path))
        cwd, compaction = head
        if compaction:
            return  # azsd's own compaction's: it owns the file
        root = os.path.realpath(cwd)
        if not os.path.isdir(root):
            return  # its project is gone: `azs import --all` puts those somewhere on purpose
        with self._lock:
            if path in self._running:
                self._again.add(path)
                return
            self._running.add(path)
        while not self._slots.acquire(timeout=0.5):  # a slot: at most IN_FLIGHT_MAX under way
            if self._stop.is_set():
                with self._lock:
                    self._running.discard(path)
                return
        try:
            future = self._import(agent, path, root)
        except Exception:
            log.exception("cannot import %s into %s", path, root)
            self._done(agent, path, None)
            return
        future.add_done_callback(lambda done: self._done(agent, path, done))

    def _aged(self, path: Path) -> bool:
        """Whether a Codex rollout has been there :data:`CLAIM_GRACE_S` (one made before the
        daemon looked is); if not, it is looked at again once it has."""
        if path in self._aged_paths:
            return True
        try:
            age = time.time() - path.stat().st_mtime if path not in self._first_seen else None
        except OSError:
            return False
        now = time.monotonic()
        seen = self._first_seen.setdefault(path, now)
        if (age is not None and age >= CLAIM_GRACE_S) or now - seen >= CLAIM_GRACE_S:
            del self._first_seen[path]  # written a while ago, or waited: no run is making it now
            self._aged_paths.add(path)
            return True
        timer = threading.Timer(CLAIM_GRACE_S - (now - seen), self._retry.put, (("codex", path),))
        timer.daemon = True
        timer.start()
        return False

    def _done(self, agent: str, path: Path, done: Future[Any] | None) -> None:
        self._slots.release()
        if done is not None and done.exception() is not None:
            log.warning("importing %s failed: %s", path, done.exception())
        with self._lock:
            self._running.discard(path)
            again = path in self._again
            self._again.discard(path)
        if again and not self._stop.is_set():
            self._retry.put((agent, path))


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
