# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""No import cycle inside any of our packages, function-level imports included
(docs/architecture.md, "Rooms").

An import inside a function still ties its module to the imported one: it only hides the knot
until the call. So every ``import`` / ``from ... import`` statement anywhere in a module counts.
An edge goes to the most specific module of ours the statement names (``from pkg import mod``
is an edge to ``pkg.mod`` when that module exists, else to ``pkg``). Importing a submodule runs
its package's ``__init__`` too, which is why the rooms' ``__init__`` files import nothing.
The cycle search is the standard library's topological sorter (``graphlib``).
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCE_ROOTS = sorted(ROOT.glob("packages/*/src")) + [ROOT / "src"]


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for src in SOURCE_ROOTS:
        for path in src.rglob("*.py"):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _imported_names(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """What each import statement in ``path`` names, in absolute form: ``import a.b`` names
    ``a.b``; ``from a import b`` names ``a.b`` when that is a module, else ``a``."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package[: len(package) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                name = f"{base}.{alias.name}"
                names.add(name if name in modules else base)
    return names


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the modules of the same top-level package it imports."""
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        top = module.split(".")[0]
        edges: set[str] = set()
        for name in _imported_names(module, path, modules):
            if name.split(".")[0] != top:
                continue
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                edges.add(name)
        graph[module] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` (first module repeated at the end), or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return list(exc.args[1])
    return None


def test_no_import_cycle_in_any_package():
    cycle = find_cycle(import_graph(_modules()))
    assert cycle is None, (
        "import cycle (function-level imports count too): " + " -> ".join(cycle or [])
        + "; move the shared piece into a leaf module both can import (docs/architecture.md, "
        '"Rooms")')


@pytest.mark.parametrize("body_a, cycle_expected", [
    ("def f():\n    from pkg import b\n", True),   # a function-level import closes the loop
    ("from pkg.b import VALUE\n", True),
    ("import os\n", False),
])
def test_the_check_sees_function_level_imports(tmp_path, body_a, cycle_expected):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text(body_a)
    (pkg / "b.py").write_text("from pkg.a import f\nVALUE = 1\n")
    modules = {"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py"}
    cycle = find_cycle(import_graph(modules))
    assert (cycle is not None) == cycle_expected, cycle
    if cycle_expected:
        assert set(cycle) == {"pkg.a", "pkg.b"}
