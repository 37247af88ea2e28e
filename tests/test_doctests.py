"""Every `>>>` example in the daemon's and the client's modules runs and says what it shows."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

import azsd
import azsd_client

MODULES = sorted(
    ".".join(path.relative_to(package.parent).with_suffix("").parts)
    for package in (Path(azsd.__path__[0]), Path(azsd_client.__path__[0]))
    for path in package.rglob("*.py")
    if path.stem != "__main__" and path.read_text().count(">>>") > path.read_text().count("+SKIP")
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name.removesuffix(".__init__"))
    result = doctest.testmod(module)
    assert result.failed == 0
    assert result.attempted > 0
