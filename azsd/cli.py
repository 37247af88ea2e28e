"""The daemon-side command line: `azsd run`, `azsd install-service`, `azsd check-config`, `azsd sync init`,
`azsd version`.

Exit codes: 0 success, 1 an error (one line on stderr), 2 a usage error.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import msgspec

from azsd import __version__
from azsd.config import ResolvedConfig, default_config_path, price_table, resolve_config
from azsd.errors import AzsdError, ConfigError

__all__ = ["main"]

log = logging.getLogger("azsd.cli")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="azsd", description="Session-store daemon for AI coding agents.")
    parser.add_argument("--version", action="version", version=f"azsd {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the daemon in the foreground (what systemd runs)")
    run.add_argument(
        "--runtime-dir", help="where sockets, lock and discovery file live (env AZSD_RUNTIME_DIR)"
    )
    run.add_argument(
        "--config", type=Path, help="config file (env AZSD_CONFIG; default ~/.config/azsd/config.toml)"
    )
    run.add_argument("--log-level", help="DEBUG, INFO, WARNING or ERROR (default from the config: INFO)")
    install = sub.add_parser("install-service", help="write the systemd user unit")
    install.add_argument("--force", action="store_true", help="replace a different existing unit")
    check = sub.add_parser("check-config", help="validate the configuration and print what is in force")
    check.add_argument("--config", type=Path)
    sync = sub.add_parser("sync", help="the sync database (PostgreSQL): `azsd sync init`")
    sync.add_argument("action", choices=("init",), help="init: create or migrate the schema")
    sync.add_argument("--config", type=Path)
    sync.add_argument("--url", help="the database (default: sync-url of the config file)")
    reload = sub.add_parser(
        "reload", help="make the running daemon take the config file's sync settings again (SIGHUP)"
    )
    reload.add_argument("--runtime-dir", help="the daemon's runtime dir (env AZSD_RUNTIME_DIR)")
    sub.add_parser("version", help="print the version")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    args = _parser().parse_args(argv)
    try:
        match args.command:
            case "run":
                _run(args)
            case "install-service":
                _install_service(args.force)
            case "check-config":
                _check_config(args.config)
            case "sync":
                _sync_init(args.config, args.url)
            case "reload":
                _reload(args.runtime_dir)
            case _:
                print(__version__)
    except AzsdError as exc:
        print(f"azsd: {exc}", file=sys.stderr)
        sys.exit(1)


def _resolve(config: Path | None, runtime_dir: str | None = None) -> ResolvedConfig:
    return resolve_config(environ=os.environ, config_file=config if config else True, runtime_dir=runtime_dir)


def _run(args: argparse.Namespace) -> None:
    from azsd.server.daemon import Daemon

    config = _resolve(args.config, args.runtime_dir)
    level = (args.log_level or config.log_level).upper()
    logging.basicConfig(level=level, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("watchfiles").setLevel(logging.WARNING)  # it logs every change at INFO
    daemon = Daemon(config, os.environ)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: daemon.request_stop())
    signal.signal(signal.SIGHUP, lambda *_: daemon.request_reload())  # `azsd reload`
    try:
        daemon.start()
        daemon.run()
    finally:
        daemon.stop()


def _reload(runtime_dir: str | None) -> None:
    """Send SIGHUP to the daemon serving `runtime_dir` (its discovery file names its pid)."""
    config = _resolve(None, runtime_dir)
    try:
        pid = int(msgspec.json.decode(config.discovery_path.read_bytes())["pid"])
        os.kill(pid, signal.SIGHUP)
    except (OSError, ValueError, KeyError, TypeError, msgspec.DecodeError) as exc:
        raise ConfigError(f"no daemon to reload at {config.runtime_dir}: {exc}") from None
    print(f"azsd (pid {pid}) reads the config file's sync settings again")


def _install_service(force: bool) -> None:
    from azsd.service import ENABLE_HINT, install_service

    path = install_service(os.environ, force=force)
    print(f"wrote {path}")
    print(f"now run: {ENABLE_HINT}")


def _sync_init(config: Path | None, url: str | None) -> None:
    """Create the sync schema, or migrate it to this azsd's version (idempotent)."""
    from azsd.pgurl import redact_url
    from azsd.sync.schema import init_database

    chosen = url or _resolve(config).sync_url
    if not chosen:
        raise ConfigError("no sync-url in the config file (or give --url): nothing to initialize")
    applied, version = init_database(chosen)
    done = f"applied {', '.join(applied)}" if applied else "already up to date"
    print(f"{redact_url(chosen)}: schema version {version} ({done})")


def _config_path(config: Path | None) -> Path:
    """The file `check-config` and `run` read: `--config`, else ``AZSD_CONFIG``, else the default."""
    if config:
        return config
    given = os.environ.get("AZSD_CONFIG")
    return Path(given) if given else default_config_path(os.environ)


def _check_config(config: Path | None) -> None:
    """Every key in force, its value, and where it came from (the file, the environment, a default)."""
    from azsd.pgurl import redact_url  # no psycopg: settings only

    resolved = _resolve(config)
    path = _config_path(config)
    try:
        in_file = set(msgspec.toml.decode(path.read_bytes()))
        print(f"config file: {path}")
    except FileNotFoundError:
        in_file = set()
        print(f"config file: {path} (not there: every key has its default)")

    def origin(key: str) -> str:
        return "config file" if key in in_file else "default"

    if os.environ.get("AZSD_RUNTIME_DIR"):
        rdir_from = "AZSD_RUNTIME_DIR"
    else:
        rdir_from = origin("runtime-dir")
    table = price_table(resolved)
    own = ", ".join(resolved.pricing) or "none"
    rows = [
        ("runtime-dir", str(resolved.runtime_dir), rdir_from),
        ("  rpc", resolved.rpc_endpoint, "runtime-dir"),
        ("  pub", resolved.pub_endpoint, "runtime-dir"),
        ("idle-close-s", f"{resolved.idle_close_s:g}", origin("idle-close-s")),
        ("follow-idle-s", f"{resolved.follow_idle_s:g}", origin("follow-idle-s")),
        ("max-open-stores", str(resolved.max_open_stores), origin("max-open-stores")),
        ("max-message-bytes", f"{resolved.max_message_bytes:,}", origin("max-message-bytes")),
        ("log-level", resolved.log_level, origin("log-level")),
        ("claude-command", shlex.join(resolved.claude_command), origin("claude-command")),
        ("codex-command", shlex.join(resolved.codex_command), origin("codex-command")),
        (
            "compaction-threshold",
            f"{resolved.compaction_threshold:,} chars",
            origin("compaction-threshold"),
        ),
        ("sync-url", redact_url(resolved.sync_url) if resolved.sync_url else "off", origin("sync-url")),
        ("sync-identity", resolved.sync_identity, origin("sync-identity")),
        ("sync-redact", "on" if resolved.sync_redact else "off", origin("sync-redact")),
        ("pricing", f"{own} (over {len(table.prices)} models priced as of {table.date})", origin("pricing")),
        ("price-file", str(resolved.price_file or "none"), origin("price-file")),
        (
            "state dir",
            str(resolved.state_dir),
            "XDG_STATE_HOME" if os.environ.get("XDG_STATE_HOME") else "default",
        ),
    ]
    width = max(len(key) for key, _, _ in rows)
    for key, value, where in rows:
        print(f"{key:<{width}}  {value}  ({where})")
