"""What `pipx install .` installs: the wheel built from this tree holds every module and data file.

An editable install (`make install`) reads the source tree, so a package missing from pyproject's
`packages` (as `azsd.sync.sql` once was: `azsd sync init` would have found no SQL) passes every other
test and fails only for users. This builds the real wheel and compares it with the tree.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCES = {"azsd": ROOT / "azsd", "azsd_client": ROOT / "client" / "azsd_client"}
DATA_SUFFIXES = (".py", ".json", ".sql", ".typed", ".html", ".css", ".js", ".svg", ".md")


def _clean_copy(into: Path) -> Path:
    """The project's files (tracked, or new and not ignored) copied to `into`: setuptools reuses a
    `build/` directory left in the tree, whose stale copies would hide a module left out."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            target = into / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return into


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the project's files cannot be listed")
    tree = _clean_copy(tmp_path_factory.mktemp("tree"))
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"pip wheel failed:\n{done.stdout}\n{done.stderr}")
    BUILD_OUTPUT.append(done.stdout + done.stderr)
    (built,) = out.glob("azsd-*.whl")
    return zipfile.ZipFile(built)


#: What building the wheel printed (for the test that it printed no warning).
BUILD_OUTPUT: list[str] = []


def test_building_the_wheel_prints_no_warning(wheel: zipfile.ZipFile) -> None:
    """Issue 38: setuptools warned ~110 lines that the web view's files "would be ignored" (they were
    installed): package data is declared as it wants it. (pip's own notes about this machine's
    package indexes, "WARNING: Location …", are not the project's.)"""
    (printed,) = BUILD_OUTPUT
    ours = [
        line for line in printed.splitlines() if "arn" in line and not line.startswith("WARNING: Location")
    ]
    assert not ours, "\n".join(ours)


def test_the_wheel_holds_every_module_and_data_file_of_the_tree(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    expected = {
        f"{package}/{path.relative_to(source).as_posix()}"
        for package, source in SOURCES.items()
        for path in source.rglob("*")
        if path.is_file() and path.suffix in DATA_SUFFIXES and "__pycache__" not in path.parts
    }
    assert {"azsd/sync/sql/001_init.sql", "azsd/data/pricing.json", "azsd/py.typed"} <= expected
    web = {"azsd_client/web/templates/base.html", "azsd_client/web/static/vendor/chartjs/chart.umd.min.js"}
    assert web | {"azsd_client/web/static/vendor/chartjs/LICENSE.md"} <= expected
    assert expected - names == set(), "left out of the wheel (pyproject packages / package-data)"


def test_the_wheel_installs_both_commands(wheel: zipfile.ZipFile) -> None:
    (entry_points,) = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "azsd = " in text and "azs = " in text


def test_the_wheel_installs_the_man_page(wheel: zipfile.ZipFile) -> None:
    """Issue 38: azs(1), from the argument parser, under the prefix's share/man (where `man azs` looks
    for the bin/ directories on PATH)."""
    (page,) = [n for n in wheel.namelist() if n.endswith(".data/data/share/man/man1/azs.1")]
    assert wheel.read(page).decode() == (ROOT / "docs" / "azs.1").read_text()
