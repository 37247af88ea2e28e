"""No module of azsd or azsd_client imports itself back, however far round: `make lint` runs this.

import-linter's contracts (pyproject.toml, `lint-imports`) keep the layers' order between packages;
a circle inside one package (a → b → a) passes them, so this finds every circle of modules with
grimp (imports under ``TYPE_CHECKING`` and inside functions count too) and prints each with the
lines that make it. It exits 1 when there is one, 0 when there is none.

    .venv/bin/python -m tests.import_cycles
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Set
from pathlib import Path
from typing import Final

import grimp

ROOT: Final = Path(__file__).resolve().parent.parent
PACKAGES: Final = ("azsd", "azsd_client")

#: Imports let through, as ("importer", "imported"): none. (The client's own circles, let through here
#: while r-client took them apart, are gone.) A circle is broken, not listed.
ALLOWED: Final[frozenset[tuple[str, str]]] = frozenset()


def circles(imports: Mapping[str, Set[str]]) -> list[list[str]]:
    """The strongly connected parts of the import graph with more than one module (or a module that
    imports itself), each sorted, found by Tarjan's algorithm (iteratively: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(imports):
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(imports[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, todo = work[-1]
            for imported in todo:
                if imported not in index:
                    index[imported] = low[imported] = len(index)
                    stack.append(imported)
                    on_stack.add(imported)
                    work.append((imported, iter(sorted(imports.get(imported, ())))))
                    break
                if imported in on_stack:
                    low[module] = min(low[module], index[imported])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    part: list[str] = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.append(member)
                        if member == module:
                            break
                    if len(part) > 1 or module in imports.get(module, ()):
                        found.append(sorted(part))
    return found


def source(module: str) -> str:
    """The file of `module`, relative to the repository (a package: its ``__init__.py``)."""
    top = ROOT / "client" if module.startswith("azsd_client") else ROOT
    path = top.joinpath(*module.split("."))
    found = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return str(found.relative_to(ROOT))


def main() -> int:
    sys.path[:0] = [str(ROOT), str(ROOT / "client")]
    graph = grimp.build_graph(*PACKAGES, cache_dir=None)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    stale = sorted(edge for edge in ALLOWED if edge[1] not in imports.get(edge[0], set()))
    for importer, imported in stale:
        print(f"import cycles: {importer} no longer imports {imported}: take it off ALLOWED")
    for importer, imported in ALLOWED:
        imports.get(importer, set()).discard(imported)
    found = circles(imports)
    for part in found:
        members = set(part)
        print(f"a circle of {len(part)} modules: {', '.join(part)}")
        for importer in part:
            for imported in sorted(imports[importer] & members):
                for line in graph.get_import_details(importer=importer, imported=imported):
                    where = f"{source(importer)}:{line['line_number']}"
                    print(f"    {where}: {line['line_contents']}  ({importer} → {imported})")
    if not found and not stale:
        print(f"import cycles: none in {len(imports)} modules ({len(ALLOWED)} imports let through)")
    return 1 if found or stale else 0


if __name__ == "__main__":
    sys.exit(main())
