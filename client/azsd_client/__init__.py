"""azsd_client: the typed Python client of the azsd daemon (sync and asyncio) and the `azs` CLI.

It speaks only the wire protocol (:mod:`azsd.ipc.protocol`) over ZeroMQ and never opens a store.

>>> from azsd_client import Client
>>> with Client() as client:                     # doctest: +SKIP
...     for view in client.list_sessions("/src/project").sessions:
...         print(view.display_name, view.state)
"""

from __future__ import annotations

#: typing.TYPE_CHECKING without importing typing (~7 ms of every `azs statusline`); mypy knows the name.
TYPE_CHECKING = False

__all__ = (
    "AsyncClient",
    "AsyncPushSubscription",
    "AsyncSubscription",
    "Client",
    "FollowItem",
    "PushSubscription",
    "RootLike",
    "Subscription",
    "__version__",
    "follow_session",
)

if TYPE_CHECKING:
    from typing import Any, Final

    from ._shared import RootLike
    from ._version import __version__
    from .aio import AsyncClient, AsyncPushSubscription, AsyncSubscription
    from .client import Client, PushSubscription, Subscription
    from .follow import FollowItem, follow_session

# Loaded on first use, so that `azs` (which needs neither asyncio nor the package metadata for most
# commands) starts quickly, and its statusline fast path loads nothing of azsd.
_LAZY: Final = {
    "AsyncClient": ".aio",
    "AsyncSubscription": ".aio",
    "AsyncPushSubscription": ".aio",
    "Client": ".client",
    "Subscription": ".client",
    "PushSubscription": ".client",
    "FollowItem": ".follow",
    "follow_session": ".follow",
    "RootLike": "._shared",
    "__version__": "._version",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name], __name__), name)
