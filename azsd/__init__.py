"""azsd: the session-store daemon for AI coding agents (AZUREAL `.azs` stores)."""

from azsd.context import ContextPayload, build_context_prompt, sanitize, strip
from azsd.errors import AzsdError
from azsd.model import SessionInfo, StoredEvent
from azsd.store import Store

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
