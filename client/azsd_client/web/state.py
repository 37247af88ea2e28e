"""What the web view's handlers share: :class:`Web` (one :class:`~azsd_client.AsyncClient`, the
stores shown, the daemon watch, the Jinja2 environment) and the live streams it serves.

The pages (:mod:`.pages`) take it as their first argument; the application (:mod:`.server`) is built
around it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import urlencode

import jinja2
import msgspec
from aiohttp import web
from markupsafe import Markup

from azsd.config import ResolvedConfig
from azsd.ipc.protocol import WireEvent
from azsd_client.aio import AsyncClient

from . import charts
from .data import Stores
from .live import Watch, daemon_stream, session_stream
from .security import parameter_int
from .views import FOLD_CHARS, clean, transcript

__all__ = ["Web"]


def _finalize(value: Any) -> Any:
    """Every value a template prints: text with its control characters made visible (HTML escaping
    is autoescape's)."""
    return clean(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("azsd_client.web", "templates"),
        autoescape=True,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.globals["url"] = _url
    env.globals["fold_chars"] = FOLD_CHARS
    env.filters["json"] = _json
    env.filters["cost"] = charts.cost  # a UsageView's cost: `?` when unpriced, never $0
    return env


def _url(path: str, **query: Any) -> str:
    """A link within the view: `path` and its query (values None or "" left out)."""
    kept = {k: v for k, v in query.items() if v is not None and v != ""}
    return f"{path}?{urlencode(kept, doseq=True)}" if kept else path


def _json(value: Any) -> str:
    """`value` as JSON for a ``<script type="application/json">`` block: ``<``, ``>`` and ``&`` are
    escaped, so no text in it can close the block (it is marked safe after that)."""
    text = msgspec.json.encode(value).decode()
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


class Web:
    """What the handlers share."""

    def __init__(self, config: ResolvedConfig, roots: Iterable[str], *, timeout: float = 10.0) -> None:
        self.config = config
        self.client = AsyncClient(config, timeout=timeout)
        self.stores = Stores(config, roots)
        self.watch = Watch(AsyncClient(config, timeout=timeout))
        self.threshold = config.compaction_threshold
        self.env = _environment()

    def render(self, name: str, request: web.Request, *, status: int = 200, **context: Any) -> web.Response:
        """The page of template `name`."""
        text = self.env.get_template(name).render(request=request, path=request.path, **context)
        return web.Response(text=text, status=status, content_type="text/html", charset="utf-8")

    def fragment(self, macro: str, **arguments: Any) -> str:
        """The HTML of one macro of ``items.html`` (a live transcript's new items)."""
        module = self.env.get_template("items.html").module
        return str(getattr(module, macro)(**arguments))

    async def session_events(self, request: web.Request) -> web.StreamResponse:
        root = request.query.get("root", "")
        if not self.stores.knows(root):
            raise web.HTTPNotFound(text="no such store in this view\n")
        if "id" not in request.query:
            raise web.HTTPBadRequest(text="id is missing\n")
        session = parameter_int("id", request.query["id"])
        after = parameter_int("after", request.query.get("after", "0"))
        return await session_stream(
            request, self.watch, self.client, (root, session), after,
            lambda events: self.render_items(events, (root, session)),
        )  # fmt: skip

    def render_items(
        self, events: list[WireEvent], where: tuple[str, int] | None = None
    ) -> list[dict[str, Any]]:
        """New events for a live transcript, rendered as the page renders them: each as HTML, and a
        tool result also as the part that folds into its call (when the call is on the page)."""
        out: list[dict[str, Any]] = []
        for item in transcript(events, where):
            entry: dict[str, Any] = {"seq": item.seq, "html": self.fragment("item", item=item)}
            if item.kind == "ToolResult" and item.tool_use_id:
                entry["tool"] = item.tool_use_id
                entry["fold"] = self.fragment("result", view=item.view, seq=item.seq, failed=item.failed)
            out.append(entry)
        return out

    async def daemon_events(self, request: web.Request) -> web.StreamResponse:
        return await daemon_stream(request, self.watch)
