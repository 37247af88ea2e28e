"""Context build of a 10 000-event session, and listing 10 000 sessions.

Figures (median of repeated runs, in ms):

- `context_daemon`: `BuildContext` of a 10 000-event session through the real daemon and the real
  sync client (the whole prompt crosses the socket).
- `context_store`: `Store.rendered_context` + `build_context_prompt` in-process, on the same open
  Store (as the daemon's store worker runs it: the rendered context blocks, azsd.store.rendered).
- `context_store_cold`: the same on a freshly opened Store with the process's row cache emptied
  each time (nothing decoded before: the first context after the daemon starts).
- `list_daemon`: `ListSessions(limit=10000)` of a store holding 10 000 sessions, through the daemon.
- `list_daemon_changed`: the same right after another client renamed one of them (the listing kept
  from before cannot answer: the daemon reads it again).
- `list_store`: `Store.list_sessions(limit=10000)` in-process, on the same open Store.
- `list_store_cold`: the same on a freshly opened Store each time (its session index built first:
  the first listing after a store opens).

Baselines, in the same run: reading the same rows with plain sqlite3 and no decoding — the
session's `seq, data` in order for the context; for the list, the sessions' columns with their
event count, message count and latest event id, ordered by latest activity.
Run alone: `python -m bench.context_list [--quick]`.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from azsd.context import build_context_prompt
from azsd.events import AssistantText, Complete, Event, UserMessage
from azsd.store import Store
from azsd.store.cache import ROWS
from azsd_client import Client
from bench.common import corpus_like_events, daemon_config, median_of, report, running_daemon

EVENTS = 10_000
SESSIONS = 10_000
PROMPT = "Now add a test for the parser."

_BARE_LIST = """
    SELECT s.id, s.name, s.worktree, s.created, s.completed, s.duration_ms, s.cost_usd,
           COALESCE(e.n, 0), COALESCE(e.msgs, 0)
    FROM sessions AS s LEFT JOIN (
        SELECT session_id, COUNT(*) AS n, SUM(kind IN ('UserMessage', 'AssistantText')) AS msgs,
               MAX(id) AS last_id
        FROM events GROUP BY session_id
    ) AS e ON e.session_id = s.id
    ORDER BY COALESCE(e.last_id, 0) DESC, s.id DESC
"""


def _fill(context_root: Path, list_root: Path) -> int:
    """A 10 000-event session in one store, 10 000 small sessions in another; returns the big one's id."""
    with Store.open(context_root) as store:
        sid = store.create_session("big", "main").id
        events = corpus_like_events(EVENTS)
        for i in range(0, EVENTS, 500):
            store.append_events(sid, events[i : i + 500])
    with Store.open(list_root) as store, store.atomic(create=True):
        for i in range(SESSIONS):
            sid_i = store.create_session(f"session {i}" if i % 3 else None, "main" if i % 2 else "feat").id
            turn: list[Event] = [UserMessage(content=f"prompt {i}"), AssistantText(text="done " * 20)]
            if i % 4:
                turn.append(Complete(success=i % 5 != 0, duration_ms=1000 + i, cost_usd=0.01))
            store.append_events(sid_i, turn)
    return sid


def main(*, quick: bool = False) -> None:
    runs = 7 if quick else 25
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        ctx_root, list_root = base / "ctx", base / "list"
        ctx_root.mkdir()
        list_root.mkdir()
        sid = _fill(ctx_root, list_root)

        with Store.open(ctx_root) as store:
            build_context_prompt(store.rendered_context(sid), PROMPT)
            store_s = median_of(runs, lambda: build_context_prompt(store.rendered_context(sid), PROMPT))

        colds = []
        for _ in range(runs):
            ROWS.clear()  # nothing decoded yet: as after the daemon starts
            start = time.perf_counter()
            with Store.open(ctx_root) as fresh:
                build_context_prompt(fresh.rendered_context(sid), PROMPT)
            colds.append(time.perf_counter() - start)
        cold_s = statistics.median(colds)
        with Store.open(list_root) as store:
            assert len(store.list_sessions(limit=SESSIONS)) == SESSIONS
            list_store_s = median_of(runs, lambda: store.list_sessions(limit=SESSIONS))

        def list_cold() -> None:
            with Store.open(list_root) as fresh:
                fresh.list_sessions(limit=SESSIONS)

        list_cold_s = median_of(runs, list_cold)

        conn = sqlite3.connect(f"file:{ctx_root / '.azureal' / 'sessions.azs'}?mode=ro", uri=True)
        ctx_sql = "SELECT seq, data FROM events WHERE session_id = ? ORDER BY seq"
        conn.execute(ctx_sql, (sid,)).fetchall()
        bare_ctx_s = median_of(runs, lambda: conn.execute(ctx_sql, (sid,)).fetchall())
        conn.close()
        conn = sqlite3.connect(f"file:{list_root / '.azureal' / 'sessions.azs'}?mode=ro", uri=True)
        assert len(conn.execute(_BARE_LIST).fetchall()) == SESSIONS
        bare_list_s = median_of(runs, lambda: conn.execute(_BARE_LIST).fetchall())
        conn.close()

        with running_daemon(base / "run"), Client(daemon_config(base / "run"), timeout=60) as client:
            prompt = client.build_context(ctx_root, sid, PROMPT).prompt
            daemon_ctx_s = median_of(runs, lambda: client.build_context(ctx_root, sid, PROMPT))
            listed = client.list_sessions(list_root, None, limit=SESSIONS)
            assert len(listed.sessions) == SESSIONS
            daemon_list_s = median_of(runs, lambda: client.list_sessions(list_root, None, limit=SESSIONS))
            with Client(daemon_config(base / "run"), timeout=60) as other:
                changed = []
                for n in range(runs):
                    other.rename_session(list_root, 1 + n % 7, f"renamed {n}")
                    start = time.perf_counter()
                    client.list_sessions(list_root, None, limit=SESSIONS)
                    changed.append(time.perf_counter() - start)
            changed_s = statistics.median(changed)
    print(f"# context_list: {EVENTS} events -> a {len(prompt) / 1e6:.1f} MB prompt; {SESSIONS} sessions")
    report("context_daemon", daemon_ctx_s * 1e3, "ms", bare_ctx_s * 1e3)
    report("context_store", store_s * 1e3, "ms", bare_ctx_s * 1e3)
    report("context_store_cold", cold_s * 1e3, "ms", bare_ctx_s * 1e3)
    report("list_daemon", daemon_list_s * 1e3, "ms", bare_list_s * 1e3)
    report("list_daemon_changed", changed_s * 1e3, "ms", bare_list_s * 1e3)
    report("list_store", list_store_s * 1e3, "ms", bare_list_s * 1e3)
    report("list_store_cold", list_cold_s * 1e3, "ms", bare_list_s * 1e3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
