"""The account's usage keys: which store counted each model response, across every store of the machine.

A store counts each API message id (a Claude message, a Codex response) once, whichever of its
files holds it (:mod:`azsd.store.usage`). The same response can also reach two stores: a session
resumed in another project's directory starts with a copy of the earlier messages, a file's folder
may name another project than the one it records. The daemon, the only writer of every store, keeps
one :class:`AccountKeys` for all of them: the first store to count a response owns it, and every
other store's parse leaves it out, so `usage --all` and the statusline (which sum the stores) count
each response once.

It is held in memory and never written anywhere: the stores are the truth. It is built at the
daemon's start from the keys every known store counted (``azsd_usage_claims``, and the ledger of
removed sessions), as the stores keep them: a 64-bit digest of each id
(:func:`azsd.store.side_rows.key_digest`), and a store it did not know is added when it opens,
before anything is written to it. A claim made for a store whose file is gone since is given to
the next store that asks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from azsd.store.core import store_path

__all__ = ["AccountKeys"]


class AccountKeys:
    """The owners of the account's usage keys (one store root each); safe to share between threads."""

    def __init__(self, *, loading: bool = False) -> None:
        self._lock = threading.Lock()
        self._ready = threading.Event()  # claims wait while the known stores' keys are taken in
        if not loading:
            self._ready.set()
        self._roots: list[str] = []  # each root once; a key's owner is its index here
        self._index: dict[str, int] = {}
        self._owner: dict[int, int] = {}  # key digest: its owner
        self._adopted: set[str] = set()

    def __len__(self) -> int:
        return len(self._owner)

    def loaded(self) -> None:
        """The known stores' keys are in (made `loading`, the account answers claims only then)."""
        self._ready.set()

    def adopted(self, root: str) -> bool:
        """Whether the keys `root`'s store counted were taken in."""
        with self._lock:
            return root in self._adopted

    def adopt(self, root: str, keys: Iterable[int]) -> int:
        """Take in the keys `root`'s store counted (those no store owns yet become its own); how many
        another store owned already (counted twice before the account kept its keys)."""
        with self._lock:
            me = self._root_index(root)
            self._adopted.add(root)
            twice = 0
            for key in keys:
                owner = self._owner.setdefault(key, me)
                twice += owner != me
            return twice

    def claim(self, keys: Iterable[int], root: str) -> set[int]:
        """Those of `keys` another store counted; the others are `root`'s from now on."""
        self._ready.wait()
        with self._lock:
            me = self._root_index(root)
            elsewhere: set[int] = set()
            for key in keys:
                owner = self._owner.setdefault(key, me)
                if owner == me:
                    continue
                if self._store_exists(owner):
                    elsewhere.add(key)
                else:  # its store is gone: what it counted is no longer counted anywhere
                    self._owner[key] = me
            return elsewhere

    def counted(self, keys: Iterable[int], root: str) -> set[int]:
        """Those of `keys` a store other than `root`'s counted (a question that claims nothing)."""
        self._ready.wait()
        with self._lock:
            me = self._index.get(root)
            owners = {
                key: owner for key in keys if (owner := self._owner.get(key)) is not None and owner != me
            }
            alive = {owner: self._store_exists(owner) for owner in set(owners.values())}
            return {key for key, owner in owners.items() if alive[owner]}

    def _root_index(self, root: str) -> int:
        found = self._index.get(root)
        if found is None:
            found = self._index[root] = len(self._roots)
            self._roots.append(root)
        return found

    def _store_exists(self, owner: int) -> bool:
        """Whether the store of root number `owner` is still there (asked of a key two stores want,
        which only copies are: a stat each is cheap there)."""
        return store_path(Path(self._roots[owner])).exists()
