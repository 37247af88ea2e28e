"""Shared bench helpers: timing and the result line."""

from __future__ import annotations

import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import msgspec
import watchfiles

from azsd.config import ResolvedConfig, resolve_config
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


def median_of(runs: int, fn: Callable[[], object]) -> float:
    """The median of `runs` timings of `fn`, in seconds (for figures with a target in ms)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


@contextmanager
def running_daemon(runtime_dir: Path, env: dict[str, str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """The real daemon as a subprocess on `runtime_dir`, stopped with SIGTERM at the end."""
    full_env = installed_env(env or {})
    full_env.pop("NOTIFY_SOCKET", None)
    full_env.setdefault("XDG_STATE_HOME", str(runtime_dir.parent / "state"))
    full_env.setdefault("AZSD_WATCH_AGENTS", "0")  # the machine's own histories are not the bench's
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


def installed_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment with `extra`, as an installed azsd runs in: pip and pipx compile a package's
    bytecode when they install it, and a process that finds none compiles every module it imports
    (~35 ms of an `azs ls` here). So PYTHONDONTWRITEBYTECODE, which these machines set, is dropped:
    a benchmark's first (warm-up) run writes what an install would have."""
    env = {**os.environ, **extra}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def run_process(argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> float:
    """Seconds one run of `argv` took (its output read and thrown away); fails if it fails."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):  # rg: 1 = no match
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return took


def run_json(argv: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> tuple[float, Any]:
    """Seconds one run of `argv` took, and the JSON it printed last; fails if it fails."""
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return took, json.loads(done.stdout.decode().splitlines()[-1])


def process_p50(
    argv_of: Sequence[Sequence[str]], env: dict[str, str], rounds: int, cwd: Path | None = None
) -> float:
    times = [run_process(argv, env, cwd) for _ in range(rounds) for argv in argv_of]
    return statistics.median(times)


def interleaved_p50(
    argv_of: Mapping[str, Sequence[str]], env: dict[str, str], rounds: int, cwd: Path | None = None
) -> dict[str, float]:
    """The p50 of each named command, run in turn round after round (so that a machine busier for
    a while slows each of them alike)."""
    times: dict[str, list[float]] = {name: [] for name in argv_of}
    for _ in range(rounds):
        for name, argv in argv_of.items():
            times[name].append(run_process(argv, env, cwd))
    return {name: statistics.median(each) for name, each in times.items()}


def daemon_config(runtime_dir: Path) -> ResolvedConfig:
    """The client configuration that reaches the daemon of `running_daemon(runtime_dir)`."""
    return resolve_config(environ={"AZSD_RUNTIME_DIR": str(runtime_dir)}, config_file=None)


def rss_kib(pid: int) -> tuple[int, int]:
    """`(VmRSS, VmHWM)` of a process, in KiB, from /proc/<pid>/status."""
    fields: dict[str, int] = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(rest.split()[0])
    return fields["VmRSS"], fields["VmHWM"]


SESSION_ID = "6f1c2b8e-0b1d-4c1e-9f3a-5d2e7a9c4b10"
MODEL = "claude-sonnet-4-5-20250929"
_ENC = msgspec.json.Encoder()


def _stream_line(obj: dict[str, Any]) -> bytes:
    return _ENC.encode(obj) + b"\n"


def _usage(rng: random.Random) -> dict[str, Any]:
    created = rng.randint(0, 2000)
    return {
        "input_tokens": rng.randint(1, 9), "cache_creation_input_tokens": created,
        "cache_read_input_tokens": rng.randint(10_000, 60_000),
        "cache_creation": {"ephemeral_5m_input_tokens": created, "ephemeral_1h_input_tokens": 0},
        "output_tokens": rng.randint(1, 900), "service_tier": "standard",
    }  # fmt: skip


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _tool_use_result(name: str, tool_input: dict[str, Any], content: str) -> dict[str, Any]:
    """What Claude Code 2.x repeats of a tool's output beside the tool_result (`tool_use_result`)."""
    lines = content.count("\n") + 1
    path = tool_input.get("file_path")
    if name == "Read":
        file = {"filePath": path, "content": content, "numLines": lines, "startLine": 1, "totalLines": lines}
        return {"type": "text", "file": file}
    if name == "Grep":
        return {"mode": "content", "numFiles": 1, "filenames": [], "content": content, "numLines": lines}
    if name == "Edit":
        return {
            "filePath": path, "oldString": content[:80], "newString": content[:120], "originalFile": content,
            "structuredPatch": [], "userModified": False, "replaceAll": False,
        }  # fmt: skip
    return {"stdout": content, "stderr": "", "interrupted": False, "isImage": False}


def _assistant(message: str, block: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One assistant line: one content block of the message `message`, with its usage."""
    body = {
        "model": MODEL, "id": message, "type": "message", "role": "assistant", "content": [block],
        "stop_reason": None, "stop_sequence": None, "usage": _usage(rng),
    }  # fmt: skip
    return {"type": "assistant", "message": body, "parent_tool_use_id": None, "session_id": SESSION_ID,
            "uuid": _uuid(rng)}  # fmt: skip


def stream_json_blocks(target_bytes: int, *, seed: int = 7, final: bool = True) -> Iterator[bytes]:
    """Claude `stream-json` lines, shaped like the Claude Code 2.x files of the corpus
    (`claude -p --output-format stream-json --verbose`), in blocks of a few hundred KB until about
    `target_bytes`: an init line; then turns of a prompt, assistant lines (sometimes a thinking
    block, then text, then a tool call, all of one message id, each line with its usage, uuid and
    stop fields) and a user line with the multi-line tool result and its `tool_use_result` copy
    (Read output carries line numbers); and a final `result` line when `final`."""
    rng = random.Random(seed)
    init = {
        "type": "system", "subtype": "init", "cwd": "/home/dev/proj", "session_id": SESSION_ID,
        "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "WebFetch", "TodoWrite"],
        "mcp_servers": [], "model": MODEL, "permissionMode": "default", "apiKeySource": "none",
        "claude_code_version": "2.0.25", "output_style": "default", "uuid": _uuid(rng),
    }  # fmt: skip
    head = _stream_line(init)
    written = len(head)
    yield head
    chunk = 0
    while written < target_bytes:
        out: list[bytes] = []
        message = ""
        calls: dict[str, dict[str, Any]] = {}

        for event in corpus_like_events(400, seed=seed * 1_000_003 + chunk):
            match event:
                case UserMessage(content=content):
                    obj: dict[str, Any] = {
                        "type": "user", "message": {"role": "user", "content": content},
                        "parent_tool_use_id": None, "session_id": SESSION_ID, "uuid": _uuid(rng),
                    }  # fmt: skip
                case AssistantText(text=text):
                    message = f"msg_01{rng.getrandbits(110):028x}"
                    if rng.random() < 0.3:
                        thinking = {"type": "thinking", "thinking": text[: len(text) // 2],
                                    "signature": f"{rng.getrandbits(2400):0600x}"}  # fmt: skip
                        out.append(_stream_line(_assistant(message, thinking, rng)))
                    obj = _assistant(message, {"type": "text", "text": text}, rng)
                case ToolCall(tool_use_id=tid, tool_name=name, input=tool_input):
                    tool_id = f"{tid}_{chunk}"
                    calls[tool_id] = {"name": name, "input": tool_input}
                    obj = _assistant(
                        message, {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}, rng
                    )
                case ToolResult(tool_use_id=tid, content=content, is_error=is_error):
                    tool_id = f"{tid}_{chunk}"
                    call = calls.pop(tool_id)
                    if call["name"] == "Read":
                        content = "\n".join(
                            f"{i:>6}\u2192{line}" for i, line in enumerate(content.split("\n"), 1)
                        )
                    block = {
                        "tool_use_id": tool_id,
                        "type": "tool_result",
                        "content": content,
                        "is_error": is_error,
                    }
                    obj = {
                        "type": "user", "message": {"role": "user", "content": [block]},
                        "parent_tool_use_id": None, "session_id": SESSION_ID, "uuid": _uuid(rng),
                        "tool_use_result": _tool_use_result(call["name"], call["input"], content),
                    }  # fmt: skip
                case _:
                    continue
            out.append(_stream_line(obj))
        block_bytes = b"".join(out)
        written += len(block_bytes)
        chunk += 1
        yield block_bytes
    if final:
        yield _stream_line(
            {
                "type": "result", "subtype": "success", "is_error": False, "duration_ms": 1_234_567,
                "duration_api_ms": 1_100_000, "num_turns": chunk * 100, "result": "Done.",
                "session_id": SESSION_ID, "total_cost_usd": 12.5, "usage": _usage(rng),
                "permission_denials": [], "uuid": _uuid(rng),
            }
        )  # fmt: skip


def write_stream_json(path: Path, target_bytes: int, *, seed: int = 7) -> int:
    """Write a whole stream-json file of about `target_bytes`; returns its size."""
    with open(path, "wb") as out:
        for block in stream_json_blocks(target_bytes, seed=seed):
            out.write(block)
    return path.stat().st_size


def pauses(n: int, gap: float, step_s: float, *, seed: int = 5) -> list[float]:
    """The pauses between the appends of a latency bench: `gap` s, and a random part of up to two of
    the watch's `step_s` (the same for the daemon and its baseline). A watch looks for changes once a
    step and reports them a quiet step later, so its latency depends on where in its step a line
    lands: appends a fixed gap apart land at the same place each time, which favours whichever side
    that place suits (an agent's lines land anywhere)."""
    rng = random.Random(seed)
    return [gap + rng.uniform(0, 2 * step_s) for _ in range(n)]


def bare_watch_latencies(
    watched: Path, target: Path, line: Callable[[int], bytes], gaps: Sequence[float], **tuning: Any
) -> list[float]:
    """The baseline of the latency benches: ms from each append of `line(i)` to `target` (then a
    pause of `gaps[i]` s) to a bare `watchfiles.watch` of `watched` (with `tuning`) seeing it."""
    stop, seen = threading.Event(), threading.Event()

    def watch() -> None:
        for _ in watchfiles.watch(
            watched, stop_event=stop, raise_interrupt=False, rust_timeout=1000, **tuning
        ):
            seen.set()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    time.sleep(0.5)
    out: list[float] = []
    with open(target, "ab") as writer:
        for i, gap in enumerate(gaps):
            seen.clear()
            start = time.perf_counter()
            writer.write(line(i))
            writer.flush()
            if not seen.wait(5):
                raise RuntimeError("watchfiles saw nothing")
            out.append((time.perf_counter() - start) * 1000)
            time.sleep(gap)
    stop.set()
    thread.join(5)
    return out
