"""Follow latency: an agent appends a line → a subscriber receives the stored event.

Measured through the real daemon (follow + store + publish) and, as the baseline, the same
appends observed by a bare `watchfiles.watch` of the directory with the same tuning, in the same
run; the appends come 30 ms apart and a random part of two of the watch's steps more, the same
for both (:func:`bench.common.pauses`). Run alone: `python -m bench.follow_latency [--quick]`.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import zmq

from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_sub, recv_notification
from azsd_client import Client
from bench.common import bare_watch_latencies, daemon_config, pauses, percentile, report, running_daemon

#: The watch's step (ms) of the daemon's follows (azsd.server.follow), the baseline's too.
STEP_MS = 5
LINE = (
    b'{"type":"assistant","session_id":"s","message":{"id":"m%d","content":[{"type":"text","text":"t%d"}]}}\n'
)


def azsd_latencies(gaps: list[float]) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        root = base / "wt"
        root.mkdir()
        with running_daemon(base / "run"):
            target = root / "agent.jsonl"
            target.write_bytes(b"")
            with Client(daemon_config(base / "run"), timeout=10) as client:  # set-up only: not timed
                sid = client.create_session(root).session.id
                client.follow(root, sid, target, format="claude-stream-json")
            ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
            sub = connect_sub(ctx, f"ipc://{base / 'run' / 'pub'}", [p.topic(str(root), sid)])
            time.sleep(0.5)
            out: list[float] = []
            with open(target, "ab") as writer:
                for i, gap in enumerate(gaps):
                    start = time.perf_counter()
                    writer.write(LINE % (i, i))
                    writer.flush()
                    while True:
                        if not sub.poll(5000):
                            raise RuntimeError("no notification")
                        note = p.decode_notification(recv_notification(sub)[1])
                        if isinstance(note, p.EventsAppended) and any(
                            f'"t{i}"' in e.data for e in note.events
                        ):
                            break
                    out.append((time.perf_counter() - start) * 1000)
                    time.sleep(gap)
            sub.close(linger=0)
            ctx.term()
    return out


def watchfiles_latencies(gaps: list[float]) -> list[float]:
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        target = Path(tmp) / "agent.jsonl"
        target.write_bytes(b"")
        return bare_watch_latencies(
            Path(tmp), target, lambda i: LINE % (i, i), gaps, debounce=20, step=STEP_MS, recursive=False
        )


def main(*, quick: bool = False) -> None:
    n = 60 if quick else 300
    gaps = pauses(n, 0.03, STEP_MS / 1000)
    ours = azsd_latencies(gaps)
    bare = watchfiles_latencies(gaps)
    for q in (50, 99):
        report(f"follow_latency_p{q}", percentile(ours, q), "ms", percentile(bare, q))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
