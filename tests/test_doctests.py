"""Every `>>>` example in the daemon's modules runs and says what it shows."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import azsd

MODULES = sorted(
    ".".join(path.relative_to(Path(azsd.__file__).parent.parent).with_suffix("").parts)
    for path in Path(azsd.__file__).parent.rglob("*.py")
    if path.stem != "__main__" and ">>>" in path.read_text()
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name.removesuffix(".__init__"))
    result = doctest.testmod(module)
    assert result.failed == 0
    assert result.attempted > 0
