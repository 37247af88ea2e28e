"""`azs web`: a local web view of the sessions the daemon serves, a client of the daemon like `azs`.

It reads through :class:`~azsd_client.AsyncClient` only (it writes nothing, and the daemon gains no
HTTP code): :mod:`.server` (the aiohttp application and how it runs), :mod:`.state` (what the
handlers share), :mod:`.security` (token, Host and Origin checks, Content-Security-Policy),
:mod:`.pages` (the pages), :mod:`.live` (server-sent events from the daemon's notifications),
:mod:`.data` (what it asks the daemon), and the pure :mod:`.views` and :mod:`.charts`. Templates
(Jinja2, autoescaped) and static files (the stylesheet, two small scripts, Chart.js) ship in the
package: nothing is fetched from the network. See docs/web.md.
"""

from __future__ import annotations

from .server import make_app, serve
from .state import Web

__all__ = ["Web", "make_app", "serve"]
