"""The watch of Aider's chat histories and OpenCode's database: their sessions kept current in their
projects' stores, by the daemon itself, as :mod:`azsd.server.homes` keeps Claude's and Codex's.

Neither keeps a file per session in one home: Aider writes ``.aider.chat.history.md`` in each
project, a run after another; OpenCode one database for every project. So this watch polls (every
:data:`POLL_S`, a stat or one PRAGMA each, nothing read while nothing changed):

- the Aider history of every worktree the daemon knows (those with a store, and those it follows
  files into): when one changed, each of its runs with a prompt that is new or grew is imported
  into that worktree's store (`azs import aider`'s rule);
- OpenCode's ``opencode.db`` (its `data_version`): when OpenCode committed, the sessions whose stamp
  changed are imported into the store of the directory each ran in. (OpenCode's older JSON tree is
  imported on demand, with `azs import opencode`.)

A source a live follow reads is the follow's (:mod:`azsd.server.follow.owners`). At the start,
everything is looked at once (a catch-up); at most :data:`~azsd.server.homes.IN_FLIGHT_MAX` imports
are under way; memory holds a stamp per worktree, per Aider run and per OpenCode session.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Final

from azsd.errors import AzsdError
from azsd.ingest.opencode import OpenCodeSource, open_source
from azsd.ingest.sources import AIDER_HISTORY, aider_sources
from azsd.server.homes import IN_FLIGHT_MAX

__all__ = ["POLL_S", "SessionHomes"]

log = logging.getLogger("azsd.homes")

#: How often the histories are looked at (a line an agent writes is stored within about this long).
POLL_S: Final = 0.4
#: OpenCode's database, in its data directory.
OPENCODE_DB: Final = "opencode.db"

#: Schedules the import of (agent, source key, root); the future completes once it is done.
Importer = Callable[[str, str, str], "Future[Any]"]


class SessionHomes:
    """The watch (one thread): call :meth:`start`, and :meth:`stop` at the end."""

    def __init__(
        self,
        agents: set[str],
        opencode_dir: Path | None,
        roots: Callable[[], set[str]],
        importer: Importer,
        followed: Callable[[], set[str]],
    ) -> None:
        self._agents = agents
        self._opencode_db = opencode_dir / OPENCODE_DB if opencode_dir is not None else None
        self._roots = roots
        self._import = importer
        self._followed = followed
        self._stop = threading.Event()
        self._slots = threading.BoundedSemaphore(IN_FLIGHT_MAX)
        self._aider_seen: dict[str, tuple[int, int]] = {}  # each worktree's history: (size, mtime)
        self._aider_runs: dict[str, int] = {}  # each run's size as last imported (by its key)
        self._source: OpenCodeSource | None = None
        self._version: int | None = None
        self._stamps: dict[str, int] = {}  # each OpenCode session's stamp, as imported
        self._thread = threading.Thread(target=self._run, name="azsd-session-homes", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if self._source is not None:
            self._source.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if "aider" in self._agents:
                    self._aider()
                if "opencode" in self._agents and self._opencode_db is not None:
                    self._opencode(self._opencode_db)
            except Exception:  # one bad look never ends the watch
                log.exception("watching Aider's and OpenCode's histories failed; looking again")
            self._stop.wait(POLL_S)

    # -- Aider ------------------------------------------------------------------------------------

    def _aider(self) -> None:
        followed = self._followed()
        for root in sorted(self._roots()):
            path = Path(root) / AIDER_HISTORY
            try:
                info = path.stat()
            except OSError:
                continue
            seen = (info.st_size, info.st_mtime_ns)
            if self._aider_seen.get(root) == seen or str(path) in followed:
                continue
            self._aider_seen[root] = seen
            for source in aider_sources(Path(root)):
                if self._aider_runs.get(source.key) != source.size:  # new, or grown: the others are current
                    self._aider_runs[source.key] = source.size
                    self._submit("aider", source.key, root)

    # -- OpenCode ---------------------------------------------------------------------------------

    def _opencode(self, db: Path) -> None:
        if self._source is None:
            if not db.is_file():
                return
            try:
                self._source = open_source(db)
            except AzsdError as exc:
                log.info("OpenCode's database is not readable yet: %s", exc)
                return
        source = self._source
        try:
            version = source.version("")
            if version == self._version:
                return
            sessions = {s.id: s for s in source.sessions()}
            stamps = source.stamps(list(sessions.values()))
        except AzsdError as exc:
            log.info("OpenCode's database: %s", exc)
            source.close()
            self._source, self._version = None, None
            return
        self._version = version
        followed = self._followed()
        for sid, (stamp, _) in stamps.items():
            session = sessions.get(sid)
            if session is None or self._stamps.get(sid) == stamp:
                continue
            key = f"{db}#{sid}"
            directory = session.directory
            if not directory or not os.path.isabs(directory) or key in followed:
                continue
            root = os.path.realpath(directory)
            if not os.path.isdir(root):
                continue  # its project is gone: `azs import` puts those somewhere on purpose
            self._stamps[sid] = stamp
            self._submit("opencode", key, root)

    # -- imports ----------------------------------------------------------------------------------

    def _submit(self, agent: str, key: str, root: str) -> None:
        while not self._slots.acquire(timeout=0.5):  # a slot: at most IN_FLIGHT_MAX under way
            if self._stop.is_set():
                return
        try:
            future = self._import(agent, key, root)
        except Exception:
            log.exception("cannot import %s into %s", key, root)
            self._slots.release()
            return
        future.add_done_callback(lambda done: self._done(key, done))

    def _done(self, key: str, done: Future[Any]) -> None:
        self._slots.release()
        if done.exception() is not None:
            log.warning("importing %s failed: %s", key, done.exception())
