"""Install azsd as a systemd user service.

:data:`UNIT_TEMPLATE` is the packaged unit; ``systemd/azsd.service`` in the source tree is the same
text (a test keeps them equal). :func:`install_service` writes it, with ``ExecStart=`` pointing at the
real ``azsd`` executable, to ``$XDG_CONFIG_HOME/systemd/user/azsd.service``; the user then runs
:data:`ENABLE_HINT`. Nothing here prints: the CLI reports the returned path and the hint.

>>> unit_text("/opt/azsd/bin/azsd").count("ExecStart=/opt/azsd/bin/azsd run")
1
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Final

from azsd.errors import ConfigError
from azsd.files import write_atomic

__all__ = [
    "ENABLE_HINT",
    "UNIT_NAME",
    "UNIT_TEMPLATE",
    "install_service",
    "unit_text",
    "user_unit_dir",
]

UNIT_NAME: Final = "azsd.service"

ENABLE_HINT: Final = "systemctl --user daemon-reload && systemctl --user enable --now azsd"

#: The ``ExecStart=`` line of the template; :func:`unit_text` replaces exactly this line.
_TEMPLATE_EXEC_START: Final = "ExecStart=%h/.local/bin/azsd run"

#: The packaged user unit, byte for byte the same as ``systemd/azsd.service``.
UNIT_TEMPLATE: Final = """# azsd: the per-user session-store daemon, as a systemd *user* unit.
# Written by `azsd install-service`. To change a setting, run `systemctl --user edit azsd` (your
# changes then survive a reinstall); `journalctl --user -u azsd` shows the daemon's log.

[Unit]
Description=azsd session-store daemon for AI coding agents (AZUREAL stores)
Documentation=man:systemd.service(5) man:systemd.exec(5)

[Service]
Type=notify
NotifyAccess=main
ExecStart=%h/.local/bin/azsd run
WatchdogSec=30
Restart=on-failure
RestartSec=2
TimeoutStopSec=5
Environment=PYTHONUNBUFFERED=1
SyslogIdentifier=azsd

# Hardening that works in any user manager: seccomp filters and prctl flags need no privileges.
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
SystemCallArchitectures=native
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
UMask=0077

# Deliberately absent: ProtectSystem=, ReadWritePaths=, ProtectHome=, PrivateTmp= and the other
# mount-namespace options. A user manager applies them only inside a user namespace (PrivateUsers=,
# implied by recent systemd); older ones, v252 included, silently ignore them. Where they do apply,
# every store in a worktree outside %h (/srv, /mnt, /work, ...) becomes read-only to the daemon, and
# where unprivileged user namespaces are disabled the service may fail to start. If all your
# worktrees live under your home, opt in with `systemctl --user edit azsd`:
#   [Service]
#   PrivateUsers=yes
#   ProtectSystem=strict
#   ReadWritePaths=%h %t

[Install]
WantedBy=default.target
"""


def unit_text(executable: str) -> str:
    """The unit file for ``executable``: :data:`UNIT_TEMPLATE` with ``ExecStart=<executable> run``.

    The path is written as systemd reads it back: ``%`` doubled (specifiers) and the whole path
    double-quoted when it holds whitespace. ``$`` stays as it is: systemd never expands variables in
    the executable path. Quotes, backslashes and control characters are refused, as systemd would.

    Raises:
        ConfigError: ``executable`` is not absolute or holds a character systemd refuses there.

    >>> [line for line in unit_text("/usr/bin/azsd").splitlines() if line.startswith("ExecStart")]
    ['ExecStart=/usr/bin/azsd run']
    """
    line = f"ExecStart={_quote_exec_path(executable)} run"
    return UNIT_TEMPLATE.replace(f"\n{_TEMPLATE_EXEC_START}\n", f"\n{line}\n", 1)


def user_unit_dir(environ: Mapping[str, str]) -> Path:
    """Where the user manager looks for the user's own units.

    ``$XDG_CONFIG_HOME/systemd/user``, or ``~/.config/systemd/user`` when ``XDG_CONFIG_HOME`` is unset,
    empty or relative (the XDG spec says to ignore relative values). ``~`` is ``$HOME``, else the home
    directory of the user database.

    >>> user_unit_dir({"XDG_CONFIG_HOME": "/cfg"}).as_posix()
    '/cfg/systemd/user'
    >>> user_unit_dir({"HOME": "/home/ann"}).as_posix()
    '/home/ann/.config/systemd/user'
    """
    config_home = environ.get("XDG_CONFIG_HOME", "")
    if os.path.isabs(config_home):
        return Path(config_home) / "systemd" / "user"
    home = environ.get("HOME", "")
    if not os.path.isabs(home):
        home = pwd.getpwuid(os.getuid()).pw_dir
    return Path(home) / ".config" / "systemd" / "user"


def install_service(
    environ: Mapping[str, str], executable: str | None = None, *, force: bool = False
) -> Path:
    """Write the azsd user unit and return its path; the caller then suggests :data:`ENABLE_HINT`.

    The unit goes to ``user_unit_dir(environ) / "azsd.service"``, written atomically (a temporary
    file in the same directory, fsynced, then renamed over the target). Installing the same text
    again changes nothing. An existing unit with other content (another ``azsd``, local edits) is
    kept unless ``force`` is true.

    Args:
        environ: the process environment (``XDG_CONFIG_HOME``, ``HOME``, ``PATH`` are read).
        executable: the ``azsd`` program for ``ExecStart=``. By default: ``sys.argv[0]`` when it is an
            executable named ``azsd`` (the one being run), else ``azsd`` on ``$PATH``, else the
            ``azsd`` script beside the running Python (a virtualenv's ``bin/``). Made absolute, but
            symlinks are kept so that a reinstalled package behind them is picked up.
        force: replace an existing unit whose content differs.

    Raises:
        ConfigError: no ``azsd`` executable was found, the path cannot be written into a unit, a
            different unit exists and ``force`` is false, or the file could not be written.
    """
    exe = os.path.abspath(executable) if executable is not None else _find_executable(environ)
    text = unit_text(exe)
    target = user_unit_dir(environ) / UNIT_NAME
    existing = _read_existing(target)
    if existing == text:
        return target
    if existing is not None and not force:
        raise ConfigError(
            f"{target} already exists and differs from the unit azsd would install "
            f"(ExecStart={_quote_exec_path(exe)} run); keep it, or replace it with --force"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, text.encode(), mode=0o644)
    except OSError as exc:
        raise ConfigError(f"cannot write {target}: {exc}") from exc
    return target


def _quote_exec_path(executable: str) -> str:
    if not os.path.isabs(executable):
        raise ConfigError(f"the azsd executable must be an absolute path, not {executable!r}")
    # systemd refuses executable paths with quotes, backslashes or control characters
    # ("Executable name contains special characters"), and unit files are UTF-8.
    if any(ch in "\"'\\\x7f" or ch < " " for ch in executable) or not _is_utf8(executable):
        raise ConfigError(
            f"systemd cannot run an executable at {executable!r} (quotes, backslashes, control "
            "characters and undecodable bytes are refused); install azsd under a plainer path"
        )
    path = executable.replace("%", "%%")
    return f'"{path}"' if any(ch.isspace() for ch in path) else path


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _find_executable(environ: Mapping[str, str]) -> str:
    candidates: list[str] = []
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "azsd":
        candidates.append(argv0)
    on_path = shutil.which("azsd", path=environ.get("PATH", os.defpath))
    if on_path is not None:
        candidates.append(on_path)
    if sys.executable:
        candidates.append(os.path.join(os.path.dirname(sys.executable), "azsd"))
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise ConfigError(
        "cannot find the azsd executable (not the running program, not on PATH, not beside "
        f"{sys.executable or 'the Python interpreter'}); pass its path explicitly"
    )


def _read_existing(target: Path) -> str | None:
    try:
        return target.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the existing unit {target}: {exc}") from exc
