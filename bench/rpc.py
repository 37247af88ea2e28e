"""RPC latency and throughput: `Status`, a 100-event `GetEvents` page, and 8 concurrent clients.

Through the real daemon with the real sync :class:`azsd_client.Client`: the p50/p99 round trip of
`Status`; of a 100-event `GetEvents` page read again (`rpc_page`: pages at 25 offsets in turn of a
session of corpus-like events, as an editor reopening and scrolling a transcript reads them; the
daemon keeps them encoded, :mod:`azsd.server.pages`); of a page read for the first time
(`rpc_page_first`: every page at a new offset, built from the stored rows); and the requests per
second 8 client processes get, each running its own `Client` in a `Status` loop.

Baseline, in the same run: a bare pyzmq ROUTER in a separate process that answers each request
with a reply of the same size as the daemon's (captured first), over `ipc://`, measured with
bare DEALER round trips (no encode or decode) for the latencies and with 8 processes each running
a bare DEALER loop for the throughput. The daemon and the echo are measured in turn, a hundred
round trips (or one throughput run) at a time, so both see the same neighbours on a shared machine.
Run alone: `python -m bench.rpc [--quick]`.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import zmq

from azsd.ipc import protocol as p
from azsd.ipc.transport import connect_dealer
from azsd_client import Client
from bench.common import corpus_like_events, daemon_config, percentile, report, running_daemon

CLIENTS = 8
PAGE = 100
#: Round trips measured in one go before switching between the daemon and the echo.
BLOCK = 100


class _Job(msgspec.Struct):
    """What a helper process is told on its stdin."""

    role: str  # "echo", "client" (azsd Client loop) or "bare" (bare DEALER loop)
    endpoint: str
    runtime_dir: str = ""
    replies: list[tuple[bytes, int]] = []  # echo: request payload -> reply size
    request: bytes = b""  # bare: the payload to send
    start_at: float = 0.0  # time.time() at which the loops start together
    duration: float = 0.0


def _echo(job: _Job) -> None:
    """The bare server: answer each request with a reply of the daemon's size, until told to stop."""
    ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
    sock = ctx.socket(zmq.ROUTER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.bind(job.endpoint)
    blobs = {request: b"x" * size for request, size in job.replies}
    print("ready", flush=True)
    while True:
        ident, rid, payload = sock.recv_multipart()
        if payload == b"stop":
            break
        sock.send_multipart([ident, rid, blobs.get(payload, payload)])
    sock.close()
    ctx.term()


def _client_loop(job: _Job) -> None:
    """One of the concurrent clients: round trips until `duration` has passed; prints the count."""
    done = 0
    if job.role == "client":
        client = Client(daemon_config(Path(job.runtime_dir)), timeout=30)
        client.status()
        while time.time() < job.start_at:
            time.sleep(0.001)
        end = time.perf_counter() + job.duration
        while time.perf_counter() < end:
            client.status()
            done += 1
        client.close()
    else:
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        sock = connect_dealer(ctx, job.endpoint)
        sock.send_multipart([b"0", job.request])
        sock.recv_multipart()
        while time.time() < job.start_at:
            time.sleep(0.001)
        end = time.perf_counter() + job.duration
        while time.perf_counter() < end:
            sock.send_multipart([done.to_bytes(8, "big"), job.request])
            sock.recv_multipart()
            done += 1
        sock.close()
        ctx.term()
    print(done, flush=True)


def _helper(job: _Job) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.rpc", "--helper"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None
    proc.stdin.write(msgspec.msgpack.encode(job))
    proc.stdin.close()
    proc.stdin = None  # written and closed: `communicate` must not touch it again
    return proc


def _concurrent(make: Any, duration: float) -> float:
    """Requests per second of `CLIENTS` helper processes started together."""
    start_at = time.time() + 2.0
    procs = [_helper(make(start_at)) for _ in range(CLIENTS)]
    total = 0
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        total += int(out.split()[-1])
    return total / duration


def _bare_latencies(sock: zmq.Socket[bytes], request: bytes, n: int) -> list[float]:
    out = []
    for i in range(n):
        start = time.perf_counter()
        sock.send_multipart([i.to_bytes(8, "big"), request])
        sock.recv_multipart()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def _timed(fn: Callable[[], object], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1e6)
    return out


def main(*, quick: bool = False) -> None:
    rounds = 20 if quick else 100  # of BLOCK round trips each, the daemon's and the echo's in turn
    size = rounds * BLOCK + PAGE + 2  # events: each first-time page at an offset of its own
    slices = 2 if quick else 4  # of the throughput runs, likewise in turn
    duration = 1.5 if quick else 2.0
    status_us: list[float] = []
    page_us: list[float] = []
    first_us: list[float] = []
    bare_status: list[float] = []
    bare_page: list[float] = []
    ours_rps: list[float] = []
    bare_rps: list[float] = []
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        root = base / "wt"
        root.mkdir()
        run = base / "run"
        endpoint = f"ipc://{base / 'echo'}"
        ctx: zmq.Context[zmq.Socket[bytes]] = zmq.Context()
        with running_daemon(run), Client(daemon_config(run), timeout=30) as client:
            sid = client.create_session(root, "rpc").session.id
            events = corpus_like_events(size)
            for i in range(0, len(events), 500):
                client.append_events(root, sid, events[i : i + 500])
            status_req = p.encode(p.Status())
            page_req = p.encode(p.GetEvents(root=str(root), session=sid, from_seq=1, limit=PAGE))
            sizes = [
                (status_req, len(p.encode(client.status()))),
                (page_req, len(p.encode(client.get_events_page(root, sid, from_seq=1, limit=PAGE)))),
            ]
            echo = _helper(_Job(role="echo", endpoint=endpoint, replies=sizes))
            assert echo.stdout is not None
            echo.stdout.readline()
            sock = connect_dealer(ctx, endpoint)
            offsets = itertools.cycle(range(1, 1_000 - PAGE, 37))
            new_offsets = iter(range(2, len(events) - PAGE))  # (1 is the page whose size is measured)

            def page() -> None:
                got = client.get_events_page(root, sid, from_seq=next(offsets), limit=PAGE)
                assert len(got.events) == PAGE

            def first_page() -> None:
                got = client.get_events_page(root, sid, from_seq=next(new_offsets), limit=PAGE)
                assert len(got.events) == PAGE

            _timed(client.status, 2 * BLOCK)  # warm-up
            time.sleep(0.1)  # the appends settle: the daemon keeps pages of a file changed >50 ms ago
            _timed(page, BLOCK)
            _bare_latencies(sock, status_req, 2 * BLOCK)
            for _ in range(rounds):  # in turn, so both see the same neighbours on this shared machine
                status_us += _timed(client.status, BLOCK)
                bare_status += _bare_latencies(sock, status_req, BLOCK)
                page_us += _timed(page, BLOCK)
                bare_page += _bare_latencies(sock, page_req, BLOCK)
                first_us += _timed(first_page, BLOCK)

            def ours(at: float) -> _Job:
                return _Job(role="client", endpoint="", runtime_dir=str(run), start_at=at, duration=duration)

            def bare(at: float) -> _Job:
                return _Job(
                    role="bare", endpoint=endpoint, request=status_req, start_at=at, duration=duration
                )

            for _ in range(slices):
                ours_rps.append(_concurrent(ours, duration))
                bare_rps.append(_concurrent(bare, duration))
            sock.send_multipart([b"", b"stop"])
            echo.wait(10)
            sock.close()
        ctx.term()
    print(
        f"# rpc: Status reply {sizes[0][1]} B, {PAGE}-event page {sizes[1][1]} B; {len(status_us)} round "
        f"trips of each kind; {CLIENTS} client processes"
    )
    for q in (50, 99):
        report(f"rpc_status_p{q}", percentile(status_us, q), "us", percentile(bare_status, q))
    for q in (50, 99):
        report(f"rpc_page_p{q}", percentile(page_us, q), "us", percentile(bare_page, q))
    for q in (50, 99):
        report(f"rpc_page_first_p{q}", percentile(first_us, q), "us", percentile(bare_page, q))
    report(f"rpc_{CLIENTS}_clients", statistics.mean(ours_rps), "req/s", statistics.mean(bare_rps))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--helper", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.helper:
        job = msgspec.msgpack.decode(sys.stdin.buffer.read(), type=_Job)
        _echo(job) if job.role == "echo" else _client_loop(job)
    else:
        main(quick=args.quick)
