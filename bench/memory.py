"""Daemon memory: peak RSS while following a big file being appended, and while serving 50 clients.

Each scenario runs on a freshly started daemon and reads its VmHWM (peak resident set) from
/proc/<pid>/status at the end:

- `memory_follow`: the daemon follows a Claude stream-json file (~1 GB; `--quick`: ~100 MB) that
  this process appends to, block by block, as fast as it can generate it, until the final
  `result` line ends the follow and everything is stored.
- `memory_clients`: 50 concurrent clients (threads, each with its own `Client` and socket) on
  5 worktree stores run a mixed loop — append a few events to their own session, read a page,
  list sessions, build the context, `Status` — for a while.

Baseline: the RSS of the same daemon idle right after it started. Values in MB (MiB).
Run alone: `python -m bench.memory [--quick]`.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from azsd_client import Client
from bench.common import (
    corpus_like_events,
    daemon_config,
    report,
    rss_kib,
    running_daemon,
    stream_json_blocks,
)

CLIENTS = 50
ROOTS = 5


def _idle_rss(pid: int) -> int:
    time.sleep(1.0)  # let start-up finish (imports, threads, sockets)
    return rss_kib(pid)[0]


def follow_peak(size: int) -> tuple[int, int, list[int]]:
    """(idle RSS, VmHWM, RSS samples) of a daemon following a file of about `size` bytes, in KiB."""
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        root = base / "wt"
        root.mkdir()
        target = root / "agent.jsonl"
        target.write_bytes(b"")
        with running_daemon(base / "run") as proc, Client(daemon_config(base / "run"), timeout=60) as client:
            idle = _idle_rss(proc.pid)
            sid = client.create_session(root, "follow").session.id
            client.follow(root, sid, target, format="claude-stream-json", writer_pid=os.getpid())
            samples: list[int] = []
            next_sample = time.monotonic()
            with open(target, "ab") as writer:
                for block in stream_json_blocks(size):
                    writer.write(block)
                    writer.flush()
                    if time.monotonic() >= next_sample:
                        samples.append(rss_kib(proc.pid)[0])
                        next_sample += 0.5
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                samples.append(rss_kib(proc.pid)[0])
                views = [f for f in client.status().follows if f.path == str(target.resolve())]
                if views and not views[0].active:
                    break
                time.sleep(0.25)
            else:
                raise RuntimeError("the follow did not end")
            peak = rss_kib(proc.pid)[1]
            stored = client.get_session(root, sid).session.event_count
    print(f"# memory_follow: {size / 1e6:.0f} MB followed, {stored} events stored; RSS samples (MB): "
          + " ".join(f"{s / 1024:.0f}" for s in samples[:: max(1, len(samples) // 12)]))  # fmt: skip
    return idle, peak, samples


def clients_peak(duration: float) -> tuple[int, int, int]:
    """(idle RSS, VmHWM, requests done) of a daemon serving `CLIENTS` concurrent clients, in KiB."""
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        roots = [base / f"wt{i}" for i in range(ROOTS)]
        for root in roots:
            root.mkdir()
        with running_daemon(base / "run") as proc:
            idle = _idle_rss(proc.pid)
            config = daemon_config(base / "run")
            events = corpus_like_events(400)
            start = threading.Barrier(CLIENTS + 1)
            stop = threading.Event()
            counts = [0] * CLIENTS
            errors: list[BaseException] = []

            def run(i: int) -> None:
                root = roots[i % ROOTS]
                try:
                    with Client(config, timeout=60) as client:
                        sid = client.create_session(root, f"client {i}").session.id
                        start.wait()
                        k = 0
                        while not stop.is_set():
                            client.append_events(root, sid, events[k % 400 : k % 400 + 4])
                            client.get_events_page(root, sid, from_seq=max(1, k - 50), limit=100)
                            client.list_sessions(root, limit=100)
                            client.build_context(root, sid, "next")
                            client.status()
                            k += 4
                            counts[i] += 5
                except BaseException as exc:
                    errors.append(exc)
                    raise

            threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(CLIENTS)]
            for thread in threads:
                thread.start()
            start.wait()
            time.sleep(duration)
            stop.set()
            for thread in threads:
                thread.join(60)
            if errors:
                raise RuntimeError(f"a client failed: {errors[0]!r}")
            peak = rss_kib(proc.pid)[1]
    return idle, peak, sum(counts)


def main(*, quick: bool = False) -> None:
    size = 100_000_000 if quick else 1_000_000_000
    duration = 5.0 if quick else 20.0
    idle_f, peak_f, _ = follow_peak(size)
    idle_c, peak_c, done = clients_peak(duration)
    print(f"# memory_clients: {CLIENTS} clients on {ROOTS} stores, {done} requests in {duration:g} s")
    report("memory_follow", peak_f / 1024, "MB", idle_f / 1024)
    report("memory_clients", peak_c / 1024, "MB", idle_c / 1024)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
