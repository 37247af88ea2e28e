"""azsd_client: the typed Python client of the azsd daemon (sync and asyncio) and the `azs` CLI.

It speaks only the wire protocol (:mod:`azsd.ipc.protocol`) over ZeroMQ and never opens a store.

>>> from azsd_client import Client
>>> with Client() as client:                     # doctest: +SKIP
...     for view in client.list_sessions("/src/project").sessions:
...         print(view.display_name, view.state)
"""

from __future__ import annotations

from ._shared import RootLike
from ._version import __version__
from .aio import AsyncClient, AsyncSubscription
from .client import Client, Subscription
from .follow import FollowItem, follow_session

__all__ = (
    "AsyncClient",
    "AsyncSubscription",
    "Client",
    "FollowItem",
    "RootLike",
    "Subscription",
    "__version__",
    "follow_session",
)
