"""What the daemon keeps beside its stores: its private runtime directory, the locks that make it the
only one, the account's stores (every store root it has opened, in its state directory's ``stores``
file, which `azs statusline` sums over), and their usage keys (:mod:`azsd.store.account`).
"""

from __future__ import annotations

import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import IO

from azsd.errors import AlreadyRunning, AzsdError, ConfigError
from azsd.files import lock_holder, take_lock, write_atomic
from azsd.store import Store
from azsd.store.account import AccountKeys

__all__ = ["StoreRoots", "adopt_keys", "load_account", "prepare_runtime_dir", "take_daemon_lock"]

log = logging.getLogger("azsd.server.daemon")


def prepare_runtime_dir(path: Path) -> None:
    """Create the runtime dir private to this user (0700), or refuse one others can enter."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)  # never follow a link someone else may have put there
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise ConfigError(f"runtime dir {path} is not a directory of its own (a link or a file): refusing it")
    if info.st_uid != os.getuid():
        raise ConfigError(f"runtime dir {path} belongs to uid {info.st_uid}, not to you")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700, follow_symlinks=False)
        log.warning("tightened the permissions of %s to 0700", path)


def take_daemon_lock(path: Path) -> IO[str]:
    """Hold an exclusive lock on `path` for the life of the process, with our pid in it."""
    handle = take_lock(path)
    if handle is None:
        raise AlreadyRunning(f"azsd is already running (pid {lock_holder(path)}, lock {path})")
    return handle


class StoreRoots:
    """The account's stores, kept in `path`: read at start (those still there), noted as they open."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        try:  # a worktree removed since drops out
            listed = path.read_text().splitlines()
            self._roots = {r for r in listed if r and os.path.isdir(os.path.join(r, ".azureal"))}
        except OSError:
            self._roots = set()

    def known(self) -> list[str]:
        """The roots noted (those still there when the daemon started, and those opened since)."""
        with self._lock:
            return sorted(self._roots)

    def note(self, root: str) -> None:
        """A store of `root` opened: kept in the file (best effort: a store opens all the same)."""
        with self._lock:
            if root in self._roots:
                return
            self._roots.add(root)
            try:
                write_atomic(self.path, "".join(f"{r}\n" for r in sorted(self._roots)).encode(), mode=0o600)
            except OSError as exc:
                log.warning("cannot note the store %s in %s: %s", root, self.path, exc)


def load_account(roots: list[str]) -> AccountKeys:
    """The account's usage keys, taken in from the stores of `roots` on a thread of its own (claims
    wait until it is done; a store that cannot be read now is taken in when it opens). Every store
    the daemon opens asks them from now on, its writer's and its readers' (`usage --all` reads in
    place on a reader)."""
    account = AccountKeys(loading=True)
    Store.account = account  # (one daemon per process: the account is the process's)

    def load() -> None:
        started = time.monotonic()
        try:
            for root in roots:
                try:
                    with Store.open(Path(root), reader=True) as store:
                        adopt_keys(account, store, root)
                except (AzsdError, OSError) as exc:
                    log.warning("the usage keys of %s are taken in when it opens: %s", root, exc)
        finally:
            account.loaded()
        log.info("%d usage keys of %d stores in %.2f s", len(account), len(roots), time.monotonic() - started)

    threading.Thread(target=load, name="azsd-account-keys", daemon=True).start()
    return account


def adopt_keys(account: AccountKeys, store: Store, root: str) -> None:
    """Take the keys the store of `root` counted into `account` (once)."""
    if account.adopted(root):
        return
    twice = account.adopt(root, store.counted_usage_keys())
    if twice:
        log.warning(
            "%s: %d model responses were counted in another store too (before azsd kept the account's keys)",
            root,
            twice,
        )
