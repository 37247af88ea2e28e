"""tests/import_cycles.py, which `make lint` runs: it finds every circle of imports, and only those."""

from __future__ import annotations

import pytest

from tests.import_cycles import circles, main


def test_every_circle_is_found_with_all_its_members() -> None:
    imports = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"g"}, "g": {"f", "a"}}
    assert sorted(circles(imports)) == [["a", "b", "c"], ["e"], ["f", "g"]]


def test_imports_that_only_go_down_make_no_circle() -> None:
    assert circles({"a": {"b", "c"}, "b": {"c"}, "c": set(), "d": {"a", "missing"}}) == []


def test_a_circle_longer_than_the_recursion_limit_is_found() -> None:
    n = 5000
    imports = {f"m{i}": {f"m{(i + 1) % n}"} for i in range(n)}
    assert [len(part) for part in circles(imports)] == [n]


def test_the_tree_has_no_circle(capsys: pytest.CaptureFixture[str]) -> None:
    assert main() == 0
    assert "import cycles: none in" in capsys.readouterr().out
