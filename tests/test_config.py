"""Configuration resolution and the daemon-side `azsd` command line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from azsd.config import IPC_PATH_MAX, default_runtime_dir, resolve_config
from azsd.errors import ConfigError
from azsd.ipc import protocol as p
from tests.daemon_fixture import short_tmpdir, start_daemon


def test_precedence_flag_env_file_default(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('runtime-dir = "/tmp/from-file"\nidle-close-s = 12\n')
    env = {"AZSD_RUNTIME_DIR": "/tmp/from-env", "AZSD_CONFIG": str(config), "XDG_RUNTIME_DIR": "/run/user/7"}
    assert resolve_config(environ=env, runtime_dir="/tmp/from-flag").runtime_dir == Path("/tmp/from-flag")
    assert resolve_config(environ=env).runtime_dir == Path("/tmp/from-env")
    no_env = {k: v for k, v in env.items() if k != "AZSD_RUNTIME_DIR"}
    from_file = resolve_config(environ=no_env)
    assert from_file.runtime_dir == Path("/tmp/from-file") and from_file.idle_close_s == 12
    bare = {"XDG_RUNTIME_DIR": "/run/user/7", "HOME": str(tmp_path)}
    assert resolve_config(environ=bare).runtime_dir == Path("/run/user/7/azsd")
    assert default_runtime_dir({}) == Path(f"/tmp/azsd-{os.getuid()}")


def test_endpoints_come_from_the_runtime_dir() -> None:
    cfg = resolve_config(environ={}, config_file=None, runtime_dir="/tmp/rt")
    assert (cfg.rpc_endpoint, cfg.pub_endpoint) == ("ipc:///tmp/rt/rpc", "ipc:///tmp/rt/pub")
    assert cfg.lock_path == Path("/tmp/rt/azsd.lock") and cfg.discovery_path == Path("/tmp/rt/azsd.json")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("runtime_dir = 'x'\n", "unknown field"),
        ("idle-close-s = 'soon'\n", "Expected `float`"),
        ("this is = not toml = at all\n", "not valid TOML"),
        ("idle-close-s = -1\n", "must be positive"),
    ],
)
def test_bad_config_files_are_clear_errors(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=message):
        resolve_config(environ={"AZSD_CONFIG": str(config)})


def test_a_runtime_dir_too_long_for_ipc_is_refused() -> None:
    long_dir = "/tmp/" + "d" * IPC_PATH_MAX
    with pytest.raises(ConfigError, match="too long for an ipc:// socket path"):
        resolve_config(environ={}, config_file=None, runtime_dir=long_dir)


def azsd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "azsd", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
    )


def test_azsd_cli_version_check_config_and_errors(tmp_path: Path) -> None:
    from azsd import __version__

    assert azsd("version").stdout.strip() == __version__
    shown = azsd(
        "check-config", env={"AZSD_RUNTIME_DIR": "/tmp/azsd-shown", "AZSD_CONFIG": str(tmp_path / "none")}
    )
    assert shown.returncode == 0 and "ipc:///tmp/azsd-shown/rpc" in shown.stdout
    assert shown.stdout.startswith(f"config file: {tmp_path / 'none'} (not there")
    given = tmp_path / "given.toml"
    given.write_text('claude-command = ["claude", "--verbose"]\nfollow-idle-s = 10\n')
    lines = azsd("check-config", env={"AZSD_CONFIG": str(given)}).stdout.splitlines()
    assert lines[0] == f"config file: {given}"
    keys = {line.split()[0]: line for line in lines[1:]}
    for key in ("runtime-dir", "idle-close-s", "follow-idle-s", "max-open-stores", "max-message-bytes",
                "log-level", "claude-command", "codex-command", "pricing"):  # fmt: skip
        assert key in keys, lines
    assert keys["claude-command"].split()[1:] == ["claude", "--verbose", "(config", "file)"]
    assert keys["follow-idle-s"].split()[1:] == ["10", "(config", "file)"]
    assert keys["codex-command"].split()[1:] == ["codex", "(default)"]
    assert keys["sync-redact"].split()[1:] == ["on", "(default)"]
    bad = tmp_path / "bad.toml"
    bad.write_text("nope = 1\n")
    failed = azsd("run", "--config", str(bad))
    assert failed.returncode == 1 and failed.stderr.startswith("azsd: ") and "unknown field" in failed.stderr
    assert azsd("no-such-command").returncode == 2


def test_azsd_install_service_writes_the_user_unit(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    first = azsd("install-service", env=env)
    assert first.returncode == 0, first.stderr
    unit = tmp_path / "cfg" / "systemd" / "user" / "azsd.service"
    assert unit.is_file() and "Type=notify" in unit.read_text()
    assert "systemctl --user enable --now azsd" in first.stdout
    unit.write_text(unit.read_text().replace("Restart=on-failure", "Restart=always"))
    refused = azsd("install-service", env=env)
    assert refused.returncode == 1 and "force" in refused.stderr
    assert azsd("install-service", "--force", env=env).returncode == 0


def test_idle_stores_are_closed_and_reopen_on_demand() -> None:
    base = short_tmpdir()
    root = short_tmpdir()
    config = base / "config.toml"
    config.write_text("idle-close-s = 0.3\n")
    d = start_daemon(base / "run", env={"AZSD_CONFIG": str(config)})
    try:
        assert isinstance(d.request(p.CreateSession(root=str(root))), p.SessionReply)
        status = d.request(p.Status())
        assert isinstance(status, p.StatusReply) and status.stores == [os.path.realpath(root)]
        deadline = time.monotonic() + 5
        while True:
            status = d.request(p.Status())
            assert isinstance(status, p.StatusReply)
            if not status.stores:
                break
            assert time.monotonic() < deadline, "the idle store was never closed"
            time.sleep(0.1)
        listed = d.request(p.ListSessions(root=str(root)))
        assert isinstance(listed, p.SessionsReply) and listed.total == 1
    finally:
        d.close()
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(root, ignore_errors=True)


def test_the_default_compaction_threshold_is_the_specs() -> None:
    from azsd import config, context

    assert config.COMPACTION_THRESHOLD == context.COMPACTION_THRESHOLD == 400_000
    assert resolve_config(environ={"AZSD_RUNTIME_DIR": "/tmp/x"}, config_file=None).compaction_threshold == (
        400_000
    )


def test_a_compaction_threshold_below_one_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("compaction-threshold = 0\n")
    with pytest.raises(ConfigError, match="compaction-threshold must be a positive number"):
        resolve_config(environ={"AZSD_RUNTIME_DIR": "/tmp/x"}, config_file=path)


def test_watch_agents_from_the_file_and_the_environment(tmp_path: Path) -> None:
    env = {"AZSD_RUNTIME_DIR": "/tmp/x"}
    every = ("claude", "codex", "aider", "opencode")
    assert resolve_config(environ=env, config_file=None).watch_agents == every
    config = tmp_path / "config.toml"
    config.write_text('watch-agents = ["codex"]\n')
    assert resolve_config(environ=env, config_file=config).watch_agents == ("codex",)
    assert resolve_config(environ={**env, "AZSD_WATCH_AGENTS": "0"}, config_file=config).watch_agents == ()
    both = {**env, "AZSD_WATCH_AGENTS": "claude, codex,claude"}
    assert resolve_config(environ=both, config_file=config).watch_agents == ("claude", "codex")
    config.write_text('watch-agents = ["cursor"]\n')
    with pytest.raises(ConfigError, match="watch-agents: cursor: only claude, codex, aider, opencode can be"):
        resolve_config(environ=env, config_file=config)
