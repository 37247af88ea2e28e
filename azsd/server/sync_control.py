"""Whether the daemon syncs, and with which settings: the sync service started, stopped and started
again when the config file's sync settings change, without a restart.

The daemon calls :meth:`SyncControl.tick` from its loop: about once a second it looks at the config
file (its mtime, size and inode); on a change, or after ``SIGHUP`` (`azsd reload`,
:meth:`request_reload`), it reads the file again and, when `sync-url`, `sync-identity` or
`sync-redact` differ, stops the running service and starts one with the new settings (or none). A
file that cannot be read or holds a bad value changes nothing: `azs sync status` says why.

Without sync, it remembers each store the daemon commits to (``store-roots`` in the state dir, the
roots only), so that turning sync on pushes every store at once, without waiting for its next write.
psycopg is imported only when sync is on (:mod:`azsd.sync.service` is).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Final

from azsd.config import ResolvedConfig, default_identity, load_config_file
from azsd.errors import AzsdError
from azsd.files import write_atomic
from azsd.ipc import protocol as p
from azsd.server.views import session_view

if TYPE_CHECKING:
    from azsd.server.registry import StoreRegistry
    from azsd.sync.service import SyncService

__all__ = ["SyncControl"]

log = logging.getLogger("azsd.server.sync_control")

#: How often the config file is looked at.
_WATCH_S: Final = 1.0


def _mark(path: Path | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size, info.st_ino


class SyncControl:
    """The daemon's sync service, if any: `start()`, `tick()` from the daemon's loop, `stop()`."""

    def __init__(
        self,
        config: ResolvedConfig,
        registry: StoreRegistry,
        environ: Mapping[str, str],
        known_roots: Callable[[], set[str]],
    ) -> None:
        self.config = config
        self._registry = registry
        self._environ = environ
        self._known_roots = known_roots  # the follows' roots, from the daemon
        self.service: SyncService | None = None
        self.error = ""  # why the config file's latest sync settings were not taken
        self._reload = threading.Event()
        self._mark = _mark(config.config_path)
        self._next_look = time.monotonic() + _WATCH_S
        self._roots_path = config.state_dir / "store-roots"
        self._lock = threading.Lock()
        try:
            self._stores = {r for r in self._roots_path.read_text().splitlines() if r}
        except OSError:
            self._stores = set()

    def start(self) -> None:
        if self.config.sync_url is not None:
            self._start_service()
        else:
            self._registry.on_commit = self._remember

    def stop(self) -> None:
        self._registry.on_commit = None
        if self.service is not None:
            self.service.stop()
            self.service = None

    def request_reload(self) -> None:
        """Read the config file again at the next tick (safe from a signal handler)."""
        self._reload.set()

    def status(self) -> p.SyncStatusReply:
        """`SyncStatus` when sync is off (the service answers it when on)."""
        return p.SyncStatusReply(configured=False, config_error=self.error)

    def tick(self) -> None:
        now = time.monotonic()
        if not self._reload.is_set() and now < self._next_look:
            return
        self._next_look = now + _WATCH_S
        mark = _mark(self.config.config_path)
        if not self._reload.is_set() and mark == self._mark:
            return
        self._reload.clear()
        self._mark = mark
        self._apply()

    def _apply(self) -> None:
        path = self.config.config_path
        if path is None:  # settings given without a file: nothing to read again
            return
        try:
            file = load_config_file(path)
        except AzsdError as exc:
            self._set_error(str(exc))
            log.warning("the config file's sync settings were not taken: %s", exc)
            return
        url = file.sync_url or None
        identity = file.sync_identity or default_identity(self._environ)
        redact = file.sync_redact
        self._set_error("")
        old = self.config
        if (url, identity, redact) == (old.sync_url, old.sync_identity, old.sync_redact):
            return
        self.config = dataclasses.replace(old, sync_url=url, sync_identity=identity, sync_redact=redact)
        log.info("the config file's sync settings changed: sync %s", "on" if url else "off")
        self.stop()
        self.start()

    def _set_error(self, error: str) -> None:
        self.error = error
        if self.service is not None:
            self.service.config_error = error

    def _start_service(self) -> None:
        from azsd.sync.service import SyncService  # psycopg: only now

        try:  # the follows' roots, as kept for a restart
            followed = {r for r in self.config.roots_path.read_text().splitlines() if r}
        except OSError:
            followed = set()
        with self._lock:
            seed = self._stores | followed | self._known_roots() | set(self._registry.open_stores())
        self.service = SyncService(self.config, self._registry, session_view, seed=seed)
        self.service.config_error = self.error
        self.service.start()

    def _remember(self, root: str) -> None:
        """A store committed while sync is off: remember its root (called in the writer's thread)."""
        if root in self._stores:
            return
        with self._lock:
            self._stores.add(root)
            text = "".join(f"{r}\n" for r in sorted(self._stores))
            try:
                self._roots_path.parent.mkdir(parents=True, exist_ok=True)
                write_atomic(self._roots_path, text.encode(), mode=0o600)
            except OSError as exc:
                log.warning("cannot write %s: %s", self._roots_path, exc)
