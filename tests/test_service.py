"""The packaged user unit: its text, `systemd-analyze verify`, and install_service."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from azsd.errors import ConfigError
from azsd.service import ENABLE_HINT, UNIT_NAME, UNIT_TEMPLATE, install_service, unit_text, user_unit_dir

REPO_UNIT = Path(__file__).resolve().parent.parent / "systemd" / "azsd.service"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")

requires_systemd_analyze = pytest.mark.skipif(
    SYSTEMD_ANALYZE is None, reason="systemd-analyze is not installed, so the unit cannot be verified here"
)

#: systemd.exec(5), v252: "only available for system services and not supported for services running
#: in per-user instances of the service manager".
SYSTEM_ONLY = {
    "RootImage", "RootImageOptions", "RootHash", "RootHashSignature", "RootVerity", "MountImages",
    "ExtensionImages", "ProtectProc", "ProcSubset", "User", "Group", "DynamicUser",
    "SupplementaryGroups", "SecureBits", "ProtectControlGroups", "RemoveIPC", "LogNamespace",
}  # fmt: skip
#: systemd.exec(5), v252: available to user services only "when PrivateUsers= is enabled".
NEEDS_PRIVATE_USERS = {
    "RootDirectory", "ExtensionDirectories", "PAMName", "CapabilityBoundingSet", "AmbientCapabilities",
    "ProtectSystem", "ProtectHome", "ReadWritePaths", "ReadOnlyPaths", "InaccessiblePaths",
    "ExecPaths", "NoExecPaths", "TemporaryFileSystem", "PrivateTmp", "PrivateDevices",
    "PrivateNetwork", "NetworkNamespacePath", "PrivateIPC", "IPCNamespacePath", "ProtectHostname",
    "ProtectClock", "ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
    "PrivateMounts", "MountFlags", "BindPaths", "BindReadOnlyPaths",
}  # fmt: skip


def directives(text: str) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values]}} of a unit file (comments and blank lines skipped)."""
    parsed: dict[str, dict[str, list[str]]] = {}
    section = ""
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            parsed.setdefault(section, {})
            continue
        key, sep, value = line.partition("=")
        assert sep, f"not a KEY=VALUE line: {raw!r}"
        parsed[section].setdefault(key, []).append(value)
    return parsed


def fake_azsd(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    exe = directory / "azsd"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def verify(unit_file: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze --user --man=no verify FILE`, isolated from the real user and manager."""
    assert SYSTEMD_ANALYZE is not None
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(tmp_path / "home"),
        "XDG_RUNTIME_DIR": str(runtime),  # --user needs one; verify creates systemd/ inside it
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "SYSTEMD_LOG_COLOR": "0",
    }
    return subprocess.run(
        [SYSTEMD_ANALYZE, "--user", "--man=no", "verify", str(unit_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def unit_complaints(result: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in (result.stdout + result.stderr).splitlines() if UNIT_NAME in line]


# --- the text ----------------------------------------------------------------------------------------


def test_template_is_the_repository_unit_byte_for_byte() -> None:
    assert REPO_UNIT.read_text(encoding="utf-8") == UNIT_TEMPLATE


def test_unit_text_differs_from_the_template_only_in_exec_start() -> None:
    template = REPO_UNIT.read_text(encoding="utf-8").splitlines(keepends=True)
    generated = unit_text("/opt/tools/bin/azsd").splitlines(keepends=True)
    assert len(generated) == len(template)
    changed = [(t, g) for t, g in zip(template, generated, strict=True) if t != g]
    assert changed == [("ExecStart=%h/.local/bin/azsd run\n", "ExecStart=/opt/tools/bin/azsd run\n")]


def test_the_unit_says_what_the_daemon_relies_on() -> None:
    service = directives(UNIT_TEMPLATE)["Service"]
    expected = {
        "Type": ["notify"],
        "NotifyAccess": ["main"],
        "ExecStart": ["%h/.local/bin/azsd run"],
        "WatchdogSec": ["30"],
        "Restart": ["on-failure"],
        "RestartSec": ["2"],
        "TimeoutStopSec": ["5"],
        "Environment": ["PYTHONUNBUFFERED=1"],
        "NoNewPrivileges": ["yes"],
        "UMask": ["0077"],
    }
    assert {key: service.get(key) for key in expected} == expected
    unit = directives(UNIT_TEMPLATE)
    assert unit["Install"] == {"WantedBy": ["default.target"]}
    assert unit["Unit"]["Description"][0]
    assert unit["Unit"]["Documentation"][0]


def test_no_directive_a_user_manager_would_ignore_or_reject() -> None:
    service = directives(UNIT_TEMPLATE)["Service"]
    assert not SYSTEM_ONLY & service.keys()
    if "PrivateUsers" not in service:
        assert not NEEDS_PRIVATE_USERS & service.keys()


def test_enable_hint() -> None:
    assert ENABLE_HINT == "systemctl --user daemon-reload && systemctl --user enable --now azsd"


@pytest.mark.parametrize(
    "bad",
    [
        "azsd",
        "bin/azsd",
        "",
        "/opt/a\nb/azsd",
        "/opt/a\0b/azsd",
        "/opt/a\tb/azsd",
        '/opt/a"b/azsd',
        "/opt/a'b/azsd",
        "/opt/a\\b/azsd",
        "/opt/a\x7fb/azsd",
        "/opt/\udcff/azsd",  # an undecodable byte, as os.fsdecode hands it over
    ],
)
def test_unit_text_rejects_paths_a_unit_cannot_carry(bad: str) -> None:
    with pytest.raises(ConfigError):
        unit_text(bad)


@pytest.mark.parametrize(
    ("path", "exec_start"),
    [
        ("/usr/local/bin/azsd", "ExecStart=/usr/local/bin/azsd run"),
        ("/home/ann/100%/azsd", "ExecStart=/home/ann/100%%/azsd run"),
        ("/home/ann/my tools/azsd", 'ExecStart="/home/ann/my tools/azsd" run'),
        ("/home/ann/$HOME/azsd", "ExecStart=/home/ann/$HOME/azsd run"),
        ("/home/ann/100% sure/azsd", 'ExecStart="/home/ann/100%% sure/azsd" run'),
    ],
)
def test_exec_start_escaping(path: str, exec_start: str) -> None:
    assert [line for line in unit_text(path).splitlines() if line.startswith("ExecStart=")] == [exec_start]


# --- systemd-analyze verify ------------------------------------------------------------------------


@requires_systemd_analyze
def test_generated_unit_verifies(tmp_path: Path) -> None:
    exe = fake_azsd(tmp_path / "bin")
    unit_file = tmp_path / "units" / UNIT_NAME
    unit_file.parent.mkdir()
    unit_file.write_text(unit_text(str(exe)))
    result = verify(unit_file, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert unit_complaints(result) == []


@requires_systemd_analyze
def test_template_verifies_with_its_home_relative_exec_start(tmp_path: Path) -> None:
    fake_azsd(tmp_path / "home" / ".local" / "bin")  # %h is HOME for a user manager
    unit_file = tmp_path / "units" / UNIT_NAME
    unit_file.parent.mkdir()
    unit_file.write_text(UNIT_TEMPLATE)
    result = verify(unit_file, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert unit_complaints(result) == []


@requires_systemd_analyze
def test_escaped_exec_start_resolves_to_the_real_file(tmp_path: Path) -> None:
    exe = fake_azsd(tmp_path / "odd dir 100% $HOME")
    unit_file = tmp_path / UNIT_NAME
    unit_file.write_text(unit_text(str(exe)))
    result = verify(unit_file, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert unit_complaints(result) == []


@requires_systemd_analyze
@pytest.mark.parametrize(
    "breakage",
    [
        lambda text, exe: text.replace(f"ExecStart={exe}", f"ExecStart={exe}-missing"),
        lambda text, exe: text.replace("NoNewPrivileges=yes", "NoNewPrivileges=yes\nNoSuchDirective=1"),
        lambda text, exe: text.replace("Type=notify", "Type=notifyy"),
    ],
    ids=["missing-executable", "unknown-key", "bad-value"],
)
def test_verify_catches_a_broken_unit(tmp_path: Path, breakage: Callable[[str, Path], str]) -> None:
    """The check above can fail: verify reports each of these against azsd.service."""
    exe = fake_azsd(tmp_path / "bin")
    unit_file = tmp_path / UNIT_NAME
    broken = breakage(unit_text(str(exe)), exe)
    assert broken != unit_text(str(exe))
    unit_file.write_text(broken)
    assert unit_complaints(verify(unit_file, tmp_path)) != []


# --- user_unit_dir -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"XDG_CONFIG_HOME": "/cfg", "HOME": "/home/ann"}, "/cfg/systemd/user"),
        ({"HOME": "/home/ann"}, "/home/ann/.config/systemd/user"),
        ({"XDG_CONFIG_HOME": "", "HOME": "/home/ann"}, "/home/ann/.config/systemd/user"),
        ({"XDG_CONFIG_HOME": "rel/cfg", "HOME": "/home/ann"}, "/home/ann/.config/systemd/user"),
    ],
)
def test_user_unit_dir(environ: dict[str, str], expected: str) -> None:
    assert user_unit_dir(environ) == Path(expected)


def test_user_unit_dir_without_home_uses_the_user_database() -> None:
    import pwd

    assert user_unit_dir({}) == Path(pwd.getpwuid(os.getuid()).pw_dir) / ".config" / "systemd" / "user"


# --- install_service ---------------------------------------------------------------------------------


@pytest.fixture
def environ(tmp_path: Path) -> dict[str, str]:
    return {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HOME": str(tmp_path / "home"), "PATH": ""}


def test_install_writes_the_unit(tmp_path: Path, environ: dict[str, str]) -> None:
    exe = fake_azsd(tmp_path / "bin")
    path = install_service(environ, str(exe))
    assert path == tmp_path / "config" / "systemd" / "user" / "azsd.service"
    assert path.read_text(encoding="utf-8") == unit_text(str(exe))
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in path.parent.iterdir()) == ["azsd.service"]


def test_install_is_idempotent(tmp_path: Path, environ: dict[str, str]) -> None:
    exe = fake_azsd(tmp_path / "bin")
    first = install_service(environ, str(exe))
    before = first.stat()
    second = install_service(environ, str(exe))
    assert second == first
    after = second.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # not rewritten
    assert sorted(p.name for p in first.parent.iterdir()) == ["azsd.service"]


def test_install_refuses_a_different_unit_without_force(tmp_path: Path, environ: dict[str, str]) -> None:
    target = user_unit_dir(environ) / UNIT_NAME
    target.parent.mkdir(parents=True)
    target.write_text("[Service]\nExecStart=/usr/bin/true\n")
    exe = fake_azsd(tmp_path / "bin")
    with pytest.raises(ConfigError, match=r"already exists.*--force"):
        install_service(environ, str(exe))
    assert target.read_text() == "[Service]\nExecStart=/usr/bin/true\n"
    path = install_service(environ, str(exe), force=True)
    assert path == target
    assert target.read_text(encoding="utf-8") == unit_text(str(exe))
    assert sorted(p.name for p in target.parent.iterdir()) == ["azsd.service"]


def test_install_for_another_executable_counts_as_different(tmp_path: Path, environ: dict[str, str]) -> None:
    install_service(environ, str(fake_azsd(tmp_path / "old")))
    with pytest.raises(ConfigError):
        install_service(environ, str(fake_azsd(tmp_path / "new")))


def test_install_makes_a_relative_executable_absolute(
    tmp_path: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    exe = fake_azsd(tmp_path / "bin")
    monkeypatch.chdir(tmp_path)
    path = install_service(environ, "bin/azsd")
    assert f"\nExecStart={exe} run\n" in path.read_text(encoding="utf-8")


def test_install_finds_the_running_azsd_first(
    tmp_path: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    running = fake_azsd(tmp_path / "running")
    environ["PATH"] = str(fake_azsd(tmp_path / "on-path").parent)
    monkeypatch.setattr(sys, "argv", [str(running), "install-service"])
    path = install_service(environ)
    assert f"\nExecStart={running} run\n" in path.read_text(encoding="utf-8")


def test_install_falls_back_to_path_then_beside_python(
    tmp_path: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    on_path = fake_azsd(tmp_path / "on-path")
    beside = fake_azsd(tmp_path / "venv" / "bin")
    monkeypatch.setattr(sys, "argv", [str(tmp_path / "azsd" / "__main__.py")])
    monkeypatch.setattr(sys, "executable", str(beside.parent / "python"))
    environ["PATH"] = f"{tmp_path / 'empty'}:{on_path.parent}"
    assert f"ExecStart={on_path} run" in install_service(environ).read_text(encoding="utf-8")
    environ["PATH"] = ""
    assert f"ExecStart={beside} run" in install_service(environ, force=True).read_text(encoding="utf-8")


def test_install_without_any_azsd_is_a_config_error(
    tmp_path: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["pytest"])
    monkeypatch.setattr(sys, "executable", str(tmp_path / "nowhere" / "python"))
    with pytest.raises(ConfigError, match="cannot find the azsd executable"):
        install_service(environ)
    assert not (tmp_path / "config").exists()


def test_install_reports_an_unwritable_directory(tmp_path: Path, environ: dict[str, str]) -> None:
    (tmp_path / "config").write_text("a file where the config directory should be")
    with pytest.raises(ConfigError, match="cannot write"):
        install_service(environ, str(fake_azsd(tmp_path / "bin")))


def test_a_failed_write_leaves_neither_a_temp_file_nor_a_half_unit(
    tmp_path: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_rename(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("azsd.service.os.replace", no_rename)
    with pytest.raises(ConfigError, match="No space left"):
        install_service(environ, str(fake_azsd(tmp_path / "bin")))
    assert list(user_unit_dir(environ).iterdir()) == []
