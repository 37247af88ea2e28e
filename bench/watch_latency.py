"""Watch latency: an agent appends a line to its own history → a subscriber hears the event stored,
with no command (the daemon's watch of the agents' homes, issue 34).

Measured through the real daemon watching a private Claude home (its `projects/<project>/` transcript
appended to line by line), and, as the baseline, the same appends seen by a bare recursive
`watchfiles.watch` of the same directory, in the same run. Run alone: `python -m bench.watch_latency
[--quick]`.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from functools import partial
from pathlib import Path

import zmq

from azsd.ingest.importer import claude_slug
from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_sub, recv_notification
from bench.common import bare_watch_latencies, pauses, percentile, report, running_daemon

SESSION = "bbbbbbbb-0000-4000-8000-00000000000b"


def _line(i: int, cwd: str) -> bytes:
    message = {"role": "user", "content": f"prompt {i}"}
    obj = {"type": "user", "sessionId": SESSION, "cwd": cwd, "uuid": f"u{i}", "message": message,
           "timestamp": "2026-11-28T10:00:00Z"}  # fmt: skip
    return json.dumps(obj).encode() + b"\n"


def daemon_latencies(gaps: list[float]) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        root = base / "wt"
        root.mkdir()
        projects = base / "home" / ".claude" / "projects" / claude_slug(str(root))
        projects.mkdir(parents=True)
        env = {"HOME": str(base / "home"), "AZSD_WATCH_AGENTS": "claude"}
        with running_daemon(base / "run", env):
            ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
            sub = connect_sub(ctx, f"ipc://{base / 'run' / 'pub'}", [p.topic(str(root))])
            time.sleep(0.5)
            out: list[float] = []
            with open(projects / f"{SESSION}.jsonl", "ab") as writer:
                for i, gap in enumerate(gaps):
                    start = time.perf_counter()
                    writer.write(_line(i, str(root)))
                    writer.flush()
                    while True:
                        if not sub.poll(5000):
                            raise RuntimeError("no notification")
                        note = p.decode_notification(recv_notification(sub)[1])
                        if i == 0 and isinstance(note, p.SessionCreated):
                            break  # the first line makes the session, its event with it
                        said = note.events if isinstance(note, p.EventsAppended) else []
                        if any(f"prompt {i}" in e.data for e in said):
                            break
                    out.append((time.perf_counter() - start) * 1000)
                    time.sleep(gap)
            sub.close(linger=0)
            ctx.term()
    return out


def watchfiles_latencies(gaps: list[float]) -> list[float]:
    """The same appends, seen by a bare watch with the daemon's tuning (150 ms debounce, 20 ms step)."""
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        folder = Path(tmp) / "projects" / "p"
        folder.mkdir(parents=True)
        line = partial(_line, cwd=tmp)
        return bare_watch_latencies(Path(tmp) / "projects", folder / f"{SESSION}.jsonl", line, gaps,
                                    debounce=150, step=20)  # fmt: skip


def main(*, quick: bool = False) -> None:
    n = 30 if quick else 150
    gaps = pauses(n, 0.05, 0.02)  # (the watch's step: 20 ms)
    ours = daemon_latencies(gaps)
    bare = watchfiles_latencies(gaps)
    for q in (50, 99):
        report(f"watch_latency_p{q}", percentile(ours, q), "ms", percentile(bare, q))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
