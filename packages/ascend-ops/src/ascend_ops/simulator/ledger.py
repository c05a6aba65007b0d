# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""What the simulated NPU did: operator launches, device-to-device copies, host syncs, replays,
and the source lines of our packages that called into torch_npu / torch.npu.

Counting rules (see ``docs/simulated-npu.md``):

* ``launches``: every ``npu::``/``atb::`` operator call, always; aten ops only while a graph is
  being captured or replayed, or inside ``simulator.tracking()`` (a dispatch mode that sees them).
* ``d2d_bytes``: bytes written by ``aten.copy_`` / ``clone`` / ``_to_copy`` between tensors, where
  aten ops are seen (as for ``launches``); every simulated tensor is device memory.
* ``host_syncs`` / ``host_sync_sites``: ``torch.npu.synchronize()`` and ``Stream``/``Event``
  ``synchronize()`` always; ``.item()``/``bool()``/data-dependent-shape ops where aten ops are
  seen. Inside a capture these raise instead.
* ``call_sites()``: (file relative to the repo, line) -> calls, for every call of a
  ``torch_npu.*`` operator or a ``torch.npu.*`` function made directly from a file under
  ``packages/<pkg>/src/`` (not from the simulator itself). ``static_call_sites`` finds the
  candidates in the source, so a test can compare what ran with what exists.
"""

from __future__ import annotations

import ast
import re
import sys
import threading
import types
from collections import Counter
from pathlib import Path

_SRC = re.compile(r"[/\\](packages[/\\][^/\\]+[/\\]src[/\\].+)$")
_SIM = f"{Path(__file__).resolve().parent}"


class Ledger:
    """Counters of one process; ``snapshot()`` copies them, ``reset()`` zeroes them."""

    def __init__(self):
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.launches: Counter[str] = Counter()
        self.d2d_bytes = 0
        self.host_syncs = 0
        self.host_sync_sites: Counter[tuple[str, str, int]] = Counter()  # (what, file, line)
        self.replays = 0
        self.replayed_ops = 0
        self.calls: Counter[tuple[str, int]] = Counter()

    def launch(self, name: str) -> None:
        self.launches[name] += 1

    def copy(self, nbytes: int) -> None:
        self.d2d_bytes += int(nbytes)

    def host_sync(self, what: str, depth: int = 2) -> None:
        file, line = _caller(depth + 1)
        with self._lock:
            self.host_syncs += 1
            self.host_sync_sites[(what, file, line)] += 1

    def snapshot(self) -> dict:
        """A plain-dict copy: launches, d2d_bytes, host_syncs, host_sync_sites, replays,
        replayed_ops, call_sites."""
        with self._lock:
            return {
                "launches": dict(self.launches),
                "d2d_bytes": self.d2d_bytes,
                "host_syncs": self.host_syncs,
                "host_sync_sites": dict(self.host_sync_sites),
                "replays": self.replays,
                "replayed_ops": self.replayed_ops,
                "call_sites": dict(self.calls),
            }


LEDGER = Ledger()


def _caller(depth: int) -> tuple[str, int]:
    """(file, line) of the first frame ``depth`` up that is not in the simulator or torch."""
    f: types.FrameType | None = sys._getframe(depth)
    while f is not None:
        name = f.f_code.co_filename
        if not name.startswith(_SIM) and "/torch/" not in name:
            m = _SRC.search(name)
            return (m.group(1).replace("\\", "/") if m else name), f.f_lineno
        f = f.f_back
    return "?", 0


def record_call(depth: int = 2) -> None:
    """Count a torch_npu / torch.npu call when the frame ``depth`` up is in packages/*/src."""
    f = sys._getframe(depth)
    name = f.f_code.co_filename
    if "packages" not in name or name.startswith(_SIM):
        return
    m = _SRC.search(name)
    if m:
        LEDGER.calls[(m.group(1).replace("\\", "/"), f.f_lineno)] += 1


def call_sites() -> dict[tuple[str, int], int]:
    """{(file relative to the repo root, line): calls} of torch_npu / torch.npu calls made from
    packages/*/src since install (or the last ``ledger().reset()``)."""
    return dict(LEDGER.calls)


def _callee(node: ast.AST, npu_modules: frozenset[str] = frozenset({"_npu"})) -> str | None:
    """Dotted text of a call target rooted at torch_npu / torch_npu() / torch.npu / one of
    ``npu_modules`` (names of our NPU modules)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "torch_npu":
        root = "torch_npu()"
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "torch_npu":
        root = "torch_npu()"  # _npu.torch_npu().x
    elif isinstance(node, ast.Name) and (node.id == "torch_npu" or node.id in npu_modules):
        root = node.id
    elif isinstance(node, ast.Name) and node.id == "torch" and parts and parts[-1] == "npu":
        parts.pop()
        root = "torch.npu"
    else:
        return None
    if not parts:
        return None
    return ".".join([root, *reversed(parts)])


def _npu_module_names(tree: ast.AST) -> frozenset[str]:
    """Names ``tree`` binds to our NPU modules: ``from ascend_ops.npu import m [as n]``,
    ``from ascend_ops.device import _npu [as n]``, ``import ascend_ops.npu.m as n``; ``_npu``
    always."""
    names = {"_npu"}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:
                if node.module == "ascend_ops.npu" or (
                        node.module == "ascend_ops.device" and alias.name.startswith("_npu")):
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ascend_ops.npu.") and alias.asname:
                    names.add(alias.asname)
    return frozenset(names)


def static_call_sites(root: str | Path) -> dict[tuple[str, int], str]:
    """Scan ``<root>/packages/*/src/**/*.py`` (the simulator excluded) for calls whose target is
    ``torch_npu().X``, ``torch_npu.X``, ``torch.npu.X`` or ``<m>.X`` where ``<m>`` is the name a
    file binds one of our NPU modules to (``ascend_ops/npu/*.py``, ``ascend_ops/device/_npu*.py``;
    :func:`_npu_module_names`; ``_npu`` always), e.g. ``_npu.available()`` in ``device/__init__.py``.
    Returns {(file relative to root, line of the called attribute): dotted callee}.

    ``call_sites()`` records the same (file, line) at run time: the first three kinds through
    the simulated torch_npu / torch.npu, the last through the wrappers ``install()`` puts on the
    NPU modules' functions (calls a module makes to its own helpers are not sites).
    """
    root = Path(root)
    found: dict[tuple[str, int], str] = {}
    for path in sorted(root.glob("packages/*/src/**/*.py")):
        if "simulator" in path.relative_to(root).parts:
            continue
        try:
            tree = ast.parse(path.read_text(), str(path))
        except (OSError, SyntaxError):
            continue
        rel = str(path.relative_to(root)).replace("\\", "/")
        npu_modules = _npu_module_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                callee = _callee(node.func, npu_modules)
                if callee and callee != "torch_npu()":
                    end = node.func.end_lineno if isinstance(node.func, ast.Attribute) else None
                    line = end if end is not None else node.lineno
                    found[(rel, line)] = callee
    return found


class _CallableModule(types.ModuleType):
    """``ascend_ops.simulator.ledger`` is both this module and the contract's ``ledger()``
    accessor: calling the module returns the process-wide ``Ledger``."""

    def __call__(self) -> Ledger:
        return LEDGER


sys.modules[__name__].__class__ = _CallableModule
