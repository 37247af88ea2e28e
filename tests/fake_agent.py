"""A stand-in for the agent CLIs (`claude -p …`, `codex exec --json -`) in end-to-end tests.

    python tests/fake_agent.py --replay FILE [--delay S] [--torn] [--read-stdin] [--record FILE]
                               [--stderr TEXT] [--exit N] …

It writes FILE's lines to stdout one at a time, flushing each and sleeping `--delay` seconds
between them. With `--torn` every other line is written in two halves with a flush and a sleep
in between (a torn write, as a reader sees it mid-line). It first reads stdin to EOF when told so
(`--read-stdin`, as `codex exec -` does) and, as `claude -p` does, when its command line has a `-p`
with no prompt argument after it. `--record FILE` appends one JSON line to FILE before replaying:
``{"argv", "stdin", "stdin_bytes", "stdin_sha256", "cwd", "pid", "env"}`` (`stdin` as text, None when
it was not read; the environment's systemd variables only), so a test can check what the agent was
given, byte for byte. At the end, `--stderr TEXT` writes TEXT to stderr and `--exit N` sets its exit
status.

Its own options come first; everything from the first other argument on is the agent's command line
(`-p --verbose …`, `exec --json -`), looked at only for `-p`, so the script can sit in
`claude-command` / `codex-command`. SIGINT and SIGTERM end it quietly with status 130 / 143.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time
from dataclasses import dataclass
from types import FrameType

_FLAGS = {"--torn": "torn", "--read-stdin": "read_stdin"}
_VALUED = {
    "--replay": "replay",
    "--delay": "delay",
    "--record": "record",
    "--exit": "exit_status",
    "--stderr": "stderr",
}
_WATCHED_ENV = ("NOTIFY_SOCKET", "WATCHDOG_USEC", "WATCHDOG_PID")


@dataclass
class Options:
    replay: str | None = None
    delay: str = "0"
    record: str | None = None
    exit_status: str = "0"
    stderr: str | None = None
    torn: bool = False
    read_stdin: bool = False
    #: The agent's command line, after this script's own options.
    rest: tuple[str, ...] = ()


def parse(argv: list[str]) -> Options:
    """The leading options this script knows, and the rest: the agent's command line."""
    options = Options()
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in _FLAGS:
            setattr(options, _FLAGS[arg], True)
            i += 1
        elif arg in _VALUED and i + 1 < len(argv):
            setattr(options, _VALUED[arg], argv[i + 1])
            i += 2
        else:
            break
    options.rest = tuple(argv[i:])
    if _prompt_on_stdin(options.rest):
        options.read_stdin = True
    return options


def _prompt_on_stdin(rest: tuple[str, ...]) -> bool:
    """`claude -p` reads its prompt from stdin when no prompt argument follows `-p`."""
    if "-p" not in rest:
        return False
    after = rest.index("-p") + 1
    return after == len(rest) or rest[after].startswith("-")


def _quit(signum: int, frame: FrameType | None) -> None:
    os._exit(128 + signum)


def main(argv: list[str]) -> int:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _quit)
    options = parse(argv)
    stdin = sys.stdin.buffer.read() if options.read_stdin else None
    if options.record:
        record = {
            "argv": argv,
            "stdin": None if stdin is None else stdin.decode(errors="replace"),
            "stdin_bytes": None if stdin is None else len(stdin),
            "stdin_sha256": None if stdin is None else hashlib.sha256(stdin).hexdigest(),
            "cwd": os.getcwd(),
            "pid": os.getpid(),
            "env": {key: os.environ[key] for key in _WATCHED_ENV if key in os.environ},
        }
        with open(options.record, "a", encoding="utf-8") as sink:
            sink.write(json.dumps(record) + "\n")
    delay = float(options.delay)
    out = sys.stdout.buffer
    if options.replay:
        with open(options.replay, "rb") as source:
            lines = [line if line.endswith(b"\n") else line + b"\n" for line in source]
        for number, line in enumerate(lines):
            if options.torn and number % 2 == 0 and len(line) > 2:
                half = len(line) // 2
                out.write(line[:half])
                out.flush()
                time.sleep(max(delay, 0.05))
                line = line[half:]
            out.write(line)
            out.flush()
            if delay:
                time.sleep(delay)
    if options.stderr is not None:
        sys.stderr.write(options.stderr + "\n")
        sys.stderr.flush()
    return int(options.exit_status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
