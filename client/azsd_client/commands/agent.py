"""The agent process of `azs run`: its command line, its output file, starting and stopping it.

The agent's stdout goes straight to a fresh file under the runtime dir's ``turns/`` (the daemon
follows that file), its stderr to a sibling ``.stderr`` file. It runs in a session of its own, so a
terminal's Ctrl-C reaches only `azs`, which stops the agent's whole process group in steps.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import threading
import time
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Final

from azsd.config import ResolvedConfig
from azsd.errors import AzsdError
from azsd_client._shared import Backend

__all__ = [
    "FORMATS",
    "Agent",
    "agent_command",
    "agent_environment",
    "agent_home",
    "check_agent",
    "codex_home",
    "started_model",
    "turn_path",
]

#: The JSONL each agent writes on stdout, as the daemon names the formats.
FORMATS: Final[Mapping[Backend, str]] = {"claude": "claude-stream-json", "codex": "codex-exec-json"}

#: How an agent is stopped: each signal, then how long it gets to exit before the next one.
_ESCALATION: Final = ((signal.SIGINT, 2.0), (signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0))

#: Variables of a systemd service that must not leak into the agent (it would notify as the service).
_SERVICE_VARIABLES: Final = ("NOTIFY_SOCKET",)
_SERVICE_PREFIXES: Final = ("WATCHDOG_",)


def agent_home(backend: Backend, environ: Mapping[str, str]) -> str:
    """Where the agent keeps its own histories: Claude's ``$CLAUDE_CONFIG_DIR`` (else ``~/.claude``),
    Codex's :func:`codex_home`.

    >>> agent_home("claude", {"HOME": "/h"}), agent_home("codex", {"CODEX_HOME": "/c"})
    ('/h/.claude', '/c')
    """
    if backend == "codex":
        return codex_home(environ)
    home = environ.get("HOME") or os.path.expanduser("~")
    return environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")


def codex_home(environ: Mapping[str, str]) -> str:
    """Where Codex keeps its config and histories: ``$CODEX_HOME``, else ``~/.codex``.

    >>> codex_home({"CODEX_HOME": "/c"}), codex_home({"HOME": "/h"})
    ('/c', '/h/.codex')
    """
    return environ.get("CODEX_HOME") or os.path.join(environ.get("HOME") or os.path.expanduser("~"), ".codex")


def started_model(argv: Sequence[str], environ: Mapping[str, str]) -> str | None:
    """The model a `codex exec` command line runs (``-m X``, ``--model X``, ``--model=X``, ``-c
    model=X``), else the `model` of Codex's config file (``$CODEX_HOME/config.toml``, else
    ``~/.codex/config.toml``), else None: `codex exec --json` never names it, and pricing needs it.

    >>> started_model(["codex", "-m", "gpt-5.1-codex", "exec"], {"CODEX_HOME": "/nowhere"})
    'gpt-5.1-codex'
    >>> started_model(["codex", "-c", 'model="o3"', "exec"], {"CODEX_HOME": "/nowhere"})
    'o3'
    >>> started_model(["codex", "exec"], {"CODEX_HOME": "/nowhere"}) is None
    True
    """
    found: str | None = None
    for i, word in enumerate(argv):
        following = argv[i + 1] if i + 1 < len(argv) else ""
        if word in ("-m", "--model"):
            found = following or found
        elif word.startswith("--model="):
            found = word.split("=", 1)[1] or found
        elif word in ("-c", "--config") and following.split("=", 1)[0].strip() == "model":
            found = following.split("=", 1)[1].strip().strip("\"'") or found
    if found:
        return found
    home = codex_home(environ)
    try:
        with open(os.path.join(home, "config.toml"), "rb") as stream:
            config = tomllib.load(stream)
    except (OSError, tomllib.TOMLDecodeError):
        return None
    model = config.get("model")
    return model if isinstance(model, str) and model else None


def agent_command(
    config: ResolvedConfig,
    backend: Backend,
    prompt: str,
    model: str | None = None,
    *,
    session_id: str | None = None,
) -> tuple[list[str], bytes]:
    """The agent's argv, and the prompt to write to its stdin.

    Both agents read the prompt from stdin: `claude -p` given no prompt argument, `codex exec -`.
    So a prompt of any size goes through (AZUREAL passes Claude's in argv, where Linux refuses
    one argument of 128 KiB or more), and nothing of the session context shows in `ps`. Claude is
    given `session_id` as its own session's id (`--session-id`), so that its transcript of the run
    is known to be the run's from its first line.

    >>> from azsd.config import resolve_config
    >>> config = resolve_config(environ={"AZSD_RUNTIME_DIR": "/tmp/x"}, config_file=None)
    >>> agent_command(config, "claude", "hi", "opus")
    (['claude', '--model', 'opus', '-p', '--verbose', '--output-format', 'stream-json'], b'hi')
    >>> agent_command(config, "claude", "hi", session_id="0b6f")[0][:3]
    ['claude', '--session-id', '0b6f']
    >>> agent_command(config, "codex", "hi")
    (['codex', 'exec', '--json', '-'], b'hi')
    """
    model_args = ["--model", model] if model else []
    if backend == "claude":
        model_args += ["--session-id", session_id] if session_id else []
        argv = [*config.claude_command, *model_args, "-p", "--verbose", "--output-format", "stream-json"]
        return argv, prompt.encode()
    return [*config.codex_command, "exec", "--json", *model_args, "-"], prompt.encode()


def check_agent(config: ResolvedConfig, backend: Backend) -> None:
    """Fail before anything is stored when the agent's program cannot be found."""
    program = (config.claude_command if backend == "claude" else config.codex_command)[0]
    if shutil.which(program) is None:
        raise AzsdError(
            f"cannot run the {backend} agent: {program!r} is not an executable program "
            f"(set {backend}-command in the azsd config file)"
        )


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """`environ` without systemd's service variables.

    >>> agent_environment({"PATH": "/bin", "NOTIFY_SOCKET": "/run/n", "WATCHDOG_USEC": "1"})
    {'PATH': '/bin'}
    """
    return {
        key: value
        for key, value in environ.items()
        if key not in _SERVICE_VARIABLES and not key.startswith(_SERVICE_PREFIXES)
    }


def turn_path(turns_dir: Path, root: str, session: int, now: datetime | None = None) -> Path:
    """``<turns_dir>/<root-hash>-S<id>-<timestamp>.jsonl`` (the hash tells worktrees apart).

    >>> turn_path(Path("/t"), "/src/p", 3, datetime(2025, 1, 2, 3, 4, 5, 6, tzinfo=UTC)).name
    'c54da4317da8-S3-20250102T030405.000006Z.jsonl'
    """
    digest = hashlib.sha256(root.encode()).hexdigest()[:12]
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S.%fZ")
    return turns_dir / f"{digest}-S{session}-{stamp}.jsonl"


def _create(path: Path) -> int:
    """A new file, private to the user; an existing one is an error, never overwritten."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise AzsdError(f"cannot create {path}: {exc.strerror or exc}") from None


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write the prompt and close stdin (EOF ends it); an agent that quit early is no error here."""
    with contextlib.suppress(OSError):
        try:
            pipe.write(data)
        finally:
            pipe.close()


@dataclass
class Agent:
    """A running agent: its process, its output file and stderr file, when it started."""

    process: subprocess.Popen[bytes]
    path: Path
    stderr_path: Path
    started: float

    @classmethod
    def start(
        cls, argv: list[str], stdin: bytes | None, *, cwd: str, path: Path, environ: Mapping[str, str]
    ) -> Agent:
        """Start the agent with stdout into `path` (created now, with its directory, private)."""
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise AzsdError(f"cannot create {path.parent}: {exc.strerror or exc}") from None
        stderr_path = path.with_suffix(".stderr")
        out = _create(path)
        try:
            err = _create(stderr_path)
            try:
                process = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    cwd=cwd,
                    env=agent_environment(environ),
                    start_new_session=True,
                )
            except OSError as exc:
                for created in (path, stderr_path):
                    with contextlib.suppress(OSError):
                        created.unlink()
                raise AzsdError(f"cannot start {argv[0]}: {exc.strerror or exc}") from None
            finally:
                os.close(err)
        finally:
            os.close(out)
        if stdin is not None and process.stdin is not None:
            # In a thread: an agent that reads slowly (or never) must not block the follow.
            threading.Thread(target=_feed, args=(process.stdin, stdin), daemon=True).start()
        return cls(process, path, stderr_path, time.monotonic())

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        """The exit status, or None while it runs."""
        return self.process.poll()

    def elapsed_ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)

    def wait(self, timeout: float) -> int | None:
        """The exit status, waiting up to `timeout` seconds for it; None if it still runs."""
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self) -> int | None:
        """Stop the agent's process group: SIGINT, SIGTERM after 2 s, SIGKILL after 5 s. Its exit status."""
        for signum, patience in _ESCALATION:
            if self.process.poll() is not None:
                break
            self._signal(signum)
            if self.wait(patience) is not None:
                break
        return self.process.poll()

    def _signal(self, signum: int) -> None:
        try:
            os.killpg(self.process.pid, signum)
        except ProcessLookupError:
            pass
        except PermissionError:
            self.process.send_signal(signum)

    def stderr_tail(self, lines: int = 12) -> list[str]:
        """The last lines the agent wrote on stderr."""
        try:
            with open(self.stderr_path, "rb") as stream:
                stream.seek(max(0, stream.seek(0, os.SEEK_END) - 64 * 1024))
                text = stream.read().decode(errors="replace")
        except OSError:
            return []
        return [line for line in text.splitlines() if line.strip()][-lines:]

    def remove_files(self) -> None:
        """Delete the output and stderr files (once everything in them is stored)."""
        for path in (self.path, self.stderr_path):
            with contextlib.suppress(OSError):
                path.unlink()
