"""azsd: the session-store daemon for AI coding agents (AZUREAL `.azs` stores).

The package root stays light (the `azs` client imports it): the store and context API load on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from azsd.lazy import lazy_names
from azsd.version import __version__

__all__ = (
    "AzsdError",
    "ContextPayload",
    "SessionInfo",
    "Store",
    "StoredEvent",
    "__version__",
    "build_context_prompt",
    "sanitize",
    "strip",
)

if TYPE_CHECKING:
    from azsd.context import ContextPayload, build_context_prompt, sanitize, strip
    from azsd.errors import AzsdError
    from azsd.model import SessionInfo, StoredEvent
    from azsd.store import Store

__getattr__ = lazy_names(
    __name__,
    {
        "AzsdError": "azsd.errors",
        "ContextPayload": "azsd.context",
        "build_context_prompt": "azsd.context",
        "sanitize": "azsd.context",
        "strip": "azsd.context",
        "SessionInfo": "azsd.model",
        "StoredEvent": "azsd.model",
        "Store": "azsd.store",
    },
)
