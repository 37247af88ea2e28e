"""Shared bench helpers: timing and the result line."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from azsd.events import AssistantText, Event, ToolCall, ToolResult, UserMessage


def report(name: str, value: float, unit: str, baseline: float) -> None:
    """Print one result line; `ratio` is value/baseline, so compare ratios across runs, not values."""
    ratio = value / baseline if baseline else float("nan")
    print(f"BENCH {name} value={value:.6g} unit={unit} baseline={baseline:.6g} ratio={ratio:.3f}")


def best_of(runs: int, fn: Callable[[], None]) -> float:
    """The fastest of `runs` timings of `fn`, in seconds (the least disturbed by neighbours)."""
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def corpus_like_events(n: int, seed: int = 7) -> list[Event]:
    """A turn-shaped mix of prompts, replies, tool calls and multi-line tool output."""
    rng = random.Random(seed)
    words = "the parser store event index session agent file line test commit daemon socket".split()

    def text(k: int) -> str:
        return " ".join(rng.choice(words) for _ in range(k))

    out: list[Event] = []
    while len(out) < n:
        tid = f"toolu_{len(out):08d}"
        out.append(UserMessage(content=text(rng.randint(5, 60))))
        out.append(AssistantText(text=text(rng.randint(20, 200))))
        tool = rng.choice(["Bash", "Read", "Grep", "Edit"])
        out.append(
            ToolCall(tool_use_id=tid, tool_name=tool, input={"command": text(6), "file_path": "/a/b.py"})
        )
        lines = "\n".join(text(rng.randint(3, 12)) for _ in range(rng.randint(1, 80)))
        out.append(ToolResult(tool_use_id=tid, tool_name=tool, content=lines, is_error=False))
    return out[:n]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


@contextmanager
def running_daemon(runtime_dir: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """The real daemon as a subprocess on `runtime_dir`, stopped with SIGTERM at the end."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("NOTIFY_SOCKET", None)
    full_env.setdefault("XDG_STATE_HOME", str(runtime_dir.parent / "state"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "azsd", "run", "--runtime-dir", str(runtime_dir), "--log-level", "WARNING"],
        env=full_env,
        stdin=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while not (runtime_dir / "azsd.json").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the daemon did not start")
            time.sleep(0.02)
        yield proc
    finally:
        proc.terminate()
        proc.wait(10)
