"""`azs show` of a 100 000-event session (issue 25): to a pipe against `azs show --json` (the target:
at most 1.5 times as long; it was 43 times with a rich table per event), and the first screen on a
terminal (a pseudo-terminal, through less as people get it; the target: 200 ms at most), against
`python -c pass`.

`python -m bench.transcript [--quick]`.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from azsd.store import Store
from bench.common import corpus_like_events, installed_env, report, run_process, running_daemon

EVENTS = 100_000
#: Lines that make a first screen (a terminal 40 rows high).
SCREEN_LINES = 40


def first_screen(argv: list[str], env: dict[str, str]) -> float:
    """Seconds from starting `argv` on a pseudo-terminal until it has drawn `SCREEN_LINES` lines."""
    parent, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", SCREEN_LINES + 1, 120, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdin=child, stdout=child, stderr=child, start_new_session=True)
    os.close(child)
    seen, took = 0, float("inf")
    try:
        while select.select([parent], [], [], 30)[0]:
            try:
                chunk = os.read(parent, 65536)
            except OSError:
                break
            seen += chunk.count(b"\n")
            if seen >= SCREEN_LINES:
                took = time.perf_counter() - start
                break
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(10)
        os.close(parent)
    return took


def main(*, quick: bool = False) -> None:
    runs = 1 if quick else 4
    with tempfile.TemporaryDirectory(prefix="azsd-b-", dir="/tmp") as tmp:
        base = Path(tmp)
        run, root = base / "run", base / "wt"
        root.mkdir()
        env = installed_env({"AZSD_RUNTIME_DIR": str(run), "TERM": "xterm", "LESS": "FRX"})
        env.pop("AZS_PAGER", None)
        env.pop("PAGER", None)
        azs = [str(Path(sys.executable).parent / "azs"), "--root", str(root), "--timeout", "60"]
        with Store.open(root) as store:  # stored directly: quicker than through the daemon
            sid = store.create_session("a long one", "").id
            events = corpus_like_events(EVENTS)
            for at in range(0, EVENTS, 2000):
                store.append_events(sid, events[at : at + 2000])
        with running_daemon(run):
            show, as_json = [*azs, "show", str(sid)], [*azs, "--json", "show", str(sid)]
            run_process(as_json, env)  # warm: the store open, the pages cached
            text = min(run_process(show, env) for _ in range(runs))
            json = min(run_process(as_json, env) for _ in range(runs))
            screen = min(first_screen(show, env) for _ in range(runs * 2))
            python = min(run_process([sys.executable, "-c", "pass"], env) for _ in range(runs * 2))
    print(f"# transcript: {EVENTS:,} events; best of {runs}; show's target is 1.5x --json, 200 ms a screen")
    report("show_to_pipe", text, "s", json)
    report("show_first_screen", screen * 1e3, "ms", python * 1e3)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    main(quick=parser.parse_args().quick)
