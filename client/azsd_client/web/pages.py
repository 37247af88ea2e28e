"""The web view's pages: sessions, a transcript, search and usage, each one GET handler.

Each handler asks the daemon (through :class:`~.state.Web`'s one :class:`~azsd_client.AsyncClient`)
and renders a Jinja2 template; a daemon that does not answer gives the "azsd is away" page (503),
which reloads itself once the daemon is back.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Final

import msgspec
from aiohttp import web

from azsd.errors import AzsdError, RemoteError
from azsd.ipc.protocol import (
    RemoteSessionView,
    SearchHit,
    UsagePeriodView,
    UsageReply,
    UsageView,
)
from azsd_client.render.reports import hits_beyond

from . import charts
from .data import AGENTS, list_everywhere, session_agents, with_details
from .security import parameter_int
from .state import Web
from .views import Filters, filter_sessions, session_rows, transcript

__all__ = ["PAGE_EVENTS", "PAGE_SESSIONS", "routes"]

#: Events on one page of a transcript.
PAGE_EVENTS: Final = 200
#: Sessions on one page of the sessions table (a screen or two; the page's time grows with it).
PAGE_SESSIONS: Final = 100
_STATES: Final = ("running", "succeeded", "failed", "ended", "new")
_TEAM_SESSIONS: Final = 2_000
#: A `keep` no session has that many prompts: `PlanCompaction` then plans nothing and answers at once
#: with where the latest compaction ends (its `from_seq`), which is all the transcript needs.
_NO_PLAN: Final = 2**62


def _int(request: web.Request, name: str, default: int | None = None) -> int | None:
    value = request.query.get(name, "")
    if not value:
        return default
    return parameter_int(name, value)


async def _root(web_: Web, request: web.Request) -> str:
    """The `root` of the request: one of the stores this view shows."""
    root = request.query.get("root", "")
    roots = await web_.stores.roots(web_.client)
    if root not in roots:
        raise web.HTTPNotFound(text="no such store in this view\n")
    return root


async def sessions_page(web_: Web, request: web.Request) -> web.Response:
    q = request.query
    filters = Filters(q.get("worktree", ""), q.get("state", ""), q.get("agent", ""), q.get("q", "").strip())
    archived = q.get("archived") == "1"
    roots = await web_.stores.roots(web_.client)
    listed, agents = await asyncio.gather(
        list_everywhere(web_.client, roots, archived=archived), session_agents(web_.client, roots)
    )
    kept = filter_sessions(listed, filters, agents)
    page = max(0, _int(request, "page", 0) or 0)
    shown = await with_details(
        web_.client, listed, kept[page * PAGE_SESSIONS : (page + 1) * PAGE_SESSIONS], archived=archived
    )
    worktrees = sorted({v.worktree for _, views in listed for v in views})
    return web_.render(
        "sessions.html",
        request,
        rows=session_rows(shown, agents, web_.threshold),
        total=sum(len(views) for _, views in listed),
        kept=len(kept),
        roots=roots,
        filters=filters,
        archived=archived,
        worktrees=worktrees,
        states=_STATES,
        agents=AGENTS,
        page=page,
        more=len(kept) > (page + 1) * PAGE_SESSIONS,
    )


async def session_page(web_: Web, request: web.Request) -> web.Response:
    root = await _root(web_, request)
    sid = _int(request, "id")
    if sid is None:
        raise web.HTTPBadRequest(text="id is missing\n")
    try:
        view = (await web_.client.get_session(root, sid)).session
    except RemoteError as exc:
        if exc.code != "not_found":
            raise
        raise web.HTTPNotFound(text=f"no session S{sid} in this store\n") from None
    at = _int(request, "at")
    start = _int(request, "from")
    full = request.query.get("full") == "1"  # the full record: read from its start
    if start is None:
        start = (
            1 if full else max(1, at - 10) if at is not None else max(1, view.event_count - PAGE_EVENTS + 1)
        )
    page = await web_.client.get_events_page(root, sid, from_seq=start, limit=PAGE_EVENTS, full=full)
    full = page.full is True  # (none kept: the compact events, and the page says so)
    last = page.events[-1].seq if page.events else start - 1
    return web_.render(
        "session.html",
        request,
        root=root,
        view=view,
        full=full,
        no_full=request.query.get("full") == "1" and not full,
        items=transcript(page.events, (root, sid), full=full),
        start=start,
        previous=max(1, start - PAGE_EVENTS) if start > 1 else None,
        next_seq=page.next_seq,
        last=last,
        live=page.next_seq is None and not full,
        skipped=page.skipped,
        threshold=web_.threshold,
        at=at,
    )


async def context(web_: Web, request: web.Request) -> web.Response:
    """``{"after", "chars", "threshold"}``: the latest compaction (`azs compact`) summarised seqs
    1..`after` of the session (0: none), and its context meter: `chars` stored since, against
    `threshold`. Asked by the transcript page once it is shown: both read the whole session since its
    latest compaction (every prompt, every event's size), too slow for the first screen of a long one."""
    root = await _root(web_, request)
    sid = _int(request, "id")
    if sid is None:
        raise web.HTTPBadRequest(text="id is missing\n")
    plan, meter = await asyncio.gather(
        web_.client.plan_compaction(root, sid, keep=_NO_PLAN),
        web_.client.context_meter(root, sid, threshold=web_.threshold),
    )
    return web.json_response({"after": plan.from_seq - 1, "chars": meter.chars, "threshold": meter.threshold})


async def search_page(web_: Web, request: web.Request) -> web.Response:
    """`azs search`'s query and hits: plain text (every word as written, any case) unless `fts=1`
    (SQLite FTS5 syntax), every store's hits best first, a hit copied by forks once (`also_in`); with
    a branch (`worktree=`), how many hits the other branches hold, as `azs search` says."""
    q = request.query
    query = q.get("q", "").strip()
    fts = q.get("fts") == "1" and q.get("words") != "1"  # (`words=1`: an older link's plain text)
    kinds = q.getall("kind", [])
    worktree = q.get("worktree", "")
    roots = await web_.stores.roots(web_.client)
    results: list[tuple[str, SearchHit]] = []
    error, hidden, limit = "", 0, _int(request, "limit", 50) or 50
    if query:

        async def one(root: str, branch: str) -> list[tuple[str, SearchHit]]:
            reply = await web_.client.search(
                root, query, limit=limit, worktrees=[branch] if branch else None,
                kinds=kinds or None, words=not fts,
            )  # fmt: skip
            return [(root, hit) for hit in reply.hits]

        try:
            found = await asyncio.gather(*(one(root, worktree) for root in roots))
            if worktree:  # the hits a branch hides are counted, never hidden without a word
                everywhere = await asyncio.gather(*(one(root, "") for root in roots))
                hidden = sum(
                    hits_beyond([h for _, h in shown], [h for _, h in every])
                    for shown, every in zip(found, everywhere, strict=True)
                )
        except RemoteError as exc:
            error = str(exc)
        else:
            results = sorted((pair for hits in found for pair in hits), key=lambda p: p[1].rank)[:limit]
    return web_.render(
        "search.html", request, query=query, fts=fts, kinds=kinds, worktree=worktree,
        results=results, error=error, roots=roots, hidden=hidden, limit=limit,
        all_kinds=("user", "assistant", "tool", "call", "result", "plan"),
    )  # fmt: skip


def _merge(replies: list[UsageReply]) -> UsageReply:
    """One reply of the usage of several stores (periods side by side; totals added: unpriced only
    when every store's is, tokens without a price added up)."""
    if len(replies) == 1:
        return replies[0]
    totals = [msgspec.structs.asdict(r.total) for r in replies]
    fields = ("input", "output", "cache_read", "cache_write", "reasoning", "cost_usd", "unpriced_tokens")
    total = {name: sum(t[name] for t in totals) for name in fields}
    sources = {r.total.cost_source for r in replies}
    source = "unpriced" if sources == {"unpriced"} else "estimated" if "estimated" in sources else "reported"
    return UsageReply(
        sessions=[s for r in replies for s in r.sessions],
        worktrees=[w for r in replies for w in r.worktrees],
        total=UsageView(**total, cost_source=source),
        by=replies[0].by if replies else "",
        periods=[p for r in replies for p in r.periods],
    )


async def usage_page(web_: Web, request: web.Request) -> web.Response:
    q = request.query
    roots = await web_.stores.roots(web_.client)
    chosen = [q["root"]] if q.get("root") in roots else roots
    worktree = q.get("worktree", "") or None
    session = _int(request, "session")
    scope: dict[str, Any] = {"worktrees": [worktree] if worktree else None, "session": session}

    async def ask(by: str | None, by_model: bool = False) -> UsageReply:
        replies = await asyncio.gather(
            *(web_.client.usage(root, by=by, by_model=by_model, **scope) for root in chosen)
        )
        return _merge(list(replies))

    if not chosen:
        days = blocks = plain = UsageReply(sessions=[], worktrees=[], total=UsageView(), periods=[])
    else:
        days, blocks, plain = await asyncio.gather(ask("day", True), ask("block"), ask(None))
    team = await _team(web_, chosen[0]) if chosen else None
    return web_.render(
        "usage.html",
        request,
        roots=roots,
        root=q.get("root", ""),
        worktree=worktree or "",
        session=session,
        usage=plain,
        day_totals=charts.day_totals(days.periods),
        chart_days=charts.cost_by_day(days),
        chart_kinds=charts.token_kinds(plain.total),
        block=charts.active_block(blocks),
        team=team,
        kinds=charts.KINDS,
    )


async def _team(web_: Web, root: str) -> Team | None:
    """The team's usage in the sync database (`RemoteUsage`, summed there) for `root`'s repository:
    per person, per day and per model; None when sync is off or cannot be reached."""
    try:
        if not (await web_.client.sync_status()).configured:
            return None
        people, days, models = await asyncio.gather(
            *(web_.client.remote_usage(root, by=by) for by in ("person", "day", "model"))
        )
        sessions: list[RemoteSessionView] = []
        while len(sessions) < _TEAM_SESSIONS:  # who pushed as whom, and how many sessions
            reply = await web_.client.remote_list(root, limit=500, offset=len(sessions))
            sessions += reply.sessions
            if not reply.sessions or len(sessions) >= reply.total:
                break
    except RemoteError:
        return None
    return Team(charts.team_usage(people, sessions), people.total, days.periods, models.periods)


@dataclass(frozen=True)
class Team:
    """The usage page's team part: per person, and the team's total, days and models."""

    people: list[charts.TeamRow]
    total: UsageView
    days: list[UsagePeriodView]
    models: list[UsagePeriodView]


async def whole_event(web_: Web, request: web.Request) -> web.Response:
    """One event as stored (its JSON), as plain text: the whole of one a page shows folded."""
    root = await _root(web_, request)
    sid, seq = _int(request, "id"), _int(request, "seq")
    if sid is None or seq is None:
        raise web.HTTPBadRequest(text="id and seq are needed\n")
    page = await web_.client.get_events_page(root, sid, from_seq=seq, limit=1)
    found = [e for e in page.events if e.seq == seq]
    if not found:
        raise web.HTTPNotFound(text=f"no event {seq} in S{sid}\n")
    return web.Response(text=found[0].data, content_type="text/plain", charset="utf-8")


def routes(web_: Web) -> list[web.RouteDef]:
    """The page routes, each handler bound to `web_`; a daemon that does not answer is the 503 page."""

    def page(handler: Any) -> Any:
        async def wrapped(request: web.Request) -> web.StreamResponse:
            try:
                response: web.StreamResponse = await handler(web_, request)
                return response
            except AzsdError as exc:
                if isinstance(exc, RemoteError):
                    raise web.HTTPBadRequest(text=f"azsd: {exc}\n") from None
                return web_.render("away.html", request, status=503, reason=str(exc))

        return wrapped

    return [
        web.get("/", page(sessions_page)),
        web.get("/session", page(session_page)),
        web.get("/search", page(search_page)),
        web.get("/usage", page(usage_page)),
        web.get("/session/context", page(context)),
        web.get("/session/event", page(whole_event)),
    ]
