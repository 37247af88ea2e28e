"""Shared fixtures: temporary worktree roots and the real corpus beside the checkout."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from azsd.store import Store

# pytest-xdist's workers are given COLUMNS=80 and LINES=24; azs honours COLUMNS even on a pipe (as
# documented), so tests that want a width set it themselves, and the others see a plain pipe.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


@pytest.fixture(autouse=True)
def _stores_removed_after(request: pytest.FixtureRequest) -> Iterator[None]:
    """The stores a test made are removed when it ends. A daemon counts each model response once
    across every store it knows (azsd.store.account), and many tests of a module share one daemon
    and write the same lines (the corpus, message `msg_1`) into worktrees of their own: the next
    test's copy then counts in its own store, as on a machine whose first store was removed."""
    tmp: Path | None = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is None:
        return
    for path in tmp.rglob("sessions.azs"):
        if path.parent.name == ".azureal":
            path.unlink(missing_ok=True)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An empty worktree directory."""
    path = tmp_path / "worktree"
    path.mkdir()
    return path


@pytest.fixture
def store(root: Path) -> Iterator[Store]:
    """A store on a real file under a temporary worktree (created lazily, like AZUREAL's)."""
    with Store.open(root) as s:
        yield s


def corpus_files(fmt: str | None = None) -> list[Path]:
    """Every JSONL file of the shared corpus (or of one format), sorted; empty when it is absent."""
    if not CORPUS.is_dir():
        return []
    base = CORPUS / fmt if fmt else CORPUS
    return sorted(p for p in base.rglob("*") if p.suffix in (".jsonl", ".json") and p.is_file())


requires_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS} (clone ../shared beside the checkout)"
)
