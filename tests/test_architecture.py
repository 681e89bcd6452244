"""The layer rule (docs/architecture.md draws it), checked over every module of asad/.

A module imports only from its own layer or a lower one, never a higher one, and no chain of
imports comes back to where it started. Every ``import`` counts: at the top, inside a function,
or under ``TYPE_CHECKING`` (a type-only import still says "this module knows that one").
This file reads every module of ``asad/`` with ``ast`` and checks both.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "asad"

# lowest first; packages on one line share a layer (they may import each other, circles aside)
LAYERS: tuple[tuple[str, ...], ...] = (
    ("common",),                 # units, settings, logging, array expressions, argument types
    ("slurm",),                  # the backend protocol, real Slurm, the simulator
    ("sizing", "learn"),         # sizing agents; wait, run-time and geometry learners
    ("spec",),                   # workflow.yaml read and validated
    ("core", "strategies"),      # run model, context, learners in use, the engine and its strategies
    ("store",),                  # the SQL store
    ("daemon",),                 # loop, runner (the edge), wiring, wake, lease
    ("view",),                   # what status/show/explain print or draw
    ("bench",),                  # `asad bench ...`
    ("cli",),                    # the command line
)
TOP_LEVEL = "asad"  # asad/__init__.py and __main__.py: above every layer


def layer_of(module: str) -> int:
    """Rank of a dotted module name under asad (higher may import lower)."""
    parts = module.split(".")
    if len(parts) < 2 or parts[0] != TOP_LEVEL:
        raise ValueError(f"{module} is not in the asad package")
    if len(parts) == 2 and parts[1] == "__main__":
        return len(LAYERS)
    for rank, packages in enumerate(LAYERS):
        if parts[1] in packages:
            return rank
    raise ValueError(f"{module} is in no layer: put it in a package named in asad/layers.py LAYERS")


@dataclass(frozen=True)
class Edge:
    importer: str
    imported: str
    line: int


def modules(package_dir: Path) -> dict[str, Path]:
    """Every module under the asad package folder, by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def edges(package_dir: Path) -> Iterator[Edge]:
    """Every import of one asad module by another, resolved to the module imported."""
    known = modules(package_dir)
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                # `from asad.x import y` imports module asad.x.y when there is one, else names of asad.x
                targets = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source
                           for alias in node.names]
            else:
                continue
            for target in targets:
                if target.split(".")[0] == TOP_LEVEL and target != name:
                    yield Edge(name, _owning_module(target, known), node.lineno)


def _owning_module(target: str, known: dict[str, Path]) -> str:
    while target not in known and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def upward(all_edges: list[Edge]) -> list[Edge]:
    """Imports of a higher layer by a lower one."""
    return [e for e in all_edges
            if e.imported != TOP_LEVEL and layer_of(e.importer) < layer_of(e.imported)]


def cycles(all_edges: list[Edge]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in all_edges:
        graph.setdefault(e.importer, set()).add(e.imported)
        graph.setdefault(e.imported, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        # recursion depth is the longest import chain (~20), far below Python's limit
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph[node]:
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


# --------------------------------------------------------------------------- the checks over asad/

def test_no_module_imports_a_higher_layer():
    found = upward(list(edges(PACKAGE)))
    assert not found, "lower layer imports a higher one:\n" + "\n".join(
        f"  {e.importer} (line {e.line}) -> {e.imported}" for e in found)


def test_no_import_circles():
    found = cycles(list(edges(PACKAGE)))
    assert not found, "import circles:\n" + "\n".join("  " + " <-> ".join(g) for g in found)


def test_every_module_is_in_a_layer():
    for name in modules(PACKAGE):
        if name != TOP_LEVEL:
            layer_of(name)  # raises for a module outside every layer


# --------------------------------------------------------------------------- the checker itself

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "asad" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / "asad"


def test_checker_sees_an_upward_import_inside_a_function(tmp_path):
    pkg = _tree(tmp_path, {"__init__.py": "", "common/__init__.py": "", "cli/__init__.py": "",
                           "cli/main.py": "X = 1\n",
                           "common/units.py": "def f():\n    from asad.cli.main import X\n    return X\n"})
    found = upward(list(edges(pkg)))
    assert [(e.importer, e.imported, e.line) for e in found] == [("asad.common.units", "asad.cli.main", 2)]


def test_checker_sees_a_circle_through_type_checking_and_a_package(tmp_path):
    pkg = _tree(tmp_path, {"__init__.py": "", "core/__init__.py": "from asad.core.a import A\n",
                           "core/a.py": "from asad.core.b import B\nclass A: ...\n",
                           "core/b.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                         "    from asad.core import A\nclass B: ...\n")})
    assert cycles(list(edges(pkg))) == [["asad.core", "asad.core.a", "asad.core.b"]]


def test_checker_resolves_relative_imports_and_allows_same_layer(tmp_path):
    pkg = _tree(tmp_path, {"__init__.py": "", "core/__init__.py": "", "strategies/__init__.py": "",
                           "core/engine.py": "from ..strategies import chain\n",
                           "strategies/chain.py": "from asad.core import model\n",
                           "core/model.py": ""})
    found = list(edges(pkg))
    assert {(e.importer, e.imported) for e in found} == {
        ("asad.core.engine", "asad.strategies.chain"), ("asad.strategies.chain", "asad.core.model")}
    assert upward(found) == [] and cycles(found) == []


def test_a_module_outside_every_layer_is_named(tmp_path):
    with pytest.raises(ValueError, match="in no layer"):
        layer_of("asad.newthing")
