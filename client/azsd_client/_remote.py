# GENERATED from _aio_remote.py by client/unasync.py (`make unasync`): edit _aio_remote.py, never this file.
"""The sync requests of :class:`~azsd_client.Client` (PostgreSQL: status, remote sessions, pull).
The asyncio module is the source; its blocking twin is generated from it by ``make unasync``.

Each is an error reply `sync_error` when the daemon has no `sync-url`; each method's `options` are
its request's fields (see :mod:`azsd.ipc.protocol`).
"""

from __future__ import annotations

from typing import TypeVar

import azsd.ipc.protocol as _p
from azsd.ipc.protocol import Request

from ._connection import Connection
from ._shared import RootLike, long_timeout, store_request

__all__ = ["RemoteMethods"]

_R = TypeVar("_R")


class RemoteMethods(Connection):
    """The sync database's requests; :class:`~azsd_client.Client` has them with its `call`."""

    def call(self, message: Request, kind: type[_R], *, timeout: float | None = None) -> _R:
        raise NotImplementedError  # Client's

    def sync_status(self) -> _p.SyncStatusReply:
        """Whether sync is configured, and each known store's pushing (last pushed event, lag, error)."""
        return self.call(_p.SyncStatus(), _p.SyncStatusReply)

    def sync_verify(self, *, repair: bool = True, timeout: float | None = 600.0) -> _p.SyncVerifyReply:
        """Each pushed session's events in the sync database against its store's; with `repair`,
        what the database lacks is pushed again."""
        return self.call(_p.SyncVerify(repair=repair), _p.SyncVerifyReply, timeout=timeout)

    def remote_usage(self, root: RootLike, **options: object) -> _p.UsageReply:
        """The team's usage in the sync database (`by`: day, week, month, model, person, repository)."""
        return self.call(store_request(_p.RemoteUsage, root, options), _p.UsageReply)

    def remote_list(self, root: RootLike, **options: object) -> _p.RemoteSessionsReply:
        """The sessions of `root`'s repository in the sync database, from every machine, last pushed first."""
        return self.call(store_request(_p.RemoteList, root, options), _p.RemoteSessionsReply)

    def remote_show(self, root: RootLike, ref: str, **options: object) -> _p.RemoteSessionReply:
        """A session of the sync database (`ref`: ``@`` and a UUID prefix) and a page of its events."""
        message = store_request(_p.RemoteShow, root, {"ref": ref, **options})
        return self.call(message, _p.RemoteSessionReply)

    def remote_search(self, root: RootLike, query: str, **options: object) -> _p.RemoteSearchReply:
        """Ranked full-text search of the repository's sessions in the sync database, with snippets."""
        message = store_request(_p.RemoteSearch, root, {"query": query, **options})
        return self.call(message, _p.RemoteSearchReply)

    def pull(self, root: RootLike, ref: str, **options: object) -> _p.PullReply:
        """Copy a session of the sync database into `root`'s store as a new local session."""
        message = store_request(_p.Pull, root, {"ref": ref, **options})
        return self.call(message, _p.PullReply, timeout=long_timeout(None, self.timeout))
