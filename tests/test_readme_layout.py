"""docs/layout.md names every module of azsd and its client, and no file that is gone.

The rule, kept simple: the section runs from README.md's ``## Layout`` heading to the next ``## ``
heading (or the end). Its words ending in ``.py`` are file names, bare (``pusher.py``) or with their
package path (``store/events.py``, ``client/unasync.py``); a path counts as the file name at its end.

- Every ``*.py`` under ``azsd/`` and ``client/azsd_client/`` but ``__init__.py`` is named. Where
  modules share a file name (``events.py`` is four: the core's, the store's, the protocol's
  messages', the client's renderer's), the name must appear at least as often as there are modules
  of it, bare or with a path: the tree's grouping says which is which.
- Every ``.py`` word names a file that exists: bare, some ``.py`` file of that name in the project
  (tests/ and bench/ too); with a path, one whose path ends so.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGES: Final = (ROOT / "azsd", ROOT / "client" / "azsd_client")
PY_WORD: Final = re.compile(r"[\w/]*\w\.py\b")


def layout_section(readme: str) -> str:
    """The text of the ``## Layout`` section, its heading included."""
    start = readme.index("\n## Layout\n")
    end = readme.find("\n## ", start + 1)
    return readme[start : end if end >= 0 else None]


def modules() -> list[str]:
    """Every module the section must name, as a path from the project's root."""
    return sorted(
        p.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for p in package.rglob("*.py")
        if p.name != "__init__.py"
    )


def project_files() -> list[str]:
    """Every ``.py`` file of the project, as a path from its root (no hidden directories, no npm's)."""
    found = []
    for top, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__")]
        found += [Path(top, f).relative_to(ROOT).as_posix() for f in files if f.endswith(".py")]
    return found


def unnamed(section: str, paths: Iterable[str]) -> list[str]:
    """The modules of `paths` the section does not name (per file name, the ones over its count)."""
    named = Counter(word.rsplit("/", 1)[-1] for word in PY_WORD.findall(section))
    by_name: dict[str, list[str]] = {}
    for path in paths:
        by_name.setdefault(path.rsplit("/", 1)[-1], []).append(path)
    missing = []
    for name, same in sorted(by_name.items()):
        if named[name] < len(same):
            shown = f"named {named[name]} of {len(same)} times: " if named[name] else ""
            missing.append(f"{name} ({shown}{', '.join(same)})")
    return missing


def gone(section: str, files: Iterable[str]) -> list[str]:
    """The ``.py`` words of the section that name no file of `files`."""
    paths = ["/" + f for f in files]
    return sorted({w for w in PY_WORD.findall(section) if not any(p.endswith("/" + w) for p in paths)})


def test_layout_names_every_module() -> None:
    section = layout_section((ROOT / "docs" / "layout.md").read_text())
    missing = unnamed(section, modules())
    assert not missing, "docs/layout.md does not name:\n  " + "\n  ".join(missing)


def test_layout_names_no_file_that_is_gone() -> None:
    section = layout_section((ROOT / "docs" / "layout.md").read_text())
    stale = gone(section, project_files())
    assert not stale, "docs/layout.md names files that do not exist: " + ", ".join(stale)


def test_the_rule_finds_what_is_missing_and_what_is_gone() -> None:
    paths = ["azsd/events.py", "azsd/store/events.py", "azsd/source_events.py", "azsd/pgurl.py"]
    section = "\n## Layout\n  events.py  the variants\n  pgurl.py, old.py  the url; store/gone.py\n"
    assert unnamed(section, paths) == [
        "events.py (named 1 of 2 times: azsd/events.py, azsd/store/events.py)",
        "source_events.py (azsd/source_events.py)",
    ]
    assert unnamed(section + "store/events.py source_events.py", paths) == []
    assert gone(section, [*paths, "azsd/gone.py"]) == ["old.py", "store/gone.py"]
    assert layout_section("# azsd\n## Layout\nx.py\n## Next\ny.py\n") == "\n## Layout\nx.py"
