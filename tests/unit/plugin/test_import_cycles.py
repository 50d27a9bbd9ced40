"""No import cycle among specdeploy's modules, of two modules or more (issue 26, "Imports keep the pipeline's order").

The graph is import-linter's (grimp), built as pyproject's `[tool.importlinter]` builds it: imports inside
functions count, imports under `if TYPE_CHECKING:` do not (they never run). The `acyclic_siblings` contract checks
packages against their siblings; this checks single modules, package `__init__` modules included.
"""

from __future__ import annotations

import pytest

from tests.helpers import pyproject

grimp = pytest.importorskip("grimp", reason="import-linter (the dev extra, on Python 3.11 and later) installs grimp")


def cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Each set of modules that import each other (a strongly connected component), as sorted names."""
    found: set[frozenset[str]] = set()
    for module in graph.modules:
        loop = graph.find_upstream_modules(module) & graph.find_downstream_modules(module)
        if loop:
            found.add(frozenset({module, *loop}))
    return sorted(sorted(c) for c in found)


def describe(graph: grimp.ImportGraph, cycle: list[str]) -> str:
    """The imports that close `cycle`, with their lines."""
    lines = []
    for importer in cycle:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & set(cycle)):
            at = ", ".join(
                str(d["line_number"]) for d in graph.get_import_details(importer=importer, imported=imported)
            )
            lines.append(f"  {importer} -> {imported} (line {at})")
    return "\n".join(lines)


def test_the_detector_finds_a_cycle_through_three_modules() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in (("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d"), ("p.e", "p.a")):
        graph.add_import(importer=importer, imported=imported, line_number=1, line_contents="import")
    assert cycles(graph) == [["p.a", "p.b", "p.c"]]
    assert "p.c -> p.a (line 1)" in describe(graph, ["p.a", "p.b", "p.c"])


def test_no_module_cycle_is_left() -> None:
    settings = pyproject()["tool"]["importlinter"]
    graph = grimp.build_graph(
        *settings["root_packages"],
        include_external_packages=False,
        exclude_type_checking_imports=settings["exclude_type_checking_imports"],
        cache_dir=None,
    )
    left = cycles(graph)
    assert not left, "import cycles:\n" + "\n".join(describe(graph, c) for c in left)
