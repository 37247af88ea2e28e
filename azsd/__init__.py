"""azsd: the session-store daemon for AI coding agents (AZUREAL `.azs` stores).

The package root stays light (the `azs` client imports it): the store and context API load on
first use.

>>> import azsd
>>> azsd.AzsdError.__module__, hasattr(azsd, "nothing")
('azsd.errors', False)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

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

# Loaded on first use (a module __getattr__, PEP 562).
_LAZY: Final = {
    "AzsdError": "azsd.errors",
    "ContextPayload": "azsd.context",
    "build_context_prompt": "azsd.context",
    "sanitize": "azsd.context",
    "strip": "azsd.context",
    "SessionInfo": "azsd.model",
    "StoredEvent": "azsd.model",
    "Store": "azsd.store",
}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(_LAZY[name]), name)
