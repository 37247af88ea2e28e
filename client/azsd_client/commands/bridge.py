"""`azs bridge`: azsd over stdin and stdout, one JSON object a line, for editors (docs/bridge.md)."""

from __future__ import annotations

from .invocation import Invocation

__all__ = ["bridge"]


def bridge(run: Invocation) -> int:
    """Serve JSON-line requests on stdin until it ends; replies and notifications on stdout."""
    from azsd_client.bridge import run_bridge  # asyncio and the async client: only this command needs them

    return run_bridge(run.config, timeout=run.args.timeout, heartbeat=run.args.heartbeat)
