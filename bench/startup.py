"""The first things a user waits for: the next turn's context, and the daemon coming up.

- `context_vs_resume_load`: `BuildContext` of a ~10 000-event session through the real daemon and
  client, on a daemon just started (nothing of the session decoded yet), against what an agent's
  `--resume` does first: read the session's transcript file (the same turns, as the Claude
  stream-json the session was ingested from) and JSON-parse every line (stdlib `json`).
- `daemon_start`: ms from starting `azsd run` to its READY notification (sd_notify, NOTIFY_SOCKET),
  with 100 stores listed in follow-roots, each with a session following a file; against the same
  daemon started with none listed.
- `daemon_start_rss`: the daemon's peak RSS (VmHWM) once those 100 follows are resumed; against the
  same of the daemon started with none.
- `cli_version`, `cli_ls`, `cli_search`: p50 of the real `azs --version`, `azs ls` and `azs search`
  processes (a store of 20 sessions, each a prompt and an answer that the search finds; output to
  a pipe, as a table), against starting the same interpreter with nothing to do (`python -c pass`):
  what a terminal command costs beyond Python's own start. `cli_floor` is the least any Python
  client of azsd can cost: the interpreter importing msgspec and pyzmq.
- `cli_statusline`: p50 of the real `azs statusline` printing its line from the figures its last
  full run left (azsd_client.statusfile: no ZeroMQ, no msgspec), and `cli_statusline_asked` of the
  full run that asks the daemon (`--json` takes it), against the same `python -c pass`.

Run alone: `python -m bench.startup [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from azsd.config import resolve_config
from azsd.events import AssistantText, Event, UserMessage
from azsd.ingest.file import ingest_file
from azsd.model import FollowRecord
from azsd.store import Store
from azsd_client import Client
from bench.common import (
    daemon_config,
    installed_env,
    process_p50,
    report,
    rss_kib,
    running_daemon,
    write_stream_json,
)

#: Bytes of stream-json that make about 10 000 events.
TRANSCRIPT_BYTES = 17_600_000
STORES = 100
PROMPT = "Now add a test for the parser."


def _resume_load(path: Path) -> None:
    with open(path, encoding="utf-8") as transcript:
        for line in transcript:
            json.loads(line)


def context_vs_resume(base: Path, runs: int) -> None:
    root = base / "ctx"
    root.mkdir()
    transcript = base / "transcript.jsonl"
    write_stream_json(transcript, TRANSCRIPT_BYTES)
    with Store.open(root) as store:
        sid = store.create_session("resume", "main").id
        ingest_file(store, sid, transcript)
        events = store.max_seq(sid)
    colds = []
    for i in range(runs):  # a fresh daemon each time: its first context of the session
        run = base / f"run-ctx-{i}"
        with running_daemon(run), Client(daemon_config(run), timeout=60) as client:
            client.status()
            start = time.perf_counter()
            client.build_context(root, sid, PROMPT)
            colds.append(time.perf_counter() - start)
    loads = []
    for _ in range(runs):
        start = time.perf_counter()
        _resume_load(transcript)
        loads.append(time.perf_counter() - start)
    size = transcript.stat().st_size
    print(f"# context_vs_resume_load: {events} events, a {size / 1e6:.1f} MB transcript")
    report("context_vs_resume_load", statistics.median(colds) * 1e3, "ms", statistics.median(loads) * 1e3)


def _start(base: Path, name: str, roots: list[Path]) -> tuple[float, int]:
    """Seconds from starting the daemon to READY=1, and its VmHWM (KiB) once resumed."""
    run, state = base / f"run-{name}", base / f"state-{name}"
    env = installed_env({"XDG_STATE_HOME": str(state)})
    environ = {"AZSD_RUNTIME_DIR": str(run), "XDG_STATE_HOME": str(state)}
    config = resolve_config(environ=environ, config_file=None)
    config.roots_path.parent.mkdir(parents=True, exist_ok=True)
    config.roots_path.write_text("".join(f"{root}\n" for root in roots))
    address = str(base / f"notify-{name}")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(address)
        sock.settimeout(30)
        env["NOTIFY_SOCKET"] = address
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "azsd", "run", "--runtime-dir", str(run), "--log-level", "WARNING"],
            env=env,
            stdin=subprocess.DEVNULL,
        )
        try:
            while b"READY=1" not in sock.recv(4096):
                pass
            ready = time.perf_counter() - start
            with Client(daemon_config(run), timeout=60) as client:
                deadline = time.monotonic() + 30
                while len(client.status().follows) < len(roots) and time.monotonic() < deadline:
                    time.sleep(0.05)  # the follows resumed: every store open
            _, hwm = rss_kib(proc.pid)
        finally:
            proc.terminate()
            proc.wait(10)
    return ready, hwm


def daemon_start(base: Path, runs: int) -> None:
    roots = []
    for i in range(STORES):
        root = base / "wt" / f"w{i:03d}"
        root.mkdir(parents=True)
        agent_file = root / "agent.jsonl"
        agent_file.write_bytes(b"")
        with Store.open(root) as store:
            sid = store.create_session(f"s{i}", "main").id
            store.save_follow(FollowRecord(session_id=sid, path=str(agent_file), format="claude-stream-json"))
        roots.append(root)
    full, empty = [], []
    for i in range(runs):  # in turn, so both see the same neighbours
        empty.append(_start(base, f"empty{i}", []))
        full.append(_start(base, f"full{i}", roots))
    print(f"# daemon_start: {STORES} stores in follow-roots, each following a file; {runs} starts each")
    report(
        "daemon_start",
        statistics.median(r for r, _ in full) * 1e3,
        "ms",
        statistics.median(r for r, _ in empty) * 1e3,
    )
    report("daemon_start_rss", max(h for _, h in full) / 1024, "MB", max(h for _, h in empty) / 1024)


def cli_start(base: Path, runs: int) -> None:
    run, root = base / "cli-run", base / "cli-wt"
    root.mkdir()
    (base / "xdg").mkdir(mode=0o700)  # where `azs statusline` keeps its figures
    env = installed_env({"AZSD_RUNTIME_DIR": str(run), "XDG_RUNTIME_DIR": str(base / "xdg")})
    azs = [str(Path(sys.executable).parent / "azs"), "--root", str(root)]
    bare = [[sys.executable, "-c", "pass"]]
    with running_daemon(run), Client(daemon_config(run)) as client:
        for i in range(20):
            sid = client.create_session(root, f"parser fix {i}").session.id
            turn: list[Event] = [
                UserMessage(content=f"The parser drops line {i} when it ends without a newline."),
                AssistantText(text="Fixed: the parser now keeps a last line with no newline."),
            ]
            client.append_events(root, sid, turn)
        commands = {
            "cli_version": [*azs, "--version"],
            "cli_ls": [*azs, "ls"],
            "cli_search": [*azs, "search", "--words", "parser"],
            "cli_statusline": [*azs, "statusline"],  # from its file, after the warm-up's full run
            "cli_statusline_asked": [*azs, "statusline", "--json"],  # the full run: two requests and a list
            "cli_floor": [sys.executable, "-c", "import msgspec, zmq"],  # what any Python client loads
        }
        process_p50(list(commands.values()), env, 1, root)  # warm: the store open, the files cached
        rounds = runs * 3
        figures = {name: process_p50([argv], env, rounds, root) for name, argv in commands.items()}
        python = process_p50(bare, env, rounds)
    print(f"# cli_start: {rounds} runs each; the baseline is `python -c pass` with the same interpreter")
    for name, seconds in figures.items():
        report(name, seconds * 1e3, "ms", python * 1e3)


def main(*, quick: bool = False) -> None:
    runs = 3 if quick else 7
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        context_vs_resume(base, runs)
        daemon_start(base, runs)
        cli_start(base, runs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
