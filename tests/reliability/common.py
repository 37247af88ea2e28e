"""Shared helpers of the reliability suite: bounded in CI, long under `make soak` (AZSD_SOAK=1)."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from azsd.ipc import protocol as p
from tests.daemon_fixture import DaemonProc, short_tmpdir, start_daemon

SOAK = os.environ.get("AZSD_SOAK") == "1"


def scaled(ci: int, soak: int) -> int:
    """`ci` in the bounded suite, `soak` under `make soak`."""
    return soak if SOAK else ci


@contextmanager
def size_limited_tmpfs(size: str) -> Iterator[Path]:
    """A tmpfs of `size` (mount's `size=` option, e.g. "512k"): a real file system that fills up.
    Skips the test where it cannot be mounted; unmounted (detached if still busy) and removed after."""
    mount = short_tmpdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        shutil.rmtree(mount, ignore_errors=True)
        pytest.skip(f"cannot mount a size-limited tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=False)  # still busy: detach it anyway
        shutil.rmtree(mount, ignore_errors=True)


def stream_lines(n: int, seed: int = 1) -> list[bytes]:
    """A long, realistic claude-stream-json turn: text, tool calls and multi-line results, unique ids."""
    rng = random.Random(seed)
    lines = [b'{"type":"system","subtype":"init","session_id":"s","cwd":"/w","model":"m"}\n']
    i = 0
    while len(lines) < n:
        i += 1
        words = " ".join(
            rng.choice(["parse", "store", "event", "line", "seq"]) for _ in range(rng.randint(3, 30))
        )
        lines.append(
            b'{"type":"assistant","session_id":"s","message":{"id":"m%d","content":[{"type":"text","text":"%s"}]}}\n'
            % (i, words.encode())
        )
        lines.append(
            b'{"type":"assistant","session_id":"s","message":{"id":"m%d","content":[{"type":"tool_use",'
            b'"id":"t%d","name":"Bash","input":{"command":"echo %d"}}]}}\n' % (i, i, i)
        )
        output = "\\n".join(f"out {i}.{k}" for k in range(rng.randint(1, 8)))
        lines.append(
            b'{"type":"user","session_id":"s","message":{"content":[{"type":"tool_result","tool_use_id":"t%d",'
            b'"content":"%s"}]}}\n' % (i, output.encode())
        )
    return lines[:n]


def assistant_line(text: str) -> bytes:
    """One line of Claude stream-json: an answer saying `text` (its message id made from it)."""
    return (
        b'{"type":"assistant","session_id":"s","message":{"id":"m-%s","content":[{"type":"text","text":"%s"}]}}\n'
        % (text.encode(), text.encode())
    )


def start_following(base: Path, root: Path, first: bytes) -> tuple[DaemonProc, Path, int]:
    """A daemon (its runtime dir under `base`) following `root`/run.jsonl into a new session of
    `root`'s store, once the file's first line, `first`, is stored: (daemon, the file, the session)."""
    agent = root / "run.jsonl"
    agent.write_bytes(first)
    d = start_daemon(base / "run")
    try:
        created = d.request(p.CreateSession(root=str(root)))
        assert isinstance(created, p.SessionReply)
        sid = created.session.id
        reply = d.request(p.Follow(root=str(root), session=sid, path=str(agent), format="claude-stream-json"))
        assert isinstance(reply, p.FollowReply)
        wait_until(lambda: len(stored_data(d, root, sid)) == 1, 10, "the first line")
    except BaseException:
        d.close()
        raise
    return d, agent, sid


def stored_data(d: DaemonProc, root: Path, sid: int) -> list[str]:
    out: list[str] = []
    from_seq = 1
    while True:
        page = d.request(p.GetEvents(root=str(root), session=sid, from_seq=from_seq, limit=5000))
        assert isinstance(page, p.EventsPage), page
        out += [e.data for e in page.events]
        if page.next_seq is None:
            return out
        from_seq = page.next_seq


def wait_until(predicate: object, timeout: float = 30, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
