"""azsd: the session-store daemon for AI coding agents (AZUREAL `.azs` stores).

The package root stays light (the `azs` client imports it): the store and context API load on
first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

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

_LAZY = {
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
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'azsd' has no attribute {name!r}")
    from importlib import import_module

    return getattr(import_module(module), name)
