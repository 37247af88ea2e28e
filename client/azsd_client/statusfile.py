"""`azs statusline`'s fast path: the line from the figures its last run asked the daemon for.

A statusline runs often (Claude Code's hook after each message, a prompt at each command, tmux every
few seconds) and must take a few tens of milliseconds; asking the daemon means loading ZeroMQ,
msgspec and the client, which alone costs more. So each full run of `azs statusline` leaves its
figures in a small file (:func:`save`), and the next run, started through :func:`main`, prints the
line from that file with nothing imported but the standard library's smallest modules (``python -X
importtime``: no zmq, no msgspec, no argparse, no pathlib), as long as the file still holds:

- it was made for the same place (the directory or ``--root``, ``--runtime-dir`` and the
  environment and config file that choose the daemon), on the same day, less than :data:`MAX_AGE_S`
  ago;
- the store (``.azureal/sessions.azs`` and its WAL) is as it was then, and was so for a while before
  (:data:`RACY_S`), or the file is less than :data:`GRACE_S` old (a store written all the time is
  asked about again about every second, not at every run).

Otherwise :func:`main` runs the full command, which asks the daemon and writes a new file. The
block's time left and whether it is still going are worked out at each run from its end and its
last turn. The file holds numbers and the three cost kinds only, and is read back as such: nothing
an agent wrote reaches the terminal through it. It lives in ``$XDG_RUNTIME_DIR/azs-statusline``
(else ``/tmp/azs-statusline-$UID``), a directory of the user's own with mode 0700, or nowhere.
"""

from __future__ import annotations

import json
import os
import sys
import time
import zlib

from .costs import format_cost

#: typing.TYPE_CHECKING without importing typing, which costs more than the rest of the fast path.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final, TypeGuard

__all__ = ["context_tokens", "hook_input", "hook_meter", "key", "main", "render", "save"]

VERSION: Final = 1
#: The longest a file is used, whatever else holds (a block's burn rate, a day's cost elsewhere).
MAX_AGE_S: Final = 60.0
#: How long a file is used after its store changed: the daemon keeps the stores current from the
#: agents' own files (its watch of their homes), so a line is figured in within about a second.
GRACE_S: Final = 0.8
#: A store file changed this soon before the daemon was asked may change again unseen (same mtime).
RACY_S: Final = 2.0
#: How much of a transcript's end is read for its latest message's usage.
TAIL_BYTES: Final = 256 * 1024
#: A Claude model's context window, unless its name says 1M (``[1m]``).
WINDOW: Final = 200_000
_SOURCES: Final = frozenset({"reported", "estimated", "unpriced"})
_VALUED: Final = frozenset({"--root", "--runtime-dir", "--timeout"})
_stdin: bytes | None = None


def main() -> None:
    """The `azs` command: a statusline from its file when that holds, else the full CLI (which exits
    with its status)."""
    args = sys.argv[1:]
    if "statusline" in args:
        line = _fast(args, os.environ, time.time())
        if line is not None:
            sys.stdout.write(line + "\n")
            return
    from .cli import main as full

    full()


def _fast(args: list[str], environ: Any, now: float) -> str | None:
    options = _options(args)
    if options is None:
        return None
    name = key(options.get("--root"), options.get("--runtime-dir"), environ)
    record = _load(_path(name, environ))
    if record is None or not _holds(record, name, environ, now):
        return None
    return render(record, hook_meter(hook_input()), now)


def _options(args: list[str]) -> dict[str, str] | None:
    """`statusline` and the options the fast path knows (``--root``, ``--runtime-dir``, ``--timeout``);
    None for anything else (``--json``, ``--help``, a typo): the full CLI answers those."""
    found: dict[str, str] = {}
    rest = iter(args)
    command = False
    for arg in rest:
        name, eq, value = arg.partition("=")
        if arg == "statusline" and not command:
            command = True
        elif name in _VALUED:
            given = value if eq else next(rest, None)
            if given is None:
                return None
            found[name] = given
        else:
            return None
    return found if command else None


def key(root: str | None, runtime_dir: str | None, environ: Any) -> str:
    """What chooses the store and the daemon of a run: the place and every input of the config."""
    place = os.path.realpath(root if root else os.getcwd())
    daemon = (runtime_dir, environ.get("AZSD_RUNTIME_DIR"), environ.get("XDG_RUNTIME_DIR"))
    return json.dumps([place, *daemon, _config_path(environ)])


def _config_path(environ: Any) -> str:
    given: str | None = environ.get("AZSD_CONFIG")
    if given:
        return given
    home = os.path.expanduser(environ.get("HOME", "~"))
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    return os.path.join(base, "azsd", "config.toml")


def _directory(environ: Any) -> str | None:
    """The files' directory, made if missing; None when it is not the user's own with mode 0700."""
    xdg = environ.get("XDG_RUNTIME_DIR")
    path = os.path.join(xdg, "azs-statusline") if xdg else f"/tmp/azs-statusline-{os.getuid()}"
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        info = os.lstat(path)
    except OSError:
        return None
    own = info.st_uid == os.getuid() and (info.st_mode & 0o170777) == 0o040700
    return path if own else None


def _path(name: str, environ: Any) -> str | None:
    folder = _directory(environ)
    return None if folder is None else os.path.join(folder, f"{zlib.crc32(name.encode()):08x}.json")


def _stat(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size]


def _store_state(root: str) -> list[list[int] | None]:
    store = os.path.join(root, ".azureal", "sessions.azs")
    return [_stat(store), _stat(store + "-wal")]


def save(
    name: str, root: str, environ: Any, figures: dict[str, Any], made: float, others: Sequence[str] = ()
) -> None:
    """Keep a full run's figures for the next runs (best effort: a run never fails for its file).

    `figures`: ``today`` [cost, kind, unpriced tokens], ``block`` [cost, kind, USD per hour, end]
    or None, ``meter`` [session id, characters, threshold] or None. `made`: when the daemon
    was asked (before, so that a change made while it answered is seen as one). `others`: the
    account's other stores the figures hold (a change to any of them makes the file stale).
    """
    path = _path(name, environ)
    if path is None:
        return
    record = {
        "v": VERSION, "key": name, "made": made, "day": time.strftime("%Y-%m-%d", time.localtime(made)),
        "store": _store_state(root), "root": root, "config": _stat(_config_path(environ)), **figures,
        "others": [[other, _store_state(other)] for other in others],
    }  # fmt: skip
    part = f"{path}.{os.getpid()}"
    try:
        with open(part, "w", encoding="utf-8") as stream:
            json.dump(record, stream)
        os.replace(part, path)
    except OSError:
        return


def _load(path: str | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        with open(path, "rb") as stream:
            value = json.loads(stream.read(1 << 16))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and value.get("v") == VERSION and _typed(value) else None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _typed(record: dict[str, Any]) -> bool:
    """The file's figures are numbers and cost kinds, and nothing else (it is shown in a terminal)."""
    today, block, meter = record.get("today"), record.get("block"), record.get("meter")
    if not (_shaped(today, 3) and _number(today[0]) and isinstance(today[2], int)):
        return False
    if block is not None and not (_shaped(block, 4) and all(map(_number, (block[0], *block[2:])))):
        return False
    if meter is not None and not (isinstance(meter, list) and len(meter) == 3):
        return False
    ints = meter is None or all(isinstance(v, int) for v in meter)
    return ints and _number(record.get("made")) and isinstance(record.get("root"), str)


def _shaped(value: object, size: int) -> TypeGuard[list[Any]]:
    """A list of `size` items whose second is a cost kind."""
    return isinstance(value, list) and len(value) == size and value[1] in _SOURCES


def _holds(record: dict[str, Any], name: str, environ: Any, now: float) -> bool:
    made: float = record["made"]
    if record.get("key") != name or not 0 <= now - made < MAX_AGE_S:
        return False
    if record.get("day") != time.strftime("%Y-%m-%d", time.localtime(now)):
        return False
    if record.get("config") != _stat(_config_path(environ)):
        return False
    if now - made < GRACE_S:
        return True
    states = [[record["root"], record.get("store")], *record.get("others", [])]
    return all(
        isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
        and pair[1] == _store_state(pair[0]) and _settled(pair[1], made)
        for pair in states
    )  # fmt: skip


def _settled(store: object, made: float) -> bool:
    """Whether the store files' stat, as recorded, tells every change after it: their mtimes at least
    :data:`RACY_S` before the daemon was asked (two commits in one tick of the file system's clock can
    leave the same mtime and size: Git's "racily clean")."""
    limit = (made - RACY_S) * 1e9
    return isinstance(store, list) and all(stat is None or stat[0] <= limit for stat in store)


def render(record: dict[str, Any], hook_meter: str | None, now: float) -> str:
    """The line: today's cost, the block still going (its cost, time left and rate), the meter
    (`hook_meter`, the hook's transcript's, else the file's latest session's).

    >>> block = [0.5, "estimated", 2.0, 7200]
    >>> render({"today": [1.5, "estimated", 0], "block": block, "meter": [3, 500, 1000]}, None, 0)
    '~$1.5000 today · block ~$0.5000 (2h 00m left, ~$2.0000/h) · S3 ctx 500 chars (50%)'
    """
    cost, source, unpriced = record["today"]
    parts = [f"{format_cost(cost, source, unpriced) or '$0'} today"]
    block = record.get("block")
    if block is not None and now < block[3]:  # its last turn is after its start: 5 hours before its end
        hours, minutes = divmod(round(max(block[3] - now, 0.0) / 60.0), 60)
        rate = format_cost(block[2], block[1]) or "$0"
        cost = format_cost(block[0], block[1]) or "$0"
        parts.append(f"block {cost} ({hours}h {minutes:02d}m left, {rate}/h)")
    meter = record.get("meter")
    if hook_meter:
        parts.append(hook_meter)
    elif hook_meter is None and meter is not None and meter[2] > 0:
        parts.append(f"S{meter[0]} ctx {meter[1]:,} chars ({meter[1] / meter[2]:.0%})")
    return " · ".join(parts)


def hook_input() -> dict[str, Any]:
    """Claude Code's statusline JSON on stdin, or {} (a terminal, nothing, or not JSON); read once."""
    global _stdin
    if _stdin is None:
        stream = sys.stdin
        try:
            _stdin = b"" if stream is None or stream.isatty() else stream.buffer.read(1 << 20)
        except (OSError, ValueError):
            _stdin = b""
    try:
        value = json.loads(_stdin or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def hook_meter(hook: dict[str, Any]) -> str | None:
    """The hook's session's context (`ctx N (P%)`; "" when its transcript has none), or None without
    a hook."""
    path = hook.get("transcript_path")
    if not (isinstance(path, str) and path):
        return None
    model = hook.get("model")
    name = str(model.get("id", "")) if isinstance(model, dict) else ""
    window = 1_000_000 if "[1m]" in name else WINDOW
    used = context_tokens(path)
    return "" if used is None else f"ctx {used:,} ({used / window:.0%})"


def context_tokens(path: str | os.PathLike[str]) -> int | None:
    """The context of a Claude transcript's latest API message: its input, cache read and cache write
    tokens (None: no message with usage near the file's end, or no file)."""
    try:
        with open(path, "rb") as stream:
            size = stream.seek(0, os.SEEK_END)
            stream.seek(max(0, size - TAIL_BYTES))
            tail = stream.read()
    except OSError:
        return None
    for line in reversed(tail.splitlines()):
        if b'"usage"' not in line or b'"assistant"' not in line:
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        message = obj.get("message") if isinstance(obj, dict) else None
        usage = message.get("usage") if isinstance(message, dict) else None
        if isinstance(message, dict) and isinstance(usage, dict) and message.get("model") != "<synthetic>":
            keys = ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
            return sum(v for k in keys if isinstance(v := usage.get(k), int) and not isinstance(v, bool))
    return None
