# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Every runtime change to a vLLM/torch object, a process global or an environment variable is
a declared patch (docs/architecture.md, "Add a patch"; ``vllm_ascend_platform.patches.registry``).

The scan reads the source of every package of the repository (``packages/*/src``, ``src``) with
:mod:`ast` and finds the kinds of change a patch makes:

* assigning, deleting or ``setattr``/``delattr`` an attribute of an imported module or class
  (``torch.accelerator.synchronize = ...``, ``setattr(torch.cuda, ...)``, an alias of one such
  as ``acc = torch.accelerator``, or a module bound from ``importlib.import_module``);
* writing ``sys.modules`` entries;
* writing the environment (``os.environ[...] =``, ``os.environ.setdefault/pop/update``,
  ``os.putenv``);
* changing, in place, a config dict a caller handed us (item assignment, ``del`` or ``pop`` /
  ``update`` / ``setdefault`` / ``clear`` on a parameter named like ``*config*`` / ``additional``).

A site is registered when the function around it (or one enclosing it) carries a
``# patch: <name>`` line directly above its ``def`` (or decorators) and ``<name>`` is a
registered patch. The test fails on every other site, on markers naming no patch, and on
patches no marker points at. The exemptions below are listed with their reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from vllm_ascend_platform.patches import registry as patches

ROOT = Path(__file__).resolve().parents[3]
OWN = ("vllm_ascend", "ascend_ops")
MARK = re.compile(r"#\s*patch:\s*([a-z0-9][a-z0-9-]*)")
ENV_METHODS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}
DICT_METHODS = ENV_METHODS
CONFIG_PARAM = re.compile(r"config|additional|cfg")
#: attribute roots whose updates are the owner's intended API, not a patch
EXEMPT_ROOTS = {
    # vLLM's compile counters are bumped by every compile backend (vllm/compilation/counter.py;
    # vLLM's own backends do it in vllm/compilation/backends.py); tests read them.
    "compilation_counter",
}


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _own_module(node: ast.AST) -> bool:
    """``sys.modules[__name__]``: this module itself."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return (isinstance(node, ast.Subscript) and _dotted(node.value) == "sys.modules"
            and isinstance(node.slice, ast.Name) and node.slice.id == "__name__")


class _Scan(ast.NodeVisitor):
    def __init__(self, lines: list[str]):
        self.lines = lines
        self.external: set[str] = set()  # names bound to other distributions' modules/objects
        self.functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
        self.sites: list[tuple[int, str, str | None]] = []

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if not alias.name.startswith(OWN):
                self.external.add((alias.asname or alias.name).split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and not (node.module or "").startswith(OWN):
            self.external.update(alias.asname or alias.name for alias in node.names)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def _binds_external(self, value: ast.AST) -> bool:
        if isinstance(value, ast.Call):
            return (_dotted(value.func) or "").endswith(("import_module", "resolve_obj_by_qualname"))
        return isinstance(value, ast.Attribute) and _root(value) in self.external

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._target(target, node)
        if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and self._binds_external(node.value)):
            self.external.add(node.targets[0].id)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._target(node.target, node)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target, node)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._target(target, node)
        self.generic_visit(node)

    def _config_param(self, node: ast.AST) -> bool:
        name = _root(node)
        if name is None or not self.functions or not CONFIG_PARAM.search(name):
            return False
        args = self.functions[-1].args
        return name in {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}

    def _target(self, target: ast.AST, node: ast.AST) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._target(element, node)
            return
        text = ast.unparse(target)
        if isinstance(target, ast.Subscript):
            owner = _dotted(target.value)
            if owner in ("os.environ", "environ"):
                self._site(node, f"environment write {text}")
            elif owner == "sys.modules":
                self._site(node, f"sys.modules write {text}")
            elif self._config_param(target.value):
                self._site(node, f"in-place change of the caller's config {text}")
        elif isinstance(target, ast.Attribute):
            root = _root(target)
            if _own_module(target) or root in EXEMPT_ROOTS:
                return
            if root in self.external:
                self._site(node, f"attribute of imported object {text}")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = _dotted(func) or ""
        if name in ("setattr", "delattr") and node.args and _root(node.args[0]) in self.external:
            self._site(node, f"{name}() on imported object {ast.unparse(node.args[0])}")
        elif name in ("os.putenv", "os.unsetenv", "putenv", "unsetenv"):
            self._site(node, f"environment write {name}()")
        elif isinstance(func, ast.Attribute) and func.attr in ENV_METHODS:
            owner = _dotted(func.value) or ""
            if owner in ("os.environ", "environ"):
                self._site(node, f"environment write {owner}.{func.attr}()")
            elif owner == "sys.modules":
                self._site(node, f"sys.modules write {owner}.{func.attr}()")
            elif func.attr in DICT_METHODS and self._config_param(func.value):
                self._site(node, f"in-place change of the caller's config {owner}.{func.attr}()")
        self.generic_visit(node)

    def _marker(self) -> str | None:
        for fn in reversed(self.functions):
            first = min([fn.lineno, *(d.lineno for d in fn.decorator_list)])
            if first >= 2 and (match := MARK.search(self.lines[first - 2])):
                return match.group(1)
        return None

    def _site(self, node: ast.AST, what: str) -> None:
        self.sites.append((node.lineno, what, self._marker()))


def scan_source(text: str, filename: str = "<source>") -> list[tuple[int, str, str | None]]:
    """``(line, what, marker or None)`` for every patch-like change in ``text``."""
    scan = _Scan(text.splitlines())
    scan.visit(ast.parse(text, filename))
    return scan.sites


def _source_files() -> list[Path]:
    roots = [*sorted((ROOT / "packages").glob("*/src")), ROOT / "src"]
    return [p for root in roots for p in sorted(root.rglob("*.py"))]


def _all_sites() -> list[tuple[str, int, str, str | None]]:
    out = []
    for path in _source_files():
        for line, what, mark in scan_source(path.read_text(), str(path)):
            out.append((str(path.relative_to(ROOT)), line, what, mark))
    return out


def test_every_patch_site_is_registered():
    names = {p.name for p in patches.registered_patches()}
    sites = _all_sites()
    assert sites, "the scan found no site at all: it no longer reads the packages"
    unregistered = [f"{f}:{n}: {what}" for f, n, what, mark in sites if mark is None]
    assert not unregistered, (
        "runtime changes outside the patch registry (declare a Patch in "
        "vllm_ascend_platform.patches.registry and mark the function '# patch: <name>'):\n"
        + "\n".join(unregistered))
    unknown = sorted(f"{f}: {mark}" for f, mark in _markers() if mark not in names)
    assert not unknown, f"'# patch:' markers naming no registered patch: {unknown}"


def _markers() -> list[tuple[str, str]]:
    return [(str(path.relative_to(ROOT)), match.group(1)) for path in _source_files()
            for match in MARK.finditer(path.read_text())]


def test_every_registered_patch_has_its_code_marked():
    marked = {mark for _, mark in _markers()}
    unmarked = [p.name for p in patches.registered_patches() if p.name not in marked]
    assert not unmarked, f"registered patches whose code has no '# patch:' marker: {unmarked}"


def test_scan_finds_each_kind_of_change():
    source = '''
import os
import importlib
import torch
from vllm.v1.engine.input_processor import InputProcessor


def parse(additional_config, key):
    del additional_config[key]
    additional_config.pop("x", None)


def swap():
    acc = torch.accelerator
    acc.synchronize = None
    setattr(torch.cuda, "Stream", None)
    InputProcessor._validate_lora = None
    runner = importlib.import_module("vllm.v1.worker.gpu_model_runner")
    runner.graph_capture = None
    os.environ["A"] = "1"
    os.environ.setdefault("B", "1")


# patch: declared-one
def declared():
    torch.Event = None


def untouched(obj):
    obj.attr = 1  # a plain object: no patch
    local = {}
    local["k"] = 1
'''
    sites = scan_source(source)
    undeclared = [line for line, _, mark in sites if mark is None]
    assert undeclared == [9, 10, 15, 16, 17, 19, 20, 21]
    assert [(line, mark) for line, _, mark in sites if mark] == [(26, "declared-one")]
