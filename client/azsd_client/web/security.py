"""What every response of `azs web` goes through: the token, Host and Origin checks, and the headers.

The web view serves one person on one machine, so every request must prove three things:

- it comes for this server by name (**Host** is ``127.0.0.1:<port>``, ``localhost:<port>`` or
  ``[::1]:<port>``): a page of another site that re-points its own name at 127.0.0.1 (DNS rebinding)
  sends its own name as Host and is refused;
- it was not sent by another site (**Origin**, when the browser sends one, is this server's own;
  ``Sec-Fetch-Site: cross-site`` is refused too);
- it carries the **token**: the random one in the URL printed at start, ``?token=…``. The first
  visit trades it for a cookie (HttpOnly, SameSite=Strict, kept for :data:`COOKIE_DAYS` days, so a
  browser restarted while `azs web` runs is still logged in) and is redirected to the same path
  without it (never off this server: a path that reads as another host, ``//evil/``, is made one),
  so the token leaves the address bar and the history; a request with neither is 403. The cookie is
  named after the port (``azs_web_<port>``): two views at once keep a token each. Its value is not
  the token but an HMAC of it, and browsers send a host's cookies to every port of that host, so
  :mod:`.server` serves the view on a loopback address of its own (``127.x.y.z``, random): no
  other server a browser is sent to on this machine is at that host, and so none receives it.

Every response gets a strict Content-Security-Policy (scripts, styles and connections only from this
server, no inline script or style, no frames, no forms to elsewhere), ``nosniff``, no referrer and
``no-store``. Only GET and HEAD are served: the view changes nothing. A later form that changes
something must carry :func:`csrf_token` (derived from the token, never in a cookie) and have it
checked with :func:`check_csrf`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Middleware

__all__ = [
    "CSP", "Guard", "check_csrf", "cookie_name", "csrf_token", "new_token", "parameter_int", "secure_headers",
]  # fmt: skip

#: The Content-Security-Policy of every response: nothing inline, nothing from elsewhere.
CSP: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_HEADERS: Final = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
#: How long the login cookie is kept (past a browser restart; a new `azs web` run has a new token).
COOKIE_DAYS: Final = 30

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def cookie_name(port: int | None) -> str:
    """The cookie a server on `port` keeps its token in: ``azs_web_<port>`` (cookies are shared by every
    port of a host, so two views at once each need their own), ``azs_web`` on a Unix socket."""
    return "azs_web" if port is None else f"azs_web_{port}"


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def csrf_token(token: str, purpose: str) -> str:
    """The CSRF token a form for `purpose` must carry: an HMAC of `purpose` under the URL token."""
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).hexdigest()


def check_csrf(token: str, purpose: str, given: str) -> bool:
    """Whether `given` is the CSRF token of `purpose` (compared in constant time)."""
    return hmac.compare_digest(csrf_token(token, purpose), given)


class Guard:
    """The checks of every request to a server on `port` whose token is `token` (an aiohttp middleware).

    `hosts` are the Host values allowed (default: the loopback names with `port`); a server on a Unix
    socket has no port and takes ``localhost`` alone.
    """

    def __init__(self, token: str, port: int | None, hosts: tuple[str, ...] | None = None) -> None:
        self.token = token
        self.cookie = cookie_name(port)
        if hosts is None:
            suffix = "" if port is None else f":{port}"
            hosts = tuple(name + suffix for name in _LOOPBACK_NAMES)
        self.hosts = frozenset(hosts)
        self.origins = frozenset(f"http://{host}" for host in self.hosts)

    def refusal(self, request: web.Request) -> str | None:
        """Why `request` is refused, or None when it may be served."""
        if request.headers.get("Host", "") not in self.hosts:
            return "unknown Host (this server answers only to its own loopback address)"
        origin = request.headers.get("Origin")
        if origin is not None and origin not in self.origins:
            return "a request from another site"
        if request.headers.get("Sec-Fetch-Site") == "cross-site":
            return "a request from another site"
        if request.method not in ("GET", "HEAD"):
            return "this view is read-only"
        return None

    @property
    def cookie_value(self) -> str:
        """What the login cookie holds: the token's HMAC (the token itself is never sent again)."""
        return csrf_token(self.token, "login cookie")

    def has_token(self, request: web.Request) -> bool:
        """The request carries the token in its URL, or the login cookie."""
        if "token" in request.query:
            return hmac.compare_digest(request.query["token"].encode(), self.token.encode())
        given = request.cookies.get(self.cookie, "")
        return hmac.compare_digest(given.encode(), self.cookie_value.encode())

    def middleware(self) -> Middleware:
        """These checks as an aiohttp middleware."""

        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await self.check(request, handler)

        return guard

    async def check(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The response to `request`: a refusal, the redirect that trades the token for the cookie,
        or `handler`'s."""
        refusal = self.refusal(request)
        if refusal is not None:
            status = 405 if refusal == "this view is read-only" else 403
            return web.Response(status=status, text=f"azs web: refused: {refusal}\n")
        if not self.has_token(request):
            return web.Response(
                status=403, text="azs web: open the URL `azs web` printed (it has the token)\n"
            )
        if "token" in request.query:
            query = {k: v for k, v in request.query.items() if k != "token"}
            here = request.rel_url.with_path("/" + request.path.lstrip("/\\")).with_query(query)
            response = web.Response(status=303, headers={"Location": str(here)})
            response.set_cookie(
                self.cookie, self.cookie_value, httponly=True, samesite="Strict", path="/",
                max_age=COOKIE_DAYS * 86400,
            )  # fmt: skip
            return response
        return await handler(request)


async def secure_headers(request: web.Request, response: web.StreamResponse) -> None:
    """The security headers of every response, set as it is prepared (an event stream's too)."""
    response.headers.update(_HEADERS)


#: The largest number a query parameter may hold (a seq, an id, a page: the protocol's integers).
MAX_PARAMETER: Final = 2**53


def parameter_int(name: str, value: str) -> int:
    """A query parameter's number, or 400 (not a number, or out of range: never a 500 deeper down)."""
    try:
        number = int(value) if len(value) <= 20 else MAX_PARAMETER + 1
    except ValueError:
        raise web.HTTPBadRequest(text=f"{name} must be a number\n") from None
    if not -MAX_PARAMETER <= number <= MAX_PARAMETER:
        raise web.HTTPBadRequest(text=f"{name} is out of range\n")
    return number
