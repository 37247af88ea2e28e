"""Configuration: loaded once at the edge, passed down as data.

Precedence, highest first: command-line flags, the environment (``AZSD_RUNTIME_DIR``,
``AZSD_CONFIG``), the config file (``$XDG_CONFIG_HOME/azsd/config.toml``), built-in defaults.
Nothing below :mod:`azsd.server.daemon` and the CLIs reads ``os.environ``.

The file is TOML; unknown keys are rejected::

    runtime-dir = "/run/user/1000/azsd"   # where sockets, lock and discovery file live
    idle-close-s = 300                     # close a store this long after its last request
    max-message-bytes = 67108864           # larger requests are dropped by ZeroMQ
    log-level = "INFO"
    follow-idle-s = 30                     # a follow whose file is idle this long ends (its writer gone)
                                           # or, given no writer and nobody holding the file, goes idle
    max-open-stores = 128                  # past it, the least recently used idle store is closed
    claude-command = ["claude"]            # how `azs run` starts each agent (argv prefix)
    codex-command = ["codex"]
    compaction-threshold = 400000          # `azs run` compacts a session's context at this many chars

    sync-url = "postgresql://db.example/azsd"  # sync every store to PostgreSQL (azsd.sync); off if unset
    sync-identity = "ada@laptop"           # who and which machine pushes (default user@hostname)
    price-file = "~/prices.json"           # prices over the shipped list (azsd's format or LiteLLM's)
    full-record = true                     # keep what each agent wrote beside the compact events

    [pricing."gpt-5-codex"]                # USD per million tokens; replaces or adds a model
    input = 1.25                           # of azsd/data/pricing.json (same name rules)
    output = 10.0
    cache-read = 0.125
    cache-write = 0.0

>>> cfg = resolve_config(environ={"AZSD_RUNTIME_DIR": "/tmp/x"}, config_file=None)
>>> cfg.rpc_endpoint
'ipc:///tmp/x/rpc'
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import msgspec

from azsd.errors import ConfigError
from azsd.pricing import Price, PriceTable, default_table, load_price_file

__all__ = [
    "IPC_PATH_MAX",
    "FileConfig",
    "Price",
    "PriceTable",
    "ResolvedConfig",
    "default_config_path",
    "default_identity",
    "default_runtime_dir",
    "default_state_dir",
    "load_config_file",
    "price_table",
    "private_dir_problem",
    "resolve_config",
]

#: The spec's compaction threshold (§6; `azsd.context.COMPACTION_THRESHOLD`, which the client does
#: not import: it needs only the protocol side of azsd).
COMPACTION_THRESHOLD: Final = 400_000

#: `sun_path` is 108 bytes including the terminating NUL.
IPC_PATH_MAX: Final = 107


class FileConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True, rename="kebab"):
    """The config file's keys; every one is optional."""

    runtime_dir: str | None = None
    idle_close_s: float = 300.0
    max_message_bytes: int = 64 * 1024 * 1024
    log_level: str = "INFO"
    follow_idle_s: float = 30.0
    max_open_stores: int = 128
    claude_command: list[str] = msgspec.field(default_factory=lambda: ["claude"])
    codex_command: list[str] = msgspec.field(default_factory=lambda: ["codex"])
    compaction_threshold: int = COMPACTION_THRESHOLD
    pricing: dict[str, Price] = msgspec.field(default_factory=dict)
    price_file: str | None = None
    sync_url: str | None = None
    sync_identity: str | None = None
    sync_redact: bool = True
    watch_agents: list[str] = msgspec.field(default_factory=lambda: ["claude", "codex", "aider", "opencode"])
    full_record: bool = True


#: The agents whose homes the daemon can watch (`watch-agents`).
WATCHABLE: Final = ("claude", "codex", "aider", "opencode")


@dataclass(frozen=True)
class ResolvedConfig:
    """Everything the daemon and the client need, resolved to concrete values."""

    runtime_dir: Path
    idle_close_s: float
    max_message_bytes: int
    log_level: str
    follow_idle_s: float
    claude_command: tuple[str, ...]
    codex_command: tuple[str, ...]
    state_dir: Path
    max_open_stores: int = 128
    #: `azs run` compacts a session first when its context meter is at or over this (spec §6).
    compaction_threshold: int = COMPACTION_THRESHOLD
    #: The config file's `[pricing."model"]` tables, over the shipped price list.
    pricing: Mapping[str, Price] = field(default_factory=dict)
    #: A price list (azsd's format or LiteLLM's) over the shipped one, under `pricing` (`price-file`).
    price_file: Path | None = None
    #: The PostgreSQL database every store is pushed to (a libpq URL or key=value string); None: no sync.
    sync_url: str | None = None
    #: Who and which machine pushes (`sync-identity`, default ``user@hostname``).
    sync_identity: str = ""
    #: Mask secrets in what is pushed (`sync-redact`, on by default; `azs export --redact`'s patterns).
    sync_redact: bool = True
    #: The config file read (None: none); the daemon reads it again when it changes (sync settings).
    config_path: Path | None = None
    #: The agents whose homes the daemon watches, keeping every store current by itself
    #: (`watch-agents`, or ``AZSD_WATCH_AGENTS`` as a comma-separated list; empty or ``0``: none).
    watch_agents: tuple[str, ...] = WATCHABLE
    #: Keep what each agent wrote beside the compact events (`full-record`, on by default).
    full_record: bool = True

    @property
    def rpc_endpoint(self) -> str:
        return f"ipc://{self.runtime_dir / 'rpc'}"

    @property
    def pub_endpoint(self) -> str:
        return f"ipc://{self.runtime_dir / 'pub'}"

    @property
    def lock_path(self) -> Path:
        return self.runtime_dir / "azsd.lock"

    @property
    def state_lock_path(self) -> Path:
        """Held beside the follow-roots: one daemon per state dir (per user) resumes the follows,
        whatever runtime dir it serves on."""
        return self.state_dir / "azsd.lock"

    @property
    def discovery_path(self) -> Path:
        return self.runtime_dir / "azsd.json"

    @property
    def roots_path(self) -> Path:
        """The worktree roots that had live follows (so a restarted daemon resumes them)."""
        return self.state_dir / "follow-roots"

    @property
    def stores_path(self) -> Path:
        """Every store root the daemon has opened, one a line: the account's stores (`azs statusline`
        sums today's cost and the 5-hour block over them)."""
        return self.state_dir / "stores"

    @property
    def turns_dir(self) -> Path:
        """Where `azs run` writes each agent's JSONL output."""
        return self.runtime_dir / "turns"


def default_config_path(environ: Mapping[str, str]) -> Path:
    base = environ.get("XDG_CONFIG_HOME") or str(Path(environ.get("HOME", "~")).expanduser() / ".config")
    return Path(base) / "azsd" / "config.toml"


def default_state_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_STATE_HOME/azsd`, else `~/.local/state/azsd`: what must survive a reboot."""
    base = environ.get("XDG_STATE_HOME") or str(
        Path(environ.get("HOME", "~")).expanduser() / ".local" / "state"
    )
    return Path(base).expanduser() / "azsd"


def private_dir_problem(path: Path) -> str | None:
    """Why `path` cannot be trusted as this user's private directory, or None when it can (or does
    not exist yet). It must be a real directory (not a symbolic link), owned by this user, that no
    one else can enter or list (mode 0700): anyone who could put a socket there could answer as azsd.
    """
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return f"{path} is a symbolic link, not a directory of your own"
    if not stat.S_ISDIR(info.st_mode):
        return f"{path} is not a directory"
    if info.st_uid != os.getuid():
        return f"{path} belongs to uid {info.st_uid}, not to you (uid {os.getuid()})"
    if stat.S_IMODE(info.st_mode) & 0o077:
        return f"{path} has mode {stat.S_IMODE(info.st_mode):04o}: others can enter it (it must be 0700)"
    return None


def default_runtime_dir(environ: Mapping[str, str]) -> Path:
    """`$XDG_RUNTIME_DIR/azsd`, else a private `/tmp/azsd-$UID`."""
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "azsd"
    return Path(f"/tmp/azsd-{os.getuid()}")


def load_config_file(path: Path) -> FileConfig:
    """Read a config file; a missing file is the defaults, a wrong one a :class:`ConfigError`."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return FileConfig()
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror}") from None
    try:
        file = msgspec.toml.decode(data, type=FileConfig)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except msgspec.DecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    if file.sync_url is not None:
        from azsd.pgurl import check_url_in_file  # no psycopg: only the URL's text

        check_url_in_file(file.sync_url, path)
    return file


def resolve_config(
    *,
    environ: Mapping[str, str],
    config_file: Path | bool | None = True,
    runtime_dir: str | None = None,
) -> ResolvedConfig:
    """The configuration in force: flag > environment > file > default.

    `config_file=True` reads ``AZSD_CONFIG`` or the default path; a Path reads that file; None
    reads none.
    """
    path: Path | None = None
    if config_file is True:
        path = Path(environ["AZSD_CONFIG"]) if environ.get("AZSD_CONFIG") else default_config_path(environ)
        file = load_config_file(path)
    elif isinstance(config_file, Path):
        path = config_file
        file = load_config_file(config_file)
    else:
        file = FileConfig()
    chosen = runtime_dir or environ.get("AZSD_RUNTIME_DIR") or file.runtime_dir
    rdir = Path(chosen).expanduser() if chosen else default_runtime_dir(environ)
    rdir = rdir.absolute()
    longest = len(str(rdir / "rpc").encode())
    if longest > IPC_PATH_MAX:
        raise ConfigError(
            f"runtime dir {rdir} is too long for an ipc:// socket path ({longest} > {IPC_PATH_MAX} bytes); "
            "set AZSD_RUNTIME_DIR to a shorter directory"
        )
    if file.idle_close_s <= 0 or file.max_message_bytes <= 0 or file.follow_idle_s <= 0:
        raise ConfigError("idle-close-s, follow-idle-s and max-message-bytes must be positive")
    if not 1 <= file.max_open_stores <= 400:  # each open store holds two ZeroMQ sockets of ~1023
        raise ConfigError(f"max-open-stores must be between 1 and 400, not {file.max_open_stores}")
    if file.compaction_threshold < 1:
        raise ConfigError(
            f"compaction-threshold must be a positive number of characters, not {file.compaction_threshold}"
        )
    for model, price in file.pricing.items():
        if price.negative():
            raise ConfigError(f'pricing."{model}": a price cannot be negative')
        if price.bad_day() is not None:
            raise ConfigError(f'pricing."{model}": since {price.bad_day()!r} is not a date (YYYY-MM-DD)')
    if not file.claude_command or not file.codex_command:
        raise ConfigError("claude-command and codex-command must name a program")
    watch = file.watch_agents
    if "AZSD_WATCH_AGENTS" in environ:
        given = environ["AZSD_WATCH_AGENTS"].strip()
        watch = (
            [] if given in ("", "0", "off", "none") else [a.strip() for a in given.split(",") if a.strip()]
        )
    unknown = [agent for agent in watch if agent not in WATCHABLE]
    if unknown:
        raise ConfigError(f"watch-agents: {', '.join(unknown)}: only {', '.join(WATCHABLE)} can be watched")
    return ResolvedConfig(
        runtime_dir=rdir,
        idle_close_s=file.idle_close_s,
        max_message_bytes=file.max_message_bytes,
        log_level=file.log_level.upper(),
        follow_idle_s=file.follow_idle_s,
        claude_command=tuple(file.claude_command),
        codex_command=tuple(file.codex_command),
        state_dir=default_state_dir(environ),
        max_open_stores=file.max_open_stores,
        compaction_threshold=file.compaction_threshold,
        pricing=dict(file.pricing),
        price_file=Path(file.price_file).expanduser() if file.price_file else None,
        sync_url=file.sync_url or None,
        sync_identity=file.sync_identity or default_identity(environ),
        sync_redact=file.sync_redact,
        config_path=path,
        watch_agents=tuple(dict.fromkeys(watch)),
        full_record=file.full_record,
    )


def default_identity(environ: Mapping[str, str]) -> str:
    """``user@hostname``: who pushes sessions to the sync database, and from which machine."""
    user = environ.get("USER") or environ.get("LOGNAME") or str(os.getuid())
    return f"{user}@{os.uname().nodename}"


def price_table(config: ResolvedConfig) -> PriceTable:
    """The prices in force: the shipped list, under the `price-file` when one is named, under the
    config file's `[pricing."model"]` tables. Raises ConfigError for a price file that cannot be used."""
    table = default_table()
    if config.price_file is not None:
        name = str(config.price_file)
        try:
            named = load_price_file(config.price_file.read_bytes(), name)
        except OSError as exc:
            raise ConfigError(f"price-file {name}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise ConfigError(f"price-file {exc}") from None
        if any(price.negative() for price in named.prices.values()):
            raise ConfigError(f"price-file {name}: a price cannot be negative")
        source = f"{name}{f' ({named.source})' if named.source != name else ''}, over {table.source}"
        table = PriceTable({**table.prices, **named.prices}, source=source, date=named.date or table.date)
    return table.with_overrides(config.pricing)
