"""`azs web`'s usage page with sync on: the team's usage per person (`RemoteUsage`, summed in the sync
database), through the daemon (two machines pushing to the real PostgreSQL on 127.0.0.1:5432; skipped
without it, failed under CI=true)."""

from __future__ import annotations

import html
import re
from collections.abc import Callable

import pytest

from tests.conftest import CORPUS, requires_corpus
from tests.pg_fixture import make_db, pg_url
from tests.sync_fixture import Machine, machines, wait_until
from tests.web_fixture import web_server

# The machine's one PostgreSQL server (test_sync_crash restarts it): `make test` runs these apart,
# one at a time, after the others.
pytestmark = pytest.mark.postgres

__all__ = ["machines", "make_db", "pg_url"]  # the fixtures, re-exported for pytest

ORIGIN = "git@example.invalid:team/project.git"
#: Another database role's text is a stranger's: shown as text.
BOB = "<img src=x onerror=alert(1)>bob@desk"
USAGE_FILE = CORPUS / "claude-session" / "agentcmd__full-session-two.jsonl"


@requires_corpus
def test_the_usage_page_shows_the_teams_usage_per_person(
    pg_url: str, machines: Callable[..., Machine]
) -> None:
    ann, bob = machines(pg_url, "ann@laptop"), machines(pg_url, BOB)
    roots = []
    for machine in (ann, bob):
        root = machine.root("wt", origin=ORIGIN)
        roots.append(root)
        with machine.daemon.client() as client:
            sid = client.create_session(root, "a run", worktree="main").session.id
            client.ingest_file(root, sid, USAGE_FILE)
    with ann.daemon.client() as client:

        def both_pushed() -> bool:
            listed = client.remote_list(roots[0]).sessions
            return len(listed) == 2 and all(s.usage is not None and s.usage.cost_usd > 0 for s in listed)

        wait_until("both machines' usage pushed", both_pushed)
        remote = client.remote_list(roots[0]).sessions
        people = client.remote_usage(roots[0], by="person")
    assert {s.identity for s in remote} == {"ann@laptop", BOB} and people.periods
    with web_server(ann.daemon, [str(roots[0])]) as web:
        status, _, page = web.get("/usage")
    assert status == 200
    team = page[page.index('id="team"') : page.index('id="team-days"')]
    rows = re.findall(
        r'<tr><td>([^<]+)</td><td class="meta">([^<]*)</td><td class="num">(\d+)</td>'
        r'<td class="num">([\d,]+)</td><td class="num">(~?\$[\d.]+)</td>',
        team,
    )
    expected = [
        (
            p.period,
            html.escape(", ".join(sorted({s.identity for s in remote if s.owner == p.period})), quote=False),
            str(sum(1 for s in remote if s.owner == p.period)),
            f"{p.total_tokens:,}",
            f"{'~' if p.usage.cost_source == 'estimated' else ''}${p.usage.cost_usd:.4f}",
        )
        for p in sorted(people.periods, key=lambda p: (-p.usage.cost_usd, p.period))
    ]
    assert rows == expected  # the database's sums per person (the role that pushed), as `usage --remote`
    assert sum(int(n) for _, _, n, _, _ in rows) == 2
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;bob@desk" in page
    tilde = "~" if people.total.cost_source == "estimated" else ""
    assert f"total {tilde}${people.total.cost_usd:.4f}" in page
